import { blockToItem, convertAnthropicContent } from './anthropic-blocks.js';
import type { AnthropicContentContext } from './anthropic-blocks.js';
import { readJsonDocument } from './document-reader.js';
import { isRecord, issueItem, timestampOf } from './import-item.js';
import type { ImportItem, ImportOptions, ImportSource } from './types.js';

/**
 * Reads an Anthropic Messages API conversation: `{ system?, messages: [...] }` (a request body works; other
 * fields are ignored) or a bare array of messages. Keys are `an:<messageIndex>:<blockIndex>`, and
 * `an:system:<blockIndex>` for the top-level system prompt.
 */
export async function* parseAnthropic(source: ImportSource, options: ImportOptions = {}): AsyncGenerator<ImportItem> {
  const doc = await readJsonDocument(source, 'anthropic', ['*', 'messages/*', 'system'], options.onBytes);
  if (!doc.isValid) {
    yield { type: 'issue', value: doc.issue };
    return;
  }
  const root = doc.value;
  const isBareArray = Array.isArray(root);
  if (!isBareArray && !(isRecord(root) && Array.isArray(root.messages))) {
    yield issueItem(1, 'expected an array of messages or an object with a messages array', 'messages');
    return;
  }
  const messages: unknown[] = isBareArray ? root : (root.messages as unknown[]);
  const { sessionId } = options;
  const toolNames = new Map<string, string>();

  if (!isBareArray && root.system !== undefined) {
    const ctx = { role: 'system' as const, keyPrefix: 'an:system', field: 'system', toolNames };
    for (const block of convertAnthropicContent(root.system, ctx)) yield blockToItem(block, doc.lineOf('system'), sessionId);
  }
  if (messages.length === 0) yield issueItem(1, 'the document holds no messages', 'messages');

  for (const [index, message] of messages.entries()) {
    const line = doc.lineOf(isBareArray ? String(index) : `messages/${index}`);
    const field = isBareArray ? `[${index}]` : `messages[${index}]`;
    if (!isRecord(message)) {
      yield issueItem(line, `${field}: a message must be an object`, field);
      continue;
    }
    const role = message.role;
    if (role !== 'user' && role !== 'assistant') {
      yield issueItem(line, `${field}.role: expected 'user' or 'assistant', got ${JSON.stringify(role)}`, `${field}.role`);
      continue;
    }
    const ctx: AnthropicContentContext = { role, keyPrefix: `an:${index}`, field: `${field}.content`, toolNames, ts: timestampOf(message.timestamp) };
    for (const block of convertAnthropicContent(message.content, ctx)) yield blockToItem(block, line, sessionId);
  }
}
