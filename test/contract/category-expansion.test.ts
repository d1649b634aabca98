import { afterEach, beforeEach, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { runStorageContract } from './harnesses.js';
import type { BackendHarness } from './storage-contract.js';

// The answer names a member ("karate"), the question its category ("martial arts"): no shared content word.
const ANSWER = 'John: I got my yellow belt in karate last weekend, the instructor was tough.';
const FILLER = [
  'Maria: The weather has been lovely, we walked by the river on Sunday.',
  'John: My kids started swimming lessons this month and they love the pool.',
  'Maria: I am reading a novel about a lighthouse keeper, it is slow but beautiful.',
  'John: Work has been busy, two deadlines in one week.',
  'Maria: We adopted a cat from the shelter, she sleeps all day.',
  'John: I watched a documentary about ancient arts and crafts yesterday.',
];

runStorageContract('category-member expansion with WordNet', ({ createHarness }) => {
  let harness: BackendHarness;
  let mem: Engram;

  beforeEach(async () => {
    harness = await createHarness();
    mem = await openEngram({ backend: harness.backend });
    await mem.append('s', [ANSWER, ...FILLER].map((content) => ({ kind: 'user' as const, content })));
  });
  afterEach(async () => {
    await mem.close();
    await harness.cleanup();
  });

  it('finds by full-text a turn that names only a member of the category the question asks about', async () => {
    const question = 'What martial arts has he done?';
    const answer = (await mem.recall('karate', { retriever: 'fts', logRecall: false })).hits[0]!.eventId;
    const off = await mem.recall(question, { retriever: 'fts', categoryWeight: 0, logRecall: false });
    const on = await mem.recall(question, { retriever: 'fts', categoryWeight: 0.5, logRecall: false });
    // Off, the answer comes at most as a neighbour's context (relevance near 0); on, its member word ranks it second.
    const relevance = (r: typeof on): number => r.hits.find((h) => h.eventId === answer)?.relevance ?? 0;
    expect(relevance(on)).toBeGreaterThan(relevance(off));
    expect(on.hits.map((h) => h.eventId).indexOf(answer)).toBe(1);
    expect(off.hits.map((h) => h.eventId).indexOf(answer)).not.toBe(1);
    // Fused at a low weight: what the question itself found stays first.
    expect(on.hits[0]!.eventId).toBe(off.hits[0]!.eventId);
  });

  it('is off by default and refuses a weight outside 0..1, naming the field', async () => {
    const plain = await mem.recall('What martial arts has he done?', { retriever: 'fts', logRecall: false });
    const off = await mem.recall('What martial arts has he done?', { retriever: 'fts', categoryWeight: 0, logRecall: false });
    expect(plain.hits.map((h) => [h.eventId, h.relevance])).toEqual(off.hits.map((h) => [h.eventId, h.relevance]));
    await expect(mem.recall('What martial arts?', { categoryWeight: 1.5, logRecall: false })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'categoryWeight' } });
    await expect(mem.recall('What martial arts?', { categoryWeight: -0.1, logRecall: false })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'categoryWeight' } });
  });
});
