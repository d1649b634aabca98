import { endianness } from 'node:os';
import { crc32 } from 'node:zlib';

/**
 * The file layout of Engram's rebuildable binary caches (the word-vector tables, glove/glove-cache-file.ts; the
 * token counter's rank table, bpe-cache.ts):
 *
 *   bytes 0-7   magic (8 latin1 characters)
 *   bytes 8-11  header length H (uint32 LE)
 *   bytes 12..  header: UTF-8 JSON, the cache's own fields plus {@link SectionedHeader}
 *   padding to a multiple of 8, then the payload: named sections at the header's offsets (each 8-aligned).
 *
 * The header names the format and the byte order, and the payload's length and CRC-32, so a stale, truncated or
 * damaged file is told apart from a good one; the bytes are a pure function of the content (no timestamps).
 */
export interface SectionedHeader<S extends string> {
  format: number;
  /** Byte order of the typed sections (the host's when written); a file moved to another order is rebuilt. */
  endianness: 'LE' | 'BE';
  payloadBytes: number;
  crc32: number;
  sections: Record<S, { offset: number; bytes: number }>;
}

/** A checked file: its header, and typed views of its sections (into the file's own memory, no copy). */
export interface SectionedFile<H, S extends string> {
  header: H;
  view<T>(name: S, make: (buffer: ArrayBuffer, offset: number, length: number) => T, width: number): T;
}

export type SectionedRead<H, S extends string> = ({ ok: true } & SectionedFile<H, S>) | { ok: false; reason: string };

/** Writes `fields` (the cache's own header fields, `format` among them) and the sections, in order. */
export function writeSectionedFile<S extends string>(magic: string, fields: { format: number } & Record<string, unknown>, parts: Array<[S, Uint8Array]>): Buffer {
  const sections = {} as Record<S, { offset: number; bytes: number }>;
  let offset = 0;
  for (const [name, bytes] of parts) {
    sections[name] = { offset, bytes: bytes.length };
    offset = align8(offset + bytes.length);
  }
  const payload = Buffer.alloc(offset);
  for (const [name, bytes] of parts) payload.set(bytes, sections[name].offset);
  // Key order as the caches always wrote it (format, byte order, own fields, payload), so the bytes never change.
  const { format, ...own } = fields;
  const header = { format, endianness: endianness(), ...own, payloadBytes: payload.length, crc32: crc32(payload), sections };
  const headerBytes = Buffer.from(JSON.stringify(header), 'utf8');
  const start = align8(12 + headerBytes.length);
  const file = Buffer.alloc(start + payload.length);
  file.write(magic, 0, 'latin1');
  file.writeUInt32LE(headerBytes.length, 8);
  file.set(headerBytes, 12);
  file.set(payload, start);
  return file;
}

/** What a cache's reader checks a sectioned file against. */
export interface SectionedOptions<H, S extends string> {
  magic: string;
  what: string;
  format: number;
  checkSource: (header: H) => string | null;
  sizes: (header: H) => Record<S, number | undefined>;
  /** False skips the payload's CRC-32 (every other check stays): for a file cache-stamp.ts says was checked whole before. */
  verifyChecksum?: boolean;
}

/**
 * Parses and checks a file's bytes; any mismatch or damage is a reason, never an exception. `what` names the cache
 * in the bad-magic reason; `checkSource` compares the header's own fields with what is installed (null when they
 * match); `sizes` gives, from the header, the expected byte length of each section (undefined: any), checked
 * with its bounds; `verifyChecksum: false` skips the payload's CRC-32.
 */
export function readSectionedFile<H extends SectionedHeader<S>, S extends string>(file: Buffer, options: SectionedOptions<H, S>): SectionedRead<H, S> {
  const head = checkSectionedHead(file, file.length, options);
  if (!head.ok) return head;
  const { header, start } = head;
  // A fresh read is 8-aligned; a view into a shared pool may not be, and typed arrays need alignment.
  const payload = file.byteOffset % 8 === 0 ? file.subarray(start) : Buffer.from(file.subarray(start));
  if (options.verifyChecksum !== false && crc32(payload) !== header.crc32) return { ok: false, reason: 'checksum mismatch: the file is damaged' };
  const bounds = checkSectionBounds(header, payload.length, options.sizes);
  if (bounds !== null) return { ok: false, reason: bounds };
  return {
    ok: true,
    header,
    view: (name, make, width) => {
      const { offset, bytes } = header.sections[name];
      return make(payload.buffer as ArrayBuffer, payload.byteOffset + offset, bytes / width);
    },
  };
}

/**
 * The checks of {@link readSectionedFile} that need only the file's head (magic, header length, header) and its
 * size: the magic, the header, the format, the byte order, the source and the total length. `head` holds at least
 * the first 12 + header-length bytes. On success, `start` is the payload's offset in the file.
 */
export function checkSectionedHead<H extends SectionedHeader<S>, S extends string>(
  head: Buffer,
  fileBytes: number,
  options: Pick<SectionedOptions<H, S>, 'magic' | 'what' | 'format' | 'checkSource'>,
): { ok: true; header: H; start: number } | { ok: false; reason: string } {
  const fail = (reason: string) => ({ ok: false as const, reason });
  if (head.length < 12 || head.toString('latin1', 0, 8) !== options.magic) return fail(`not an Engram ${options.what} cache (bad magic)`);
  const headerLength = head.readUInt32LE(8);
  if (12 + headerLength > fileBytes) return fail(`truncated: the header needs ${12 + headerLength} bytes, the file has ${fileBytes}`);
  if (12 + headerLength > head.length) return fail('the header was not read whole');
  let header: H;
  try {
    header = JSON.parse(head.toString('utf8', 12, 12 + headerLength)) as H;
  } catch {
    return fail('the header is not valid JSON');
  }
  if (header.format !== options.format) return fail(`format ${String(header.format)}, expected ${options.format}`);
  if (header.endianness !== endianness()) return fail(`byte order ${String(header.endianness)}, this host is ${endianness()}`);
  const mismatch = options.checkSource(header);
  if (mismatch !== null) return fail(mismatch);
  const start = align8(12 + headerLength);
  if (fileBytes !== start + header.payloadBytes) return fail(`truncated or extended: ${fileBytes} bytes, the header says ${start + header.payloadBytes}`);
  return { ok: true, header, start };
}

/** Each section within the payload, 8-aligned, and of its expected size; the first that is not, as a reason. */
export function checkSectionBounds<H extends SectionedHeader<S>, S extends string>(header: H, payloadBytes: number, sizes: (header: H) => Record<S, number | undefined>): string | null {
  for (const [name, bytes] of Object.entries(sizes(header)) as Array<[S, number | undefined]>) {
    const section = header.sections?.[name];
    if (!section || section.offset % 8 !== 0 || section.offset + section.bytes > payloadBytes) return `section ${name} is out of bounds`;
    if (bytes !== undefined && section.bytes !== bytes) return `section ${name} holds ${section.bytes} bytes, expected ${bytes}`;
  }
  return null;
}

/** The bytes of a typed array, without a copy. */
export function bytesOf(a: Float32Array | Int8Array | Int32Array | Uint32Array): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

function align8(n: number): number {
  return (n + 7) & ~7;
}
