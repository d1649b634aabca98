import { copyFileSync, mkdtempSync, readFileSync, rmSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILTIN_EMBEDDER_NAME, createBuiltinEmbedder, type BuiltinEmbedder } from './builtin-embedder.js';
import { dot } from './embedder.js';

// One cache per test run, built from the real package by the first test file that needs it (global setup).
const ownDir = process.env.ENGRAM_TEST_CACHE_DIR ? undefined : mkdtempSync(join(tmpdir(), 'engram-embedder-'));
const sharedDir = process.env.ENGRAM_TEST_CACHE_DIR ?? ownDir!;
const scratch = mkdtempSync(join(tmpdir(), 'engram-embedder-scratch-'));
afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
  if (ownDir) rmSync(ownDir, { recursive: true, force: true });
});

let embedder: BuiltinEmbedder;
beforeAll(async () => {
  embedder = await createBuiltinEmbedder({ cacheDir: sharedDir });
}, 180_000);

const SAMPLE_TEXTS = [
  'why did we pick Postgres?',
  'Fix ECONNREFUSED in src/db/pool.ts:42 before the v2.3.1 release',
  "I'm not sure the naïve café's Wi-Fi works",
  'x',
  '',
  'Caroline: I went to a LGBTQ support group yesterday and it was so powerful. [image: a photo of a rainbow flag]',
];

const similarity = async (a: string, b: string): Promise<number> => {
  const [x, y] = await embedder.embed([a, b]);
  return dot(x!, y!);
};

describe('createBuiltinEmbedder', () => {
  it('names its algorithm version and its dimensions', () => {
    expect(embedder.name).toBe(BUILTIN_EMBEDDER_NAME);
    expect(embedder.name).toMatch(/^builtin-glove-100d@\d+$/);
    expect(embedder.dimensions).toBe(256);
  });

  it('loads the cache it built from the real package and gives identical vectors', async () => {
    expect(readFileSync(embedder.cache.path).length).toBeGreaterThan(30_000_000);
    const reloaded = await createBuiltinEmbedder({ cacheDir: sharedDir });
    expect(reloaded.cache.isBuilt).toBe(false);
    const [a, b] = [await embedder.embed(SAMPLE_TEXTS), await reloaded.embed(SAMPLE_TEXTS)];
    a.forEach((v, i) => expect(Buffer.from(b[i]!.buffer).equals(Buffer.from(v.buffer))).toBe(true));
  });

  it('gives unit vectors of its dimensions, the same every time, and zeros for text with no words', async () => {
    const first = await embedder.embed(SAMPLE_TEXTS);
    const again = await embedder.embed([...SAMPLE_TEXTS].reverse());
    first.forEach((v, i) => {
      expect(v).toHaveLength(256);
      expect([...v]).toEqual([...again[SAMPLE_TEXTS.length - 1 - i]!]);
      const norm = Math.sqrt(dot(v, v));
      if (SAMPLE_TEXTS[i] === '' || SAMPLE_TEXTS[i] === 'x') expect(norm).toBe(0);
      else expect(norm).toBeCloseTo(1, 5);
    });
  });

  // Written before looking at any score: an anchor, a paraphrase that shares few or no words, an unrelated
  // sentence of similar length. Every one must rank its paraphrase first.
  it.each([
    ['why did we pick Postgres?', 'we chose PostgreSQL over MySQL because of JSONB', 'the kids loved the beach trip last summer'],
    ['The cat rested on the carpet.', 'The kitten slept on the rug.', 'Quarterly revenue grew by four percent.'],
    ['How do I fix the failing login test?', 'The authentication test breaks because the session token expired.', 'She painted a sunrise over the lake.'],
    ['Where is the database connection pool configured?', 'The pool size for database connections is set in the config file.', 'We adopted a puppy from the shelter on Sunday.'],
    ['When is the release scheduled?', 'We plan to ship the new version next Tuesday.', 'My grandmother knits warm wool sweaters.'],
    ['The server crashed after running out of memory.', 'An out-of-memory error killed the backend process.', 'They went hiking in the mountains with friends.'],
    ['What did Caroline do at the support group?', 'Caroline went to an LGBTQ support group meeting yesterday.', 'The stock market closed higher on Friday.'],
    ['Rotate the API keys every ninety days.', 'API credentials must be renewed every three months.', 'The recipe calls for two cups of flour.'],
  ])('scores a paraphrase above an unrelated sentence: %s', async (anchor, paraphrase, unrelated) => {
    expect(await similarity(anchor, paraphrase)).toBeGreaterThan(await similarity(anchor, unrelated));
  });

  it.each([
    ['ECONNREFUSED', 'ECONNRESET', 'EADDRINUSE'],
    ['pool.ts', 'src/db/pool.ts:42', 'tau-bench'],
    ['tau-bench', 'tau_bench_v2', 'ECONNREFUSED'],
    ['getUserById', 'get_user_by_id', 'renderSidebar'],
    ['TS2345', 'TS2322', 'E11000'],
    ['kubernetes-operator', 'kubernetesOperatorTest', 'webpack.config.js'],
  ])('scores identifiers that share n-grams above unrelated ones: %s', async (anchor, near, far) => {
    expect(await similarity(anchor, near)).toBeGreaterThan(await similarity(anchor, far));
  });

  it('detects a truncated cache and rebuilds it from the package, byte for byte', async () => {
    const copy = join(scratch, basename(embedder.cache.path));
    copyFileSync(embedder.cache.path, copy);
    truncateSync(copy, 1_000_000);
    const rebuilt = await createBuiltinEmbedder({ cacheDir: scratch });
    expect(rebuilt.cache.isBuilt).toBe(true);
    expect(rebuilt.cache.buildReason).toMatch(/truncated/);
    expect(readFileSync(copy).equals(readFileSync(embedder.cache.path))).toBe(true);
    const [v] = await rebuilt.embed([SAMPLE_TEXTS[0]!]);
    const [w] = await embedder.embed([SAMPLE_TEXTS[0]!]);
    expect([...v!]).toEqual([...w!]);
  }, 180_000);
});
