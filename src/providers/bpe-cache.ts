import { randomBytes } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { RankTable } from './bpe-encoder.js';
import { readStamped, type StampedRead } from './cache-stamp.js';
import { bytesOf, readSectionedFile, writeSectionedFile, type SectionedHeader } from './sectioned-file.js';

/**
 * The binary cache of the token counter's rank table, one file in the layout of sectioned-file.ts (magic
 * "ENGRAMBP", header {@link BpeCacheHeader}, the {@link RankTable}'s arrays as sections).
 *
 * Why: every CLI call that counts a token (recall, context, the Claude Code hooks after each turn) parsed the
 * vocabulary module of `gpt-tokenizer` (200,000 entries as JavaScript, ~300 ms) and hashed it into the table
 * (~65 ms) before its first count; reading the built table back takes a few milliseconds (`node --cpu-prof
 * bin/engram.js recall ...`: 980 -> 480 ms of CPU in all). The header names the format, the byte order, the
 * source package and version, and the payload's length and CRC-32, so a stale, truncated or damaged file is
 * rebuilt, never used.
 */
export const BPE_CACHE_MAGIC = 'ENGRAMBP';
export const BPE_CACHE_FORMAT = 1;

/** What the table was built from. */
export interface BpeSource {
  package: string;
  version: string;
  encoding: string;
}

export interface BpeCacheHeader extends SectionedHeader<SectionName> {
  source: BpeSource;
  tokens: number;
  maxTokenBytes: number;
}

type SectionName = 'pool' | 'tokenStart' | 'tokenBytes' | 'slots' | 'filter' | 'pairRanks';

export type BpeCacheReadResult = { ok: true; table: RankTable } | { ok: false; reason: string };

/** How the table was obtained. */
export interface BpeCacheInfo {
  path: string;
  /** True when this call built the table: the cache was missing, stale or damaged (`buildReason` says which). */
  isBuilt: boolean;
  buildReason?: string;
  ms: number;
  /** Set when the built table could not be written: counting still works, the next start builds again. */
  writeError?: string;
}

/** The cache file name: everything that changes its bytes is in it, so versions never overwrite each other. */
export function bpeCacheFileName(source: BpeSource): string {
  return `bpe-f${BPE_CACHE_FORMAT}-${source.encoding}-${source.package}@${source.version}.bin`;
}

export function serializeRankTable(table: RankTable, source: BpeSource): Buffer {
  return writeSectionedFile(BPE_CACHE_MAGIC, { format: BPE_CACHE_FORMAT, source, tokens: table.tokenStart.length, maxTokenBytes: table.maxTokenBytes }, [
    ['pool', table.pool],
    ['tokenStart', bytesOf(table.tokenStart)],
    ['tokenBytes', bytesOf(table.tokenBytes)],
    ['slots', bytesOf(table.slots)],
    ['filter', bytesOf(table.filter)],
    ['pairRanks', bytesOf(table.pairRanks)],
  ]);
}

/**
 * Parses and checks a cache file's bytes; any mismatch or damage is a reason, never an exception. `verifyChecksum:
 * false` skips the payload's CRC-32 (cache-stamp.ts: the file was checked whole before and not written since).
 */
export function parseRankTable(file: Buffer, expected: BpeSource, options: { verifyChecksum?: boolean } = {}): BpeCacheReadResult {
  const read = readSectionedFile<BpeCacheHeader, SectionName>(file, {
    ...options,
    magic: BPE_CACHE_MAGIC,
    what: 'token table',
    format: BPE_CACHE_FORMAT,
    checkSource: ({ source: s }) =>
      s?.package !== expected.package || s.version !== expected.version || s.encoding !== expected.encoding
        ? `built from ${String(s?.package)}@${String(s?.version)} ${String(s?.encoding)}, installed is ${expected.package}@${expected.version} ${expected.encoding}`
        : null,
    sizes: ({ tokens }) => ({ pool: undefined, tokenStart: tokens * 4, tokenBytes: tokens * 4, slots: undefined, filter: undefined, pairRanks: 256 * 256 * 4 }),
  });
  if (!read.ok) return read;
  const { header, view } = read;
  const tokens = header.tokens;
  const slotCount = header.sections.slots.bytes / 8;
  if (slotCount < tokens || (slotCount & (slotCount - 1)) !== 0) return { ok: false, reason: `the hash table has ${slotCount} slots for ${tokens} tokens` };
  const table: RankTable = {
    pool: view('pool', (b, o, l) => new Uint8Array(b, o, l), 1),
    tokenStart: view('tokenStart', (b, o, l) => new Int32Array(b, o, l), 4),
    tokenBytes: view('tokenBytes', (b, o, l) => new Int32Array(b, o, l), 4),
    slots: view('slots', (b, o, l) => new Int32Array(b, o, l), 4),
    filter: view('filter', (b, o, l) => new Uint32Array(b, o, l), 4),
    pairRanks: view('pairRanks', (b, o, l) => new Int32Array(b, o, l), 4),
    maxTokenBytes: header.maxTokenBytes,
  };
  const last = tokens - 1;
  if (tokens > 0 && table.tokenStart[last]! + table.tokenBytes[last]! !== table.pool.length) return { ok: false, reason: 'the token offsets do not match the pool' };
  return { ok: true, table };
}

/**
 * The rank table from `<cacheDir>/bpe-...bin`, or built with `build` and written there (to a temporary file
 * renamed into place, so a reader never sees a partial file) when missing, stale or damaged. Synchronous: the
 * tokenizer counts synchronously and loads on its first count.
 */
export function loadRankTable(options: { cacheDir: string; source: BpeSource; build: () => RankTable }): { table: RankTable; info: BpeCacheInfo } {
  const started = performance.now();
  const path = join(options.cacheDir, bpeCacheFileName(options.source));
  let buildReason = 'no cache file yet';
  let stamped: StampedRead | undefined;
  try {
    stamped = readStamped(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') buildReason = `the cache file could not be read (${(err as Error).message})`;
  }
  if (stamped) {
    // A file checked whole before and not written since skips the payload's CRC (cache-stamp.ts).
    const read = parseRankTable(stamped.file, options.source, { verifyChecksum: !stamped.isStamped });
    if (read.ok) {
      stamped.stamp();
      return { table: read.table, info: { path, isBuilt: false, ms: performance.now() - started } };
    }
    buildReason = read.reason;
  }
  const table = options.build();
  const info: BpeCacheInfo = { path, isBuilt: true, buildReason, ms: 0 };
  try {
    mkdirSync(options.cacheDir, { recursive: true });
    const temp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    try {
      writeFileSync(temp, serializeRankTable(table, options.source));
      renameSync(temp, path);
    } finally {
      rmSync(temp, { force: true });
    }
  } catch (err) {
    info.writeError = (err as Error).message;
  }
  info.ms = performance.now() - started;
  return { table, info };
}
