import type { LineCounter, YAMLError } from 'yaml';
import { EngramError } from '../../errors.js';
import {
  CHILD_TO_PARENT_SECTIONS,
  PARENT_TO_CHILD_SECTIONS,
  childFromWire,
  childToParentWireSchema,
  parentFromWire,
  parentToChildWireSchema,
  type AgentMessage,
  type AgentMessageDirection,
} from './agent-message.js';
import { jsonValueProblem } from '../../model/limits.js';
import { invalidInputFromIssues } from './field-path.js';
import { yamlModule } from './yaml-module.js';

export type AgentMessageFormat = 'json' | 'yaml';

/**
 * Longest message text parsed, in characters. Far above any message within budget (800 tokens is about
 * 3,200 characters), so it only stops a paste of a whole file before the parser spends time on it.
 */
export const MAX_AGENT_MESSAGE_CHARS = 200_000;

export interface ParseAgentMessageOptions {
  /** The contract to parse against; without it, the direction is told from the sections present. */
  direction?: AgentMessageDirection;
  /** Default `MAX_AGENT_MESSAGE_CHARS`. */
  maxChars?: number;
}

/** JSON when the text (after a byte-order mark and whitespace) starts with `{`; YAML otherwise. */
export function detectMessageFormat(text: string): AgentMessageFormat {
  return /^\uFEFF?\s*\{/.test(text) ? 'json' : 'yaml';
}

/**
 * Parses an agent message in YAML or JSON (§7). Throws INVALID_INPUT naming the field (`ENGRAMS[2].pointers[0].type`,
 * `OUTPUT.summary`, `GRANTS[0].cap_tokens`), with `data.line` and `data.column` (1-based) for a syntax error,
 * and BUDGET_EXCEEDED (`data.limit: 'maxMessageChars'`) for a text longer than `maxChars`. Pointer refs are
 * only checked for shape here; `validateAgentMessage` checks that they parse.
 */
export function parseAgentMessage(text: string, options: ParseAgentMessageOptions = {}): AgentMessage {
  const maxChars = options.maxChars ?? MAX_AGENT_MESSAGE_CHARS;
  if (text.length > maxChars) {
    throw new EngramError('BUDGET_EXCEEDED', `agent message is ${text.length} characters; at most ${maxChars} are read`, {
      field: '(root)',
      limit: 'maxMessageChars',
      measured: text.length,
      allowed: maxChars,
      instruction: 'resend as ENGRAMS and POINTER_PACK: store long content in an artifact or the repository and send pointers to it',
    });
  }
  const format = detectMessageFormat(text);
  const depth = bracketDepth(text);
  if (depth > MAX_MESSAGE_BRACKET_DEPTH) {
    throw new EngramError('INVALID_INPUT', `invalid message: brackets nest ${depth} deep; at most ${MAX_MESSAGE_BRACKET_DEPTH} are parsed`, {
      field: '(root)',
      format,
      limit: 'MAX_MESSAGE_BRACKET_DEPTH',
      max: MAX_MESSAGE_BRACKET_DEPTH,
    });
  }
  const value = format === 'json' ? readJson(text) : readYaml(text);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new EngramError('INVALID_INPUT', `invalid message: expected a mapping of sections (ROLE, ...), got ${describe(value)}`, {
      field: '(root)',
      format,
    });
  }
  // Valid Unicode, no NUL, bounded nesting (model/limits.ts): a message is rendered, forwarded and logged as text.
  const bad = jsonValueProblem(value, { allowNul: false });
  if (bad) throw withFormat(invalidInputFromIssues([{ code: 'custom', path: bad.path, message: bad.message }]), format);
  const direction = options.direction ?? detectDirection(value as Record<string, unknown>);
  if (direction === 'child-to-parent') {
    const parsed = childToParentWireSchema.safeParse(value);
    if (!parsed.success) throw withFormat(invalidInputFromIssues(parsed.error.issues), format);
    return childFromWire(parsed.data);
  }
  const parsed = parentToChildWireSchema.safeParse(value);
  if (!parsed.success) throw withFormat(invalidInputFromIssues(parsed.error.issues), format);
  return parentFromWire(parsed.data);
}

const CHILD_ONLY = CHILD_TO_PARENT_SECTIONS.filter((s) => s !== 'ROLE');
const PARENT_ONLY = PARENT_TO_CHILD_SECTIONS.filter((s) => s !== 'ROLE');

function detectDirection(value: Record<string, unknown>): AgentMessageDirection {
  const keys = Object.keys(value);
  const child = CHILD_ONLY.filter((s) => keys.includes(s));
  const parent = PARENT_ONLY.filter((s) => keys.includes(s));
  if (child.length > 0 && parent.length > 0) {
    throw new EngramError(
      'INVALID_INPUT',
      `invalid message: ${parent[0]} is a parent-to-child section but ${child[0]} is a child-to-parent one; send one contract per message`,
      { field: parent[0] },
    );
  }
  if (child.length > 0) return 'child-to-parent';
  if (parent.length > 0) return 'parent-to-child';
  throw new EngramError(
    'INVALID_INPUT',
    `invalid message: no section tells its direction; a child sends ${CHILD_ONLY.join(', ')}; a parent sends ${PARENT_ONLY.join(', ')}`,
    { field: '(root)' },
  );
}

/**
 * Deepest nesting of `[` and `{` the parsers are given. The YAML parser's memory grows with flow nesting until
 * the process dies (a 5,000-deep `[[[...` message crashed the server; found by the HTTP property test). Brackets
 * are counted everywhere, quoted or not, so no quote can hide them; a message's values nest at most
 * MAX_JSON_DEPTH (32) levels anyway, so a real message never comes near this.
 */
export const MAX_MESSAGE_BRACKET_DEPTH = 128;

/** The deepest unclosed run of `[`/`{` in a text, counting every bracket. Linear. */
function bracketDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5b || c === 0x7b) {
      if (++depth > deepest) deepest = depth;
    } else if ((c === 0x5d || c === 0x7d) && depth > 0) depth--;
  }
  return deepest;
}

function readJson(text: string): unknown {
  try {
    return JSON.parse(text.replace(/^\uFEFF/, '')) as unknown;
  } catch (err) {
    // JSON.parse reports positions only in its message text, and not for every error; the YAML parser (YAML
    // is a superset of JSON) locates the same mistakes structurally.
    const located = firstYamlError(text, 'json');
    const where = located ? ` at line ${located.line}, column ${located.column}` : '';
    throw new EngramError(
      'INVALID_INPUT',
      `invalid message: not valid JSON${where}: ${(err as Error).message}`,
      { field: '(root)', format: 'json', ...(located ?? {}) },
      { cause: err },
    );
  }
}

function readYaml(text: string): unknown {
  const { LineCounter, parseDocument } = yamlModule();
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { prettyErrors: false, uniqueKeys: true, lineCounter });
  const error = doc.errors[0];
  if (error) {
    const pos = position(error, lineCounter);
    throw new EngramError('INVALID_INPUT', `invalid message: not valid YAML at line ${pos.line}, column ${pos.column}: ${error.message}`, {
      field: '(root)',
      format: 'yaml',
      ...pos,
      yamlCode: error.code,
    });
  }
  try {
    // Aliases let a few bytes expand into a huge value; a message has no use for more than a few.
    return doc.toJS({ maxAliasCount: MAX_YAML_ALIASES }) as unknown;
  } catch (err) {
    throw new EngramError('INVALID_INPUT', `invalid message: ${(err as Error).message}`, { field: '(root)', format: 'yaml' }, { cause: err });
  }
}

/** Most alias expansions in one YAML message. */
const MAX_YAML_ALIASES = 20;

function firstYamlError(text: string, schema: 'json' | 'core'): { line: number; column: number } | undefined {
  const { LineCounter, parseDocument } = yamlModule();
  const lineCounter = new LineCounter();
  const error = parseDocument(text, { schema, prettyErrors: false, uniqueKeys: true, lineCounter }).errors[0];
  return error ? position(error, lineCounter) : undefined;
}

function position(error: YAMLError, lineCounter: LineCounter): { line: number; column: number } {
  const { line, col } = lineCounter.linePos(error.pos[0]);
  return { line, column: col };
}

function withFormat(err: EngramError, format: AgentMessageFormat): EngramError {
  return new EngramError(err.code, err.message, { ...err.data, format });
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  return `a ${typeof value}`;
}
