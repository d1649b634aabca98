import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEngram } from '../../src/engine.js';
import type { EventId, SessionId } from '../../src/model/ids.js';
import { normalize } from '../../src/providers/embedder.js';
import type { VectorSearchQuery } from '../../src/store/backend.js';
import { PostgresBackend } from '../../src/store/postgres/postgres-backend.js';
import type { PgVectorIndexOptions } from '../../src/store/postgres/postgres-vector-index.js';
import { dropSchema, testPgUrl, uniqueSchema, withPgClient } from '../fixtures/postgres.js';

const MODEL = { name: 'test-48d@1', dimensions: 48 };

/** Seeded vectors in a few clusters (as real embeddings are), unit length. */
function vectors(count: number, seed: number): Float32Array[] {
  let a = seed;
  const rand = (): number => {
    a = (Math.imul(a, 1103515245) + 12345) >>> 0;
    return a / 4294967296;
  };
  const centres = Array.from({ length: 8 }, () => Float32Array.from({ length: 48 }, () => rand() - 0.5));
  return Array.from({ length: count }, (_, i) => normalize(Float32Array.from(centres[i % 8]!, (x) => x + (rand() - 0.5) * 0.8)));
}

// The code index's first pass when it drops codes (vector-code-set.ts: the Hamming stage keeps `prefilter`, the
// float estimate `rerank`) and the contract's cases (test/contract/vector-codes.test.ts) do not: what it returns is
// still ranked exactly, and nearly all of exact search's nearest are among it.
describe('PostgreSQL one-bit code index, narrowed first pass', () => {
  let schema: string;
  const open: PostgresBackend[] = [];
  let ids: EventId[];

  const backend = async (vectorIndex: PgVectorIndexOptions): Promise<PostgresBackend> => {
    const b = await PostgresBackend.open(testPgUrl(), { schema, maxConnections: 2, vectorIndex });
    open.push(b);
    return b;
  };
  const query = (vector: Float32Array, extra: Partial<VectorSearchQuery> = {}): VectorSearchQuery => ({ vector, model: MODEL.name, limit: 10, ...extra });

  beforeEach(async () => {
    schema = uniqueSchema();
    const store = await backend({ mode: 'exact' });
    const mem = await openEngram({ backend: store });
    await store.setVectorModel(MODEL);
    ids = [];
    for (const s of ['s1', 's2']) {
      const out = await mem.append(
        s,
        Array.from({ length: 400 }, (_, i) => ({ kind: 'note' as const, content: `event ${s} ${i}` })),
      );
      ids.push(...out.map((o) => o.record.id));
    }
    const data = vectors(ids.length, 5);
    await store.putVectors(
      MODEL.name,
      ids.map((eventId, i) => ({ eventId, vector: data[i]! })),
    );
  });
  afterEach(async () => {
    for (const b of open.splice(0)) await b.close();
    await dropSchema(schema);
  });

  it('keeps 300 of 800 codes by Hamming distance and 80 by the estimate: exact similarities, most of the true 10 nearest', async () => {
    const fast = await backend({ minVectors: 0, prefilter: 300, rerank: 80 });
    expect(await fast.maintainVectorIndex()).toMatchObject({ state: 'built', vectors: 800 });
    const meta = await withPgClient(async (c) => JSON.parse((await c.query<{ value: string }>(`SELECT value FROM "${schema}".store_meta WHERE key = 'vector_codes'`)).rows[0]!.value));
    expect(meta).toMatchObject({ encoding: 'hadamard-1', vectors: 800, covered: 800 });
    let found = 0;
    for (const q of vectors(20, 77)) {
      for (const filter of [{}, { sessionIds: ['s2' as SessionId] }]) {
        const exact = await fast.searchVectors(query(q, { filter, exact: true }));
        const hits = await fast.searchVectors(query(q, { filter }));
        expect(hits).toHaveLength(10);
        const exactSimilarity = new Map((await fast.searchVectors(query(q, { filter, exact: true, limit: 800 }))).map((h) => [h.eventId, h.similarity]));
        for (const h of hits) expect(h.similarity).toBe(exactSimilarity.get(h.eventId));
        if (filter.sessionIds) expect(hits.every((h) => ids.indexOf(h.eventId) >= 400)).toBe(true);
        const want = new Set(exact.map((h) => h.eventId));
        found += hits.filter((h) => want.has(h.eventId)).length;
      }
    }
    expect(found / 400).toBeGreaterThan(0.8);
  });

  it('vector writes racing purges of the same events: no error, no purged vector left', async () => {
    const fast = await backend({ minVectors: 0 });
    await fast.maintainVectorIndex();
    const mem = await openEngram({ backend: fast });
    const data = vectors(8, 31);
    for (let round = 0; round < 12; round++) {
      const session = `race${round}`;
      const out = await mem.append(
        session,
        data.map((_, i) => ({ kind: 'note' as const, content: `race ${round} ${i}` })),
      );
      const fresh = out.map((o) => o.record.id);
      // Both orders: the put's job locks first, or the purge's.
      const put = fast.putVectors(
        MODEL.name,
        fresh.map((eventId, i) => ({ eventId, vector: data[i]! })),
      );
      const purge = mem.purge({ sessionId: session }, { actor: 'os:test' });
      await Promise.all(round % 2 ? [put, purge] : [purge, put]);
      if (round % 3 === 2) await fast.maintainVectorIndex();
      const hits = await fast.searchVectors(query(data[0]!, { limit: 900 }));
      expect(hits.filter((h) => fresh.includes(h.eventId))).toEqual([]);
    }
  });

  it('an index of another encoding is not searched and maintenance builds it again', async () => {
    const fast = await backend({ minVectors: 0 });
    await fast.maintainVectorIndex();
    await withPgClient((c) => c.query(`UPDATE "${schema}".store_meta SET value = (value::jsonb - 'encoding')::text WHERE key = 'vector_codes'`));
    const q = vectors(1, 9)[0]!;
    expect(await fast.searchVectors(query(q))).toEqual(await fast.searchVectors(query(q, { exact: true })));
    expect(await fast.maintainVectorIndex()).toMatchObject({ state: 'built', vectors: 800 });
    const meta = await withPgClient(async (c) => JSON.parse((await c.query<{ value: string }>(`SELECT value FROM "${schema}".store_meta WHERE key = 'vector_codes'`)).rows[0]!.value));
    expect(meta.encoding).toBe('hadamard-1');
  });
});
