import { EngramError } from '../../errors.js';
import type { EventInput, InputEventKind as EventKind } from '../../model/event.js';
import { readJsonDocument } from './document-reader.js';
import { base64ByteLength, compactEvent, eventItem, formatBytes, isRecord, issueItem, skipItem, timestampOf } from './import-item.js';
import { CONVERSATION_SESSION_SEPARATOR } from './types.js';
import type { ImportItem, ImportOptions, ImportSource } from './types.js';

/** A conversation found in the document: its messages and where they are. */
interface Conversation {
  messages: unknown[];
  /** Locator path of the messages array (`messages`, `3/traj`, or `` for a bare array). */
  path: string;
  /** The same as a field path for issues (`messages`, `[3].traj`). */
  field: string;
}

const ROLE_KINDS: Record<string, EventKind> = {
  system: 'system',
  developer: 'system',
  user: 'user',
  assistant: 'assistant',
  tool: 'tool_result',
  function: 'tool_result', // the deprecated function-calling reply
};

/**
 * Reads OpenAI Chat Completions messages. The document is an array of messages, `{ messages: [...] }`, or
 * an array of conversations, each `{ messages: [...] }` or `{ traj: [...] }` (tau-bench runs; their other
 * fields are ignored). Conversation `i` of such an array goes to session `<options.sessionId>:<i>`, even
 * when there is only one, so that appending conversations to the file never moves the earlier ones.
 *
 * Keys are `oa:<conversationIndex>:<messageIndex>:<partIndex>` (conversation 0 for a single one). Parts
 * are numbered per message: content parts by their array index (a string content is part 0), then the
 * refusal, then each tool call in order.
 *
 * @throws EngramError INVALID_INPUT (field `sessionId`) for an array of conversations without
 *   `options.sessionId`: there is no other name for one session per conversation.
 */
export async function* parseOpenAi(source: ImportSource, options: ImportOptions = {}): AsyncGenerator<ImportItem> {
  const patterns = ['*', 'messages/*', 'traj/*', '*/messages/*', '*/traj/*'];
  const doc = await readJsonDocument(source, 'openai', patterns, options.onBytes);
  if (!doc.isValid) {
    yield { type: 'issue', value: doc.issue };
    return;
  }
  const found = findConversations(doc.value);
  if (!found.isValid) {
    yield issueItem(1, found.message, found.field);
    return;
  }
  const base = options.sessionId;
  if (found.isList && base === undefined) {
    throw new EngramError(
      'INVALID_INPUT',
      `the document holds ${found.conversations.length} conversations; pass a base session id to import each into its own session`,
      { field: 'sessionId' },
    );
  }
  for (const [index, conversation] of found.conversations.entries()) {
    const line = doc.lineOf(String(index));
    if (conversation === null) {
      yield issueItem(line, `[${index}]: a conversation needs a messages or traj array`, `[${index}]`);
      continue;
    }
    const sessionId = found.isList ? `${base}${CONVERSATION_SESSION_SEPARATOR}${index}` : base;
    const toolNames = new Map<string, string>();
    if (conversation.messages.length === 0) yield issueItem(line, `${conversation.field}: the conversation holds no messages`, conversation.field);
    for (const [messageIndex, message] of conversation.messages.entries()) {
      const at = conversation.path === '' ? String(messageIndex) : `${conversation.path}/${messageIndex}`;
      const messageLine = doc.lineOf(at);
      const field = `${conversation.field}[${messageIndex}]`;
      const converted = convertMessage(message, { keyPrefix: `oa:${index}:${messageIndex}`, field, toolNames });
      if (converted.length === 0) yield skipItem(messageLine, `${field}: the message has no content and no tool calls`);
      for (const out of converted) {
        if (out.type === 'issue') yield issueItem(messageLine, out.message, out.field);
        else yield eventItem(out.event, { line: messageLine, sessionId, source: out.source });
      }
    }
  }
}

type Found =
  | { isValid: true; isList: boolean; conversations: Array<Conversation | null> }
  | { isValid: false; message: string; field?: string };

function findConversations(root: unknown): Found {
  const shape = 'expected an array of messages, an object with a messages array, or an array of conversations';
  if (isRecord(root)) {
    const single = conversationOf(root, '', '');
    return single === null ? { isValid: false, message: shape, field: 'messages' } : { isValid: true, isList: false, conversations: [single] };
  }
  if (!Array.isArray(root)) return { isValid: false, message: shape };
  if (root.length === 0) return { isValid: false, message: 'the document holds no messages' };
  // The first object decides: a message has a role, a conversation has messages or traj.
  const first = root.find(isRecord);
  const isList = first !== undefined && !('role' in first) && ('messages' in first || 'traj' in first);
  if (!isList) return { isValid: true, isList: false, conversations: [{ messages: root, path: '', field: '' }] };
  return { isValid: true, isList: true, conversations: root.map((c, i) => (isRecord(c) ? conversationOf(c, `${i}/`, `[${i}].`) : null)) };
}

function conversationOf(value: Record<string, unknown>, pathPrefix: string, fieldPrefix: string): Conversation | null {
  for (const name of ['messages', 'traj']) {
    const messages = value[name];
    if (Array.isArray(messages)) return { messages, path: `${pathPrefix}${name}`, field: `${fieldPrefix}${name}` };
  }
  return null;
}

type Converted = { type: 'event'; event: EventInput; source: string } | { type: 'issue'; message: string; field: string };

interface MessageContext {
  keyPrefix: string;
  field: string;
  /** Tool names by call id within the conversation, for the replies. */
  toolNames: Map<string, string>;
}

function convertMessage(message: unknown, ctx: MessageContext): Converted[] {
  const { field } = ctx;
  if (!isRecord(message)) return [{ type: 'issue', message: `${field}: a message must be an object`, field }];
  const role = message.role;
  const kind = typeof role === 'string' ? ROLE_KINDS[role] : undefined;
  if (kind === undefined) {
    const roles = Object.keys(ROLE_KINDS).join(', ');
    return [{ type: 'issue', message: `${field}.role: expected one of ${roles}, got ${JSON.stringify(role)}`, field: `${field}.role` }];
  }
  const base: Omit<EventInput, 'content' | 'kind'> = { ts: timestampOf(message.timestamp) };
  if (role === 'developer') base.meta = { role: 'developer' };
  if (kind === 'tool_result') {
    const callId = typeof message.tool_call_id === 'string' ? message.tool_call_id : undefined;
    const name = typeof message.name === 'string' ? message.name : undefined;
    base.toolCallId = callId;
    base.toolName = (callId === undefined ? undefined : ctx.toolNames.get(callId)) ?? name;
  } else if (typeof message.name === 'string') {
    base.meta = { ...base.meta, name: message.name }; // a participant name, not a tool
  }

  const out: Converted[] = [];
  let part = 0;
  const push = (partKind: EventKind, content: string, source: string, extra: Partial<EventInput> = {}): void => {
    const meta = { ...base.meta, ...extra.meta };
    const event = compactEvent({ ...base, ...extra, kind: partKind, content, key: `${ctx.keyPrefix}:${part}`, meta });
    out.push({ type: 'event', event, source });
  };

  const toolCalls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  const hasCalls = toolCalls.length > 0 || isRecord(message.function_call);
  const content = message.content;
  if (typeof content === 'string') {
    // An assistant turn that only calls tools often carries content "" next to its calls: nothing to keep.
    if (content !== '' || !hasCalls) push(kind, content, `${field}.content`);
    part = 1;
  } else if (Array.isArray(content)) {
    content.forEach((item: unknown, index) => {
      part = index;
      out.push(...convertPart(item, kind, `${field}.content[${index}]`, push));
    });
    part = content.length;
  } else if (content !== null && content !== undefined) {
    out.push({ type: 'issue', message: `${field}.content: expected a string, null or an array of parts`, field: `${field}.content` });
  }

  if (typeof message.refusal === 'string' && message.refusal !== '') {
    push('assistant', message.refusal, `${field}.refusal`, { tags: ['refusal'] });
    part += 1;
  }
  toolCalls.forEach((call: unknown, index) => {
    out.push(...convertToolCall(call, `${field}.tool_calls[${index}]`, ctx, push));
    part += 1;
  });
  if (isRecord(message.function_call)) {
    const call = { type: 'function', function: message.function_call };
    out.push(...convertToolCall(call, `${field}.function_call`, ctx, push));
  }
  return out;
}

type Push = (kind: EventKind, content: string, source: string, extra?: Partial<EventInput>) => void;

function convertPart(part: unknown, kind: EventKind, field: string, push: Push): Converted[] {
  const bad = (message: string, at = field): Converted[] => [{ type: 'issue', message: `${at}: ${message}`, field: at }];
  if (!isRecord(part) || typeof part.type !== 'string') return bad('a content part needs a string type', `${field}.type`);
  switch (part.type) {
    case 'text':
      if (typeof part.text !== 'string') return bad('missing in a text part', `${field}.text`);
      push(kind, part.text, field);
      return [];
    case 'refusal':
      if (typeof part.refusal !== 'string') return bad('missing in a refusal part', `${field}.refusal`);
      push('assistant', part.refusal, field, { tags: ['refusal'] });
      return [];
    case 'image_url': {
      const image = part.image_url;
      const url = isRecord(image) ? image.url : undefined;
      if (typeof url !== 'string') return bad('missing in an image_url part', `${field}.image_url.url`);
      const detail = isRecord(image) && typeof image.detail === 'string' ? { detail: image.detail } : {};
      const data = parseBase64DataUrl(url);
      if (data === null) push(kind, `[image: ${url}]`, field, { meta: { url, ...detail } });
      else push(kind, `[image: ${data.mediaType}, ${formatBytes(base64ByteLength(data.base64))}]`, field, { binary: data, meta: detail });
      return [];
    }
    case 'input_audio': {
      const audio = part.input_audio;
      if (!isRecord(audio) || typeof audio.data !== 'string' || typeof audio.format !== 'string') {
        return bad('an input_audio part needs data and format', `${field}.input_audio`);
      }
      const binary = { base64: audio.data, mediaType: `audio/${audio.format}` };
      push(kind, `[audio: ${binary.mediaType}, ${formatBytes(base64ByteLength(audio.data))}]`, field, { binary });
      return [];
    }
    case 'file': {
      const file = isRecord(part.file) ? part.file : {};
      const filename = typeof file.filename === 'string' ? file.filename : undefined;
      const label = filename === undefined ? 'file' : `file "${filename}"`;
      if (typeof file.file_data === 'string') {
        const data = parseBase64DataUrl(file.file_data) ?? { base64: file.file_data, mediaType: 'application/octet-stream' };
        const binary = filename === undefined ? data : { ...data, caption: filename };
        push(kind, `[${label}: ${data.mediaType}, ${formatBytes(base64ByteLength(data.base64))}]`, field, { binary });
        return [];
      }
      if (typeof file.file_id === 'string') {
        push(kind, `[${label}: ${file.file_id}]`, field, { meta: { fileId: file.file_id } });
        return [];
      }
      return bad('a file part needs file_data or file_id', `${field}.file`);
    }
    default:
      return bad(`unsupported content part type '${part.type}'`, `${field}.type`);
  }
}

function convertToolCall(call: unknown, field: string, ctx: MessageContext, push: Push): Converted[] {
  const bad = (message: string, at: string): Converted[] => [{ type: 'issue', message: `${at}: ${message}`, field: at }];
  if (!isRecord(call)) return bad('a tool call must be an object', field);
  const id = typeof call.id === 'string' ? call.id : undefined;
  // `custom` tools take free text input; `function` tools take JSON arguments.
  const isCustom = call.type === 'custom';
  const body = isCustom ? call.custom : call.function;
  const bodyField = `${field}.${isCustom ? 'custom' : 'function'}`;
  if (!isRecord(body) || typeof body.name !== 'string') return bad('missing tool name', `${bodyField}.name`);
  const input = isCustom ? body.input : body.arguments;
  let content: string;
  if (typeof input === 'string') content = isCustom ? input : (compactJsonText(input) ?? input);
  else content = JSON.stringify(input ?? {});
  if (id !== undefined) ctx.toolNames.set(id, body.name);
  push('tool_call', content, field, { toolName: body.name, toolCallId: id });
  return [];
}

/** `data:<mediaType>;base64,<data>` split into parts; null for any other URL. */
export function parseBase64DataUrl(url: string): { base64: string; mediaType: string } | null {
  if (!url.startsWith('data:')) return null;
  const comma = url.indexOf(',');
  if (comma === -1) return null;
  const header = url.slice('data:'.length, comma);
  if (!header.endsWith(';base64')) return null;
  const mediaType = header.split(';')[0] || 'application/octet-stream';
  const base64 = url.slice(comma + 1);
  return base64 === '' ? null : { base64, mediaType };
}

/**
 * JSON text without the whitespace between tokens, or null when the text is not JSON. The text is not
 * re-serialized, so numbers and string escapes stay exactly as the model wrote them.
 */
export function compactJsonText(text: string): string | null {
  try {
    JSON.parse(text);
  } catch {
    return null;
  }
  let out = '';
  let runStart = 0;
  let inString = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i += 1;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
      out += text.slice(runStart, i);
      runStart = i + 1;
    }
  }
  return out + text.slice(runStart);
}
