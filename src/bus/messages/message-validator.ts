import { EngramError, isEngramError, type ErrorData } from '../../errors.js';
import { BUDGET_LIMIT_SEED_NAMES, PARENT_BUDGET_KEYS, type BudgetLimits } from '../budget-limits.js';
import { parsePointer, type PointerErrorData, type PointerProblem } from '../pointer.js';
import type { Pointer } from '../../model/pointer.js';
import {
  PARENT_BUDGET_WIRE_KEYS,
  type AgentMessage,
  type AgentMessageDirection,
  type ChildToParentMessage,
  type ParentToChildMessage,
} from './agent-message.js';
import { findInlineCode, type InlineCodeShape } from './inline-code.js';
import { renderAgentMessage } from './render-agent-message.js';

/**
 * The gateway's check of one agent message against its budgets (Engram PAS Bus §3.3, `validate_agent_message`,
 * §6.3): inline tokens, number of engrams, claim length, pasted code, SharedBriefMicro size, BUDGETS within the
 * engine's ceilings, and pointers that parse. A rejection is a value that says, per violation, which limit, the
 * measured and allowed values, and what to resend (§8 failure modes), so the agent can resend in compliant
 * Engram + pointer form (§3.3, §10.2 "oversized messages are rejected and successfully resent").
 *
 * Deterministic: the verdict depends only on the message, the limits, the granted code allowance and
 * `countTokens`. Tokens are counted on `renderAgentMessage(message)`, the canonical text the gateway forwards,
 * so a message costs the same whether it arrived as YAML or JSON, and what is counted is what is delivered.
 */

/** A limit a message can break: a budget of `BudgetLimits`, or `pointerFormat` (§8.2: a pointer that does not parse). */
export type MessageLimit = keyof BudgetLimits | 'pointerFormat';

export type ViolationUnit = 'tokens' | 'engrams' | 'chars' | 'lines' | 'pointers';

/** One code block found in the message's free text. */
export interface CodeBlockLocation {
  /** The field holding it: `OUTPUT.summary`, `ENGRAMS[2].claim`, `INSTRUCTIONS[1]`. */
  field: string;
  shape: InlineCodeShape;
  /** 1-based line within the field's text. */
  line: number;
  chars: number;
}

/** A pointer that does not parse, with the resolver's reason. */
export interface InvalidPointer {
  /** The offending field: `ENGRAMS[0].pointers[1].ref`, `GRANTS[0].pointer.type`. */
  field: string;
  ref: string;
  reason: PointerProblem;
  message: string;
}

export interface MessageViolation {
  limit: MessageLimit;
  /** The seed's name of the limit (`MAX_INLINE_TOKENS`), the vocabulary agents are prompted with. */
  seedName: string;
  /** The wire field that breaks it: `(message)` for the whole message, `ENGRAMS`, `ENGRAMS[3].claim`, `BUDGETS.max_repo_spans`. */
  field: string;
  measured: number;
  allowed: number;
  unit: ViolationUnit;
  /** What to change in the resend, concretely (sizes, fields, the pointer form to use). */
  instruction: string;
  /** For `maxInlineCodeChars`: every block counted, in message order. */
  codeBlocks?: CodeBlockLocation[];
  /** For `pointerFormat`: every pointer that does not parse, in message order. */
  invalidPointers?: InvalidPointer[];
}

/** What a compliant resend must look like (§3.3 "require a resend formatted as Engrams + pointers"). */
export interface ResendRequest {
  format: 'engrams-and-pointers';
  direction: AgentMessageDirection;
  /** The violations' instructions, in order. */
  instructions: string[];
  maxInlineTokens: number;
  /**
   * Engrams the resend may carry: the budget, lowered when the engrams of this message would not fit in
   * `maxInlineTokens` otherwise (assuming the largest ones are kept). Child messages only.
   */
  maxEngrams?: number;
  maxEngramChars?: number;
  /** Code characters allowed, grant included. */
  maxInlineCodeChars: number;
  maxSharedBriefLines?: number;
}

/** What the message used, for the budget meter (LESS §11) and telemetry, whatever the verdict. */
export interface MessageUsage {
  inlineTokens: number;
  engrams: number;
  inlineCodeChars: number;
  /** Parent messages only. */
  sharedBriefLines?: number;
}

export type MessageVerdict =
  | { ok: true; usage: MessageUsage }
  | { ok: false; usage: MessageUsage; violations: MessageViolation[]; resend: ResendRequest };
export type MessageRejection = Extract<MessageVerdict, { ok: false }>;

export interface ValidateAgentMessageOptions {
  /** The sender's limits: for a child, the engine's limits narrowed by its parent's BUDGETS (`narrowBudgetLimits`). */
  limits: Readonly<BudgetLimits>;
  /** The engine's tokenizer (`Tokenizer.count`). */
  countTokens: (text: string) => number;
  /**
   * Code characters a grant allows in this message; default 0. The allowance is the larger of this and
   * `limits.maxInlineCodeChars` (MAX_INLINE_CODE_CHARS is 0 "unless granted", §3.1).
   */
  grantedInlineCodeChars?: number;
  /**
   * The engine's own limits, to check a parent's BUDGETS against (a parent cannot raise a ceiling; more takes a
   * grant). Default `limits`.
   */
  ceilings?: Readonly<BudgetLimits>;
}

/** The seed's name for `pointerFormat` violations. */
export const POINTER_FORMAT_SEED_NAME = 'POINTER_FORMAT';
/** Code blocks named one by one in an instruction; the rest are counted. */
const MAX_BLOCKS_NAMED = 3;
/** Sections named as the largest in an inline-token instruction. */
const MAX_SECTIONS_NAMED = 2;

/**
 * Checks a parsed message (`parseAgentMessage`) against its budgets. Same input, same verdict. Throws only for
 * bad options (INVALID_INPUT naming `grantedInlineCodeChars`).
 */
export function validateAgentMessage(message: AgentMessage, options: ValidateAgentMessageOptions): MessageVerdict {
  const { limits, countTokens } = options;
  const granted = options.grantedInlineCodeChars ?? 0;
  // NaN would make every comparison false and let any amount of code through.
  if (!Number.isSafeInteger(granted) || granted < 0) {
    throw new EngramError('INVALID_INPUT', `grantedInlineCodeChars: must be a non-negative integer, got ${granted}`, { field: 'grantedInlineCodeChars' });
  }
  const allowedCodeChars = Math.max(limits.maxInlineCodeChars, granted);
  const inlineTokens = countTokens(renderAgentMessage(message));
  const codeBlocks = findCodeBlocks(message);
  const inlineCodeChars = codeBlocks.reduce((sum, b) => sum + b.chars, 0);
  const usage: MessageUsage = {
    inlineTokens,
    engrams: message.direction === 'child-to-parent' ? message.engrams.length : 0,
    inlineCodeChars,
    ...(message.direction === 'parent-to-child' ? { sharedBriefLines: message.sharedBriefMicro.length } : {}),
  };

  const violations: MessageViolation[] = [];
  let fit: EngramFit | undefined;
  if (inlineTokens > limits.maxInlineTokens) {
    fit = message.direction === 'child-to-parent' ? engramsThatFit(message, limits.maxInlineTokens, countTokens) : undefined;
    violations.push(inlineTokensViolation(message, inlineTokens, limits.maxInlineTokens, countTokens, fit));
  }
  if (message.direction === 'child-to-parent') {
    violations.push(...engramViolations(message, limits));
  } else {
    violations.push(...briefViolations(message, limits, countTokens));
    violations.push(...budgetCeilingViolations(message, options.ceilings ?? limits));
  }
  if (inlineCodeChars > allowedCodeChars) violations.push(codeViolation(codeBlocks, inlineCodeChars, allowedCodeChars));
  const pointerViolation = invalidPointersViolation(message);
  if (pointerViolation) violations.push(pointerViolation);

  if (violations.length === 0) return { ok: true, usage };
  const resend: ResendRequest = {
    format: 'engrams-and-pointers',
    direction: message.direction,
    instructions: violations.map((v) => v.instruction),
    maxInlineTokens: limits.maxInlineTokens,
    maxInlineCodeChars: allowedCodeChars,
  };
  if (message.direction === 'child-to-parent') {
    resend.maxEngrams = Math.min(limits.maxEngramsPerMessage, fit?.engrams ?? Number.POSITIVE_INFINITY);
    resend.maxEngramChars = limits.maxEngramChars;
  } else {
    resend.maxSharedBriefLines = limits.maxSharedBriefLines;
  }
  return { ok: false, usage, violations, resend };
}

/** Data of the error `toBudgetError` builds. */
export interface BudgetErrorData extends ErrorData {
  field: string;
  violations: MessageViolation[];
  resend: ResendRequest;
  usage: MessageUsage;
}

/**
 * The error an interface returns for a rejected message: BUDGET_EXCEEDED (§3.3) with the violations and the
 * resend request as data, or POINTER_INVALID when bad pointers are the only problem. `data.field` is the first
 * violation's field.
 */
export function toBudgetError(rejection: MessageRejection): EngramError<BudgetErrorData> {
  const onlyPointers = rejection.violations.every((v) => v.limit === 'pointerFormat');
  const summary = rejection.violations
    .map((v) => (v.limit === 'pointerFormat' ? `${v.seedName}: ${v.measured} invalid pointer(s)` : `${v.seedName} ${v.field} ${fmt(v.measured)} > ${fmt(v.allowed)} ${v.unit}`))
    .join('; ');
  const message = `agent message rejected (${summary}). Resend as engrams + pointers: ${rejection.resend.instructions.join(' ')}`;
  return new EngramError<BudgetErrorData>(onlyPointers ? 'POINTER_INVALID' : 'BUDGET_EXCEEDED', message, {
    field: rejection.violations[0]?.field ?? '(message)',
    violations: rejection.violations,
    resend: rejection.resend,
    usage: rejection.usage,
  });
}

function inlineTokensViolation(
  message: AgentMessage,
  measured: number,
  allowed: number,
  countTokens: (text: string) => number,
  fit: EngramFit | undefined,
): MessageViolation {
  const sections = sectionTokens(message, countTokens)
    .filter((s) => s.tokens > 0)
    .sort((a, b) => b.tokens - a.tokens || (a.section < b.section ? -1 : 1))
    .slice(0, MAX_SECTIONS_NAMED);
  const largest = sections.map((s) => `${s.section} ${fmt(s.tokens)} tokens`).join(', ');
  const parts = [
    `Cut the message from ${fmt(measured)} to at most ${fmt(allowed)} tokens (${fmt(measured - allowed)} over; largest sections: ${largest}).`,
    'Replace pasted text with pointers to where it lives (repo:<path>#L<a>-L<b>@<commit>, artifact:<name>#sec=<section>@<sha256 prefix>) and keep claims to 1-3 sentences.',
  ];
  if (message.direction === 'child-to-parent' && message.engrams.length > 0 && fit !== undefined) {
    if (fit.assumesMinimalRest) {
      parts.push(
        `Even without ENGRAMS the message is over budget: shorten the largest sections first; at most ${fit.engrams} ENGRAMS fit beside a one-line OUTPUT.summary.`,
      );
    } else if (fit.engrams < message.engrams.length) {
      parts.push(`Keep ENGRAMS <= ${fit.engrams} (the highest-confidence ones).`);
    }
  }
  return {
    limit: 'maxInlineTokens',
    seedName: BUDGET_LIMIT_SEED_NAMES.maxInlineTokens,
    field: '(message)',
    measured,
    allowed,
    unit: 'tokens',
    instruction: parts.join(' '),
  };
}

function engramViolations(message: ChildToParentMessage, limits: Readonly<BudgetLimits>): MessageViolation[] {
  const out: MessageViolation[] = [];
  const count = message.engrams.length;
  if (count > limits.maxEngramsPerMessage) {
    out.push({
      limit: 'maxEngramsPerMessage',
      seedName: BUDGET_LIMIT_SEED_NAMES.maxEngramsPerMessage,
      field: 'ENGRAMS',
      measured: count,
      allowed: limits.maxEngramsPerMessage,
      unit: 'engrams',
      instruction: `Send at most ${limits.maxEngramsPerMessage} ENGRAMS (${count} sent): keep the highest-confidence ones, merge claims about the same source, and drop the rest.`,
    });
  }
  message.engrams.forEach((engram, i) => {
    const chars = engram.claim.length;
    if (chars <= limits.maxEngramChars) return;
    out.push({
      limit: 'maxEngramChars',
      seedName: BUDGET_LIMIT_SEED_NAMES.maxEngramChars,
      field: `ENGRAMS[${i}].claim`,
      measured: chars,
      allowed: limits.maxEngramChars,
      unit: 'chars',
      instruction: `Shorten ENGRAMS[${i}].claim from ${fmt(chars)} to at most ${fmt(limits.maxEngramChars)} characters (1-3 sentences); leave the detail at its pointers, or split it into separate engrams.`,
    });
  });
  return out;
}

function briefViolations(message: ParentToChildMessage, limits: Readonly<BudgetLimits>, countTokens: (text: string) => number): MessageViolation[] {
  const out: MessageViolation[] = [];
  const lines = message.sharedBriefMicro.length;
  if (lines > limits.maxSharedBriefLines) {
    out.push({
      limit: 'maxSharedBriefLines',
      seedName: BUDGET_LIMIT_SEED_NAMES.maxSharedBriefLines,
      field: 'SHARED_BRIEF_MICRO',
      measured: lines,
      allowed: limits.maxSharedBriefLines,
      unit: 'lines',
      instruction: `Cut SHARED_BRIEF_MICRO from ${lines} to at most ${limits.maxSharedBriefLines} lines: keep what matters now, constraints and top risks, each with its pointer; move the rest into TARGET_POINTER_PACK.`,
    });
  }
  if (lines > 0) {
    const tokens = countTokens(message.sharedBriefMicro.join('\n'));
    if (tokens > limits.maxSharedBriefTokens) {
      out.push({
        limit: 'maxSharedBriefTokens',
        seedName: BUDGET_LIMIT_SEED_NAMES.maxSharedBriefTokens,
        field: 'SHARED_BRIEF_MICRO',
        measured: tokens,
        allowed: limits.maxSharedBriefTokens,
        unit: 'tokens',
        instruction: `Cut SHARED_BRIEF_MICRO from ${fmt(tokens)} to at most ${fmt(limits.maxSharedBriefTokens)} tokens: one short claim per line with its pointer, no excerpts.`,
      });
    }
  }
  return out;
}

function budgetCeilingViolations(message: ParentToChildMessage, ceilings: Readonly<BudgetLimits>): MessageViolation[] {
  const out: MessageViolation[] = [];
  for (const key of PARENT_BUDGET_KEYS) {
    const value = message.budgets[key];
    if (value === undefined || value <= ceilings[key]) continue;
    const wireKey = PARENT_BUDGET_WIRE_KEYS[key];
    out.push({
      limit: key,
      seedName: BUDGET_LIMIT_SEED_NAMES[key],
      field: `BUDGETS.${wireKey}`,
      measured: value,
      allowed: ceilings[key],
      unit: budgetUnit(key),
      instruction: `Set BUDGETS.${wireKey} to at most ${fmt(ceilings[key])} (the engine's limit); to let a child pull more, issue a grant for the pointer instead.`,
    });
  }
  return out;
}

function budgetUnit(key: (typeof PARENT_BUDGET_KEYS)[number]): ViolationUnit {
  switch (key) {
    case 'maxInlineTokens':
    case 'maxDerefTokensPerTurn':
      return 'tokens';
    case 'maxEngramsPerMessage':
      return 'engrams';
    case 'maxEngramChars':
      return 'chars';
    default:
      return 'pointers';
  }
}

function codeViolation(blocks: CodeBlockLocation[], measured: number, allowed: number): MessageViolation {
  const named = [...blocks]
    .sort((a, b) => b.chars - a.chars)
    .slice(0, MAX_BLOCKS_NAMED)
    .map((b) => `the ${fmt(b.chars)}-char ${SHAPE_NAMES[b.shape]} in ${b.field} (line ${b.line})`);
  const rest = blocks.length - named.length;
  const what = `${named.join(', ')}${rest > 0 ? ` and ${rest} more block(s)` : ''}`;
  const limitText = allowed === 0 ? 'no inline code is allowed without a grant' : `at most ${fmt(allowed)} code characters are granted`;
  return {
    limit: 'maxInlineCodeChars',
    seedName: BUDGET_LIMIT_SEED_NAMES.maxInlineCodeChars,
    field: blocks[0]?.field ?? '(message)',
    measured,
    allowed,
    unit: 'chars',
    instruction:
      `Remove ${fmt(measured)} characters of pasted code (${limitText}): move ${what} into an artifact or commit it, ` +
      'and send its pointer (artifact:<name>#sec=<section>@<sha256 prefix> or repo:<path>#L<a>-L<b>@<commit>) in POINTER_PACK instead.',
    codeBlocks: blocks,
  };
}

const SHAPE_NAMES: Readonly<Record<InlineCodeShape, string>> = { fenced: 'code block', lines: 'run of code lines', span: 'code span' };

function invalidPointersViolation(message: AgentMessage): MessageViolation | undefined {
  const invalid: InvalidPointer[] = [];
  for (const { field, pointer } of messagePointers(message)) {
    try {
      parsePointer(pointer, field);
    } catch (err) {
      if (!isEngramError(err, 'POINTER_INVALID')) throw err;
      const data = err.data as PointerErrorData;
      invalid.push({ field: data.field, ref: pointer.ref, reason: data.reason, message: err.message });
    }
  }
  if (invalid.length === 0) return undefined;
  const first = invalid[0]!;
  const rest = invalid.length - 1;
  return {
    limit: 'pointerFormat',
    seedName: POINTER_FORMAT_SEED_NAME,
    field: first.field,
    measured: invalid.length,
    allowed: 0,
    unit: 'pointers',
    instruction:
      `Fix ${invalid.length} pointer(s) that do not resolve, starting with ${first.message}${rest > 0 ? ` (and ${rest} more, listed in invalidPointers)` : ''}. ` +
      'Pin every pointer: repo:<path>#L<a>-L<b>@<commit sha>, artifact:<name>#sec=<section>@<sha256 prefix>, sam:<kind>:<id>.',
    invalidPointers: invalid,
  };
}

/** Every pointer of a message with its wire field, in message order. */
export function messagePointers(message: AgentMessage): Array<{ field: string; pointer: Pointer }> {
  const out: Array<{ field: string; pointer: Pointer }> = [];
  if (message.direction === 'child-to-parent') {
    message.engrams.forEach((e, i) => e.pointers.forEach((p, j) => out.push({ field: `ENGRAMS[${i}].pointers[${j}]`, pointer: p })));
    message.pointerPack.forEach((p, i) => out.push({ field: `POINTER_PACK[${i}]`, pointer: p }));
    message.derefRequests.forEach((r, i) => out.push({ field: `DEREF_REQUESTS[${i}].pointer`, pointer: r.pointer }));
  } else {
    message.grants.forEach((g, i) => out.push({ field: `GRANTS[${i}].pointer`, pointer: g.pointer }));
    message.targetPointerPack.forEach((p, i) => out.push({ field: `TARGET_POINTER_PACK[${i}]`, pointer: p }));
  }
  return out;
}

/**
 * Code in the message's free text. List sections (brief lines, instructions) are scanned as one text, so code
 * pasted one line per item is still a run; a block is reported at the item where it starts.
 */
export function findCodeBlocks(message: AgentMessage): CodeBlockLocation[] {
  const out: CodeBlockLocation[] = [];
  const scan = (field: string, text: string | undefined): void => {
    if (text === undefined) return;
    for (const b of findInlineCode(text)) out.push({ field, shape: b.shape, line: b.line, chars: b.chars });
  };
  const scanList = (section: string, items: readonly string[]): void => {
    const starts: number[] = [];
    let line = 1;
    for (const item of items) {
      starts.push(line);
      line += item.split(/\r\n|\r|\n/).length;
    }
    for (const b of findInlineCode(items.join('\n'))) {
      let k = starts.length - 1;
      while (k > 0 && starts[k]! > b.line) k--;
      out.push({ field: `${section}[${k}]`, shape: b.shape, line: b.line - starts[k]! + 1, chars: b.chars });
    }
  };
  if (message.direction === 'child-to-parent') {
    scan('TASK_STATUS', message.taskStatus);
    message.engrams.forEach((e, i) => scan(`ENGRAMS[${i}].claim`, e.claim));
    message.derefRequests.forEach((r, i) => scan(`DEREF_REQUESTS[${i}].reason`, r.reason));
    scan('OUTPUT.summary', message.output.summary);
    scan('OUTPUT.next', message.output.next);
  } else {
    scanList('SHARED_BRIEF_MICRO', message.sharedBriefMicro);
    scanList('INSTRUCTIONS', message.instructions);
  }
  return out;
}

/** Tokens of each section rendered alone, for naming the largest in an instruction. */
function sectionTokens(message: AgentMessage, countTokens: (text: string) => number): Array<{ section: string; tokens: number }> {
  if (message.direction === 'child-to-parent') {
    const empty: ChildToParentMessage = { ...message, engrams: [], pointerPack: [], derefRequests: [], output: { summary: '' } };
    const base = countTokens(renderAgentMessage(empty));
    const cost = (m: ChildToParentMessage) => Math.max(0, countTokens(renderAgentMessage(m)) - base);
    return [
      { section: 'ENGRAMS', tokens: cost({ ...empty, engrams: message.engrams }) },
      { section: 'POINTER_PACK', tokens: cost({ ...empty, pointerPack: message.pointerPack }) },
      { section: 'DEREF_REQUESTS', tokens: cost({ ...empty, derefRequests: message.derefRequests }) },
      { section: 'OUTPUT', tokens: cost({ ...empty, output: message.output }) },
    ];
  }
  const empty: ParentToChildMessage = { ...message, sharedBriefMicro: [], budgets: {}, grants: [], targetPointerPack: [], instructions: [] };
  const base = countTokens(renderAgentMessage(empty));
  const cost = (m: ParentToChildMessage) => Math.max(0, countTokens(renderAgentMessage(m)) - base);
  return [
    { section: 'SHARED_BRIEF_MICRO', tokens: cost({ ...empty, sharedBriefMicro: message.sharedBriefMicro }) },
    { section: 'BUDGETS', tokens: cost({ ...empty, budgets: message.budgets }) },
    { section: 'GRANTS', tokens: cost({ ...empty, grants: message.grants }) },
    { section: 'TARGET_POINTER_PACK', tokens: cost({ ...empty, targetPointerPack: message.targetPointerPack }) },
    { section: 'INSTRUCTIONS', tokens: cost({ ...empty, instructions: message.instructions }) },
  ];
}

/** How many engrams fit in the token budget, and whether that assumes the rest of the message cut to a minimum. */
interface EngramFit {
  engrams: number;
  assumesMinimalRest: boolean;
}

/**
 * How many engrams the message could keep within `maxTokens`, the rest of it unchanged, when the kept ones are
 * the most expensive: a bound that holds whichever engrams the sender keeps. Costs are measured per engram
 * (the message with that engram alone minus the message without engrams), so the bound is as exact as the
 * tokenizer is additive over YAML list items. When the rest alone is over budget, the count assumes OUTPUT cut
 * to one line: an upper bound, since a real resend adds a pointer or two for what it moved out. Undefined when
 * even that leaves no room.
 */
function engramsThatFit(message: ChildToParentMessage, maxTokens: number, countTokens: (text: string) => number): EngramFit | undefined {
  let rest: ChildToParentMessage = { ...message, engrams: [] };
  let base = countTokens(renderAgentMessage(rest));
  const assumesMinimalRest = base > maxTokens;
  if (assumesMinimalRest) {
    // Pointers stay: they are what a compliant resend carries.
    rest = { ...rest, output: { summary: MINIMAL_SUMMARY } };
    base = countTokens(renderAgentMessage(rest));
    if (base > maxTokens) return undefined;
  }
  const costs = message.engrams.map((e) => countTokens(renderAgentMessage({ ...rest, engrams: [e] })) - base).sort((a, b) => b - a);
  let total = base;
  let engrams = 0;
  for (const cost of costs) {
    if (total + cost > maxTokens) break;
    total += cost;
    engrams++;
  }
  return { engrams, assumesMinimalRest };
}

/** Stands in for a one-line OUTPUT.summary when sizing a resend (about ten tokens). */
const MINIMAL_SUMMARY = 'Findings are in ENGRAMS; details behind their pointers.';

/** `1,240`: thousands separated with commas, independent of the host's locale. */
function fmt(n: number): string {
  const [int, frac] = String(n).split('.');
  const grouped = int!.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return frac === undefined ? grouped : `${grouped}.${frac}`;
}
