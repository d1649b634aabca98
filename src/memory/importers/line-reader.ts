import { Readable } from 'node:stream';
import { createInterface } from 'node:readline';
import { isRecord, issueItem, malformedJsonMessage } from './import-item.js';
import type { ImportItem, ImportSource } from './types.js';
import { firstInvalidUtf8Offset } from '../../util/is-utf8-text.js';

/** One non-blank line of a JSONL source, decoded, or the reason it could not be decoded. */
export type SourceLine =
  | { isValid: true; line: number; text: string; bytes: Buffer }
  | { isValid: false; line: number; message: string };

const UTF8_BOM = '\xEF\xBB\xBF';

/**
 * Reads the source as Buffers, reporting the running byte total through `onBytes`. String chunks are
 * re-encoded as UTF-8: whatever replaced invalid bytes before they reached us can no longer be seen.
 */
export async function* readByteChunks(
  source: ImportSource,
  onBytes?: (bytesRead: number) => void,
): AsyncGenerator<Buffer> {
  let bytesRead = 0;
  for await (const chunk of source.stream() as AsyncIterable<Buffer | Uint8Array | string>) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    bytesRead += bytes.byteLength;
    onBytes?.(bytesRead);
    yield bytes;
  }
}

/**
 * Reads a JSONL source line by line without holding more than one line in memory. Blank lines are
 * skipped (their numbers still count). A line that is not valid UTF-8 comes back with `isValid: false`
 * and the offset of the first bad byte.
 *
 * readline only splits strings, and decoding chunks as UTF-8 before splitting would silently replace bad
 * bytes with U+FFFD (indistinguishable from a real U+FFFD in the text). So chunks are handed to readline
 * as latin1, one character per byte (0x0A and 0x0D never occur inside a UTF-8 multi-byte sequence), and
 * each line's bytes are then decoded strictly. Like every readline user, a lone CR also ends a line.
 */
export async function* readLines(
  source: ImportSource,
  onBytes?: (bytesRead: number) => void,
): AsyncGenerator<SourceLine> {
  const input = Readable.from(asLatin1(readByteChunks(source, onBytes)));
  // readline's async iterator does not rethrow errors of its input; remember one and rethrow it.
  let inputError: unknown;
  input.on('error', (err) => {
    inputError = err;
  });
  const lines = createInterface({ input, crlfDelay: Infinity });
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let lineNumber = 0;
  try {
    for await (const raw of lines) {
      lineNumber += 1;
      const bytes = Buffer.from(lineNumber === 1 && raw.startsWith(UTF8_BOM) ? raw.slice(UTF8_BOM.length) : raw, 'latin1');
      let text: string;
      try {
        text = decoder.decode(bytes);
      } catch {
        const offset = firstInvalidUtf8Offset(bytes);
        yield { isValid: false, line: lineNumber, message: invalidUtf8Message(lineNumber, bytes[offset] ?? 0, offset) };
        continue;
      }
      if (text.trim().length === 0) continue;
      yield { isValid: true, line: lineNumber, text, bytes };
    }
    if (inputError !== undefined) throw inputError;
  } finally {
    lines.close();
    input.destroy();
  }
}

async function* asLatin1(chunks: AsyncIterable<Buffer>): AsyncGenerator<string> {
  for await (const chunk of chunks) yield chunk.toString('latin1');
}

export { firstInvalidUtf8Offset };

/** `offsetInLine` is 0-based; the message counts bytes from 1 like an editor's column. */
export function invalidUtf8Message(line: number, badByte: number, offsetInLine: number): string {
  return `line ${line} is not valid UTF-8: byte 0x${badByte.toString(16).padStart(2, '0')} at byte ${offsetInLine + 1} of the line`;
}


/** A JSONL line that parsed as a JSON object. */
export interface JsonObjectLine {
  line: number;
  record: Record<string, unknown>;
  /** The line's raw bytes (for content-derived keys). */
  bytes: Buffer;
}

/**
 * The JSON objects of a JSONL source, one per non-blank line, with an issue item instead for each line that
 * is not valid UTF-8, not JSON, or not an object (`notAnObject` says what was expected), and one for an
 * empty source. Shared by the line-oriented importers.
 */
export async function* readJsonObjectLines(
  source: ImportSource,
  onBytes: ((bytesRead: number) => void) | undefined,
  notAnObject: string,
): AsyncGenerator<{ type: 'object'; value: JsonObjectLine } | ImportItem> {
  let hasContent = false;
  for await (const src of readLines(source, onBytes)) {
    hasContent = true;
    if (!src.isValid) {
      yield issueItem(src.line, src.message);
      continue;
    }
    let record: unknown;
    try {
      record = JSON.parse(src.text);
    } catch (err) {
      yield issueItem(src.line, malformedJsonMessage(err));
      continue;
    }
    if (!isRecord(record)) {
      yield issueItem(src.line, notAnObject);
      continue;
    }
    yield { type: 'object', value: { line: src.line, record, bytes: src.bytes } };
  }
  if (!hasContent) yield issueItem(0, 'the file is empty');
}
