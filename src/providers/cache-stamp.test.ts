import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, truncateSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadRankTable } from './bpe-cache.js';
import { buildRankTable } from './bpe-encoder.js';
import { RACY_MS, readStamped, stampPath } from './cache-stamp.js';
import { openGloveTables } from './glove/glove-cache.js';
import { parseCache } from './glove/glove-cache-file.js';
import { DEFAULT_ENCODER_CONFIG, SentenceEncoder } from './glove/sentence-encoder.js';
import { writeWinkFixture } from './glove/test-support.js';

const root = mkdtempSync(join(tmpdir(), 'engram-cache-stamp-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const fixture = writeWinkFixture(join(root, 'wink.json'), { words: 400, dimensions: 16 });
let dirs = 0;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A built word-vector cache, checked whole once after the racy window so it carries a stamp. */
async function stampedCache(): Promise<{ dir: string; path: string; good: Buffer }> {
  const dir = join(root, `cache-${dirs++}`);
  const built = await openGloveTables({ cacheDir: dir, source: fixture.source });
  expect(built.info.isBuilt).toBe(true);
  // A build writes no stamp; a file changed within RACY_MS of its check gets none either.
  expect(existsSync(stampPath(built.info.path))).toBe(false);
  // A whole-second modification time, which a test can set back exactly after a rewrite (utimes takes seconds).
  utimesSync(built.info.path, MTIME_S, MTIME_S);
  await sleep(RACY_MS + 50);
  const checked = await openGloveTables({ cacheDir: dir, source: fixture.source });
  expect(checked.info.isBuilt).toBe(false);
  expect(readStamped(built.info.path).isStamped).toBe(true);
  return { dir, path: built.info.path, good: readFileSync(built.info.path) };
}

const MTIME_S = 1_700_000_000;

/** Rewrites `path` with `bytes` and sets its modification time back to {@link MTIME_S}, as a tool that hides its write would. */
function rewriteKeepingMtime(path: string, bytes: Buffer): void {
  writeFileSync(path, bytes);
  utimesSync(path, MTIME_S, MTIME_S);
}

describe('cache stamps (the CRC of a checked, unchanged cache is skipped)', () => {
  it('stamps a cache once it passed the full check, and the stamp holds while the file is untouched', async () => {
    const { dir, path } = await stampedCache();
    const again = await openGloveTables({ cacheDir: dir, source: fixture.source });
    expect(again.info.isBuilt).toBe(false);
    expect(readStamped(path).isStamped).toBe(true);
  });

  it('detects a truncated cache after it was stamped and rebuilds it', async () => {
    const { dir, path, good } = await stampedCache();
    truncateSync(path, good.length - 8);
    const r = await openGloveTables({ cacheDir: dir, source: fixture.source });
    expect(r.info.isBuilt).toBe(true);
    expect(r.info.buildReason).toMatch(/truncated/);
    expect(readFileSync(path).equals(good)).toBe(true);
  });

  it('detects flipped header bytes even when the modification time is set back', async () => {
    const { dir, path, good } = await stampedCache();
    const headerLength = good.readUInt32LE(8);
    // The payload's CRC field in the JSON header: a digit changed there makes the header lie about the payload.
    const header = good.toString('utf8', 12, 12 + headerLength);
    const at = 12 + header.indexOf('"crc32":') + '"crc32":'.length;
    const damaged = Buffer.from(good);
    damaged[at] = damaged[at] === 0x31 ? 0x32 : 0x31;
    rewriteKeepingMtime(path, damaged);
    expect(readStamped(path).isStamped).toBe(false);
    const r = await openGloveTables({ cacheDir: dir, source: fixture.source });
    expect(r.info.isBuilt).toBe(true);
    expect(r.info.buildReason).toMatch(/checksum mismatch/);
    expect(readFileSync(path).equals(good)).toBe(true);

    // The magic itself.
    const { path: path2, dir: dir2, good: good2 } = await stampedCache();
    const badMagic = Buffer.from(good2);
    badMagic[0] = badMagic[0]! ^ 0xff;
    rewriteKeepingMtime(path2, badMagic);
    const r2 = await openGloveTables({ cacheDir: dir2, source: fixture.source });
    expect(r2.info).toMatchObject({ isBuilt: true, buildReason: expect.stringMatching(/bad magic/) });
  });

  it('detects a damaged payload byte when the size and modification time are kept (the status-change time moves)', async () => {
    const { dir, path, good } = await stampedCache();
    const mtimeMs = statSync(path).mtimeMs;
    expect(mtimeMs).toBe(MTIME_S * 1000);
    const damaged = Buffer.from(good);
    damaged[damaged.length - 100] = damaged[damaged.length - 100]! ^ 0x5a;
    rewriteKeepingMtime(path, damaged);
    expect([statSync(path).mtimeMs, statSync(path).size]).toEqual([mtimeMs, good.length]);
    const r = await openGloveTables({ cacheDir: dir, source: fixture.source });
    expect(r.info.isBuilt).toBe(true);
    expect(r.info.buildReason).toMatch(/checksum mismatch/);
    expect(readFileSync(path).equals(good)).toBe(true);
  });

  it('skips only the payload CRC for a stamped file: the header, the sizes and the bounds are still checked', async () => {
    const { path, good } = await stampedCache();
    const { path: _p, ...identity } = fixture.source;
    const damaged = Buffer.from(good);
    damaged[damaged.length - 100] = damaged[damaged.length - 100]! ^ 0x5a;
    expect(parseCache(damaged, identity)).toMatchObject({ ok: false, reason: expect.stringMatching(/checksum mismatch/) });
    expect(parseCache(damaged, identity, { verifyChecksum: false }).ok).toBe(true);
    expect(parseCache(good.subarray(0, good.length - 8), identity, { verifyChecksum: false })).toMatchObject({ ok: false, reason: expect.stringMatching(/truncated/) });
    expect(parseCache(good, { ...identity, version: '9.9.9' }, { verifyChecksum: false })).toMatchObject({ ok: false, reason: expect.stringMatching(/installed is wink-fixture@9\.9\.9/) });
    expect(readStamped(path).isStamped).toBe(true);
  });

  it('opens a stamped word-vector cache in part: the same vocabulary, rows, statistics and embeddings as a whole read', async () => {
    const { dir, good } = await stampedCache();
    const { path: _p, ...identity } = fixture.source;
    const whole = parseCache(good, identity);
    if (!whole.ok) throw new Error(whole.reason);
    // 100 of the 400 rows read at start, the others when used.
    const lazy = await openGloveTables({ cacheDir: dir, source: fixture.source, lazyPrefixRows: 100 });
    expect(lazy.info.isBuilt).toBe(false);
    const a = whole.tables;
    const b = lazy.tables;
    expect(b.row).toBeTypeOf('function');
    expect(fixture.words.map((w) => b.vocabulary.get(w))).toEqual(fixture.words.map((w) => a.vocabulary.get(w)));
    expect([...b.scales]).toEqual([...a.scales]);
    expect([...b.mean]).toEqual([...a.mean]);
    expect([...b.components]).toEqual([...a.components]);
    const texts = ['the say "hi" word7 word350', 'café naïve word399 word12', 'word250 word251 word252', 'nothing known here'];
    const [ea, eb] = [new SentenceEncoder(a, DEFAULT_ENCODER_CONFIG), new SentenceEncoder(b, DEFAULT_ENCODER_CONFIG)];
    for (const t of texts) expect([...eb.embed(t)]).toEqual([...ea.embed(t)]);
    for (let r = 0; r < 400; r++) expect([...b.row!(r)]).toEqual([...a.matrix.subarray(r * 16, (r + 1) * 16)]);
    // The whole matrix when asked for, then every row from it.
    expect(Buffer.from(b.matrix.buffer, b.matrix.byteOffset, b.matrix.byteLength).equals(Buffer.from(a.matrix.buffer, a.matrix.byteOffset, a.matrix.byteLength))).toBe(true);
    expect([...b.row!(399)]).toEqual([...a.matrix.subarray(399 * 16, 400 * 16)]);
  });

  it('reads an unstamped cache whole (and checks its CRC)', async () => {
    const dir = join(root, `cache-${dirs++}`);
    await openGloveTables({ cacheDir: dir, source: fixture.source });
    const r = await openGloveTables({ cacheDir: dir, source: fixture.source, lazyPrefixRows: 100 });
    expect(r.info.isBuilt).toBe(false);
    expect(r.tables.row).toBeUndefined();
  });

  it('ignores a stamp that is not one (garbage, another file) and checks the whole file', async () => {
    const { dir, path } = await stampedCache();
    writeFileSync(stampPath(path), '{not json');
    expect(readStamped(path).isStamped).toBe(false);
    const r = await openGloveTables({ cacheDir: dir, source: fixture.source });
    expect(r.info.isBuilt).toBe(false);
    // The full check passed, so the stamp is written again.
    expect(readStamped(path).isStamped).toBe(true);
    const other = JSON.parse(readFileSync(stampPath(path), 'utf8')) as Record<string, number>;
    writeFileSync(stampPath(path), JSON.stringify({ ...other, ino: other.ino! + 1 }));
    expect(readStamped(path).isStamped).toBe(false);
  });
});

describe('cache stamps on the token table cache', () => {
  it('are written after a full check and do not hide a damaged payload byte', async () => {
    const dir = join(root, 'bpe');
    const source = { package: 'test-vocabulary', version: '1.0.0', encoding: 'tiny' };
    const build = () => buildRankTable([...Array.from({ length: 256 }, (_, b) => [b]), 'th', 'he', 'the']);
    const { path } = loadRankTable({ cacheDir: dir, source, build }).info;
    utimesSync(path, MTIME_S, MTIME_S);
    await sleep(RACY_MS + 50);
    expect(loadRankTable({ cacheDir: dir, source, build }).info.isBuilt).toBe(false);
    expect(readStamped(path).isStamped).toBe(true);
    const good = readFileSync(path);
    const damaged = Buffer.from(good);
    damaged[damaged.length - 3] = damaged[damaged.length - 3]! ^ 0xff;
    rewriteKeepingMtime(path, damaged);
    expect(loadRankTable({ cacheDir: dir, source, build }).info).toMatchObject({ isBuilt: true, buildReason: 'checksum mismatch: the file is damaged' });
    expect(readFileSync(path).equals(good)).toBe(true);
  });
});
