import { bytesOf, readSectionedFile, writeSectionedFile, type SectionedHeader } from '../sectioned-file.js';
import type { GloveSource, GloveTables } from './glove-tables.js';
import { STORED_COMPONENTS } from './glove-tables.js';
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
  const read = readSectionedFile<CacheHeader, SectionName>(file, {
    ...options,
    magic: CACHE_MAGIC,
    what: 'word-vector',
    format: CACHE_FORMAT,
    checkSource: ({ source: s }) =>
      s?.package !== expected.package || s.version !== expected.version || s.fileBytes !== expected.fileBytes
        ? `built from ${String(s?.package)}@${String(s?.version)} (${String(s?.fileBytes)} bytes), installed is ${expected.package}@${expected.version} (${expected.fileBytes} bytes)`
        : null,
    sizes: ({ words: rows, dimensions: dims }) => ({
      words: undefined,
      offsets: (rows + 1) * 4,
      slots: undefined,
      scales: rows * 4,
      matrix: rows * dims,
      mean: dims * 4,
      components: STORED_COMPONENTS * dims * 4,
    }),
  });
  if (!read.ok) return read;
  const { header, view } = read;
  const dims = header.dimensions;
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
      dimensions: dims,
      vocabulary,
      scales: view('scales', (b, o, l) => new Float32Array(b, o, l), 4),
      matrix: view('matrix', (b, o, l) => new Int8Array(b, o, l), 1),
      mean: view('mean', (b, o, l) => new Float32Array(b, o, l), 4),
      components: view('components', (b, o, l) => new Float32Array(b, o, l), 4),
    },
  };
}
