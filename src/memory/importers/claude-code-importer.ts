import type { EventInput } from '../../model/event.js';
import { blockToItem, convertAnthropicContent } from './anthropic-blocks.js';
import type { ConvertedBlock } from './anthropic-blocks.js';
import { compactEvent, eventItem, isRecord, issueItem, shortSha256, skipItem, timestampOf } from './import-item.js';
import { readJsonObjectLines } from './line-reader.js';
import { MAX_TOOL_USE_RESULT_BYTES } from './types.js';
import type { ImportItem, ImportOptions, ImportSource } from './types.js';

/**
 * Events read before any record named the session (the `summary` lines Claude Code writes at the top of a
 * file carry no `sessionId`) wait for the first record that does. Past this many they are released without
 * a session rather than held: a file of nothing but summaries is not a real session file.
 */
const MAX_EVENTS_AWAITING_SESSION = 1000;

interface AwaitingEvent {
  line: number;
  event: EventInput;
  source?: string;
}

/**
 * Reads a Claude Code session transcript (`~/.claude/projects/<project>/<session>.jsonl`) line by line.
 *
 * - `user` / `assistant` records: `message` is an Anthropic message, converted block by block. Keys are
 *   `cc:<uuid>:<blockIndex>`; `isSidechain` (sub-agent output) adds the tag `sidechain`; `uuid`,
 *   `parentUuid`, `cwd`, `gitBranch`, `isMeta`, `isCompactSummary` and the assistant `model` go to meta.
 *   `toolUseResult` goes to the first tool result's `meta.toolUseResult` when its JSON is under
 *   MAX_TOOL_USE_RESULT_BYTES (the result text is in the content either way).
 * - `summary` records become `note` events tagged `summary`, keyed `cc:summary:<sha256 of the line>`.
 * - `system` records become `system` events (`subtype` and `level` in meta).
 * - Any other record type (`file-history-snapshot`, ...) is skipped and reported as a skip.
 *
 * The session is the record's `sessionId` unless `options.sessionId` overrides it.
 */
export async function* parseClaudeCode(source: ImportSource, options: ImportOptions = {}): AsyncGenerator<ImportItem> {
  const toolNames = new Map<string, string>(options.knownToolNames ?? []);
  let firstSessionId = options.sessionId;
  let awaiting: AwaitingEvent[] = [];

  const release = function* (sessionId: string | undefined): Generator<ImportItem> {
    for (const { event, line, source: from } of awaiting) yield eventItem(event, { line, sessionId, source: from });
    awaiting = [];
  };

  for await (const item of readJsonObjectLines(source, options.onBytes, 'a Claude Code record must be a JSON object')) {
    if (item.type !== 'object') {
      yield item;
      continue;
    }
    const { line, record, bytes } = item.value;
    if (typeof record.type !== 'string') {
      yield issueItem(line, 'type: missing; every Claude Code record has a string type', 'type');
      continue;
    }
    const recordSessionId = typeof record.sessionId === 'string' ? record.sessionId : undefined;
    if (firstSessionId === undefined && recordSessionId !== undefined) {
      firstSessionId = recordSessionId;
      yield* release(firstSessionId);
    }
    const sessionId = options.sessionId ?? recordSessionId ?? firstSessionId;

    const converted = convertRecord(record, bytes, toolNames);
    if (converted === null) {
      yield skipItem(line, `Claude Code record type '${record.type}' is not imported`);
      continue;
    }
    for (const block of converted) {
      if (block.type === 'event' && sessionId === undefined) {
        awaiting.push({ line, event: block.event, source: block.source });
        if (awaiting.length > MAX_EVENTS_AWAITING_SESSION) yield* release(undefined);
      } else {
        yield blockToItem(block, line, sessionId);
      }
    }
  }
  yield* release(firstSessionId);
}

/** The record's events, issues and skips; null for a record type that is not imported. */
function convertRecord(record: Record<string, unknown>, lineBytes: Buffer, toolNames: Map<string, string>): ConvertedBlock[] | null {
  const uuid = typeof record.uuid === 'string' && record.uuid !== '' ? record.uuid : undefined;
  // Claude Code always writes a uuid on user, assistant and system records; a hand-made file may not.
  const keyPrefix = `cc:${uuid ?? `sha:${shortSha256(lineBytes)}`}`;
  const ts = timestampOf(record.timestamp);
  const tags = record.isSidechain === true ? ['sidechain'] : [];

  switch (record.type) {
    case 'summary': {
      if (typeof record.summary !== 'string') return [missing('summary', 'a summary record has no summary text')];
      const meta = typeof record.leafUuid === 'string' ? { leafUuid: record.leafUuid } : {};
      const key = `cc:summary:${shortSha256(lineBytes)}`;
      return [{ type: 'event', event: compactEvent({ kind: 'note', content: record.summary, key, ts, tags: ['summary'], meta }), source: 'summary' }];
    }
    case 'system': {
      if (typeof record.content !== 'string') return [missing('content', 'a system record has no content text')];
      const meta = { ...recordMeta(record), ...pickStrings(record, ['subtype', 'level']) };
      const event = compactEvent({ kind: 'system', content: record.content, key: `${keyPrefix}:0`, ts, tags, meta });
      return [{ type: 'event', event, source: 'content' }];
    }
    case 'user':
    case 'assistant': {
      const message = record.message;
      if (!isRecord(message)) return [missing('message', `a ${record.type} record has no message object`)];
      const role = message.role === 'user' || message.role === 'assistant' ? message.role : record.type;
      const meta = { ...recordMeta(record), ...pickStrings(message, ['model']) };
      const blocks = convertAnthropicContent(message.content, { role, keyPrefix, field: 'message.content', toolNames, ts, tags, meta });
      attachToolUseResult(blocks, record.toolUseResult);
      return blocks;
    }
    default:
      return null;
  }
}

function recordMeta(record: Record<string, unknown>): Record<string, unknown> {
  const meta: Record<string, unknown> = pickStrings(record, ['uuid', 'parentUuid', 'cwd', 'gitBranch']);
  if (record.isMeta === true) meta.isMeta = true;
  if (record.isCompactSummary === true) meta.isCompactSummary = true;
  return meta;
}

/** The named fields that are non-empty strings. */
function pickStrings(from: Record<string, unknown>, names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) {
    const value = from[name];
    if (typeof value === 'string' && value !== '') out[name] = value;
  }
  return out;
}

/** Puts the structured tool result on the record's first tool result event when it is small enough. */
function attachToolUseResult(blocks: ConvertedBlock[], toolUseResult: unknown): void {
  if (toolUseResult === undefined) return;
  const json = JSON.stringify(toolUseResult);
  if (json === undefined || Buffer.byteLength(json, 'utf8') >= MAX_TOOL_USE_RESULT_BYTES) return;
  const target = blocks.find((b) => b.type === 'event' && b.event.kind === 'tool_result');
  if (target?.type !== 'event') return;
  target.event = { ...target.event, meta: { ...target.event.meta, toolUseResult } };
}

function missing(field: string, message: string): ConvertedBlock {
  return { type: 'issue', message: `${field}: ${message}`, field };
}
