import { closeSync, openSync, readSync } from 'node:fs';

/** At least this much of the start of a file is read for format detection, in bytes (when the file is that long). */
export const DETECT_FORMAT_BYTES = 64 * 1024;

/**
 * Most bytes read past the leading white space to find the end of a file's first record, for format detection.
 * An OpenHands evaluation output holds a whole run on its first line: 214 KB in the file of issue #30, and several
 * MB for a long run with its `history` and `metrics`. Past this much the format is told from the start of the
 * record alone (a Codex rollout's envelope, an evaluation output's `instance_id`).
 */
export const MAX_HEAD_BYTES = 16 * 1024 * 1024;

const CHUNK_BYTES = 64 * 1024;

/** The start of a transcript file, as format detection wants it. */
export interface TranscriptHead {
  /** The bytes read, decoded as UTF-8 (a character cut at the end is replaced). */
  text: string;
  /** The file holds nothing but white space (or a byte order mark). */
  isBlank: boolean;
  /** `text` holds the whole first record, or the whole file. */
  hasFirstRecord: boolean;
}

/**
 * Reads the start of a file: at least DETECT_FORMAT_BYTES, and on until its first record is complete (see
 * {@link FirstRecordScanner}), up to MAX_HEAD_BYTES past any leading white space.
 */
export function readTranscriptHead(path: string, maxBytes = MAX_HEAD_BYTES): TranscriptHead {
  const fd = openSync(path, 'r');
  try {
    const scanner = new FirstRecordScanner();
    const chunks: Buffer[] = [];
    let total = 0;
    let position = 0;
    for (;;) {
      const buf = Buffer.alloc(CHUNK_BYTES);
      const n = readSync(fd, buf, 0, CHUNK_BYTES, position);
      if (n === 0) break;
      position += n;
      const chunk = buf.subarray(0, n);
      scanner.push(chunk);
      // Leading white space is not kept: a file of nothing else is blank however long it is.
      if (!scanner.hasStarted) continue;
      const kept = chunks.length === 0 ? chunk.subarray(scanner.startOffset) : chunk;
      chunks.push(kept);
      total += kept.byteLength;
      if ((scanner.isDone && total >= DETECT_FORMAT_BYTES) || total >= maxBytes) break;
    }
    return { text: Buffer.concat(chunks).toString('utf8'), isBlank: !scanner.hasStarted, hasFirstRecord: scanner.isDone || total < maxBytes };
  } finally {
    closeSync(fd);
  }
}

/**
 * Finds where the first record of a transcript ends, fed the file's bytes in order. JSON's structural characters
 * are ASCII and no byte of a multi-byte UTF-8 character is, so bytes are scanned as they come, without decoding.
 *
 * - A file starting with `{` whose first value closes on its first line (JSON Lines, or a document on one line):
 *   that value.
 * - A JSON document spread over lines (`{` or `[` with a line break inside the value): the first element of the
 *   first array opened, at whatever depth (`[{event}, ...]`, `{"messages": [{message}, ...]}`), or the whole value.
 * - Anything else: the first line.
 */
export class FirstRecordScanner {
  hasStarted = false;
  isDone = false;
  /** Offset, in the chunk where the record starts, of its first byte. */
  startOffset = 0;
  private mode: 'json' | 'line' = 'json';
  private depth = 0;
  private isInString = false;
  private isEscaped = false;
  private hasLineBreak = false;
  private isTopArray = false;
  /** Depth inside the first array opened, once it is; -1 before. */
  private arrayDepth = -1;

  push(chunk: Uint8Array): void {
    // Next quote and backslash at or after i, found with indexOf (native) and kept until passed: most of a long
    // record is string content, which a byte-by-byte loop in JavaScript crosses at a fraction of the speed.
    let nextQuote = -2;
    let nextBackslash = -2;
    const nextOf = (byte: number, known: number, from: number): number => (known !== -1 && known < from ? chunk.indexOf(byte, from) : known);
    for (let i = 0; i < chunk.length && !this.isDone; i += 1) {
      if (this.isInString && !this.isEscaped) {
        nextQuote = nextOf(0x22, nextQuote, i);
        nextBackslash = nextOf(0x5c, nextBackslash, i);
        const next = nextQuote === -1 ? nextBackslash : nextBackslash === -1 ? nextQuote : Math.min(nextQuote, nextBackslash);
        if (next === -1) return;
        i = next;
      } else if (this.mode === 'line' && this.hasStarted) {
        const newline = chunk.indexOf(0x0a, i);
        if (newline === -1) return;
        i = newline;
      }
      const b = chunk[i]!;
      if (!this.hasStarted) {
        // White space and the bytes of a UTF-8 byte order mark.
        if (b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d || b === 0xef || b === 0xbb || b === 0xbf) continue;
        this.hasStarted = true;
        this.startOffset = i;
        if (b !== 0x7b && b !== 0x5b) this.mode = 'line';
        this.isTopArray = b === 0x5b;
      }
      if (this.mode === 'line') {
        if (b === 0x0a) this.isDone = true;
        continue;
      }
      this.step(b);
    }
  }

  private step(b: number): void {
    if (this.isInString) {
      if (this.isEscaped) this.isEscaped = false;
      else if (b === 0x5c) this.isEscaped = true;
      else if (b === 0x22) this.isInString = false;
      return;
    }
    switch (b) {
      case 0x22:
        this.isInString = true;
        return;
      case 0x7b:
      case 0x5b:
        this.depth += 1;
        if (b === 0x5b && this.arrayDepth === -1 && (this.isTopArray || this.hasLineBreak)) this.arrayDepth = this.depth;
        return;
      case 0x7d:
      case 0x5d:
        this.depth -= 1;
        // The top value closed; the first array closed; or a container that was its first element closed.
        if (this.depth <= 0 || this.depth === this.arrayDepth - 1 || this.depth === this.arrayDepth) this.isDone = true;
        return;
      case 0x2c:
        // A scalar first element ended.
        if (this.depth === this.arrayDepth) this.isDone = true;
        return;
      case 0x0a:
        if (this.depth > 0) this.hasLineBreak = true;
        return;
      default:
    }
  }
}
