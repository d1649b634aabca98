import { endianness } from 'node:os';
import { crc32 } from 'node:zlib';
import type { GloveSource, GloveTables } from './glove-tables.js';
import { STORED_COMPONENTS } from './glove-tables.js';
import { Vocabulary } from './vocabulary.js';

/**
 * The binary cache of the built-in embedder, one file:
 *
 *   bytes 0-7   magic "ENGRAMGV"
 *   bytes 8-11  header length H (uint32 LE)
 *   bytes 12..  header: UTF-8 JSON {@link CacheHeader}
 *   padding to a multiple of 8, then the payload: sections at the header's offsets (each 8-aligned):
 *   the vocabulary (its words' UTF-8 bytes, their offsets as uint32, its hash table as int32; see
 *   {@link Vocabulary}), row scales (float32), matrix (int8, rows x dims), mean (float32), word components
 *   (float32, STORED_COMPONENTS x dims).
 *
 * The header names the format, the byte order, the source package and its file size, and the payload's
 * length and CRC-32, so a stale, truncated or damaged file is told apart from a good one. The bytes are a
 * pure function of the source and the format (no timestamps), so two builds are byte-identical. The cache
 * holds no encoder choices: changing the sentence algorithm never needs a rebuild, changing what is stored
 * or how it is computed bumps {@link CACHE_FORMAT}.
 */
export const CACHE_MAGIC = 'ENGRAMGV';
export const CACHE_FORMAT = 1;

export interface CacheHeader {
  format: number;
  /** Byte order of the float sections (the host's when built); a cache moved to another order is rebuilt. */
  endianness: 'LE' | 'BE';
  source: GloveSource;
  dimensions: number;
  words: number;
  components: number;
  payloadBytes: number;
  crc32: number;
  sections: Record<SectionName, { offset: number; bytes: number }>;
}

type SectionName = 'words' | 'offsets' | 'slots' | 'scales' | 'matrix' | 'mean' | 'components';

export type CacheReadResult = { ok: true; tables: GloveTables } | { ok: false; reason: string };

export function serializeCache(tables: GloveTables): Buffer {
  const { vocabulary } = tables;
  const parts: Array<[SectionName, Uint8Array]> = [
    ['words', vocabulary.bytes],
    ['offsets', bytesOf(vocabulary.offsets)],
    ['slots', bytesOf(vocabulary.slots)],
    ['scales', bytesOf(tables.scales)],
    ['matrix', bytesOf(tables.matrix)],
    ['mean', bytesOf(tables.mean)],
    ['components', bytesOf(tables.components)],
  ];
  const sections = {} as CacheHeader['sections'];
  let offset = 0;
  for (const [name, bytes] of parts) {
    sections[name] = { offset, bytes: bytes.length };
    offset = align8(offset + bytes.length);
  }
  const payload = Buffer.alloc(offset);
  for (const [name, bytes] of parts) payload.set(bytes, sections[name].offset);
  const header: CacheHeader = {
    format: CACHE_FORMAT,
    endianness: endianness(),
    source: tables.source,
    dimensions: tables.dimensions,
    words: vocabulary.size,
    components: tables.components.length / tables.dimensions,
    payloadBytes: payload.length,
    crc32: crc32(payload),
    sections,
  };
  const headerBytes = Buffer.from(JSON.stringify(header), 'utf8');
  const start = align8(12 + headerBytes.length);
  const file = Buffer.alloc(start + payload.length);
  file.write(CACHE_MAGIC, 0, 'latin1');
  file.writeUInt32LE(headerBytes.length, 8);
  file.set(headerBytes, 12);
  file.set(payload, start);
  return file;
}

/** Parses and checks a cache file's bytes; any mismatch or damage is a reason, never an exception. */
export function parseCache(file: Buffer, expected: GloveSource): CacheReadResult {
  const fail = (reason: string): CacheReadResult => ({ ok: false, reason });
  if (file.length < 12 || file.toString('latin1', 0, 8) !== CACHE_MAGIC) return fail('not an Engram word-vector cache (bad magic)');
  const headerLength = file.readUInt32LE(8);
  if (12 + headerLength > file.length) return fail(`truncated: the header needs ${12 + headerLength} bytes, the file has ${file.length}`);
  let header: CacheHeader;
  try {
    header = JSON.parse(file.toString('utf8', 12, 12 + headerLength)) as CacheHeader;
  } catch {
    return fail('the header is not valid JSON');
  }
  if (header.format !== CACHE_FORMAT) return fail(`format ${String(header.format)}, expected ${CACHE_FORMAT}`);
  if (header.endianness !== endianness()) return fail(`byte order ${String(header.endianness)}, this host is ${endianness()}`);
  const s = header.source;
  const e = expected;
  if (s?.package !== e.package || s.version !== e.version || s.fileBytes !== e.fileBytes) {
    return fail(`built from ${String(s?.package)}@${String(s?.version)} (${String(s?.fileBytes)} bytes), installed is ${e.package}@${e.version} (${e.fileBytes} bytes)`);
  }
  const start = align8(12 + headerLength);
  if (file.length !== start + header.payloadBytes) {
    return fail(`truncated or extended: ${file.length} bytes, the header says ${start + header.payloadBytes}`);
  }
  // A fresh read is 8-aligned; a view into a shared pool may not be, and typed arrays need alignment.
  const payload = file.byteOffset % 8 === 0 ? file.subarray(start) : Buffer.from(file.subarray(start));
  if (crc32(payload) !== header.crc32) return fail('checksum mismatch: the file is damaged');

  const dims = header.dimensions;
  const rows = header.words;
  const expectBytes: Record<SectionName, number | undefined> = {
    words: undefined,
    offsets: (rows + 1) * 4,
    slots: undefined,
    scales: rows * 4,
    matrix: rows * dims,
    mean: dims * 4,
    components: STORED_COMPONENTS * dims * 4,
  };
  for (const [name, bytes] of Object.entries(expectBytes) as Array<[SectionName, number | undefined]>) {
    const section = header.sections?.[name];
    if (!section || section.offset % 8 !== 0 || section.offset + section.bytes > payload.length) return fail(`section ${name} is out of bounds`);
    if (bytes !== undefined && section.bytes !== bytes) return fail(`section ${name} holds ${section.bytes} bytes, expected ${bytes}`);
  }
  const view = <T>(name: SectionName, make: (buffer: ArrayBuffer, offset: number, length: number) => T, width: number): T => {
    const { offset, bytes } = header.sections[name];
    return make(payload.buffer as ArrayBuffer, payload.byteOffset + offset, bytes / width);
  };
  const slots = header.sections.slots.bytes / 4;
  if (slots < rows || (slots & (slots - 1)) !== 0) return fail(`the vocabulary table has ${slots} slots for ${rows} words`);
  const offsets = view('offsets', (b, o, l) => new Uint32Array(b, o, l), 4);
  if (offsets[rows] !== header.sections.words.bytes) return fail('the vocabulary offsets do not match its bytes');
  const vocabulary = new Vocabulary(view('words', (b, o, l) => new Uint8Array(b, o, l), 1), offsets, view('slots', (b, o, l) => new Int32Array(b, o, l), 4));
  return {
    ok: true,
    tables: {
      source: header.source,
      dimensions: dims,
      vocabulary,
      scales: view('scales', (b, o, l) => new Float32Array(b, o, l), 4),
      matrix: view('matrix', (b, o, l) => new Int8Array(b, o, l), 1),
      mean: view('mean', (b, o, l) => new Float32Array(b, o, l), 4),
      components: view('components', (b, o, l) => new Float32Array(b, o, l), 4),
    },
  };
}

function bytesOf(a: Float32Array | Int8Array | Int32Array | Uint32Array): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

function align8(n: number): number {
  return Math.ceil(n / 8) * 8;
}
