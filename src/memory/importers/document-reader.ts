import { firstInvalidUtf8Offset, invalidUtf8Message, readByteChunks } from './line-reader.js';
import { locateJsonValues } from './json-locator.js';
import { MAX_DOCUMENT_BYTES } from './types.js';
import type { ImportFormat, ImportIssue, ImportSource } from './types.js';

export type DocumentRead =
  | { isValid: true; value: unknown; lineOf: (path: string) => number }
  | { isValid: false; issue: ImportIssue };

const MIB = 1024 * 1024;

/**
 * Reads a whole-JSON transcript (openai, anthropic) and parses it. Refuses documents over
 * MAX_DOCUMENT_BYTES before and while reading, so an oversized file is never held whole.
 *
 * @param linePatterns paths whose start lines `lineOf` can answer (see locateJsonValues); any other path,
 *   or a path that is not in the document, answers line 1.
 */
export async function readJsonDocument(
  source: ImportSource,
  format: ImportFormat,
  linePatterns: readonly string[],
  onBytes?: (bytesRead: number) => void,
): Promise<DocumentRead> {
  if (source.sizeBytes !== undefined && source.sizeBytes > MAX_DOCUMENT_BYTES) {
    return { isValid: false, issue: tooLarge(format, source.sizeBytes) };
  }
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of readByteChunks(source, onBytes)) {
    total += chunk.byteLength;
    // Leaving the loop returns the iterator, which destroys the source stream: nothing more is read.
    if (total > MAX_DOCUMENT_BYTES) return { isValid: false, issue: tooLarge(format, total, true) };
    chunks.push(chunk);
  }
  let bytes = Buffer.concat(chunks, total);
  chunks.length = 0;
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3);

  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    bytes = Buffer.alloc(0); // let the raw copy go before JSON.parse builds a third one
  } catch {
    const offset = Math.max(0, firstInvalidUtf8Offset(bytes));
    // A negative start would make lastIndexOf count from the end.
    const lineStart = offset === 0 ? 0 : bytes.lastIndexOf(0x0a, offset - 1) + 1;
    const line = countNewlines(bytes, lineStart) + 1;
    return { isValid: false, issue: { line, message: invalidUtf8Message(line, bytes[offset] ?? 0, offset - lineStart) } };
  }
  if (text.trim().length === 0) return { isValid: false, issue: { line: 0, message: 'the file is empty' } };

  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    // JSON.parse does not say where, in a form that is stable across Node versions; scan for it.
    const line = locateJsonValues(text, []).errorLine ?? 1;
    return { isValid: false, issue: { line, message: `malformed JSON: ${(err as Error).message}` } };
  }
  const lines = linePatterns.length > 0 ? locateJsonValues(text, linePatterns).lines : new Map<string, number>();
  return { isValid: true, value, lineOf: (path) => lines.get(path) ?? 1 };
}

function tooLarge(format: ImportFormat, bytes: number, isAtLeast = false): ImportIssue {
  const size = `${isAtLeast ? 'over ' : ''}${(bytes / MIB).toFixed(1)} MiB`;
  return {
    line: 0,
    message:
      `the ${format} document is ${size}; documents over ${MAX_DOCUMENT_BYTES / MIB} MiB are not read whole. ` +
      'Split it, or convert it to Engram JSONL, which is read line by line.',
  };
}

function countNewlines(bytes: Buffer, end: number): number {
  let count = 0;
  let at = bytes.indexOf(0x0a);
  while (at !== -1 && at < end) {
    count += 1;
    at = bytes.indexOf(0x0a, at + 1);
  }
  return count;
}
