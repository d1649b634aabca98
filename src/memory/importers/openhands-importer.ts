import type { EventInput, InputEventKind as EventKind } from '../../model/event.js';
import { blockToItem } from './anthropic-blocks.js';
import type { ConvertedBlock } from './anthropic-blocks.js';
import { readJsonDocument } from './document-reader.js';
import { imageUrlParts } from './image-url.js';
import { compactEvent, isRecord, issueItem, timestampOf } from './import-item.js';
import { readByteChunks, readJsonObjectLines } from './line-reader.js';
import type { ImportItem, ImportOptions, ImportSource } from './types.js';

/** Actions that run a tool: each becomes a `tool_call`, answered by the observation whose `cause` is its id. */
const TOOL_ACTIONS = new Set([
  'run',
  'run_ipython',
  'read',
  'write',
  'edit',
  'browse',
  'browse_interactive',
  'delegate',
  'mcp',
  'task_tracking',
  'search',
  'push',
  'send_pr',
]);
/** Observations that answer nothing the importer stores (agent state, workspace context, the think tool's echo). */
const BOOKKEEPING_OBSERVATIONS = new Set(['agent_state_changed', 'null', 'recall', 'microagent', 'workspace_context', 'think', 'loop_detection']);
const MESSAGE_KINDS: Record<string, EventKind> = { user: 'user', agent: 'assistant', environment: 'system' };

/** Where one event of the stream sits in the file. */
interface EventPosition {
  line: number;
  /** Prefix of field paths in issues: `` for a JSONL line, `[3].` for an array element. */
  field: string;
  /** Key base for an event without an integer `id`: `@L<line>` (JSONL) or `@<index>` (array). */
  fallbackKey: string;
}

/** A tool call waiting for its observation. */
interface PendingCall {
  toolCallId: string | undefined;
  toolName: string;
}

/**
 * Reads an OpenHands event stream: a JSON array of events (a saved trajectory) or one event per line.
 *
 * Each event is `{ id, timestamp, source, message, action | observation, args | content + extras, cause?,
 * tool_call_metadata? }`. Actions: `message` becomes a user, assistant or system event by `source` (its
 * `image_urls` follow as events of their own); `system` a system event; `think` an assistant event tagged
 * `thinking`; `finish` and `reject` assistant events tagged so; `condensation` with a summary a `note` tagged
 * `summary`; tool actions (`run`, `read`, `edit`, `browse`, `mcp`, ...) a `tool_call` whose content is the action's
 * `args` as JSON, preceded by their `thought` as an assistant event. An observation whose `cause` is a tool action's
 * id becomes that call's `tool_result` (tagged `error` for an `error` observation; `exitCode`, `path` and `url`
 * in meta). The tool name and call id are the LLM's (`tool_call_metadata.function_name`, `.tool_call_id`) when
 * present, else the action type and `oh-<id>`.
 *
 * Agent-state changes, workspace recalls, the think tool's echo and other bookkeeping events are skipped and
 * reported as skips by type. Keys are `oh:<id>:<part>`. Events carry no session id: it is `options.sessionId`,
 * else the caller's default.
 */
export async function* parseOpenHands(source: ImportSource, options: ImportOptions = {}): AsyncGenerator<ImportItem> {
  const first = await firstNonBlankByte(source);
  if (first === null) {
    yield issueItem(0, 'the file is empty');
    return;
  }
  const stream = new EventStreamConverter();
  const { sessionId } = options;
  if (first === '[') {
    const doc = await readJsonDocument(source, 'openhands', ['*'], options.onBytes);
    if (!doc.isValid) {
      yield { type: 'issue', value: doc.issue };
      return;
    }
    if (!Array.isArray(doc.value)) {
      yield issueItem(1, 'expected an array of OpenHands events');
      return;
    }
    if (doc.value.length === 0) yield issueItem(1, 'the document holds no events');
    for (const [index, record] of doc.value.entries()) {
      const line = doc.lineOf(String(index));
      if (!isRecord(record)) {
        yield issueItem(line, `[${index}]: an OpenHands event must be an object`, `[${index}]`);
        continue;
      }
      for (const block of stream.convert(record, { line, field: `[${index}].`, fallbackKey: `@${index}` })) yield blockToItem(block, line, sessionId);
    }
    return;
  }
  for await (const item of readJsonObjectLines(source, options.onBytes, 'an OpenHands event must be a JSON object')) {
    if (item.type !== 'object') {
      yield item;
      continue;
    }
    const { line, record } = item.value;
    for (const block of stream.convert(record, { line, field: '', fallbackKey: `@L${line}` })) yield blockToItem(block, line, sessionId);
  }
}

/** The first byte that is not white space or a byte order mark, or null for a blank source. */
async function firstNonBlankByte(source: ImportSource): Promise<string | null> {
  // Leaving the loop returns the iterator, which destroys the source stream: only the first chunks are read.
  for await (const chunk of readByteChunks(source)) {
    for (const byte of chunk) {
      if (byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d || byte === 0xef || byte === 0xbb || byte === 0xbf) continue;
      return String.fromCharCode(byte);
    }
  }
  return null;
}

/** Turns events into blocks in stream order, remembering tool actions until their observations arrive. */
class EventStreamConverter {
  /** Tool calls by the id of their action. */
  private readonly calls = new Map<number, PendingCall>();

  convert(record: Record<string, unknown>, at: EventPosition): ConvertedBlock[] {
    const id = Number.isInteger(record.id) ? (record.id as number) : undefined;
    const ctx: BuildContext = { keyPrefix: `oh:${id ?? at.fallbackKey}`, ts: timestampOf(record.timestamp) };
    if (typeof record.action === 'string') return this.convertAction(record, record.action, id, ctx, at.field);
    if (typeof record.observation === 'string') return this.convertObservation(record, record.observation, ctx, at.field);
    return [issue(`${at.field}action`, 'an OpenHands event needs a string action or observation')];
  }

  private convertAction(record: Record<string, unknown>, action: string, id: number | undefined, ctx: BuildContext, p: string): ConvertedBlock[] {
    const args = record.args === undefined ? {} : record.args;
    if (!isRecord(args)) return [issue(`${p}args`, `the args of a ${action} action must be an object`)];
    const text = (name: string): string | undefined => (typeof args[name] === 'string' && args[name] !== '' ? args[name] : undefined);
    const eventOf = (kind: EventKind, content: string, source: string, extra: Extra = {}): ConvertedBlock => ({
      type: 'event',
      event: build(ctx, kind, content, 0, extra),
      source: `${p}${source}`,
    });

    switch (action) {
      case 'message':
        return this.convertMessage(record, args, ctx, p);
      case 'system': {
        if (typeof args.content !== 'string') return [issue(`${p}args.content`, 'missing in a system action')];
        const meta = pickStrings(args, { agent_class: 'agentClass', openhands_version: 'openhandsVersion' });
        return [eventOf('system', args.content, 'args.content', { meta })];
      }
      case 'start': {
        const task = text('task');
        return task === undefined ? [skip(action, 'without a task')] : [eventOf('user', task, 'args.task')];
      }
      case 'think': {
        const thought = text('thought');
        return thought === undefined ? [skip(action, 'without a thought')] : [eventOf('assistant', thought, 'args.thought', { tags: ['thinking'] })];
      }
      case 'finish':
      case 'reject': {
        const name = ['final_thought', 'reason', 'thought'].find((n) => text(n) !== undefined);
        const content = name === undefined ? (typeof record.message === 'string' && record.message !== '' ? record.message : undefined) : text(name);
        if (content === undefined) return [skip(action, 'without a message')];
        const completed = args.task_completed;
        const meta = typeof completed === 'string' || typeof completed === 'boolean' ? { taskCompleted: completed } : {};
        return [eventOf('assistant', content, name === undefined ? 'message' : `args.${name}`, { tags: [action], meta })];
      }
      case 'condensation': {
        const summary = text('summary');
        return summary === undefined ? [skip(action, 'without a summary')] : [eventOf('note', summary, 'args.summary', { tags: ['summary'] })];
      }
      default:
        if (TOOL_ACTIONS.has(action)) return this.convertToolAction(record, action, args, id, ctx, p);
        return [skip(action)];
    }
  }

  private convertMessage(record: Record<string, unknown>, args: Record<string, unknown>, ctx: BuildContext, p: string): ConvertedBlock[] {
    const kind = typeof record.source === 'string' ? MESSAGE_KINDS[record.source] : undefined;
    if (kind === undefined) return [issue(`${p}source`, `expected user, agent or environment, got ${JSON.stringify(record.source)}`)];
    if (typeof args.content !== 'string') return [issue(`${p}args.content`, 'missing in a message action')];
    const fileUrls = Array.isArray(args.file_urls) ? args.file_urls.filter((u): u is string => typeof u === 'string') : [];
    const meta = fileUrls.length > 0 ? { fileUrls } : {};
    const out: ConvertedBlock[] = [];
    if (args.content !== '') out.push({ type: 'event', event: build(ctx, kind, args.content, 0, { meta }), source: `${p}args.content` });
    // `images_urls` is the older spelling (renamed in OpenHands' own deserializer too).
    const imagesField = Array.isArray(args.image_urls) ? 'image_urls' : 'images_urls';
    const images = args[imagesField];
    if (Array.isArray(images)) {
      images.forEach((url: unknown, index) => {
        const field = `${p}args.${imagesField}[${index}]`;
        if (typeof url !== 'string') {
          out.push(issue(field, 'an image url must be a string'));
          return;
        }
        const image = imageUrlParts(url);
        const event = build(ctx, kind, image.content, index + 1, { meta: image.meta });
        out.push({ type: 'event', event: image.binary === undefined ? event : { ...event, binary: image.binary }, source: field });
      });
    }
    if (out.length === 0) out.push({ type: 'skip', reason: 'OpenHands message without content is not imported' });
    return out;
  }

  private convertToolAction(
    record: Record<string, unknown>,
    action: string,
    args: Record<string, unknown>,
    id: number | undefined,
    ctx: BuildContext,
    p: string,
  ): ConvertedBlock[] {
    const metadata = isRecord(record.tool_call_metadata) ? record.tool_call_metadata : {};
    const toolName = typeof metadata.function_name === 'string' && metadata.function_name !== '' ? metadata.function_name : action;
    const llmCallId = typeof metadata.tool_call_id === 'string' && metadata.tool_call_id !== '' ? metadata.tool_call_id : undefined;
    const toolCallId = llmCallId ?? (id === undefined ? undefined : `oh-${id}`);
    if (id !== undefined) this.calls.set(id, { toolCallId, toolName });

    const out: ConvertedBlock[] = [];
    const { thought, ...input } = args;
    // The thought is the model's text next to the call (CodeAct): an assistant event of its own, not call input.
    if (typeof thought === 'string' && thought !== '') {
      out.push({ type: 'event', event: build(ctx, 'assistant', thought, 0), source: `${p}args.thought` });
    }
    const meta = { action, ...(record.source === 'user' ? { source: 'user' } : {}) };
    const event = build(ctx, 'tool_call', JSON.stringify(typeof thought === 'string' ? input : args), 1, { toolName, toolCallId, meta });
    out.push({ type: 'event', event, source: `${p}args` });
    return out;
  }

  private convertObservation(record: Record<string, unknown>, observation: string, ctx: BuildContext, p: string): ConvertedBlock[] {
    const content = record.content ?? '';
    if (typeof content !== 'string') return [issue(`${p}content`, `the content of a ${observation} observation must be a string`)];
    const call = Number.isInteger(record.cause) ? this.calls.get(record.cause as number) : undefined;
    const metadata = isRecord(record.tool_call_metadata) ? record.tool_call_metadata : undefined;
    const eventOf = (kind: EventKind, extra: Extra = {}): ConvertedBlock[] => [{ type: 'event', event: build(ctx, kind, content, 0, extra), source: `${p}content` }];

    if (call !== undefined || (metadata !== undefined && typeof metadata.tool_call_id === 'string' && !BOOKKEEPING_OBSERVATIONS.has(observation))) {
      const toolName = call?.toolName ?? (typeof metadata?.function_name === 'string' ? metadata.function_name : observation);
      const toolCallId = call?.toolCallId ?? (metadata?.tool_call_id as string);
      const isError = observation === 'error';
      const meta = { observation, ...observationMeta(record.extras), ...(isError ? { isError: true } : {}) };
      return eventOf('tool_result', { toolName, toolCallId, tags: isError ? ['error'] : [], meta });
    }
    switch (observation) {
      case 'chat':
        return eventOf('user');
      case 'message':
        return eventOf(record.source === 'user' ? 'user' : 'assistant');
      case 'error':
        return eventOf('system', { tags: ['error'], meta: { observation } });
      case 'condense':
        return content === '' ? [skip(observation, 'without a summary', 'observation')] : eventOf('note', { tags: ['summary'] });
      default:
        if (BOOKKEEPING_OBSERVATIONS.has(observation)) return [skip(observation, '', 'observation')];
        return [skip(observation, 'without a matching action', 'observation')];
    }
  }
}

/** Exit code, path and URL of an observation's extras: what a search over tool results is asked most. */
function observationMeta(extras: unknown): Record<string, unknown> {
  if (!isRecord(extras)) return {};
  const meta: Record<string, unknown> = {};
  const nested = isRecord(extras.metadata) ? extras.metadata.exit_code : undefined;
  // Older streams put exit_code in the extras themselves.
  const exitCode = typeof nested === 'number' ? nested : extras.exit_code;
  if (typeof exitCode === 'number' && Number.isInteger(exitCode)) meta.exitCode = exitCode;
  if (typeof extras.path === 'string' && extras.path !== '') meta.path = extras.path;
  if (typeof extras.url === 'string' && extras.url !== '') meta.url = extras.url;
  return meta;
}

/** The string fields named in `names`, renamed. */
function pickStrings(from: Record<string, unknown>, names: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, as] of Object.entries(names)) {
    const value = from[name];
    if (typeof value === 'string' && value !== '') out[as] = value;
  }
  return out;
}

interface BuildContext {
  keyPrefix: string;
  ts?: string | number;
}

interface Extra {
  toolName?: string | undefined;
  toolCallId?: string | undefined;
  tags?: readonly string[];
  meta?: Record<string, unknown>;
}

function build(ctx: BuildContext, kind: EventKind, content: string, part: number, extra: Extra = {}): EventInput {
  return compactEvent({
    kind,
    content,
    key: `${ctx.keyPrefix}:${part}`,
    ts: ctx.ts,
    toolName: extra.toolName,
    toolCallId: extra.toolCallId,
    tags: [...(extra.tags ?? [])],
    meta: extra.meta,
  });
}

function skip(type: string, why = '', noun: 'action' | 'observation' = 'action'): ConvertedBlock {
  return { type: 'skip', reason: `OpenHands ${noun} '${type}'${why === '' ? '' : ` ${why}`} is not imported` };
}

function issue(field: string, message: string): ConvertedBlock {
  return { type: 'issue', message: `${field}: ${message}`, field };
}
