import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEngram } from '../../src/engine.js';
import type { EventId, SessionId } from '../../src/model/ids.js';
import { normalize } from '../../src/providers/embedder.js';
import type { VectorHit, VectorSearchQuery } from '../../src/store/backend.js';
import { SqliteBackend } from '../../src/store/sqlite/sqlite-backend.js';
import type { VectorIndexOptions } from '../../src/store/sqlite/sqlite-vector-index.js';
import { blockFromBytes, blockToBytes, encodeBlock } from '../../src/store/vector-codes.js';

const MODEL = { name: 'test-64d@1', dimensions: 64 };
const SESSIONS = ['s1', 's2', 's3'];
const PER_SESSION = 150;

/** Seeded unit vectors in a few clusters, as real embeddings are. */
function vectors(count: number, seed: number): Float32Array[] {
  let a = seed;
  const rand = (): number => {
    a = (Math.imul(a, 1103515245) + 12345) >>> 0;
    return a / 4294967296;
  };
  const centres = Array.from({ length: 8 }, () => Float32Array.from({ length: MODEL.dimensions }, () => rand() - 0.5));
  return Array.from({ length: count }, (_, i) => normalize(Float32Array.from(centres[i % 8]!, (x) => x + (rand() - 0.5) * 0.8)));
}

function cosine(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

describe('SQLite one-bit code vector index', () => {
  let dir: string;
  let path: string;
  const open: SqliteBackend[] = [];
  let ids: EventId[];
  let data: Float32Array[];

  const backend = (vectorIndex: VectorIndexOptions, readonly = false): SqliteBackend => {
    const b = SqliteBackend.open(path, { vectorIndex, readonly });
    open.push(b);
    return b;
  };
  const db = (b: SqliteBackend): { prepare(s: string): { get(): unknown }; exec(sql: string): void } => (b as unknown as { db: never }).db;
  const hasTable = (b: SqliteBackend, name: string): boolean => db(b).prepare(`SELECT 1 FROM sqlite_master WHERE name = '${name}'`).get() !== undefined;
  const query = (vector: Float32Array, extra: Partial<VectorSearchQuery> = {}): VectorSearchQuery => ({ vector, model: MODEL.name, limit: 10, ...extra });
  const sameHits = (got: VectorHit[], want: VectorHit[]): void => {
    expect(got.map((h) => h.eventId)).toEqual(want.map((h) => h.eventId));
    got.forEach((h, i) => expect(h.similarity).toBeCloseTo(want[i]!.similarity, 5));
  };

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'engram-codes-'));
    path = join(dir, 'engram.db');
    const store = backend({ mode: 'exact' });
    const mem = await openEngram({ backend: store });
    await store.setVectorModel(MODEL);
    ids = [];
    for (const s of SESSIONS) {
      const out = await mem.append(
        s,
        Array.from({ length: PER_SESSION }, (_, i) => ({
          kind: i % 2 ? ('note' as const) : ('user' as const),
          content: `event ${s} ${i}`,
          ts: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
        })),
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
    rmSync(dir, { recursive: true, force: true });
  });

  it('with every vector re-ranked it answers what exact search answers, filters included', async () => {
    const fast = backend({ minVectors: 0, rerank: 10_000 });
    expect(await fast.maintainVectorIndex()).toMatchObject({ state: 'built', vectors: ids.length });
    expect(hasTable(fast, 'vec_codes')).toBe(true);
    const filters = [{}, { sessionIds: ['s2' as SessionId] }, { kinds: ['note' as const] }, { fromMs: Date.UTC(2026, 0, 1) + 50_000, toMs: Date.UTC(2026, 0, 1) + 90_000 }];
    for (const q of vectors(6, 99)) {
      for (const filter of filters) sameHits(await fast.searchVectors(query(q, { filter })), await fast.searchVectors(query(q, { filter, exact: true })));
    }
  });

  it('ranks its candidates exactly: every similarity is the exact cosine, nearest first, and a few candidates find nearly all neighbours', async () => {
    const fast = backend({ minVectors: 0, rerank: 60 });
    await fast.maintainVectorIndex();
    const byId = new Map(ids.map((id, i) => [id, data[i]!]));
    let found = 0;
    const queries = vectors(20, 123);
    for (const q of queries) {
      const got = await fast.searchVectors(query(q));
      expect(got).toHaveLength(10);
      for (const h of got) expect(h.similarity).toBeCloseTo(cosine(q, byId.get(h.eventId)!), 5);
      for (let i = 1; i < got.length; i++) expect(got[i]!.similarity).toBeLessThanOrEqual(got[i - 1]!.similarity);
      const exact = new Set((await fast.searchVectors(query(q, { exact: true }))).map((h) => h.eventId));
      found += got.filter((h) => exact.has(h.eventId)).length;
    }
    // 60 of 450 vectors re-ranked (13 %): the one-bit first pass keeps most true neighbours among them.
    expect(found / (queries.length * 10)).toBeGreaterThan(0.85);
  });

  it('finds vectors stored after the build at once (the tail, compared exactly); maintenance appends them; a purge drops them', async () => {
    const fast = backend({ minVectors: 0, rerank: 10_000 });
    const mem = await openEngram({ backend: fast });
    // Queued before the build, embedded after it: a hole below the covered rowid.
    const [early] = await mem.append('s4', [{ kind: 'note', content: 'queued at the build' }]);
    expect(await fast.maintainVectorIndex()).toMatchObject({ state: 'built', vectors: ids.length });
    const [late] = await mem.append('s4', [{ kind: 'note', content: 'late event' }]);
    const earlyVector = normalize(Float32Array.from({ length: MODEL.dimensions }, (_, i) => (i === 5 ? 1 : 0.01)));
    const lateVector = normalize(Float32Array.from({ length: MODEL.dimensions }, (_, i) => (i === 3 ? 1 : 0.01)));
    await fast.putVectors(MODEL.name, [
      { eventId: early!.record.id, vector: earlyVector },
      { eventId: late!.record.id, vector: lateVector },
    ]);
    expect((await fast.searchVectors(query(lateVector, { limit: 1 })))[0]?.eventId).toBe(late!.record.id);
    expect((await fast.searchVectors(query(earlyVector, { limit: 1 })))[0]?.eventId).toBe(early!.record.id);
    expect((await fast.searchVectors(query(lateVector, { limit: 1, filter: { sessionIds: ['s1' as SessionId] } })))[0]?.eventId).not.toBe(late!.record.id);

    expect(await fast.maintainVectorIndex()).toMatchObject({ state: 'built', vectors: ids.length + 2 });
    expect(await fast.maintainVectorIndex()).toMatchObject({ state: 'current', vectors: ids.length + 2 });
    expect((await fast.searchVectors(query(earlyVector, { limit: 1 })))[0]?.eventId).toBe(early!.record.id);
    sameHits(await fast.searchVectors(query(lateVector, { limit: 50 })), await fast.searchVectors(query(lateVector, { limit: 50, exact: true })));

    const codedRowids = (): number[] =>
      (db(fast) as unknown as { prepare(s: string): { all(): Array<{ data: Buffer }> } })
        .prepare('SELECT data FROM vec_codes')
        .all()
        .flatMap((r) => [...blockFromBytes(r.data).rowids]);
    const rowidOf = (id: EventId): number => (db(fast).prepare(`SELECT rowid FROM events WHERE id = '${id}'`).get() as { rowid: number }).rowid;
    const purged = [rowidOf(early!.record.id), rowidOf(late!.record.id)];
    expect(codedRowids()).toEqual(expect.arrayContaining(purged));
    // A second process that searched before the purge holds the codes in memory.
    const other = backend({ minVectors: 0, rerank: 10_000 });
    await other.searchVectors(query(lateVector));
    const inMemory = (b: SqliteBackend): number[] => {
      const set = (b as unknown as { vectors: { vectorCodes: { cache?: { set: { count: number; rowids: Float64Array } } } } }).vectors.vectorCodes.cache?.set;
      return set ? [...set.rowids.subarray(0, set.count)] : [];
    };
    expect(inMemory(other)).toEqual(expect.arrayContaining(purged));
    const report = await mem.purge({ sessionId: 's4' }, { actor: 'os:test' });
    expect(report.counts.vectors).toBe(2);
    // Its next query reads the rewritten blocks again: no fingerprint of the purged vectors stays in its memory either.
    await other.searchVectors(query(lateVector));
    expect(inMemory(other).filter((r) => purged.includes(r))).toEqual([]);
    expect(inMemory(other).filter((r) => r !== 0)).toHaveLength(ids.length);
    // No fingerprint of the purged vectors stays in the code blocks.
    expect(codedRowids().filter((r) => purged.includes(r))).toEqual([]);
    expect(codedRowids().filter((r) => r !== 0)).toHaveLength(ids.length);
    const after = await fast.searchVectors(query(lateVector, { limit: 500 }));
    expect(after.map((h) => h.eventId)).not.toContain(late!.record.id);
    expect(after.map((h) => h.eventId)).not.toContain(early!.record.id);
    sameHits(after, await fast.searchVectors(query(lateVector, { limit: 500, exact: true })));
  });

  it('a query never builds it; rebuilt from the stored vectors when missing; dropped with a model switch', async () => {
    const fast = backend({ minVectors: 0, rerank: 10_000 });
    const before = await fast.searchVectors(query(data[1]!));
    expect(hasTable(fast, 'vec_codes')).toBe(false);
    await fast.maintainVectorIndex();
    sameHits(await fast.searchVectors(query(data[1]!)), before);
    db(fast).exec('DROP TABLE vec_codes');
    // Missing: queries answer exactly; a read-only connection does not build it.
    const reader = backend({ minVectors: 0 }, true);
    sameHits(await reader.searchVectors(query(data[1]!)), before);
    expect(await reader.maintainVectorIndex()).toMatchObject({ state: 'readonly' });
    expect(hasTable(fast, 'vec_codes')).toBe(false);
    expect(await fast.maintainVectorIndex()).toMatchObject({ state: 'built', vectors: ids.length });
    sameHits(await fast.searchVectors(query(data[1]!)), before);

    await fast.setVectorModel({ name: 'other-64d@1', dimensions: 64 });
    expect(hasTable(fast, 'vec_codes')).toBe(false);
  });

  it('stays exact below the size threshold and in exact mode', async () => {
    expect(await backend({}).maintainVectorIndex()).toMatchObject({ state: 'not-needed', vectors: ids.length });
    expect(await backend({ mode: 'exact', minVectors: 0 }).maintainVectorIndex()).toMatchObject({ state: 'exact' });
    expect(hasTable(open[0]!, 'vec_codes')).toBe(false);
  });

  it('with the Hamming stage on (a prefilter below the store size) every similarity is exact and filters hold', async () => {
    const fast = backend({ minVectors: 0, rerank: 40, prefilter: 150 });
    await fast.maintainVectorIndex();
    const byId = new Map(ids.map((id, i) => [id, data[i]!]));
    const sessionOf = new Map(ids.map((id, i) => [id, SESSIONS[Math.floor(i / PER_SESSION)]!]));
    let found = 0;
    const queries = vectors(10, 321);
    for (const q of queries) {
      const got = await fast.searchVectors(query(q));
      expect(got).toHaveLength(10);
      for (const h of got) expect(h.similarity).toBeCloseTo(cosine(q, byId.get(h.eventId)!), 5);
      const exact = new Set((await fast.searchVectors(query(q, { exact: true }))).map((h) => h.eventId));
      found += got.filter((h) => exact.has(h.eventId)).length;
      const inS3 = await fast.searchVectors(query(q, { filter: { sessionIds: ['s3' as SessionId] } }));
      expect(inS3.length).toBeGreaterThan(0);
      for (const h of inS3) expect(sessionOf.get(h.eventId)).toBe('s3');
    }
    // 150 of 450 codes by Hamming distance, 40 of those by the float estimate, ranked exactly: most true neighbours
    // of these weakly separated 64-dimension clusters (65 % here; the built-in vectors at 1M: vectors-scale.md).
    expect(found / (queries.length * 10)).toBeGreaterThan(0.5);
  });

  it('searches an index of the first (unrotated) encoding as it was built, and maintenance rebuilds it rotated', async () => {
    const fast = backend({ minVectors: 0, rerank: 10_000 });
    await fast.maintainVectorIndex();
    const want = await fast.searchVectors(query(data[3]!, { exact: true }));
    // An index as the first encoding left it: codes of the unrotated difference, no `encoding` in its description.
    const raw = db(fast) as unknown as { prepare(s: string): { get(...a: unknown[]): unknown; run(...a: unknown[]): unknown; all(): Array<{ rowid: number; embedding: Buffer; session_id: string; kind: string; ts_ms: number }> } };
    const meta = JSON.parse((raw.prepare("SELECT value FROM store_meta WHERE key = 'vector_codes'").get() as { value: string }).value) as { encoding?: string; mean: number[] };
    expect(meta.encoding).toBe('hadamard-1');
    const rows = raw
      .prepare('SELECT v.event_rowid AS rowid, v.embedding AS embedding, e.session_id AS session_id, e.kind AS kind, e.ts_ms AS ts_ms FROM event_vectors v JOIN events e ON e.rowid = v.event_rowid ORDER BY v.event_rowid')
      .all()
      .map((r) => ({ ...r, embedding: new Float32Array(new Uint8Array(r.embedding).buffer) }));
    raw.prepare('UPDATE vec_codes SET data = ? WHERE block = 0').run(blockToBytes(encodeBlock(rows, Float32Array.from(meta.mean))));
    delete meta.encoding;
    raw.prepare("UPDATE store_meta SET value = ? WHERE key = 'vector_codes'").run(JSON.stringify({ ...meta, builtAtMs: 1 }));
    const old = backend({ minVectors: 0, rerank: 10_000 });
    sameHits(await old.searchVectors(query(data[3]!)), want);
    expect(await old.maintainVectorIndex()).toMatchObject({ state: 'built', vectors: ids.length });
    expect((JSON.parse((raw.prepare("SELECT value FROM store_meta WHERE key = 'vector_codes'").get() as { value: string }).value) as { encoding?: string }).encoding).toBe('hadamard-1');
    sameHits(await old.searchVectors(query(data[3]!)), want);
  });
});
