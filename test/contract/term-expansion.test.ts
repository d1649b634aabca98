import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { createBuiltinEmbedder } from '../../src/providers/builtin-embedder.js';
import type { Embedder } from '../../src/providers/embedder.js';
import { runStorageContract } from './harnesses.js';
import type { BackendHarness } from './storage-contract.js';

const cacheDir = process.env.ENGRAM_TEST_CACHE_DIR ?? mkdtempSync(join(tmpdir(), 'engram-embedder-'));
let builtin: Embedder;
beforeAll(async () => {
  builtin = await createBuiltinEmbedder({ cacheDir });
}, 120_000);

// The answer says "ceramics", the question "pottery": no shared word, so full-text alone cannot find it.
const ANSWER = 'Melanie: I finally signed up for a ceramics course at the community centre, Tuesdays after work.';
const FILLER = [
  'Caroline: The weather has been lovely, we walked by the river on Sunday.',
  'Melanie: My kids started swimming lessons this month and they love the pool.',
  'Caroline: I am reading a novel about a lighthouse keeper, it is slow but beautiful.',
  'Melanie: Work has been busy, two deadlines in one week.',
  'Caroline: We adopted a cat from the shelter, she sleeps all day.',
  'Melanie: I want to learn pottery class techniques someday, a friend mentioned it.',
];

runStorageContract('query-term expansion with the built-in word vectors', ({ createHarness }) => {
  let harness: BackendHarness;
  let mem: Engram;

  beforeEach(async () => {
    harness = await createHarness();
    mem = await openEngram({ backend: harness.backend, embedder: builtin, indexing: { background: false } });
    await mem.append('s', [ANSWER, ...FILLER].map((content) => ({ kind: 'user' as const, content })));
    await mem.indexer!.drain();
  });
  afterEach(async () => {
    await mem.close();
    await harness.cleanup();
  });

  it('finds by full-text a turn that holds only a near word of the question', async () => {
    const question = 'When did Melanie start her pottery course?';
    const answer = (await mem.recall('ceramics', { retriever: 'fts', logRecall: false })).hits[0]!.eventId;
    const off = await mem.recall(question, { expansionWeight: 0, vectorWeight: 0, logRecall: false });
    const on = await mem.recall(question, { expansionWeight: 0.5, vectorWeight: 0, logRecall: false });
    // With vectors weighing nothing, only the full-text side can rank it: the expansion's second query does.
    const relevanceOff = off.hits.find((h) => h.eventId === answer)?.relevance ?? 0;
    const relevanceOn = on.hits.find((h) => h.eventId === answer)?.relevance ?? 0;
    expect(relevanceOn).toBeGreaterThan(relevanceOff);
    expect(on.hits.map((h) => h.eventId)).toContain(answer);
  });

  it('is off for a full-text call (no embedder) and refuses a weight outside 0..1', async () => {
    const fts = await mem.recall('pottery', { retriever: 'fts', expansionWeight: 1, logRecall: false });
    expect(fts.hits).toHaveLength(1);
    expect(fts.hits.every((h) => !h.excerpt.includes('ceramics'))).toBe(true);
    await expect(mem.recall('pottery', { expansionWeight: 1.5, logRecall: false })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'expansionWeight' } });
  });
});
