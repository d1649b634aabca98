import type { EventInput, InputEventKind as EventKind } from '../../model/event.js';
import { blockToItem } from './anthropic-blocks.js';
import type { ConvertedBlock } from './anthropic-blocks.js';
import { readJsonDocument } from './document-reader.js';
import { base64ByteLength, compactEvent, formatBytes, isRecord, issueItem, skipItem } from './import-item.js';
import { readByteChunks, readJsonObjectLines } from './line-reader.js';
import type { ImportItem, ImportOptions, ImportSource } from './types.js';

const MESSAGE_KINDS: Record<string, EventKind> = { user: 'user', gemini: 'assistant', info: 'system', warning: 'system', error: 'system' };

/** What the chat says about itself: its header (or the whole `.json` record minus the messages). */
interface ChatState {
  sessionId?: string;
  projectHash?: string;
  /** The first workspace directory Gemini CLI recorded: the project root. */
  cwd?: string;
}

/** One message of the chat, in its last recorded version, and the line that version is on. */
interface ChatMessage {
  record: unknown;
  line: number;
  /** Path of the message in the source, for issues: `messages[3]`, or `` for a JSON Lines record. */
  field: string;
}

/** What the chat holds, in the order it was first written: messages, and the points where the user rewound it. */
type ChatEntry = { type: 'message'; message: ChatMessage } | { type: 'rewind'; line: number; messageId: string };

/**
 * Reads a Gemini CLI chat (`~/.gemini/tmp/<project hash>/chats/session-<time>-<id>.json` or `.jsonl`).
 *
 * Two layouts, both from Gemini CLI's ChatRecordingService:
 * - `.json` (until 2026): one indented JSON document, a ConversationRecord `{ sessionId, projectHash, startTime,
 *   lastUpdated, messages: [...], summary?, directories?, kind? }`.
 * - `.jsonl`: a header line `{ sessionId, projectHash, startTime, lastUpdated, kind?, directories? }`, then a line
 *   per message version (a message is written again, whole, each time it changes: its last version counts),
 *   `{ $set: {...} }` updates of the header and `{ $rewindTo: <message id> }` when the user rewinds.
 *
 * A message is `{ id, timestamp, type, content, ... }`: `user` becomes user events, `gemini` assistant events (its
 * `thoughts` an assistant event tagged `thinking`, each of its `toolCalls` a `tool_call` and, when it has a
 * `result`, a `tool_result` with the same call id), `info`, `warning` and `error` system events tagged so. Content is
 * a string or a list of parts: text parts become events, inline data becomes stored bytes, a file reference is kept
 * by URI. Messages a rewind removed stay (they happened, and their tool calls ran); the rewind itself becomes a
 * system event tagged `rewind` where it happened.
 *
 * Keys are `gm:<message id>:<part>` (a rewind `gm:rewind:L<line>`), and nothing an event holds changes when the
 * chat grows (a tool call keeps its message's time, whatever its status), so importing a chat again stores only
 * what is new. Every event gets the chat's `projectHash` (Gemini CLI's sha256 of the project root) and, when the
 * header line of a `.jsonl` chat lists workspace directories (a subagent's does), the first of them as `meta.cwd`.
 * The session is the chat's `sessionId` unless `options.sessionId` overrides it.
 */
export async function* parseGemini(source: ImportSource, options: ImportOptions = {}): AsyncGenerator<ImportItem> {
  const state: ChatState = {};
  const entries: ChatEntry[] = [];
  const isDocument = await startsAsIndentedDocument(source);
  if (isDocument === null) {
    yield issueItem(0, 'the file is empty');
    return;
  }
  if (isDocument) {
    const doc = await readJsonDocument(source, 'gemini', ['messages/*'], options.onBytes);
    if (!doc.isValid) {
      yield { type: 'issue', value: doc.issue };
      return;
    }
    const problem = readChatRecord(doc.value, state, entries, (index) => doc.lineOf(`messages/${index}`), 1);
    if (problem !== null) {
      yield problem;
      return;
    }
  } else {
    const byId = new Map<string, ChatMessage>();
    let hasHeader = false;
    for await (const item of readJsonObjectLines(source, options.onBytes, 'a Gemini CLI chat line must be a JSON object')) {
      if (item.type !== 'object') {
        yield item;
        continue;
      }
      const { line, record } = item.value;
      if (Array.isArray(record.messages) && !hasHeader) {
        // A `.json` chat written on one line.
        const problem = readChatRecord(record, state, entries, () => line, line);
        if (problem !== null) yield problem;
        continue;
      }
      if (typeof record.$rewindTo === 'string') {
        entries.push({ type: 'rewind', line, messageId: record.$rewindTo });
        continue;
      }
      if (isRecord(record.$set)) {
        // A `$set` of the whole message list re-states the messages (with large tool outputs masked): the message
        // lines hold them already, unmasked. Only a message that has no line of its own is taken from it.
        if (Array.isArray(record.$set.messages)) {
          for (const message of record.$set.messages) {
            if (isRecord(message) && typeof message.id === 'string' && !byId.has(message.id)) {
              const entry: ChatMessage = { record: message, line, field: '$set.messages' };
              byId.set(message.id, entry);
              entries.push({ type: 'message', message: entry });
            }
          }
        }
        continue;
      }
      if (typeof record.id === 'string' && typeof record.type === 'string') {
        // A later version replaces an earlier one in place: the message keeps the place of its first line.
        const known = byId.get(record.id);
        if (known !== undefined) Object.assign(known, { record, line, field: '' });
        else {
          const entry: ChatMessage = { record, line, field: '' };
          byId.set(record.id, entry);
          entries.push({ type: 'message', message: entry });
        }
        continue;
      }
      if (typeof record.sessionId === 'string' && !hasHeader) {
        hasHeader = true;
        readHeader(record, state, true);
        continue;
      }
      yield skipItem(line, 'Gemini CLI chat line without a message id and type is not imported');
    }
  }

  const sessionId = options.sessionId ?? state.sessionId;
  for (const entry of entries) {
    if (entry.type === 'rewind') {
      const content = `The user rewound the conversation to before message ${entry.messageId}; what follows replaces it`;
      const ctx: MessageContext = { keyPrefix: 'gm:rewind', tags: [], meta: baseMeta(state) };
      yield blockToItem({ type: 'event', event: build(ctx, 'system', content, `L${entry.line}`, { tags: ['rewind'] }), source: '$rewindTo' }, entry.line, sessionId);
      continue;
    }
    for (const block of convertMessage(entry.message, state)) yield blockToItem(block, entry.message.line, sessionId);
  }
}

/**
 * Whether the source is an indented JSON document (its first line is a lone `{`, as `JSON.stringify(record, null,
 * 2)` writes it) rather than JSON Lines; null for a blank source.
 */
async function startsAsIndentedDocument(source: ImportSource): Promise<boolean | null> {
  let isAfterBrace = false;
  // Leaving the loop returns the iterator, which destroys the source stream: only the first chunks are read.
  for await (const chunk of readByteChunks(source)) {
    for (const byte of chunk) {
      const isBlank = byte === 0x20 || byte === 0x09;
      if (isAfterBrace) {
        if (byte === 0x0a || byte === 0x0d) return true;
        if (!isBlank) return false;
      } else if (byte === 0x7b) isAfterBrace = true;
      // White space, line breaks and the bytes of a UTF-8 byte order mark before the first character.
      else if (!isBlank && byte !== 0x0a && byte !== 0x0d && byte !== 0xef && byte !== 0xbb && byte !== 0xbf) return false;
    }
  }
  return isAfterBrace ? false : null;
}

/** The messages of a whole ConversationRecord; an issue when it is not one. */
function readChatRecord(
  value: unknown,
  state: ChatState,
  entries: ChatEntry[],
  lineOf: (index: number) => number,
  line: number,
): ImportItem | null {
  if (!isRecord(value) || !Array.isArray(value.messages)) {
    return issueItem(line, 'messages: a Gemini CLI chat is an object with a messages array', 'messages');
  }
  readHeader(value, state, false);
  value.messages.forEach((message: unknown, index) => {
    entries.push({ type: 'message', message: { record: message, line: lineOf(index), field: `messages[${index}]` } });
  });
  return null;
}

/**
 * The session and project of the chat. Directories only from a `.jsonl` header line, written once when the chat
 * starts: a `/dir add` later (a `$set`, or a `.json` chat written again) would give events stored before another
 * `meta.cwd`, and a chat imported again would conflict with itself.
 */
function readHeader(header: Record<string, unknown>, state: ChatState, isHeaderLine: boolean): void {
  if (typeof header.sessionId === 'string' && header.sessionId !== '') state.sessionId = header.sessionId;
  if (typeof header.projectHash === 'string' && header.projectHash !== '') state.projectHash = header.projectHash;
  const directories = header.directories;
  if (isHeaderLine && Array.isArray(directories) && typeof directories[0] === 'string' && directories[0] !== '') state.cwd = directories[0];
}

function baseMeta(state: ChatState): Record<string, unknown> {
  const meta: Record<string, unknown> = {};
  if (state.cwd !== undefined) meta.cwd = state.cwd;
  if (state.projectHash !== undefined) meta.projectHash = state.projectHash;
  return meta;
}

interface MessageContext {
  keyPrefix: string;
  ts?: string;
  tags: string[];
  meta: Record<string, unknown>;
}

function convertMessage(message: ChatMessage, state: ChatState): ConvertedBlock[] {
  const { record } = message;
  const at = (name: string): string => (message.field === '' ? name : `${message.field}.${name}`);
  if (!isRecord(record)) return [issue(message.field, 'a Gemini CLI message must be an object')];
  if (typeof record.id !== 'string' || record.id === '') return [issue(at('id'), 'missing; every Gemini CLI message has a string id')];
  const type = record.type;
  const kind = typeof type === 'string' ? MESSAGE_KINDS[type] : undefined;
  if (kind === undefined) return [{ type: 'skip', reason: `Gemini CLI message type ${JSON.stringify(type)} is not imported` }];

  const ctx: MessageContext = { keyPrefix: `gm:${record.id}`, ts: typeof record.timestamp === 'string' ? record.timestamp : undefined, tags: [], meta: baseMeta(state) };
  const modelMeta = typeof record.model === 'string' && record.model !== '' ? { model: record.model } : {};

  const out: ConvertedBlock[] = [];
  if (type === 'gemini') out.push(...convertThoughts(record.thoughts, ctx, at('thoughts')));
  const systemTags = kind === 'system' ? [type as string] : [];
  out.push(...convertParts(record.content, kind, ctx, at('content'), 'c', { tags: systemTags, meta: kind === 'assistant' ? modelMeta : {} }));
  if (type === 'gemini' && record.toolCalls !== undefined) {
    if (!Array.isArray(record.toolCalls)) return [...out, issue(at('toolCalls'), 'expected an array of tool calls')];
    record.toolCalls.forEach((call: unknown, index) => out.push(...convertToolCall(call, ctx, at(`toolCalls[${index}]`), modelMeta)));
  }
  if (out.length === 0) out.push({ type: 'skip', reason: 'Gemini CLI message without content is not imported' });
  return out;
}

/** Thought summaries (`{ subject, description }`) as one assistant event tagged `thinking`. */
function convertThoughts(thoughts: unknown, ctx: MessageContext, field: string): ConvertedBlock[] {
  if (!Array.isArray(thoughts)) return [];
  const texts = thoughts.filter(isRecord).flatMap((t) => {
    const subject = typeof t.subject === 'string' ? t.subject.trim() : '';
    const description = typeof t.description === 'string' ? t.description.trim() : '';
    const text = subject !== '' && description !== '' ? `${subject}: ${description}` : subject || description;
    return text === '' ? [] : [text];
  });
  if (texts.length === 0) return [];
  return [{ type: 'event', event: build(ctx, 'assistant', texts.join('\n\n'), 'thoughts', { tags: ['thinking'] }), source: field }];
}

interface Extra {
  toolName?: string;
  toolCallId?: string;
  tags?: readonly string[];
  meta?: Record<string, unknown>;
  ts?: string;
}

/**
 * Content as Gemini's API takes it (PartListUnion): a string, a part, or a list of parts. Text parts become events
 * of `kind`; inline data its bytes; a file reference its URI; function calls and responses are left to the tool
 * calls, which hold them with their results.
 */
function convertParts(content: unknown, kind: EventKind, ctx: MessageContext, field: string, part: string, extra: Extra): ConvertedBlock[] {
  if (content === undefined || content === null || content === '') return [];
  if (typeof content === 'string') return [{ type: 'event', event: build(ctx, kind, content, `${part}0`, extra), source: field }];
  const parts = Array.isArray(content) ? content : [content];
  const out: ConvertedBlock[] = [];
  parts.forEach((p: unknown, index) => {
    const partField = Array.isArray(content) ? `${field}[${index}]` : field;
    const key = `${part}${index}`;
    if (typeof p === 'string') {
      if (p !== '') out.push({ type: 'event', event: build(ctx, kind, p, key, extra), source: partField });
      return;
    }
    if (!isRecord(p)) {
      out.push(issue(partField, 'a content part must be a string or an object'));
      return;
    }
    if (typeof p.text === 'string') {
      if (p.text === '') return;
      // A part marked `thought` is the model's reasoning, sent back with the content.
      const tags = p.thought === true ? [...(extra.tags ?? []), 'thinking'] : extra.tags;
      out.push({ type: 'event', event: build(ctx, kind, p.text, key, { ...extra, tags }), source: `${partField}.text` });
      return;
    }
    if (isRecord(p.inlineData) && typeof p.inlineData.data === 'string') {
      const mediaType = typeof p.inlineData.mimeType === 'string' && p.inlineData.mimeType !== '' ? p.inlineData.mimeType : 'application/octet-stream';
      const what = mediaType.startsWith('image/') ? 'image' : 'file';
      const event = build(ctx, kind, `[${what}: ${mediaType}, ${formatBytes(base64ByteLength(p.inlineData.data))}]`, key, extra);
      out.push({ type: 'event', event: { ...event, binary: { base64: p.inlineData.data, mediaType } }, source: `${partField}.inlineData` });
      return;
    }
    if (isRecord(p.fileData) && typeof p.fileData.fileUri === 'string') {
      const meta = { ...extra.meta, url: p.fileData.fileUri, ...(typeof p.fileData.mimeType === 'string' ? { mediaType: p.fileData.mimeType } : {}) };
      out.push({ type: 'event', event: build(ctx, kind, `[file: ${p.fileData.fileUri}]`, key, { ...extra, meta }), source: `${partField}.fileData` });
      return;
    }
    if (isRecord(p.executableCode) && typeof p.executableCode.code === 'string') {
      out.push({ type: 'event', event: build(ctx, kind, p.executableCode.code, key, { ...extra, tags: [...(extra.tags ?? []), 'code'] }), source: `${partField}.executableCode` });
      return;
    }
    if (isRecord(p.codeExecutionResult) && typeof p.codeExecutionResult.output === 'string') {
      const event = build(ctx, kind, p.codeExecutionResult.output, key, { ...extra, tags: [...(extra.tags ?? []), 'code-output'] });
      out.push({ type: 'event', event, source: `${partField}.codeExecutionResult` });
      return;
    }
    if (p.functionCall !== undefined || p.functionResponse !== undefined) return;
    out.push({ type: 'skip', reason: `Gemini CLI content part with keys ${Object.keys(p).sort().join(', ') || '(none)'} is not imported` });
  });
  return out;
}

/**
 * One tool call: a `tool_call` of its `args` as JSON and, when it has a `result`, a `tool_result` with the same call
 * id. The result is the function response Gemini CLI sent back to the model: its `output` (or `error`, tagged
 * `error`), any other response as JSON, and the result's other parts (inline data, text) as events of their own.
 */
function convertToolCall(call: unknown, ctx: MessageContext, field: string, modelMeta: Record<string, unknown>): ConvertedBlock[] {
  if (!isRecord(call)) return [issue(field, 'a tool call must be an object')];
  if (typeof call.id !== 'string' || call.id === '') return [issue(`${field}.id`, 'missing; a tool call needs a string id')];
  if (typeof call.name !== 'string' || call.name === '') return [issue(`${field}.name`, 'missing; a tool call needs a tool name')];
  const ts = typeof call.timestamp === 'string' ? call.timestamp : undefined;
  const status = typeof call.status === 'string' && call.status !== '' ? call.status : undefined;
  // The call is written when it is scheduled and again when it is done, its status and time changed: the call
  // event takes its message's time and no status, so that it is the same event either way.
  const callExtra: Extra = { toolName: call.name, toolCallId: call.id, meta: modelMeta };
  const out: ConvertedBlock[] = [
    { type: 'event', event: build(ctx, 'tool_call', JSON.stringify(call.args ?? {}), `tc:${call.id}`, callExtra), source: `${field}.args` },
  ];

  const result = resultOf(call.result);
  const isError = status === 'error' || result.isError;
  const resultExtra: Extra = {
    toolName: call.name,
    toolCallId: call.id,
    ts,
    tags: isError ? ['error'] : [],
    meta: { ...(status !== undefined ? { status } : {}), ...(isError ? { isError: true } : {}) },
  };
  let text = result.text;
  // Without a function response (a call cancelled before it ran), what Gemini CLI showed the user is the result.
  if (text === undefined && typeof call.resultDisplay === 'string' && call.resultDisplay !== '') text = call.resultDisplay;
  if (text !== undefined) out.push({ type: 'event', event: build(ctx, 'tool_result', text, `tr:${call.id}`, resultExtra), source: `${field}.result` });
  if (result.otherParts.length > 0) {
    out.push(...convertParts(result.otherParts, 'tool_result', ctx, `${field}.result`, `tr:${call.id}:`, resultExtra));
  }
  return out;
}

/** The text of a tool call's result, whether it reports an error, and its parts other than the function response. */
function resultOf(result: unknown): { text?: string; isError: boolean; otherParts: unknown[] } {
  if (result === undefined || result === null) return { isError: false, otherParts: [] };
  if (typeof result === 'string') return { text: result, isError: false, otherParts: [] };
  const parts = Array.isArray(result) ? result : [result];
  let text: string | undefined;
  let isError = false;
  const otherParts: unknown[] = [];
  for (const part of parts) {
    const response = isRecord(part) && isRecord(part.functionResponse) ? part.functionResponse.response : undefined;
    if (response === undefined) {
      otherParts.push(part);
      continue;
    }
    let piece: string;
    if (isRecord(response) && typeof response.output === 'string') piece = response.output;
    else if (isRecord(response) && typeof response.error === 'string') {
      piece = response.error;
      isError = true;
    } else piece = JSON.stringify(response);
    text = text === undefined ? piece : `${text}\n${piece}`;
  }
  return { ...(text !== undefined ? { text } : {}), isError, otherParts };
}

function build(ctx: MessageContext, kind: EventKind, content: string, part: string, extra: Extra = {}): EventInput {
  return compactEvent({
    kind,
    content,
    key: `${ctx.keyPrefix}:${part}`,
    ts: extra.ts ?? ctx.ts,
    toolName: extra.toolName,
    toolCallId: extra.toolCallId,
    tags: [...new Set([...ctx.tags, ...(extra.tags ?? [])])],
    meta: { ...ctx.meta, ...extra.meta },
  });
}

function issue(field: string, message: string): ConvertedBlock {
  return { type: 'issue', message: `${field}: ${message}`, field };
}
