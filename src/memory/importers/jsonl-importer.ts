import type { EventInput } from '../../model/event.js';
import { eventItem, issueItem, shortSha256 } from './import-item.js';
import { readJsonObjectLines } from './line-reader.js';
import type { ImportItem, ImportOptions, ImportSource } from './types.js';

/**
 * Reads Engram's own JSONL: one `EventInput` per line, plus an optional `sessionId` string. Fields are
 * checked strictly (an unknown field or kind is an issue naming it). A line without a `key` gets
 * `jsonl:<lineNumber>:<first 16 hex of the sha256 of the line>`, which stays the same when lines are
 * appended to the file, so re-importing it stores nothing twice.
 */
export async function* parseJsonl(source: ImportSource, options: ImportOptions = {}): AsyncGenerator<ImportItem> {
  for await (const item of readJsonObjectLines(source, options.onBytes, 'each line must be a JSON object (an Engram event)')) {
    if (item.type !== 'object') {
      yield item;
      continue;
    }
    const { line, record, bytes } = item.value;
    const { sessionId: lineSessionId, ...fields } = record;
    if (lineSessionId !== undefined && typeof lineSessionId !== 'string') {
      yield issueItem(line, 'sessionId: must be a string', 'sessionId');
      continue;
    }
    const event = { ...fields } as EventInput;
    if (event.key === undefined) event.key = `jsonl:${line}:${shortSha256(bytes)}`;
    yield eventItem(event, { line, sessionId: options.sessionId ?? lineSessionId });
  }
}
