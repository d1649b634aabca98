import type { EventInput, InputEventKind as EventKind } from '../../model/event.js';
import { blockToItem } from './anthropic-blocks.js';
import { SdkEventConverter } from './openhands-sdk-events.js';
import type { ConvertedBlock } from './anthropic-blocks.js';
import { readJsonDocument } from './document-reader.js';
import { imageUrlParts } from './image-url.js';
import { compactEvent, isRecord, issueItem, shortSha256, timestampOf } from './import-item.js';
import { readByteChunks, readJsonObjectLines } from './line-reader.js';
import { CONVERSATION_SESSION_SEPARATOR } from './types.js';
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
  /** Prefix of field paths in issues: `` for a JSONL line, `[3].` for an array element, `history[3].` in an instance. */
  field: string;
  /** Key base for an event without an integer `id`: `@L<line>` (JSONL), `@<index>` (array), `@<index>a` (a pair). */
  fallbackKey: string;
  /** For an observation without a `cause`: the key of the action it answers (the action of its pair in an old history). */
  causeKey?: string;
}

/** Characters a session id may not hold (SESSION_ID_PATTERN), replaced in one made from an instance id. */
const NOT_IN_SESSION_ID = /[^A-Za-z0-9._:@-]+/g;

/** A tool call waiting for its observation. */
interface PendingCall {
  toolCallId: string | undefined;
  toolName: string;
}

/**
 * Reads an OpenHands event stream: a JSON array of events (a saved trajectory) or one event per line; or an
 * OpenHands evaluation output (`output.jsonl` of `evaluation/benchmarks/*`): one instance per line, each
 * `{ instance_id, instruction, history, metadata, test_result, error, ... }` (EvalOutput).
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
 * reported as skips by type. Keys are `oh:<id>:<part>`. The working directory a command observation reports
 * (`extras.metadata.working_dir`) goes to `meta.cwd` of that event and the ones after it. Events of an event stream
 * carry no session id: it is `options.sessionId`, else the caller's default.
 *
 * Each instance of an evaluation output is a session of its own, named after its `instance_id` (characters a
 * session id cannot hold become `-`, and then a hash of the id keeps two such ids apart), or `<options.sessionId>:
 * <instance id>`. Its `history` is read as above: a list of events, or (older outputs) of `[action, observation]`
 * pairs, an observation without a `cause` answering the action of its pair, or (OpenHands 1.x) a list of the agent
 * SDK's events (see SdkEventConverter). The `instruction` becomes a user event
 * when no user message in the history holds it, `test_result.git_patch` a `note` tagged `patch`, and `error` a system
 * event tagged `error`; the model of `metadata.llm_config` goes to assistant and tool call events' meta.
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
    if (isEvalOutput(record)) {
      yield* convertInstance(record, line, sessionId);
      continue;
    }
    for (const block of stream.convert(record, { line, field: '', fallbackKey: `@L${line}` })) yield blockToItem(block, line, sessionId);
  }
}

/** An evaluation output line: it names its instance, and events have no `instance_id`. */
function isEvalOutput(record: Record<string, unknown>): boolean {
  return 'instance_id' in record && !('action' in record) && !('observation' in record);
}

/** One instance of an evaluation output as a session of its own. */
function* convertInstance(record: Record<string, unknown>, line: number, base: string | undefined): Generator<ImportItem> {
  const instanceId = record.instance_id;
  if ((typeof instanceId !== 'string' || instanceId === '') && typeof instanceId !== 'number') {
    yield issueItem(line, 'instance_id: an evaluation output line needs a string instance id', 'instance_id');
    return;
  }
  const sessionId = instanceSessionId(String(instanceId), base);
  const history = record.history ?? [];
  if (!Array.isArray(history)) {
    yield issueItem(line, 'history: expected an array of OpenHands events', 'history');
    return;
  }
  const metadata = isRecord(record.metadata) ? record.metadata : {};
  // `llm_config` in OpenHands 0.x, `llm` in the SDK's benchmarks.
  const llmConfig = isRecord(metadata.llm_config) ? metadata.llm_config : isRecord(metadata.llm) ? metadata.llm : {};
  const model = typeof llmConfig.model === 'string' && llmConfig.model !== '' ? llmConfig.model : undefined;
  const stream = new EventStreamConverter(model);
  const sdkStream = new SdkEventConverter(model);
  const emit = (blocks: ConvertedBlock[]): ImportItem[] => blocks.map((block) => blockToItem(block, line, sessionId));
  const ctx: BuildContext = { keyPrefix: 'oh:instance' };

  const hasUserMessage = history.flat().some((e: unknown) => isRecord(e) && (e.action === 'message' || e.kind === 'MessageEvent') && e.source === 'user');
  if (!hasUserMessage && typeof record.instruction === 'string' && record.instruction !== '') {
    yield* emit([{ type: 'event', event: build(ctx, 'user', record.instruction, 0, { tags: ['instruction'] }), source: 'instruction' }]);
  }
  for (const [index, entry] of history.entries()) {
    const field = `history[${index}]`;
    if (Array.isArray(entry)) {
      // An older output: `[action, observation]` pairs.
      const [action, observation] = entry;
      if (!isRecord(action) || !isRecord(observation) || entry.length !== 2) {
        yield issueItem(line, `${field}: expected an OpenHands event or an [action, observation] pair`, field);
        continue;
      }
      yield* emit(stream.convert(action, { line, field: `${field}[0].`, fallbackKey: `@${index}a` }));
      yield* emit(stream.convert(observation, { line, field: `${field}[1].`, fallbackKey: `@${index}o`, causeKey: keyOf(action, `@${index}a`) }));
    } else if (isRecord(entry) && isSdkEvent(entry)) {
      yield* emit(sdkStream.convert(entry, `${field}.`, `@${index}`));
    } else if (isRecord(entry)) {
      yield* emit(stream.convert(entry, { line, field: `${field}.`, fallbackKey: `@${index}` }));
    } else {
      yield issueItem(line, `${field}: an OpenHands event must be an object`, field);
    }
  }
  const testResult = isRecord(record.test_result) ? record.test_result : {};
  const blocks: ConvertedBlock[] = [];
  if (typeof testResult.git_patch === 'string' && testResult.git_patch.trim() !== '') {
    blocks.push({ type: 'event', event: build(ctx, 'note', testResult.git_patch, 1, { tags: ['patch'] }), source: 'test_result.git_patch' });
  }
  if (typeof record.error === 'string' && record.error !== '') {
    blocks.push({ type: 'event', event: build(ctx, 'system', record.error, 2, { tags: ['error'] }), source: 'error' });
  }
  yield* emit(blocks);
}

/**
 * The session of an instance. SWE-bench ids (`django__django-11099`) are session ids as they are; other benchmarks'
 * ids may hold `/` or spaces (`HumanEval/0`), which become `-`, with a hash of the id so that no two ids meet.
 */
function instanceSessionId(instanceId: string, base: string | undefined): string {
  const prefix = base === undefined ? '' : `${base}${CONVERSATION_SESSION_SEPARATOR}`;
  const clean = instanceId.replace(NOT_IN_SESSION_ID, '-').replace(/^[^A-Za-z0-9]+/, '');
  const room = 128 - prefix.length;
  if (clean === instanceId && clean.length <= room) return `${prefix}${clean}`;
  const hash = `-${shortSha256(instanceId).slice(0, 8)}`;
  return `${prefix}${clean.slice(0, Math.max(0, room - hash.length))}${hash}`.replace(/^-/, 'i-');
}

/** An event of the OpenHands agent SDK (1.x): a `kind` such as `ActionEvent`, where older events have an action or observation. */
function isSdkEvent(record: Record<string, unknown>): boolean {
  return typeof record.kind === 'string' && typeof record.action !== 'string' && typeof record.observation !== 'string';
}

/** The key a tool call of this action is remembered by: its integer id, else its place in the file. */
function keyOf(record: Record<string, unknown>, fallbackKey: string): string {
  return Number.isInteger(record.id) ? String(record.id) : fallbackKey;
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
  /** Tool calls by the key of their action (see keyOf). */
  private readonly calls = new Map<string, PendingCall>();
  /** The working directory the latest command observation reported. */
  private cwd: string | undefined;

  /** @param model the LLM of the run, for assistant and tool call events' meta (an evaluation output names it). */
  constructor(private readonly model?: string) {}

  convert(record: Record<string, unknown>, at: EventPosition): ConvertedBlock[] {
    const id = Number.isInteger(record.id) ? (record.id as number) : undefined;
    this.noteWorkingDir(record.extras);
    const ctx: BuildContext = { keyPrefix: `oh:${id ?? at.fallbackKey}`, ts: timestampOf(record.timestamp), cwd: this.cwd, model: this.model };
    if (typeof record.action === 'string') return this.convertAction(record, record.action, keyOf(record, at.fallbackKey), ctx, at.field);
    if (typeof record.observation === 'string') {
      const causeKey = Number.isInteger(record.cause) ? String(record.cause) : at.causeKey;
      return this.convertObservation(record, record.observation, causeKey, ctx, at.field);
    }
    return [issue(`${at.field}action`, 'an OpenHands event needs a string action or observation')];
  }

  /** A command observation's `extras.metadata.working_dir` (CmdOutputMetadata): where the shell is from now on. */
  private noteWorkingDir(extras: unknown): void {
    const metadata = isRecord(extras) && isRecord(extras.metadata) ? extras.metadata : undefined;
    if (typeof metadata?.working_dir === 'string' && metadata.working_dir !== '') this.cwd = metadata.working_dir;
  }

  private convertAction(record: Record<string, unknown>, action: string, callKey: string, ctx: BuildContext, p: string): ConvertedBlock[] {
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
        if (TOOL_ACTIONS.has(action)) return this.convertToolAction(record, action, args, callKey, ctx, p);
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
    callKey: string,
    ctx: BuildContext,
    p: string,
  ): ConvertedBlock[] {
    const metadata = isRecord(record.tool_call_metadata) ? record.tool_call_metadata : {};
    const toolName = typeof metadata.function_name === 'string' && metadata.function_name !== '' ? metadata.function_name : action;
    const llmCallId = typeof metadata.tool_call_id === 'string' && metadata.tool_call_id !== '' ? metadata.tool_call_id : undefined;
    // An action without an id is paired only through its place (an older history's pair): `oh-@<place>`.
    const toolCallId = llmCallId ?? `oh-${callKey}`;
    this.calls.set(callKey, { toolCallId, toolName });

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

  private convertObservation(record: Record<string, unknown>, observation: string, causeKey: string | undefined, ctx: BuildContext, p: string): ConvertedBlock[] {
    const content = record.content ?? '';
    if (typeof content !== 'string') return [issue(`${p}content`, `the content of a ${observation} observation must be a string`)];
    const call = causeKey === undefined ? undefined : this.calls.get(causeKey);
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
  /** The shell's working directory at this event, when known. */
  cwd?: string | undefined;
  /** The run's LLM, for assistant and tool call events. */
  model?: string | undefined;
}

interface Extra {
  toolName?: string | undefined;
  toolCallId?: string | undefined;
  tags?: readonly string[];
  meta?: Record<string, unknown>;
}

function build(ctx: BuildContext, kind: EventKind, content: string, part: number, extra: Extra = {}): EventInput {
  const meta: Record<string, unknown> = {};
  if (ctx.cwd !== undefined) meta.cwd = ctx.cwd;
  if (ctx.model !== undefined && (kind === 'assistant' || kind === 'tool_call')) meta.model = ctx.model;
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

function skip(type: string, why = '', noun: 'action' | 'observation' = 'action'): ConvertedBlock {
  return { type: 'skip', reason: `OpenHands ${noun} '${type}'${why === '' ? '' : ` ${why}`} is not imported` };
}

function issue(field: string, message: string): ConvertedBlock {
  return { type: 'issue', message: `${field}: ${message}`, field };
}
