/** Binary content: recognised by magic bytes, a declared type or bytes that are not text; previewed as its type, size and caption. */
import { formatBytes } from '../../util/format-bytes.js';
import { hardCut, HEAD_SAMPLE_CHARS, TAIL_SAMPLE_CHARS } from './text.js';

const BINARY_MEDIA_TYPES = new Set(
  ['octet-stream', 'pdf', 'zip', 'gzip', 'x-gzip', 'x-tar', 'x-bzip2', 'x-xz', 'x-7z-compressed', 'zstd', 'wasm', 'x-sqlite3', 'msword', 'vnd.ms-excel'].map(
    (t) => `application/${t}`,
  ),
);

export function isBinaryMediaType(mediaType: string): boolean {
  if (mediaType === 'image/svg+xml') return false; // SVG is XML text
  if (/^(image|audio|video|font)\//.test(mediaType)) return true;
  return BINARY_MEDIA_TYPES.has(mediaType) || mediaType.startsWith('application/vnd.openxmlformats-officedocument.');
}

const MAGIC: ReadonlyArray<{ mediaType: string; bytes: ReadonlyArray<number | null> }> = [
  { mediaType: 'image/png', bytes: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] },
  { mediaType: 'image/jpeg', bytes: [0xff, 0xd8, 0xff] },
  { mediaType: 'image/gif', bytes: [0x47, 0x49, 0x46, 0x38, null, 0x61] }, // GIF87a / GIF89a
  // RIFF????WEBP: bytes 4-7 are the chunk size.
  { mediaType: 'image/webp', bytes: [0x52, 0x49, 0x46, 0x46, null, null, null, null, 0x57, 0x45, 0x42, 0x50] },
  { mediaType: 'application/pdf', bytes: [0x25, 0x50, 0x44, 0x46, 0x2d] }, // %PDF-
  { mediaType: 'application/zip', bytes: [0x50, 0x4b, 0x03, 0x04] },
  { mediaType: 'application/gzip', bytes: [0x1f, 0x8b] },
];

/** Magic-byte sniffing; a string is read as Latin-1 so binary passed as a "binary string" is still caught. */
export function magicMediaType(content: string | Uint8Array): string | undefined {
  const byteAt = typeof content === 'string' ? (i: number) => content.charCodeAt(i) : (i: number) => content[i];
  for (const m of MAGIC) {
    if (content.length < m.bytes.length) continue;
    if (m.bytes.every((b, i) => b === null || byteAt(i) === b)) return m.mediaType;
  }
  return undefined;
}

/** NUL bytes or invalid UTF-8 in the sampled head or tail mean binary. */
export function bytesLookLikeText(bytes: Uint8Array): boolean {
  const whole = bytes.length <= HEAD_SAMPLE_CHARS + TAIL_SAMPLE_CHARS;
  const head = whole ? bytes : bytes.subarray(0, HEAD_SAMPLE_CHARS);
  let tail = whole ? undefined : bytes.subarray(bytes.length - TAIL_SAMPLE_CHARS);
  if (head.includes(0) || tail?.includes(0)) return false;
  // The tail sample may start inside a multi-byte character: skip up to 3 continuation bytes.
  for (let skip = 0; tail && skip < 3 && ((tail[0] ?? 0) & 0xc0) === 0x80; skip++) tail = tail.subarray(1);
  try {
    // `stream: true` tolerates a character cut at the end of a sample; `fatal` throws on invalid UTF-8.
    new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: !whole });
    if (tail) new TextDecoder('utf-8', { fatal: true }).decode(tail);
  } catch {
    return false;
  }
  return true;
}

/** NULs, or more than 10% control characters / U+FFFD: bytes decoded as text, not text. */
export function looksGarbled(sample: string): boolean {
  let bad = 0;
  for (let i = 0; i < sample.length; i++) {
    const c = sample.charCodeAt(i);
    if (c === 0) return true;
    // Tab, LF, FF, CR and ESC (ANSI colours) are normal in tool output.
    if ((c < 32 && c !== 9 && c !== 10 && c !== 12 && c !== 13 && c !== 27) || c === 0xfffd) bad++;
  }
  return bad > 0 && bad * 10 > sample.length;
}

export function renderBinary(mediaType: string, sizeBytes: number, caption: string | undefined, maxChars: number): string {
  const head = `[binary: ${mediaType}, ${formatBytes(sizeBytes)}]`;
  const c = caption?.trim();
  return hardCut(c ? `${head}\ncaption: ${c}` : head, maxChars);
}
