import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cacheFileName, defaultCacheDir, openGloveTables, type GloveSourceFile } from './glove-cache.js';
import type { GloveTables } from './glove-tables.js';
import { writeWinkFixture } from './test-support.js';

const root = mkdtempSync(join(tmpdir(), 'engram-glove-cache-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let dirs = 0;
const freshDir = (): string => join(root, `cache-${dirs++}`);
const fixture = writeWinkFixture(join(root, 'wink.json'), { words: 400, dimensions: 16 });
const source = fixture.source;
const cachePath = (dir: string, s: GloveSourceFile = source): string => join(dir, cacheFileName(s));

function expectSameTables(a: GloveTables, b: GloveTables): void {
  expect(b.dimensions).toBe(a.dimensions);
  expect(b.source).toEqual(a.source);
  expect(Buffer.from(b.matrix.buffer, b.matrix.byteOffset, b.matrix.byteLength).equals(Buffer.from(a.matrix.buffer, a.matrix.byteOffset, a.matrix.byteLength))).toBe(true);
  expect([...b.scales]).toEqual([...a.scales]);
  expect([...b.mean]).toEqual([...a.mean]);
  expect([...b.components]).toEqual([...a.components]);
  expect(fixture.words.map((w) => b.vocabulary.get(w))).toEqual(fixture.words.map((w) => a.vocabulary.get(w)));
}

describe('openGloveTables', () => {
  it('builds the cache on first use, then loads the same tables from it', async () => {
    const dir = freshDir();
    const first = await openGloveTables({ cacheDir: dir, source });
    expect(first.info).toMatchObject({ isBuilt: true, buildReason: 'no cache file yet', path: cachePath(dir) });
    expect(first.info.writeError).toBeUndefined();
    const second = await openGloveTables({ cacheDir: dir, source });
    expect(second.info.isBuilt).toBe(false);
    expectSameTables(first.tables, second.tables);
    // Rows hold the quantised source vectors.
    const r = first.tables.vocabulary.get('café')!;
    const row = Array.from({ length: 16 }, (_, d) => second.tables.matrix[r * 16 + d]! * second.tables.scales[r]!);
    row.forEach((x, d) => expect(x).toBeCloseTo(fixture.vectors[r]![d]!, 2));
  });

  it('builds byte-identical files twice (no timestamps, deterministic statistics)', async () => {
    const [a, b] = [freshDir(), freshDir()];
    await openGloveTables({ cacheDir: a, source });
    await openGloveTables({ cacheDir: b, source });
    expect(readFileSync(cachePath(a)).equals(readFileSync(cachePath(b)))).toBe(true);
  });

  it('detects a damaged byte by its checksum and rebuilds the same file', async () => {
    const dir = freshDir();
    const { tables } = await openGloveTables({ cacheDir: dir, source });
    const good = readFileSync(cachePath(dir));
    const damaged = Buffer.from(good);
    damaged[damaged.length - 100] = damaged[damaged.length - 100]! ^ 0x5a;
    writeFileSync(cachePath(dir), damaged);
    const reopened = await openGloveTables({ cacheDir: dir, source });
    expect(reopened.info.isBuilt).toBe(true);
    expect(reopened.info.buildReason).toMatch(/checksum mismatch/);
    expectSameTables(tables, reopened.tables);
    expect(readFileSync(cachePath(dir)).equals(good)).toBe(true);
  });

  it('detects a truncated file and rebuilds it', async () => {
    const dir = freshDir();
    await openGloveTables({ cacheDir: dir, source });
    const good = readFileSync(cachePath(dir));
    for (const length of [good.length - 1, 200, 5, 0]) {
      truncateSync(cachePath(dir), length);
      const reopened = await openGloveTables({ cacheDir: dir, source });
      expect(reopened.info.isBuilt).toBe(true);
      expect(reopened.info.buildReason).toMatch(/truncated|bad magic|not valid JSON/);
      expect(readFileSync(cachePath(dir)).equals(good)).toBe(true);
    }
  });

  it('rebuilds when the installed package no longer matches what the cache was built from', async () => {
    const dir = freshDir();
    const path = join(root, 'repackaged.json');
    const before = writeWinkFixture(path, { words: 50, dimensions: 16, seed: 1 });
    await openGloveTables({ cacheDir: dir, source: before.source });
    // Same package version, different contents: the file size in the header tells them apart.
    const after = writeWinkFixture(path, { words: 60, dimensions: 16, seed: 2 });
    const reopened = await openGloveTables({ cacheDir: dir, source: after.source });
    expect(reopened.info.isBuilt).toBe(true);
    expect(reopened.info.buildReason).toMatch(/built from wink-fixture@0\.0\.1 \(\d+ bytes\), installed is wink-fixture@0\.0\.1/);
    expect(reopened.tables.vocabulary.size).toBe(60);
  });

  it('still returns working tables when the cache cannot be written, and says why', async () => {
    const blocker = join(root, 'a-file');
    writeFileSync(blocker, 'not a directory');
    const { tables, info } = await openGloveTables({ cacheDir: join(blocker, 'cache'), source });
    expect(info.isBuilt).toBe(true);
    expect(info.writeError).toMatch(/ENOTDIR|EEXIST/);
    expect(tables.vocabulary.get('the')).toBe(0);
  });

  it('survives two processes building the same cache at once: one complete file, no temp files', async () => {
    const dir = freshDir();
    mkdirSync(dir);
    const big = writeWinkFixture(join(root, 'big.json'), { words: 20_000, dimensions: 100, seed: 3, version: '0.0.2' });
    const startAt = Date.now() + 2500;
    const run = (): Promise<{ code: number | null; out: string; err: string }> =>
      new Promise((resolve) => {
        const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/glove-build-child.ts', dir, JSON.stringify(big.source), String(startAt)]);
        let out = '';
        let err = '';
        child.stdout.on('data', (d: Buffer) => (out += d.toString()));
        child.stderr.on('data', (d: Buffer) => (err += d.toString()));
        child.on('close', (code) => resolve({ code, out, err }));
      });
    const results = await Promise.all([run(), run()]);
    for (const r of results) {
      expect(r.err).toBe('');
      expect(r.code).toBe(0);
      expect(JSON.parse(r.out)).toMatchObject({ path: cachePath(dir, big.source) });
    }
    expect(readdirSync(dir)).toEqual([cacheFileName(big.source)]);
    const reopened = await openGloveTables({ cacheDir: dir, source: big.source });
    expect(reopened.info.isBuilt).toBe(false);
    const fresh = await openGloveTables({ cacheDir: freshDir(), source: big.source });
    expect(readFileSync(cachePath(dir, big.source)).equals(readFileSync(fresh.info.path))).toBe(true);
  }, 60_000);
});

describe('defaultCacheDir', () => {
  it('prefers ENGRAM_CACHE_DIR, then XDG_CACHE_HOME/engram, then ~/.cache/engram', () => {
    expect(defaultCacheDir({ ENGRAM_CACHE_DIR: '/x/engram-cache', XDG_CACHE_HOME: '/xdg' })).toBe('/x/engram-cache');
    expect(defaultCacheDir({ XDG_CACHE_HOME: '/xdg' })).toBe(join('/xdg', 'engram'));
    expect(defaultCacheDir({})).toBe(join(homedir(), '.cache', 'engram'));
  });
});
