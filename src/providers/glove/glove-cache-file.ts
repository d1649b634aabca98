import type { StampedFile } from '../cache-stamp.js';
import { bytesOf, checkSectionBounds, checkSectionedHead, readSectionedFile, writeSectionedFile, type SectionedHeader } from '../sectioned-file.js';
import type { GloveSource, GloveTables } from './glove-tables.js';
import { PCA_WORDS, STORED_COMPONENTS } from './glove-tables.js';
import { Vocabulary } from './vocabulary.js';

/**
 * The binary cache of the built-in embedder, one file in the layout of ../sectioned-file.ts (magic "ENGRAMGV",
 * header {@link CacheHeader}); the sections: the vocabulary (its words' UTF-8 bytes, their offsets as uint32, its
 * hash table as int32; see {@link Vocabulary}), row scales (float32), matrix (int8, rows x dims), mean (float32),
 * word components (float32, STORED_COMPONENTS x dims).
 *
 * The header names the format, the byte order, the source package and its file size, and the payload's
 * length and CRC-32, so a stale, truncated or damaged file is told apart from a good one. The bytes are a
 * pure function of the source and the format (no timestamps), so two builds are byte-identical. The cache
 * holds no encoder choices: changing the sentence algorithm never needs a rebuild, changing what is stored
 * or how it is computed bumps {@link CACHE_FORMAT}.
 */
export const CACHE_MAGIC = 'ENGRAMGV';
export const CACHE_FORMAT = 1;

export interface CacheHeader extends SectionedHeader<SectionName> {
  source: GloveSource;
  dimensions: number;
  words: number;
  components: number;
}

type SectionName = 'words' | 'offsets' | 'slots' | 'scales' | 'matrix' | 'mean' | 'components';

export type CacheReadResult = { ok: true; tables: GloveTables } | { ok: false; reason: string };

export function serializeCache(tables: GloveTables): Buffer {
  const { vocabulary } = tables;
  return writeSectionedFile(
    CACHE_MAGIC,
    {
      format: CACHE_FORMAT,
      source: tables.source,
      dimensions: tables.dimensions,
      words: vocabulary.size,
      components: tables.components.length / tables.dimensions,
    },
    [
      ['words', vocabulary.bytes],
      ['offsets', bytesOf(vocabulary.offsets)],
      ['slots', bytesOf(vocabulary.slots)],
      ['scales', bytesOf(tables.scales)],
      ['matrix', bytesOf(tables.matrix)],
      ['mean', bytesOf(tables.mean)],
      ['components', bytesOf(tables.components)],
    ],
  );
}

/**
 * Parses and checks a cache file's bytes; any mismatch or damage is a reason, never an exception. `verifyChecksum:
 * false` skips the payload's CRC-32 (../cache-stamp.ts: the file was checked whole before and not written since).
 */
export function parseCache(file: Buffer, expected: GloveSource, options: { verifyChecksum?: boolean } = {}): CacheReadResult {
  const read = readSectionedFile<CacheHeader, SectionName>(file, { ...options, ...checks(expected) });
  if (!read.ok) return read;
  const { header, view } = read;
  const rows = header.words;
  const slots = header.sections.slots.bytes / 4;
  if (slots < rows || (slots & (slots - 1)) !== 0) return { ok: false, reason: `the vocabulary table has ${slots} slots for ${rows} words` };
  const offsets = view('offsets', (b, o, l) => new Uint32Array(b, o, l), 4);
  if (offsets[rows] !== header.sections.words.bytes) return { ok: false, reason: 'the vocabulary offsets do not match its bytes' };
  const vocabulary = new Vocabulary(view('words', (b, o, l) => new Uint8Array(b, o, l), 1), offsets, view('slots', (b, o, l) => new Int32Array(b, o, l), 4));
  return {
    ok: true,
    tables: {
      source: header.source,
      dimensions: header.dimensions,
      vocabulary,
      scales: view('scales', (b, o, l) => new Float32Array(b, o, l), 4),
      matrix: view('matrix', (b, o, l) => new Int8Array(b, o, l), 1),
      mean: view('mean', (b, o, l) => new Float32Array(b, o, l), 4),
      components: view('components', (b, o, l) => new Float32Array(b, o, l), 4),
    },
  };
}

/** Rows of the matrix read when a cache is opened lazily: the most frequent words, which the encoder's statistics and most text use. */
export const LAZY_PREFIX_ROWS = PCA_WORDS;
/** Rows read one by one before a lazily opened cache reads its whole matrix instead (bulk embedding). */
const LAZY_MAX_ROW_READS = 4096;

/**
 * The tables of a cache file its stamp vouches for (../cache-stamp.ts), without reading all of it: the header is
 * checked as {@link parseCache} checks it (the payload's CRC aside, which the stamp stands for), then the
 * vocabulary, the scales, the statistics and the rows of the {@link LAZY_PREFIX_ROWS} most frequent words are read
 * (~15 of the 44 MB); a rarer word's row is read when first used, and reading `matrix` reads the whole matrix. Only
 * for a stamped file, whose bytes are those that passed the full check. The file stays open until the whole matrix
 * is read (the descriptor is kept by the tables; a cache rebuilt meanwhile is renamed over it and does not change
 * what this descriptor reads). Closes `file` itself when it returns a reason.
 */
export function openCacheLazily(file: StampedFile, expected: GloveSource, options: { prefixRows?: number } = {}): CacheReadResult {
  const fail = (reason: string): CacheReadResult => (file.close(), { ok: false, reason });
  try {
    const c = checks(expected);
    const head = checkSectionedHead<CacheHeader, SectionName>(file.head, file.size, c);
    if (!head.ok) return fail(head.reason);
    const { header, start } = head;
    const bounds = checkSectionBounds(header, header.payloadBytes, c.sizes);
    if (bounds !== null) return fail(bounds);
    const { sections, dimensions: dims, words: rows } = header;
    const slots = sections.slots.bytes / 4;
    if (slots < rows || (slots & (slots - 1)) !== 0) return fail(`the vocabulary table has ${slots} slots for ${rows} words`);
    // The sections are written in order: everything before the matrix and its first rows in one read, the two
    // statistics after it in another.
    const prefixRows = Math.min(rows, options.prefixRows ?? LAZY_PREFIX_ROWS);
    const front = file.read(start, sections.matrix.offset + prefixRows * dims);
    const backStart = sections.mean.offset;
    const back = file.read(start + backStart, sections.components.offset + sections.components.bytes - backStart);
    const frontView = <T>(name: SectionName, make: (b: ArrayBuffer, o: number, l: number) => T, width: number): T =>
      make(front.buffer as ArrayBuffer, front.byteOffset + sections[name].offset, sections[name].bytes / width);
    const offsets = frontView('offsets', (b, o, l) => new Uint32Array(b, o, l), 4);
    if (offsets[rows] !== sections.words.bytes) return fail('the vocabulary offsets do not match its bytes');
    const vocabulary = new Vocabulary(frontView('words', (b, o, l) => new Uint8Array(b, o, l), 1), offsets, frontView('slots', (b, o, l) => new Int32Array(b, o, l), 4));
    const prefix = new Int8Array(front.buffer, front.byteOffset + sections.matrix.offset, prefixRows * dims);
    const matrixStart = start + sections.matrix.offset;
    let whole: Int8Array | undefined;
    const readWhole = (): Int8Array => {
      if (!whole) {
        const bytes = file.read(matrixStart, sections.matrix.bytes);
        whole = new Int8Array(bytes.buffer, bytes.byteOffset, bytes.length);
        file.close();
        rowsRead.clear();
      }
      return whole;
    };
    const rowsRead = new Map<number, Int8Array>();
    const tables: GloveTables = {
      source: header.source,
      dimensions: dims,
      vocabulary,
      scales: frontView('scales', (b, o, l) => new Float32Array(b, o, l), 4),
      get matrix() {
        return readWhole();
      },
      row: (r) => {
        if (whole) return whole.subarray(r * dims, (r + 1) * dims);
        if (r < prefixRows) return prefix.subarray(r * dims, (r + 1) * dims);
        let row = rowsRead.get(r);
        if (!row) {
          if (r >= rows) return new Int8Array(0);
          if (rowsRead.size >= LAZY_MAX_ROW_READS) return readWhole().subarray(r * dims, (r + 1) * dims);
          const bytes = file.read(matrixStart + r * dims, dims);
          row = new Int8Array(bytes.buffer, bytes.byteOffset, dims);
          rowsRead.set(r, row);
        }
        return row;
      },
      mean: new Float32Array(back.buffer, back.byteOffset + sections.mean.offset - backStart, dims),
      components: new Float32Array(back.buffer, back.byteOffset + sections.components.offset - backStart, sections.components.bytes / 4),
    };
    return { ok: true, tables };
  } catch (err) {
    return fail(`the cache file could not be read (${(err as Error).message})`);
  }
}

/** What {@link parseCache} and {@link openCacheLazily} check a file's header against. */
function checks(expected: GloveSource) {
  return {
    magic: CACHE_MAGIC,
    what: 'word-vector',
    format: CACHE_FORMAT,
    checkSource: ({ source: s }: CacheHeader) =>
      s?.package !== expected.package || s.version !== expected.version || s.fileBytes !== expected.fileBytes
        ? `built from ${String(s?.package)}@${String(s?.version)} (${String(s?.fileBytes)} bytes), installed is ${expected.package}@${expected.version} (${expected.fileBytes} bytes)`
        : null,
    sizes: ({ words: rows, dimensions: dims }: CacheHeader): Record<SectionName, number | undefined> => ({
      words: undefined,
      offsets: (rows + 1) * 4,
      slots: undefined,
      scales: rows * 4,
      matrix: rows * dims,
      mean: dims * 4,
      components: STORED_COMPONENTS * dims * 4,
    }),
  };
}
