import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { endianness } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { crc32 } from 'node:zlib';
import type { RankTable } from './bpe-encoder.js';

/**
 * The binary cache of the token counter's rank table, one file, in the same layout as the word-vector cache
 * (glove/glove-cache-file.ts):
 *
 *   bytes 0-7   magic "ENGRAMBP"
 *   bytes 8-11  header length H (uint32 LE)
 *   bytes 12..  header: UTF-8 JSON {@link BpeCacheHeader}
 *   padding to a multiple of 8, then the payload: the {@link RankTable}'s arrays at the header's offsets.
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

export interface BpeCacheHeader {
  format: number;
  endianness: 'LE' | 'BE';
  source: BpeSource;
  tokens: number;
  maxTokenBytes: number;
  payloadBytes: number;
  crc32: number;
  sections: Record<SectionName, { offset: number; bytes: number }>;
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
  const parts: Array<[SectionName, Uint8Array]> = [
    ['pool', table.pool],
    ['tokenStart', bytesOf(table.tokenStart)],
    ['tokenBytes', bytesOf(table.tokenBytes)],
    ['slots', bytesOf(table.slots)],
    ['filter', bytesOf(table.filter)],
    ['pairRanks', bytesOf(table.pairRanks)],
  ];
  const sections = {} as BpeCacheHeader['sections'];
  let offset = 0;
  for (const [name, bytes] of parts) {
    sections[name] = { offset, bytes: bytes.length };
    offset = align8(offset + bytes.length);
  }
  const payload = Buffer.alloc(offset);
  for (const [name, bytes] of parts) payload.set(bytes, sections[name].offset);
  const header: BpeCacheHeader = {
    format: BPE_CACHE_FORMAT,
    endianness: endianness(),
    source,
    tokens: table.tokenStart.length,
    maxTokenBytes: table.maxTokenBytes,
    payloadBytes: payload.length,
    crc32: crc32(payload),
    sections,
  };
  const headerBytes = Buffer.from(JSON.stringify(header), 'utf8');
  const start = align8(12 + headerBytes.length);
  const file = Buffer.alloc(start + payload.length);
  file.write(BPE_CACHE_MAGIC, 0, 'latin1');
  file.writeUInt32LE(headerBytes.length, 8);
  file.set(headerBytes, 12);
  file.set(payload, start);
  return file;
}

/** Parses and checks a cache file's bytes; any mismatch or damage is a reason, never an exception. */
export function parseRankTable(file: Buffer, expected: BpeSource): BpeCacheReadResult {
  const fail = (reason: string): BpeCacheReadResult => ({ ok: false, reason });
  if (file.length < 12 || file.toString('latin1', 0, 8) !== BPE_CACHE_MAGIC) return fail('not an Engram token table cache (bad magic)');
  const headerLength = file.readUInt32LE(8);
  if (12 + headerLength > file.length) return fail(`truncated: the header needs ${12 + headerLength} bytes, the file has ${file.length}`);
  let header: BpeCacheHeader;
  try {
    header = JSON.parse(file.toString('utf8', 12, 12 + headerLength)) as BpeCacheHeader;
  } catch {
    return fail('the header is not valid JSON');
  }
  if (header.format !== BPE_CACHE_FORMAT) return fail(`format ${String(header.format)}, expected ${BPE_CACHE_FORMAT}`);
  if (header.endianness !== endianness()) return fail(`byte order ${String(header.endianness)}, this host is ${endianness()}`);
  const s = header.source;
  if (s?.package !== expected.package || s.version !== expected.version || s.encoding !== expected.encoding) {
    return fail(`built from ${String(s?.package)}@${String(s?.version)} ${String(s?.encoding)}, installed is ${expected.package}@${expected.version} ${expected.encoding}`);
  }
  const start = align8(12 + headerLength);
  if (file.length !== start + header.payloadBytes) return fail(`truncated or extended: ${file.length} bytes, the header says ${start + header.payloadBytes}`);
  // A fresh read is 8-aligned; a view into a shared pool may not be, and typed arrays need alignment.
  const payload = file.byteOffset % 8 === 0 ? file.subarray(start) : Buffer.from(file.subarray(start));
  if (crc32(payload) !== header.crc32) return fail('checksum mismatch: the file is damaged');

  const tokens = header.tokens;
  const expectBytes: Record<SectionName, number | undefined> = {
    pool: undefined,
    tokenStart: tokens * 4,
    tokenBytes: tokens * 4,
    slots: undefined,
    filter: undefined,
    pairRanks: 256 * 256 * 4,
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
  const slotCount = header.sections.slots.bytes / 8;
  if (slotCount < tokens || (slotCount & (slotCount - 1)) !== 0) return fail(`the hash table has ${slotCount} slots for ${tokens} tokens`);
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
  if (tokens > 0 && table.tokenStart[last]! + table.tokenBytes[last]! !== table.pool.length) return fail('the token offsets do not match the pool');
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
  let file: Buffer | undefined;
  try {
    file = readFileSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') buildReason = `the cache file could not be read (${(err as Error).message})`;
  }
  if (file) {
    const read = parseRankTable(file, options.source);
    if (read.ok) return { table: read.table, info: { path, isBuilt: false, ms: performance.now() - started } };
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

function bytesOf(array: Int32Array | Uint32Array): Uint8Array {
  return new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
}

function align8(n: number): number {
  return (n + 7) & ~7;
}
