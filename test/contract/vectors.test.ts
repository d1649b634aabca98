import { afterEach, beforeEach, expect, it } from 'vitest';
import type { EventId } from '../../src/model/ids.js';
import { normalize } from '../../src/providers/embedder.js';
import type { StorageBackend } from '../../src/store/backend.js';
import { MAX_EMBEDDING_ATTEMPTS } from '../../src/store/backend.js';
import { runStorageContract } from './harnesses.js';
import type { BackendHarness } from './storage-contract.js';
import { openEngram } from '../../src/engine.js';

const MODEL = { name: 'test-4d@1', dimensions: 4 };
const v = (...xs: number[]): Float32Array => normalize(new Float32Array(xs));

runStorageContract('vectors and the embedding queue', ({ createHarness }) => {
  let harness: BackendHarness;
  let store: StorageBackend;
  let ids: EventId[];

  async function append(sessionId: string, contents: string[], tsMs = Date.UTC(2026, 0, 1)): Promise<EventId[]> {
    const mem = await openEngram({ backend: store });
    // The engine would close the store: append through it and keep the store open.
    const out = await mem.append(
      sessionId,
      contents.map((content, i) => ({ kind: 'note' as const, content, ts: new Date(tsMs + i * 1000).toISOString() })),
    );
    return out.map((o) => o.record.id);
  }

  beforeEach(async () => {
    harness = await createHarness();
    store = harness.backend;
    ids = await append('a', ['alpha', 'beta', 'gamma']);
  });
  afterEach(async () => {
    await harness.cleanup();
  });

  it('queues nothing until a model is chosen, then every stored event, then each new append', async () => {
    expect(await store.getVectorModel()).toBeNull();
    expect(await store.embeddingQueueStats()).toEqual({ pending: 0, failed: 0 });
    expect(await store.setVectorModel(MODEL)).toEqual({ isChanged: true, queued: 3 });
    expect(await store.getVectorModel()).toEqual(MODEL);
    expect(await store.setVectorModel(MODEL)).toEqual({ isChanged: false, queued: 0 });
    const [fresh] = await append('b', ['delta']);
    expect(await store.embeddingQueueStats()).toEqual({ pending: 4, failed: 0 });
    expect(await store.pendingEmbeddings([ids[0]!, fresh!])).toEqual(new Set([ids[0], fresh]));
  });

  it('counts the backlog exactly up to countUpTo, and past it only that it is larger', async () => {
    await store.setVectorModel(MODEL);
    expect((await store.embeddingQueueStats({ countUpTo: 5 })).pending).toBe(3);
    expect((await store.embeddingQueueStats({ countUpTo: 3 })).pending).toBe(3);
    expect((await store.embeddingQueueStats({ countUpTo: 1 })).pending).toBeGreaterThan(1);
    expect((await store.embeddingQueueStats({ countUpTo: 0 })).pending).toBeGreaterThan(0);
  });

  it('leases claimed jobs so a second claim skips them, and completes them with the vectors', async () => {
    await store.setVectorModel(MODEL);
    const first = await store.claimEmbeddingJobs(2, 60_000);
    const second = await store.claimEmbeddingJobs(10, 60_000);
    expect(first).toHaveLength(2);
    expect(second).toHaveLength(1);
    expect(new Set([...first, ...second])).toEqual(new Set(ids));
    expect(await store.claimEmbeddingJobs(10, 60_000)).toEqual([]);
    await store.putVectors(MODEL.name, [
      { eventId: ids[0]!, vector: v(1, 0, 0, 0) },
      { eventId: ids[1]!, vector: v(0, 1, 0, 0) },
    ], [ids[2]!]);
    expect(await store.embeddingQueueStats()).toEqual({ pending: 0, failed: 0 });
    const got = await store.getVectors(MODEL.name, ids);
    expect([...got.keys()].sort()).toEqual([ids[0], ids[1]].sort());
    expect(Array.from(got.get(ids[0]!)!)).toEqual([1, 0, 0, 0]);
  });

  it('makes an expired lease claimable again (a crashed worker)', async () => {
    await store.setVectorModel(MODEL);
    expect(await store.claimEmbeddingJobs(10, -1)).toHaveLength(3);
    expect(await store.claimEmbeddingJobs(10, 60_000)).toHaveLength(3);
  });

  it('finds nearest neighbours under session, kind and time filters', async () => {
    const later = await append('b', ['delta', 'epsilon'], Date.UTC(2026, 5, 1));
    await store.setVectorModel(MODEL);
    await store.putVectors(MODEL.name, [
      { eventId: ids[0]!, vector: v(1, 0, 0, 0) },
      { eventId: ids[1]!, vector: v(1, 1, 0, 0) },
      { eventId: ids[2]!, vector: v(0, 0, 1, 0) },
      { eventId: later[0]!, vector: v(1, 0.1, 0, 0) },
      { eventId: later[1]!, vector: v(0, 0, 0, 1) },
    ]);
    const all = await store.searchVectors({ vector: v(1, 0, 0, 0), model: MODEL.name, limit: 3 });
    expect(all.map((h) => h.eventId)).toEqual([ids[0], later[0], ids[1]]);
    expect(all[0]!.similarity).toBeCloseTo(1, 5);
    expect(all[2]!.similarity).toBeCloseTo(Math.SQRT1_2, 4);
    const inA = await store.searchVectors({ vector: v(1, 0, 0, 0), model: MODEL.name, limit: 10, filter: { sessionIds: ['a' as never] } });
    expect(inA.map((h) => h.eventId)).toEqual([ids[0], ids[1], ids[2]]);
    const recent = await store.searchVectors({ vector: v(1, 0, 0, 0), model: MODEL.name, limit: 10, filter: { fromMs: Date.UTC(2026, 2, 1) } });
    expect(recent.map((h) => h.eventId)).toEqual([later[0], later[1]]);
    const none = await store.searchVectors({ vector: v(1, 0, 0, 0), model: MODEL.name, limit: 10, filter: { kinds: ['user'] } });
    expect(none).toEqual([]);
  });

  it('switching models drops the old vectors and queues every event again; old vectors are refused', async () => {
    await store.setVectorModel(MODEL);
    await store.putVectors(MODEL.name, [{ eventId: ids[0]!, vector: v(1, 0, 0, 0) }], [ids[1]!, ids[2]!]);
    const other = { name: 'test-3d@1', dimensions: 3 };
    expect(await store.setVectorModel(other)).toEqual({ isChanged: true, queued: 3 });
    expect((await store.getVectors(MODEL.name, ids)).size).toBe(0);
    await expect(store.putVectors(MODEL.name, [{ eventId: ids[0]!, vector: v(1, 0, 0, 0) }])).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(store.searchVectors({ vector: v(1, 0, 0, 0), model: MODEL.name, limit: 3 })).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(store.putVectors(other.name, [{ eventId: ids[0]!, vector: v(1, 0, 0, 0) }])).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      data: { field: 'vector' },
    });
    expect(await store.embeddingQueueStats()).toEqual({ pending: 3, failed: 0 });
  });

  it('sets a job aside after repeated failures and queues it again on request', async () => {
    await store.setVectorModel(MODEL);
    for (let i = 0; i < MAX_EMBEDDING_ATTEMPTS; i++) await store.failEmbeddingJobs([ids[0]!], 'provider down');
    expect(await store.embeddingQueueStats()).toEqual({ pending: 2, failed: 1 });
    expect(await store.pendingEmbeddings([ids[0]!])).toEqual(new Set([ids[0]]));
    expect(await store.retryFailedEmbeddings()).toBe(1);
    expect(await store.embeddingQueueStats()).toEqual({ pending: 3, failed: 0 });
  });

  it('rejects a model without a name or with a bad dimension', async () => {
    await expect(store.setVectorModel({ name: '', dimensions: 4 })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'name' } });
    await expect(store.setVectorModel({ name: 'x', dimensions: 0 })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'dimensions' } });
    expect(await store.getVectorModel()).toBeNull();
  });
});
