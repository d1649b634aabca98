import type { EventInput } from '../../model/event.js';
import { eventItem, isRecord, issueItem, malformedJsonMessage, shortSha256 } from './import-item.js';
import { readLines } from './line-reader.js';
import type { ImportItem, ImportOptions, ImportSource } from './types.js';

/**
 * Reads Engram's own JSONL: one `EventInput` per line, plus an optional `sessionId` string. Fields are
 * checked strictly (an unknown field or kind is an issue naming it). A line without a `key` gets
 * `jsonl:<lineNumber>:<first 16 hex of the sha256 of the line>`, which stays the same when lines are
 * appended to the file, so re-importing it stores nothing twice.
 */
export async function* parseJsonl(source: ImportSource, options: ImportOptions = {}): AsyncGenerator<ImportItem> {
  let hasContent = false;
  for await (const src of readLines(source, options.onBytes)) {
    hasContent = true;
    if (!src.isValid) {
      yield issueItem(src.line, src.message);
      continue;
    }
    const { line } = src;
    let record: unknown;
    try {
      record = JSON.parse(src.text);
    } catch (err) {
      yield issueItem(line, malformedJsonMessage(err));
      continue;
    }
    if (!isRecord(record)) {
      yield issueItem(line, 'each line must be a JSON object (an Engram event)');
      continue;
    }
    const { sessionId: lineSessionId, ...fields } = record;
    if (lineSessionId !== undefined && typeof lineSessionId !== 'string') {
      yield issueItem(line, 'sessionId: must be a string', 'sessionId');
      continue;
    }
    const event = { ...fields } as EventInput;
    if (event.key === undefined) event.key = `jsonl:${line}:${shortSha256(src.bytes)}`;
    yield eventItem(event, { line, sessionId: options.sessionId ?? lineSessionId });
  }
  if (!hasContent) yield issueItem(0, 'the file is empty');
}
