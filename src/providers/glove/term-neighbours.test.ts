import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBuiltinEmbedder, type BuiltinEmbedder } from '../builtin-embedder.js';

// The real word table (the package's GloVe vectors), from the shared test cache when the global setup built one.
const ownDir = process.env.ENGRAM_TEST_CACHE_DIR ? undefined : mkdtempSync(join(tmpdir(), 'engram-neighbours-'));
afterAll(() => {
  if (ownDir) rmSync(ownDir, { recursive: true, force: true });
});

let embedder: BuiltinEmbedder;
beforeAll(async () => {
  embedder = await createBuiltinEmbedder({ cacheDir: process.env.ENGRAM_TEST_CACHE_DIR ?? ownDir! });
}, 180_000);

describe('built-in embedder similarTerms', () => {
  it('finds a content word the same kind of thing, best first, without the word itself', async () => {
    const pottery = await embedder.similarTerms!('pottery', 5);
    expect(pottery).toHaveLength(5);
    expect(pottery[0]!.term).toBe('ceramics');
    expect(pottery.map((n) => n.term)).not.toContain('pottery');
    const sims = pottery.map((n) => n.similarity);
    expect([...sims].sort((a, b) => b - a)).toEqual(sims);
    expect(sims[0]!).toBeGreaterThan(0.7);
    expect((await embedder.similarTerms!('camping', 3)).map((n) => n.term)).toContain('hiking');
  });

  it('is case-blind and the same on a repeated call (cached)', async () => {
    const first = await embedder.similarTerms!('Charity', 4);
    expect(first.map((n) => n.term)).toContain('charities');
    expect(await embedder.similarTerms!('charity', 4)).toEqual(first);
  });

  it('gives nothing for unknown words and the most common words, and never a common word as a neighbour', async () => {
    expect(await embedder.similarTerms!('qzxwvkj', 5)).toEqual([]);
    // "go" is among the most frequent words: its nearest ones are come, get, take.
    expect(await embedder.similarTerms!('go', 5)).toEqual([]);
    const school = (await embedder.similarTerms!('classroom', 10)).map((n) => n.term);
    expect(school).toContain('classrooms');
    for (const common of ['the', 'school', 'you']) expect(school).not.toContain(common);
    expect(school.every((w) => /^[a-z]+$/.test(w))).toBe(true);
  });
});
