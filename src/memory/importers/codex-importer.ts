import type { EventInput, InputEventKind as EventKind } from '../../model/event.js';
import { blockToItem } from './anthropic-blocks.js';
import type { ConvertedBlock } from './anthropic-blocks.js';
import { imageUrlParts } from './image-url.js';
import { compactEvent, isRecord, shortSha256, timestampOf } from './import-item.js';
import { readJsonObjectLines } from './line-reader.js';
import { compactJsonText } from './openai-importer.js';
import type { ImportItem, ImportOptions, ImportSource } from './types.js';

/** Line types of a rollout written since Codex CLI 0.3x: `{ timestamp, type, payload }`. */
const ENVELOPE_TYPES = new Set(['session_meta', 'response_item', 'event_msg', 'turn_context', 'compacted']);

const ROLE_KINDS: Record<string, EventKind> = { user: 'user', assistant: 'assistant', developer: 'system', system: 'system' };
const TEXT_PARTS = new Set(['input_text', 'output_text', 'text']);
/** Response items that carry nothing to recall: encrypted or harness bookkeeping. */
const OPAQUE_ITEMS = new Set(['ghost_snapshot', 'compaction', 'compaction_summary', 'context_compaction', 'additional_tools', 'other']);

/** What the file has said so far about the session, carried from line to line. */
interface RolloutState {
  /** The first `session_meta` (or legacy header) id. */
  sessionId?: string;
  cwd?: string;
  gitBranch?: string;
  /** The model of the latest `turn_context`; assistant events get it in meta. */
  model?: string;
  /** Tool names by call id, for the outputs. */
  toolNames: Map<string, string>;
}

/** Where the line's events come from. */
interface LineContext {
  /** Events get `<keyPrefix>:<part>`. */
  keyPrefix: string;
  /** Path of the response item in the line: `payload` for an envelope, `` for a legacy bare item. */
  field: string;
  ts?: string | number;
  state: RolloutState;
}

/**
 * Reads a Codex CLI rollout (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) line by line.
 *
 * Two layouts: since Codex CLI 0.3x every line is `{ timestamp, type, payload }` (`session_meta` first); older
 * rollouts start with a bare session header `{ id, timestamp, instructions? }` followed by bare response items
 * and `{ record_type: "state" }` lines. Response items (`message`, `reasoning`, `function_call` and its
 * `function_call_output`, `custom_tool_call` and its output, `local_shell_call`, `web_search_call`,
 * `tool_search_call` and its output) become events; outputs are paired with their call by `call_id`.
 *
 * - `event_msg` lines repeat what response items hold (`user_message`, `agent_message`, `agent_reasoning`) or are
 *   telemetry (`token_count`, turn markers): each is skipped and reported as a skip by its type.
 * - `session_meta` and `turn_context` become no events of their own: their `cwd`, git branch and (for
 *   assistant events) `model` go to meta; legacy `instructions` become a `system` event. The built-in
 *   `base_instructions`, the same in every session, are not imported.
 * - `compacted` lines become `note` events tagged `summary` (their `replacement_history` repeats earlier items).
 * - Reasoning with only encrypted content, harness bookkeeping (`ghost_snapshot`, `compaction`) and any other
 *   line or item type are skipped and reported.
 *
 * Keys are `cx:<line>:<first 16 hex of the sha256 of the line>:<part>`: rollouts carry no item ids, and the line
 * number with a hash of its bytes stays the same when Codex appends to the file. The session is the rollout's
 * id unless `options.sessionId` overrides it.
 */
export async function* parseCodex(source: ImportSource, options: ImportOptions = {}): AsyncGenerator<ImportItem> {
  const state: RolloutState = { toolNames: new Map() };
  for await (const item of readJsonObjectLines(source, options.onBytes, 'a Codex rollout line must be a JSON object')) {
    if (item.type !== 'object') {
      yield item;
      continue;
    }
    const { line, record, bytes } = item.value;
    const blocks = convertLine(record, { keyPrefix: `cx:${line}:${shortSha256(bytes)}`, field: '', state });
    const sessionId = options.sessionId ?? state.sessionId;
    for (const block of blocks) yield blockToItem(block, line, sessionId);
  }
}

function convertLine(record: Record<string, unknown>, ctx: LineContext): ConvertedBlock[] {
  if ('payload' in record || (typeof record.type === 'string' && ENVELOPE_TYPES.has(record.type))) return convertEnvelope(record, ctx);
  if (record.record_type === 'state') return [{ type: 'skip', reason: 'Codex legacy state record is not imported' }];
  if (record.type === undefined && typeof record.id === 'string') return convertSessionMeta(record, '', { ...ctx, ts: timestampOf(record.timestamp) });
  if (typeof record.type !== 'string') return [issue('type', 'missing; every Codex rollout line has a string type')];
  return convertResponseItem(record, ctx);
}

function convertEnvelope(record: Record<string, unknown>, ctx: LineContext): ConvertedBlock[] {
  const type = record.type;
  if (typeof type !== 'string') return [issue('type', 'missing; every Codex rollout line has a string type')];
  const payload = record.payload;
  if (!isRecord(payload)) return [issue('payload', `a Codex ${type} line needs a payload object`)];
  const lineCtx: LineContext = { ...ctx, field: 'payload', ts: timestampOf(record.timestamp) };
  switch (type) {
    case 'session_meta':
      return convertSessionMeta(payload, 'payload', lineCtx);
    case 'turn_context':
      if (typeof payload.model === 'string' && payload.model !== '') ctx.state.model = payload.model;
      if (typeof payload.cwd === 'string' && payload.cwd !== '') ctx.state.cwd = payload.cwd;
      return [];
    case 'response_item':
      if (typeof payload.type !== 'string') return [issue('payload.type', 'missing; a response item has a string type')];
      return convertResponseItem(payload, lineCtx);
    case 'event_msg': {
      // Codex writes these next to the response items they mirror; importing both would store each turn twice.
      const eventType = typeof payload.type === 'string' ? payload.type : 'untyped';
      return [{ type: 'skip', reason: `Codex event_msg '${eventType}' is not imported (response items hold the conversation)` }];
    }
    case 'compacted': {
      if (typeof payload.message !== 'string') return [issue('payload.message', 'missing; a compacted line holds the summary text')];
      const event = build(lineCtx, 'note', payload.message, 0, { tags: ['summary'], meta: { codexType: 'compacted' } });
      return [{ type: 'event', event, source: 'payload.message' }];
    }
    default:
      return [{ type: 'skip', reason: `Codex rollout line type '${type}' is not imported` }];
  }
}

/** Session id, cwd and git branch for the events that follow; the legacy `instructions` as a system event. */
function convertSessionMeta(meta: Record<string, unknown>, field: string, ctx: LineContext): ConvertedBlock[] {
  const { state } = ctx;
  // Newer rollouts name the session `session_id`, older ones `id`; a forked or resumed file may hold more than one
  // session_meta: the first names the session.
  const id = typeof meta.session_id === 'string' ? meta.session_id : meta.id;
  if (state.sessionId === undefined && typeof id === 'string' && id !== '') state.sessionId = id;
  if (typeof meta.cwd === 'string' && meta.cwd !== '') state.cwd = meta.cwd;
  const git = meta.git;
  if (isRecord(git) && typeof git.branch === 'string' && git.branch !== '') state.gitBranch = git.branch;
  if (typeof meta.instructions !== 'string' || meta.instructions === '') return [];
  const source = field === '' ? 'instructions' : `${field}.instructions`;
  return [{ type: 'event', event: build(ctx, 'system', meta.instructions, 0, { tags: ['instructions'] }), source }];
}

function convertResponseItem(item: Record<string, unknown>, ctx: LineContext): ConvertedBlock[] {
  const type = item.type as string;
  const at = (name: string): string => (ctx.field === '' ? name : `${ctx.field}.${name}`);
  const missing = (name: string, what: string): ConvertedBlock[] => [issue(at(name), `missing; a ${type} item needs ${what}`)];
  const { toolNames } = ctx.state;

  switch (type) {
    case 'message':
      return convertMessage(item, ctx, at);
    case 'reasoning':
      return convertReasoning(item, ctx, at);
    case 'function_call':
    case 'custom_tool_call': {
      if (typeof item.name !== 'string' || item.name === '') return missing('name', 'a tool name');
      if (typeof item.call_id !== 'string' || item.call_id === '') return missing('call_id', 'a call id');
      const input = type === 'function_call' ? item.arguments : item.input;
      const inputName = type === 'function_call' ? 'arguments' : 'input';
      if (typeof input !== 'string') return missing(inputName, `its ${inputName} as a string`);
      toolNames.set(item.call_id, item.name);
      // Function arguments are JSON text from the model: drop the whitespace, keep the tokens as written.
      const content = type === 'function_call' ? (compactJsonText(input) ?? input) : input;
      const meta = typeof item.namespace === 'string' ? { namespace: item.namespace } : {};
      const event = build(ctx, 'tool_call', content, 0, { toolName: item.name, toolCallId: item.call_id, meta });
      return [{ type: 'event', event, source: at(inputName) }];
    }
    case 'local_shell_call': {
      // call_id is set on the Responses API, id on Chat Completions.
      const callId = typeof item.call_id === 'string' ? item.call_id : typeof item.id === 'string' ? item.id : undefined;
      if (!isRecord(item.action)) return missing('action', 'an action object');
      if (callId !== undefined) toolNames.set(callId, 'local_shell');
      const event = build(ctx, 'tool_call', JSON.stringify(item.action), 0, { toolName: 'local_shell', toolCallId: callId });
      return [{ type: 'event', event, source: at('action') }];
    }
    case 'web_search_call':
    case 'tool_search_call': {
      const toolName = type === 'web_search_call' ? 'web_search' : 'tool_search';
      const input = type === 'web_search_call' ? item.action : item.arguments;
      const callId = typeof item.call_id === 'string' ? item.call_id : undefined;
      if (callId !== undefined) toolNames.set(callId, toolName);
      const event = build(ctx, 'tool_call', JSON.stringify(input ?? {}), 0, { toolName, toolCallId: callId });
      return [{ type: 'event', event, source: at(type === 'web_search_call' ? 'action' : 'arguments') }];
    }
    case 'function_call_output':
    case 'custom_tool_call_output':
    case 'tool_search_output': {
      if (typeof item.call_id !== 'string' || item.call_id === '') return missing('call_id', 'the call id of its call');
      const output = type === 'tool_search_output' ? JSON.stringify(item.tools ?? null) : item.output;
      return convertOutput(output, item.call_id, ctx, at(type === 'tool_search_output' ? 'tools' : 'output'));
    }
    default:
      if (OPAQUE_ITEMS.has(type)) return [{ type: 'skip', reason: `Codex response item '${type}' holds no readable conversation` }];
      return [{ type: 'skip', reason: `Codex response item '${type}' is not imported` }];
  }
}

function convertMessage(item: Record<string, unknown>, ctx: LineContext, at: (name: string) => string): ConvertedBlock[] {
  const role = item.role;
  const kind = typeof role === 'string' ? ROLE_KINDS[role] : undefined;
  if (kind === undefined) {
    const roles = Object.keys(ROLE_KINDS).join(', ');
    return [issue(at('role'), `expected one of ${roles}, got ${JSON.stringify(role)}`)];
  }
  const roleMeta = role === 'developer' || role === 'system' ? { role } : {};
  const content = item.content;
  if (typeof content === 'string') return [{ type: 'event', event: build(ctx, kind, content, 0, { meta: roleMeta }), source: at('content') }];
  if (!Array.isArray(content)) return [issue(at('content'), 'expected an array of content parts')];
  if (content.length === 0) return [{ type: 'skip', reason: 'Codex message without content is not imported' }];
  return content.map((part: unknown, index): ConvertedBlock => {
    const field = at(`content[${index}]`);
    if (!isRecord(part) || typeof part.type !== 'string') return issue(`${field}.type`, 'a content part needs a string type');
    if (TEXT_PARTS.has(part.type)) {
      if (typeof part.text !== 'string') return issue(`${field}.text`, `missing in an ${part.type} part`);
      return { type: 'event', event: build(ctx, kind, part.text, index, { meta: roleMeta }), source: field };
    }
    if (part.type === 'refusal' && typeof part.refusal === 'string') {
      return { type: 'event', event: build(ctx, 'assistant', part.refusal, index, { tags: ['refusal'] }), source: field };
    }
    if (part.type === 'input_image') {
      if (typeof part.image_url !== 'string') return issue(`${field}.image_url`, 'missing in an input_image part');
      const image = imageUrlParts(part.image_url);
      const event = build(ctx, kind, image.content, index, { meta: { ...roleMeta, ...image.meta } });
      return { type: 'event', event: image.binary === undefined ? event : { ...event, binary: image.binary }, source: field };
    }
    return issue(`${field}.type`, `unsupported content part type '${part.type}'`);
  });
}

function convertReasoning(item: Record<string, unknown>, ctx: LineContext, at: (name: string) => string): ConvertedBlock[] {
  const texts = (list: unknown): string[] =>
    Array.isArray(list) ? list.filter(isRecord).flatMap((p) => (typeof p.text === 'string' && p.text !== '' ? [p.text] : [])) : [];
  const summary = texts(item.summary);
  const raw = texts(item.content);
  const out: ConvertedBlock[] = [];
  if (summary.length > 0) {
    const event = build(ctx, 'assistant', summary.join('\n\n'), 0, { tags: ['thinking', 'summary'] });
    out.push({ type: 'event', event, source: at('summary') });
  }
  if (raw.length > 0) out.push({ type: 'event', event: build(ctx, 'assistant', raw.join('\n\n'), 1, { tags: ['thinking'] }), source: at('content') });
  if (out.length === 0) out.push({ type: 'skip', reason: 'Codex reasoning is encrypted; there is no text to store' });
  return out;
}

/**
 * A tool output: a string; an array of `input_text` / `input_image` items (MCP results with images), whose text
 * is joined and whose images become events of their own after it; or `{ content, success }` as early Rust
 * rollouts wrote a failed call.
 */
function convertOutput(output: unknown, callId: string, ctx: LineContext, field: string): ConvertedBlock[] {
  const toolName = ctx.state.toolNames.get(callId);
  let text: string;
  let isError = false;
  const images: ConvertedBlock[] = [];
  if (typeof output === 'string') text = output;
  else if (isRecord(output) && typeof output.content === 'string') {
    text = output.content;
    isError = output.success === false;
  } else if (Array.isArray(output)) {
    const texts: string[] = [];
    for (const [index, part] of output.entries()) {
      const partField = `${field}[${index}]`;
      if (isRecord(part) && part.type === 'input_text' && typeof part.text === 'string') texts.push(part.text);
      else if (isRecord(part) && part.type === 'input_image' && typeof part.image_url === 'string') {
        const image = imageUrlParts(part.image_url);
        const event = build(ctx, 'tool_result', image.content, index + 1, { toolName, toolCallId: callId, meta: image.meta });
        images.push({ type: 'event', event: image.binary === undefined ? event : { ...event, binary: image.binary }, source: partField });
      } else {
        const type = isRecord(part) ? String(part.type) : typeof part;
        images.push(issue(`${partField}.type`, `unsupported tool output item type '${type}'`));
      }
    }
    text = texts.join('\n');
  } else {
    return [issue(field, 'expected a string, an array of output items or { content, success }')];
  }
  const extra = { toolName, toolCallId: callId, tags: isError ? ['error'] : [], meta: isError ? { isError: true } : {} };
  const hasOnlyImages = text === '' && images.some((b) => b.type === 'event');
  const result: ConvertedBlock[] = hasOnlyImages ? [] : [{ type: 'event', event: build(ctx, 'tool_result', text, 0, extra), source: field }];
  return [...result, ...images];
}

interface Extra {
  toolName?: string | undefined;
  toolCallId?: string | undefined;
  tags?: readonly string[];
  meta?: Record<string, unknown>;
}

function build(ctx: LineContext, kind: EventKind, content: string, part: number, extra: Extra = {}): EventInput {
  const { state } = ctx;
  const meta: Record<string, unknown> = {};
  if (state.cwd !== undefined) meta.cwd = state.cwd;
  if (state.gitBranch !== undefined) meta.gitBranch = state.gitBranch;
  if (state.model !== undefined && (kind === 'assistant' || kind === 'tool_call')) meta.model = state.model;
  return compactEvent({
    kind,
    content,
    key: `${ctx.keyPrefix}:${part}`,
    ts: ctx.ts,
    toolName: extra.toolName,
    toolCallId: extra.toolCallId,
    tags: [...(extra.tags ?? [])],
    meta: { ...meta, ...extra.meta },
  });
}

function issue(field: string, message: string): ConvertedBlock {
  return { type: 'issue', message: `${field}: ${message}`, field };
}
