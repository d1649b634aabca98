import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bpeCacheFileName, loadRankTable, parseRankTable, serializeRankTable, type BpeSource } from './bpe-cache.js';
import { BpeEncoder, buildRankTable, type RankTable } from './bpe-encoder.js';

// A small vocabulary: every single byte, then some merges (ranks in merge order, as BPE vocabularies list them).
const bytes = Array.from({ length: 256 }, (_, b) => [b]);
const merges = ['th', 'he', 'the', 'in', 'ing', ' t', ' the', 'er', 'on', ' c', 'ou', 'nt', 'count', 'ÿé'];
const vocabulary: Array<string | number[]> = [...bytes, ...merges];
const SOURCE: BpeSource = { package: 'test-vocabulary', version: '1.0.0', encoding: 'tiny' };
const SPLIT = / ?\p{L}+| ?\p{N}+|\s+|[^\s\p{L}\p{N}]+/gu;
const TEXTS = ['the thing in the counting room', 'ÿé ÿé', '', '1234 thé   ending\n\ncount', 'x'.repeat(3000)];

function counts(table: RankTable): number[] {
  const encoder = new BpeEncoder(table, SPLIT);
  return TEXTS.map((t) => encoder.count(t));
}

describe('the token rank table cache', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'engram-bpe-cache-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reads back the table it wrote, array for array, and counts the same', () => {
    const built = buildRankTable(vocabulary);
    const read = parseRankTable(serializeRankTable(built, SOURCE), SOURCE);
    if (!read.ok) throw new Error(read.reason);
    for (const key of ['pool', 'tokenStart', 'tokenBytes', 'slots', 'filter', 'pairRanks'] as const) {
      expect(Array.from(read.table[key]), key).toEqual(Array.from(built[key]));
    }
    expect(read.table.maxTokenBytes).toBe(built.maxTokenBytes);
    expect(counts(read.table)).toEqual(counts(built));
  });

  it('builds once, then loads from the file without building', () => {
    let builds = 0;
    const build = () => (builds++, buildRankTable(vocabulary));
    const first = loadRankTable({ cacheDir: join(dir, 'nested'), source: SOURCE, build });
    expect(first.info).toMatchObject({ isBuilt: true, buildReason: 'no cache file yet' });
    expect(first.info.writeError).toBeUndefined();
    const second = loadRankTable({ cacheDir: join(dir, 'nested'), source: SOURCE, build });
    expect(second.info.isBuilt).toBe(false);
    expect(builds).toBe(1);
    expect(counts(second.table)).toEqual(counts(first.table));
  });

  it('rebuilds a damaged, truncated or stale file, saying why', () => {
    const build = () => buildRankTable(vocabulary);
    const path = loadRankTable({ cacheDir: dir, source: SOURCE, build }).info.path;
    expect(path).toBe(join(dir, bpeCacheFileName(SOURCE)));
    const good = readFileSync(path);

    const damaged = Buffer.from(good);
    damaged[damaged.length - 3] = damaged[damaged.length - 3]! ^ 0xff;
    writeFileSync(path, damaged);
    expect(loadRankTable({ cacheDir: dir, source: SOURCE, build }).info.buildReason).toBe('checksum mismatch: the file is damaged');

    writeFileSync(path, good.subarray(0, good.length - 100));
    expect(loadRankTable({ cacheDir: dir, source: SOURCE, build }).info.buildReason).toMatch(/^truncated or extended/);

    writeFileSync(path, 'not a cache');
    expect(loadRankTable({ cacheDir: dir, source: SOURCE, build }).info.buildReason).toMatch(/bad magic/);

    // Each failed read rebuilt and rewrote the file: it is good again.
    expect(loadRankTable({ cacheDir: dir, source: SOURCE, build }).info.isBuilt).toBe(false);
    expect(parseRankTable(readFileSync(path), { ...SOURCE, version: '2.0.0' })).toEqual({
      ok: false,
      reason: 'built from test-vocabulary@1.0.0 tiny, installed is test-vocabulary@2.0.0 tiny',
    });
  });

  it('still counts when the cache directory cannot be written', () => {
    const blocker = join(dir, 'file');
    writeFileSync(blocker, 'a file where the directory should be');
    const { table, info } = loadRankTable({ cacheDir: join(blocker, 'cache'), source: SOURCE, build: () => buildRankTable(vocabulary) });
    expect(info.isBuilt).toBe(true);
    expect(info.writeError).toMatch(/EEXIST|ENOTDIR/);
    expect(counts(table)).toEqual(counts(buildRankTable(vocabulary)));
  });
});
