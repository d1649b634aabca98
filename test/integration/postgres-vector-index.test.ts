import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEngram } from '../../src/engine.js';
import type { EventId, SessionId } from '../../src/model/ids.js';
import { normalize } from '../../src/providers/embedder.js';
import type { VectorSearchQuery } from '../../src/store/backend.js';
import { PostgresBackend } from '../../src/store/postgres/postgres-backend.js';
import type { PgVectorIndexOptions } from '../../src/store/postgres/postgres-vector-index.js';
import { dropSchema, testPgUrl, uniqueSchema, withPgClient } from '../fixtures/postgres.js';

const MODEL = { name: 'test-16d@1', dimensions: 16 };
const SESSIONS = ['s1', 's2', 's3'];

/** Seeded vectors in a few clusters (as real embeddings are), unit length. */
function vectors(count: number, seed: number): Float32Array[] {
  let a = seed;
  const rand = (): number => {
    a = (Math.imul(a, 1103515245) + 12345) >>> 0;
    return a / 4294967296;
  };
  const centres = Array.from({ length: 6 }, () => Float32Array.from({ length: 16 }, () => rand() - 0.5));
  return Array.from({ length: count }, (_, i) => normalize(Float32Array.from(centres[i % 6]!, (x) => x + (rand() - 0.5) * 0.6)));
}

describe('PostgreSQL IVF vector index (without pgvector)', () => {
  let schema: string;
  const open: PostgresBackend[] = [];
  let ids: EventId[];
  let data: Float32Array[];

  const backend = async (vectorIndex: PgVectorIndexOptions): Promise<PostgresBackend> => {
    // The IVF index is built when asked for (the one-bit codes are the default, postgres-vector-codes.ts).
    const b = await PostgresBackend.open(testPgUrl(), { schema, maxConnections: 2, vectorIndex: { index: 'ivf', ...vectorIndex } });
    open.push(b);
    return b;
  };
  /** Rows of the index table, or -1 when it does not exist. */
  const ivfRows = (): Promise<number> =>
    withPgClient(async (c) => {
      const t = (await c.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [`"${schema}".vector_ivf`])).rows[0]?.t;
      return t ? Number((await c.query<{ n: string }>(`SELECT count(*) AS n FROM "${schema}".vector_ivf`)).rows[0]!.n) : -1;
    });
  const query = (vector: Float32Array, extra: Partial<VectorSearchQuery> = {}): VectorSearchQuery => ({ vector, model: MODEL.name, limit: 10, ...extra });

  beforeEach(async () => {
    schema = uniqueSchema();
    const store = await backend({ mode: 'exact' });
    const mem = await openEngram({ backend: store });
    await store.setVectorModel(MODEL);
    ids = [];
    for (const s of SESSIONS) {
      const out = await mem.append(
        s,
        Array.from({ length: 100 }, (_, i) => ({ kind: i % 2 ? ('note' as const) : ('user' as const), content: `event ${s} ${i}`, ts: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString() })),
      );
      ids.push(...out.map((o) => o.record.id));
    }
    data = vectors(ids.length, 7);
    await store.putVectors(
      MODEL.name,
      ids.map((eventId, i) => ({ eventId, vector: data[i]! })),
    );
  });
  afterEach(async () => {
    for (const b of open.splice(0)) await b.close();
    await dropSchema(schema);
  });

  it('probing every list answers exactly what the exact scan answers, filters included', async () => {
    const fast = await backend({ minVectors: 0, probes: 1000 });
    expect(await fast.maintainVectorIndex()).toMatchObject({ state: 'built', vectors: ids.length });
    const filters = [{}, { sessionIds: ['s2' as SessionId] }, { kinds: ['note' as const] }, { fromMs: Date.UTC(2026, 0, 1) + 50_000 }];
    for (const q of vectors(6, 99)) {
      for (const filter of filters) {
        const exact = await fast.searchVectors(query(q, { filter, exact: true }));
        expect(await fast.searchVectors(query(q, { filter }))).toEqual(exact);
      }
    }
    expect(await ivfRows()).toBe(ids.length);
  });

  it('probing a third of the lists finds nearly all exact neighbours of clustered vectors; exact mode builds nothing', async () => {
    const exactOnly = await backend({ mode: 'exact', minVectors: 0 });
    expect(await exactOnly.maintainVectorIndex()).toMatchObject({ state: 'exact' });
    expect(await exactOnly.searchVectors(query(data[0]!))).toHaveLength(10);
    expect(await ivfRows()).toBe(-1);
    const fast = await backend({ minVectors: 0, lists: 6, probes: 2 });
    // A query never builds the index: exact until maintenance builds it.
    const first = vectors(1, 5)[0]!;
    expect(await fast.searchVectors(query(first))).toEqual(await fast.searchVectors(query(first, { exact: true })));
    expect(await ivfRows()).toBe(-1);
    expect(await fast.maintainVectorIndex()).toMatchObject({ state: 'built', lists: 6 });
    expect(await fast.maintainVectorIndex()).toMatchObject({ state: 'current' });
    let found = 0;
    for (const q of vectors(ids.length + 20, 7).slice(ids.length)) {
      const exact = new Set((await fast.searchVectors(query(q, { exact: true }))).map((h) => h.eventId));
      found += (await fast.searchVectors(query(q))).filter((h) => exact.has(h.eventId)).length;
    }
    expect(found / 200).toBeGreaterThanOrEqual(0.9);
  });

  it('adds vectors stored after the build, a purge removes them, a missing index is rebuilt, a model switch drops it', async () => {
    const fast = await backend({ minVectors: 0, probes: 1000 });
    await fast.maintainVectorIndex();
    const before = await fast.searchVectors(query(data[1]!));
    const mem = await openEngram({ backend: fast });
    const [late] = await mem.append('s4', [{ kind: 'note', content: 'late event' }]);
    const lateVector = normalize(Float32Array.from({ length: 16 }, (_, i) => (i === 3 ? 1 : 0.01)));
    await fast.putVectors(MODEL.name, [{ eventId: late!.record.id, vector: lateVector }]);
    expect(await ivfRows()).toBe(ids.length + 1);
    expect((await fast.searchVectors(query(lateVector, { limit: 1 })))[0]?.eventId).toBe(late!.record.id);

    const report = await mem.purge({ sessionId: 's4' }, { actor: 'os:test' });
    expect(report.counts.vectors).toBe(1);
    expect(await ivfRows()).toBe(ids.length);
    expect((await fast.searchVectors(query(lateVector, { limit: 400 }))).map((h) => h.eventId)).not.toContain(late!.record.id);

    await withPgClient((c) => c.query(`DROP TABLE "${schema}".vector_ivf`));
    expect(await ivfRows()).toBe(-1);
    expect(await fast.searchVectors(query(data[1]!))).toEqual(before);
    expect(await fast.maintainVectorIndex()).toMatchObject({ state: 'built' });
    expect(await ivfRows()).toBe(ids.length);
    expect(await fast.searchVectors(query(data[1]!))).toEqual(before);

    await fast.setVectorModel({ name: 'other-16d@1', dimensions: 16 });
    expect(await ivfRows()).toBe(-1);
  });
});
