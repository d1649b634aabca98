import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { createBuiltinEmbedder } from '../../src/providers/builtin-embedder.js';
import type { Embedder } from '../../src/providers/embedder.js';
import { normalize } from '../../src/providers/embedder.js';
import type { EventId } from '../../src/model/ids.js';
import { runStorageContract } from './harnesses.js';
import type { BackendHarness } from './storage-contract.js';

const cacheDir = process.env.ENGRAM_TEST_CACHE_DIR ?? mkdtempSync(join(tmpdir(), 'engram-embedder-'));
let builtin: Embedder;
beforeAll(async () => {
  builtin = await createBuiltinEmbedder({ cacheDir });
}, 120_000);

/** A second, deliberately different model: vectors from letter counts (for model-switch tests only). */
const letters: Embedder = {
  name: 'test-letters@1',
  dimensions: 26,
  embed: async (texts) =>
    texts.map((t) => {
      const v = new Float32Array(26);
      for (const ch of t.toLowerCase()) {
        const i = ch.charCodeAt(0) - 97;
        if (i >= 0 && i < 26) v[i]! += 1;
      }
      return normalize(v);
    }),
};

const DECISION = 'After comparing both, we chose PostgreSQL over MySQL because of its JSONB columns and partial indexes.';
const FILLER = [
  'Renamed the helper in utils to make the call sites clearer.',
  'The login page now shows a spinner while the request is in flight.',
  'Bumped the CI cache key so the node modules are rebuilt.',
  'Moved the feature flags into one configuration file.',
  'Fixed a typo in the onboarding email template.',
  'The nightly job sends its report to the team channel.',
  'Added a retry around the flaky upload to object storage.',
  'Cleaned up unused imports across the api package.',
];

runStorageContract('semantic recall', ({ createHarness }) => {
  let harness: BackendHarness;
  let mem: Engram;

  beforeEach(async () => {
    harness = await createHarness();
    mem = await openEngram({ backend: harness.backend, embedder: builtin, indexing: { background: false } });
  });
  afterEach(async () => {
    await mem.close();
    await harness.cleanup();
  });

  async function seed(): Promise<EventId> {
    const [decision] = await mem.append('s', { kind: 'decision', content: DECISION });
    await mem.append('s', FILLER.map((content) => ({ kind: 'note' as const, content })));
    await mem.indexer!.drain();
    return decision!.record.id;
  }

  it('answers a paraphrased question that full-text alone misses', async () => {
    const decision = await seed();
    const question = 'why did we pick Postgres?';
    const fts = await mem.recall(question, { retriever: 'fts', logRecall: false });
    expect(fts.hits.map((h) => h.eventId)).not.toContain(decision);
    const hybrid = await mem.recall(question, { logRecall: false });
    expect(hybrid.retriever).toBe('hybrid');
    // The built-in embedder is an average of word vectors, not a trained sentence model: it ranks the
    // decision among the first few (every pack of the default k = 10 holds it), not always first.
    const top = hybrid.hits.slice(0, 3).map((h) => h.eventId);
    expect(top).toContain(decision);
    expect(hybrid.hits.find((h) => h.eventId === decision)?.similarity).toBeGreaterThan(0);
  });

  it('keeps an exact hash ahead of prose about the same topic', async () => {
    await mem.append('s', [
      { kind: 'note', content: 'The staging deploy of the new build went out this morning and the build is healthy.' },
      { kind: 'note', content: 'Deploy builds to staging first, then promote the build to production.' },
      { kind: 'tool_result', content: 'deployed build a3f9c2d17b to staging', toolName: 'bash' },
      { kind: 'note', content: 'Another staging deploy of the build is planned for tomorrow.' },
    ]);
    await mem.indexer!.drain();
    const r = await mem.recall('which deploy was build a3f9c2d17b', { logRecall: false });
    expect(r.hits[0]?.excerpt).toContain('a3f9c2d17b');
    expect(r.hits[0]?.isExactMatch).toBe(true);
    // Asked for nothing but an exact string that full-text found, recall does not pad the pack with
    // look-alike prose from the vector side.
    const only = await mem.recall('a3f9c2d17b', { logRecall: false });
    expect(only.hits.map((h) => h.excerpt)).toEqual(['deployed build a3f9c2d17b to staging']);
  });

  it('queues events at append and embeds them in batches; the queue survives a restart', async () => {
    await mem.append('s', FILLER.map((content) => ({ kind: 'note' as const, content })));
    expect(await harness.backend.embeddingQueueStats()).toEqual({ pending: FILLER.length, failed: 0 });
    // Full-text works before any vector exists: the event that names the spinner first (the events after it
    // match through their indexed context, below it).
    const before = (await mem.recall('spinner', { logRecall: false })).hits;
    expect(before[0]!.excerpt).toContain('spinner');
    expect(before.filter((h) => h.excerpt.includes('spinner'))).toHaveLength(1);
    const reopened = await openEngram({ backend: harness.backend, embedder: builtin, indexing: { background: false, batchSize: 3 } });
    const progress: number[] = [];
    const done = await reopened.indexer!.drain((p) => progress.push(p.embedded));
    expect(done).toMatchObject({ embedded: FILLER.length, failed: 0, remaining: 0 });
    expect(progress.slice(0, 3)).toEqual([3, 6, 8]);
    expect(await harness.backend.embeddingQueueStats()).toEqual({ pending: 0, failed: 0 });
  });

  it('embeds in the background when asked, and recall sees the vectors', async () => {
    const live = await openEngram({ backend: harness.backend, embedder: builtin });
    const [decision] = await live.append('s', { kind: 'decision', content: DECISION });
    for (let i = 0; i < 100 && (await harness.backend.embeddingQueueStats()).pending > 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await harness.backend.pendingEmbeddings([decision!.record.id])).toEqual(new Set());
    await live.indexer!.stop();
  });

  it('never mixes models: another embedder falls back to full-text until reindex', async () => {
    const decision = await seed();
    const other = await openEngram({ backend: harness.backend, embedder: letters, indexing: { background: false } });
    expect(other.vectorStatus).toMatchObject({ state: 'model-mismatch', model: { name: builtin.name } });
    const r = await other.recall('PostgreSQL JSONB', { logRecall: false });
    expect(r.retriever).toBe('fts');
    expect(r.hits[0]?.eventId).toBe(decision);
    await expect(other.recall('x', { retriever: 'hybrid' })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'retriever' } });
    expect(await other.reindex()).toEqual({ isChanged: true, queued: FILLER.length + 1 });
    // Mid-reindex: no vector yet, recall still answers (full-text side of the fusion).
    expect((await other.recall('PostgreSQL JSONB', { logRecall: false })).hits[0]?.eventId).toBe(decision);
    await other.indexer!.drain();
    expect((await harness.backend.getVectorModel())?.name).toBe(letters.name);
    expect((await other.recall('PostgreSQL JSONB', { retriever: 'vector', logRecall: false })).hits.length).toBeGreaterThan(0);
  });

  it('keeps events queued when the provider fails, and retries them only after a delay', async () => {
    let isDown = true;
    const flaky: Embedder = {
      name: builtin.name,
      dimensions: builtin.dimensions,
      embed: async (texts) => {
        if (isDown) throw new Error('connect ECONNREFUSED 127.0.0.1:11434');
        return builtin.embed(texts);
      },
    };
    const other = await openEngram({ backend: harness.backend, embedder: flaky, indexing: { background: false } });
    await other.append('s', FILLER.map((content) => ({ kind: 'note' as const, content })));
    const failed = await other.indexer!.drain();
    expect(failed).toMatchObject({ embedded: 0, failed: FILLER.length, remaining: FILLER.length });
    expect(other.indexer!.error).toContain('ECONNREFUSED');
    // Failed jobs wait before their retry; the queue still holds every one of them.
    expect(await harness.backend.pendingEmbeddings((await other.listEvents({ sessionId: 's' as never })).map((e) => e.id as never))).toHaveProperty('size', FILLER.length);
    isDown = false;
    expect(await harness.backend.retryFailedEmbeddings()).toBe(0); // one failure is below the set-aside limit
    expect(await harness.backend.claimEmbeddingJobs(100, 60_000)).toEqual([]); // still inside the retry delay
    expect(await harness.backend.embeddingQueueStats()).toEqual({ pending: FILLER.length, failed: 0 });
  });

  it('never evicts an event that still waits for its vector (indexing before eviction)', async () => {
    const events = Array.from({ length: 60 }, (_, i) => ({ kind: 'note' as const, content: `step ${i}: ${FILLER[i % FILLER.length]} `.repeat(6) }));
    const out = await mem.append('s', events);
    const ids = out.map((o) => o.record.id);
    const window = { windowTokens: 2000 };
    await mem.context.compact('s', window);
    const afterPending = await mem.context.loadCache('s' as never);
    const inWindow = new Set(afterPending.items.flatMap((i) => (i.type === 'event' ? [i.event.id] : [])));
    expect(ids.every((id) => inWindow.has(id))).toBe(true);
    expect(afterPending.items.some((i) => i.type === 'marker')).toBe(false);
    await mem.indexer!.drain();
    await mem.context.compact('s', window);
    const after = await mem.context.loadCache('s' as never);
    expect(after.items.filter((i) => i.type === 'event').length).toBeLessThan(ids.length);
    expect(after.items.some((i) => i.type === 'marker')).toBe(true);
  });
});

afterAll(async () => {
  await builtin?.close?.();
});
