import { createHash } from 'node:crypto';
import { EngramError } from '../../errors.js';
import { formatRange, type LineRange } from '../pointer.js';

/** What a type resolver hands back: the whole addressed span, before any token cap. */
export interface ResolvedSpan<S> {
  text: string;
  /** Where the text came from (commit, blob, artifact digest, event id ...). */
  source: S;
  /** For line-addressed text (files, artifact lines and sections): the number of its first line. */
  firstLine?: number;
}

/** sha256 of the UTF-8 bytes of `text`, lowercase hex: the `content_digest` of PAS Bus §6.2 and §8.3. */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Lines in `text`: a final line terminator does not start another line; empty text has 0 lines. */
export function countLines(text: string): number {
  if (text.length === 0) return 0;
  let n = 1;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) n++;
  return text.endsWith('\n') ? n - 1 : n;
}

/**
 * The exact text of lines `range` (1-based, inclusive): from the first line's start to the last line's end,
 * without the last line's terminator (`\n` or `\r\n`); inner terminators are kept byte for byte.
 * Throws POINTER_INVALID when the range ends past the last line: a pointer into lines that moved or never
 * existed is pointer rot (PAS Bus §8.1), which a silent clamp would hide.
 */
export function sliceLines(text: string, range: LineRange, what: string): string {
  const total = countLines(text);
  if (range.end > total) {
    throw new EngramError('POINTER_INVALID', `pointer: ${formatRange(range)} ends past the end of ${what}, which has ${total} line${total === 1 ? '' : 's'}`, {
      field: 'pointer',
      reason: 'span-past-end',
      totalLines: total,
    });
  }
  let start = 0;
  for (let line = 1; line < range.start; line++) start = text.indexOf('\n', start) + 1;
  let end = start;
  for (let line = range.start; line <= range.end; line++) {
    const nl = text.indexOf('\n', end);
    end = nl < 0 ? text.length : nl + 1;
  }
  return stripFinalTerminator(text.slice(start, end));
}

export function stripFinalTerminator(text: string): string {
  if (text.endsWith('\r\n')) return text.slice(0, -2);
  if (text.endsWith('\n')) return text.slice(0, -1);
  return text;
}

/** Git's own test for binary content: a NUL byte in the first 8000 bytes. */
export function looksBinary(bytes: Uint8Array): boolean {
  const n = Math.min(bytes.length, 8000);
  for (let i = 0; i < n; i++) if (bytes[i] === 0) return true;
  return false;
}
