import { afterEach, beforeEach, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import type { EventId, SessionId } from '../../src/model/ids.js';
import { normalize } from '../../src/providers/embedder.js';
import type { StorageBackend, VectorSearchQuery } from '../../src/store/backend.js';
import { runStorageContract } from './harnesses.js';
import type { BackendHarness } from './storage-contract.js';

const MODEL = { name: 'test-8d@1', dimensions: 8 };

/** Seeded unit vectors of 8 dimensions. */
function vectors(count: number, seed: number): Float32Array[] {
  let a = seed;
  const rand = (): number => {
    a = (Math.imul(a, 1103515245) + 12345) >>> 0;
    return a / 4294967296 - 0.5;
  };
  return Array.from({ length: count }, () => normalize(Float32Array.from({ length: 8 }, rand)));
}

// Large stores may answer vector queries from an approximate index (SQLite's IVF index, docs/recall.md); a query
// can always ask for exact search, and a small store is searched exactly either way.
runStorageContract('exact vector search', ({ createHarness }) => {
  let harness: BackendHarness;
  let store: StorageBackend;
  let mem: Engram;
  let ids: EventId[];

  beforeEach(async () => {
    harness = await createHarness();
    store = harness.backend;
    mem = await openEngram({ backend: store });
    await store.setVectorModel(MODEL);
    ids = [];
    for (const s of ['a', 'b']) {
      const out = await mem.append(
        s,
        Array.from({ length: 60 }, (_, i) => ({ kind: 'note' as const, content: `note ${s} ${i}` })),
      );
      ids.push(...out.map((o) => o.record.id));
    }
    const data = vectors(ids.length, 3);
    await store.putVectors(
      MODEL.name,
      ids.map((eventId, i) => ({ eventId, vector: data[i]! })),
    );
  });
  afterEach(async () => {
    await harness.cleanup();
  });

  it('answers a small store the same with and without exact: true, and drops purged vectors from both', async () => {
    const query = (vector: Float32Array, extra: Partial<VectorSearchQuery> = {}): VectorSearchQuery => ({ vector, model: MODEL.name, limit: 15, ...extra });
    for (const q of vectors(5, 11)) {
      for (const filter of [{}, { sessionIds: ['b' as SessionId] }]) {
        const exact = await store.searchVectors(query(q, { filter, exact: true }));
        expect(exact).toHaveLength(15);
        expect(await store.searchVectors(query(q, { filter }))).toEqual(exact);
      }
    }
    const report = await mem.purge({ sessionId: 'a' }, { actor: 'os:test' });
    expect(report.counts.vectors).toBe(60);
    const purged = new Set(ids.slice(0, 60));
    for (const q of vectors(3, 17)) {
      const exact = await store.searchVectors(query(q, { limit: 200, exact: true }));
      expect(exact).toHaveLength(60);
      expect(exact.filter((h) => purged.has(h.eventId))).toEqual([]);
      expect(await store.searchVectors(query(q, { limit: 200 }))).toEqual(exact);
    }
  });
});
