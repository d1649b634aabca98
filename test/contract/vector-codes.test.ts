import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import type { EventId, SessionId } from '../../src/model/ids.js';
import { normalize } from '../../src/providers/embedder.js';
import type { StorageBackend, VectorHit, VectorSearchQuery } from '../../src/store/backend.js';
import { PostgresBackend } from '../../src/store/postgres/postgres-backend.js';
import { SqliteBackend } from '../../src/store/sqlite/sqlite-backend.js';
import type { CodeScanner } from '../../src/store/code-scanner.js';
import { blockFromBytes } from '../../src/store/vector-codes.js';
import { dropSchema, testPgUrl, uniqueSchema, withPgClient } from '../fixtures/postgres.js';
import { runStorageContract, selectBackends, type ContractBackend } from './harnesses.js';
import type { BackendHarness } from './storage-contract.js';

const MODEL = { name: 'test-16d@1', dimensions: 16 };
const SESSIONS = ['s1', 's2', 's3'];
const T0 = Date.UTC(2026, 0, 1);

/** A store whose vector queries go through the one-bit code index once maintenance built it (from any size). */
interface CodesHarness extends BackendHarness {
  /** A second backend on the same store, as another server (or process) opens it. */
  openAgain(): Promise<StorageBackend>;
  /** Slots of the stored code blocks that still hold a vector's code (a purged one is zeroed). */
  codedSlots(): Promise<number>;
  /** The first backend's code scanner (code-scanner.ts). */
  scanner(): CodeScanner;
}

/** A backend's code scanner, reached through its private vector store. */
function scannerOf(backend: StorageBackend): CodeScanner {
  return (backend as unknown as { vectors: { vectorCodes: { codeScanner: CodeScanner } } }).vectors.vectorCodes.codeScanner;
}

function countSlots(blobs: Buffer[]): number {
  let n = 0;
  for (const b of blobs) {
    const block = blockFromBytes(b);
    for (let i = 0; i < block.count; i++) if (block.rowids[i] !== 0) n++;
  }
  return n;
}

/** Both backends with the code index from any size; `workerMinCodes` 1 puts every first pass on the worker thread. */
const codeBackends = (workerMinCodes?: number): ContractBackend[] => selectBackends<ContractBackend>([
  {
    name: 'sqlite',
    skip: [],
    createHarness: async (): Promise<CodesHarness> => {
      const dir = mkdtempSync(join(tmpdir(), 'engram-codes-contract-'));
      const path = join(dir, 'engram.db');
      const opened: SqliteBackend[] = [];
      const open = (): SqliteBackend => {
        const b = SqliteBackend.open(path, { vectorIndex: { minVectors: 0, ...(workerMinCodes !== undefined ? { workerMinCodes } : {}) } });
        opened.push(b);
        return b;
      };
      const backend = open();
      return {
        backend,
        openAgain: async () => open(),
        scanner: () => scannerOf(backend),
        codedSlots: async () => {
          const db = (backend as unknown as { db: { prepare(sql: string): { all(): Array<{ data: Buffer }> } } }).db;
          // A model switch drops SQLite's tables of the index (PostgreSQL empties its table).
          if (db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'vec_codes'").all().length === 0) return 0;
          return countSlots(db.prepare('SELECT data FROM vec_codes').all().map((r) => r.data));
        },
        cleanup: async () => {
          for (const b of opened) await b.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  },
  {
    name: 'postgres',
    skip: [],
    createHarness: async (): Promise<CodesHarness> => {
      const schema = uniqueSchema();
      const opened: PostgresBackend[] = [];
      const open = async (): Promise<PostgresBackend> => {
        const b = await PostgresBackend.open(testPgUrl(), { schema, maxConnections: 2, vectorIndex: { minVectors: 0, ...(workerMinCodes !== undefined ? { workerMinCodes } : {}) } });
        opened.push(b);
        return b;
      };
      const backend = await open();
      return {
        backend,
        openAgain: open,
        scanner: () => scannerOf(backend),
        codedSlots: () => withPgClient(async (c) => countSlots((await c.query<{ data: Buffer }>(`SELECT data FROM "${schema}".vector_codes`)).rows.map((r) => r.data))),
        cleanup: async () => {
          for (const b of opened) await b.close();
          await dropSchema(schema);
        },
      };
    },
  },
], process.env.ENGRAM_TEST_BACKENDS);

/**
 * Hits equal to exact search's: the same events in the same order, the same similarities (SQLite's exact search
 * returns vec0's float32 cosine, its code index a double: equal to 6 digits; PostgreSQL's are identical).
 */
function expectSameHits(fast: VectorHit[], exact: VectorHit[]): void {
  expect(fast.map((h) => h.eventId)).toEqual(exact.map((h) => h.eventId));
  fast.forEach((h, i) => expect(h.similarity).toBeCloseTo(exact[i]!.similarity, 6));
}

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

// The fast path's index of both backends (sqlite-vector-codes.ts, postgres-vector-codes.ts): what it answers is
// exactly what exact search answers while every vector is a re-rank candidate (300 here, 2,000 by default). Run
// twice: with the first pass on the calling thread (these small sets' default) and on the worker thread
// (code-scanner.ts), which must answer the same.
const defineCodesSuite =
  (onWorker: boolean) =>
  ({ createHarness }: ContractBackend): void => {
    let harness: CodesHarness;
    let store: StorageBackend;
    let mem: Engram;
    let ids: EventId[];
    let data: Float32Array[];
    const query = (vector: Float32Array, extra: Partial<VectorSearchQuery> = {}): VectorSearchQuery => ({ vector, model: MODEL.name, limit: 10, ...extra });
    const append = async (session: string, count: number, from: number): Promise<EventId[]> => {
      const out = await mem.append(
        session,
        Array.from({ length: count }, (_, i) => ({
          kind: (from + i) % 2 ? ('note' as const) : ('user' as const),
          content: `event ${session} ${from + i}`,
          ts: new Date(T0 + (from + i) * 1000).toISOString(),
        })),
      );
      return out.map((o) => o.record.id);
    };

    beforeEach(async () => {
      harness = (await createHarness()) as CodesHarness;
      store = harness.backend;
      mem = await openEngram({ backend: store });
      await store.setVectorModel(MODEL);
      ids = [];
      for (const s of SESSIONS) ids.push(...(await append(s, 100, 0)));
      data = vectors(ids.length, 7);
      await store.putVectors(
        MODEL.name,
        ids.map((eventId, i) => ({ eventId, vector: data[i]! })),
      );
      expect(await store.maintainVectorIndex()).toMatchObject({ state: 'built', vectors: ids.length });
      expect(await harness.codedSlots()).toBe(ids.length);
    });
    afterEach(async () => {
      await harness.cleanup();
    });

    it('answers what exact search answers, under session, kind and time filters', async () => {
      const filters = [
        {},
        { sessionIds: ['s2' as SessionId] },
        { sessionIds: ['s1' as SessionId, 's3' as SessionId], kinds: ['note' as const] },
        { kinds: ['user' as const] },
        { fromMs: T0 + 50_000 },
        { fromMs: T0 + 20_500, toMs: T0 + 40_000, sessionIds: ['s3' as SessionId] },
        { sessionIds: ['nobody' as SessionId] },
      ];
      for (const q of vectors(6, 99)) {
        for (const filter of filters) {
          const exact = await store.searchVectors(query(q, { filter, exact: true, limit: 25 }));
          const fast = await store.searchVectors(query(q, { filter, limit: 25 }));
          expectSameHits(fast, exact);
        }
      }
      // A filter's rows only: every hit of a session filter is of that session.
      const inS2 = new Set(ids.slice(100, 200));
      const hits = await store.searchVectors(query(data[0]!, { filter: { sessionIds: ['s2' as SessionId] }, limit: 100 }));
      expect(hits).toHaveLength(100);
      expect(hits.every((h) => inS2.has(h.eventId))).toBe(true);
      // The worker suite's first passes ran on the worker thread.
      expect(harness.scanner().hasWorker).toBe(onWorker);
    });

    it('finds a vector stored after the build at once (above the watermark), and keeps it once maintenance codes it', async () => {
      const fresh = await append('s4', 3, 0);
      const freshVectors = vectors(3, 1234).map((v) => normalize(Float32Array.from(v, (x, d) => x + (d === 0 ? 3 : 0))));
      await store.putVectors(
        MODEL.name,
        fresh.map((eventId, i) => ({ eventId, vector: freshVectors[i]! })),
      );
      for (const [i, v] of freshVectors.entries()) {
        const hits = await store.searchVectors(query(v));
        expect(hits[0]).toMatchObject({ eventId: fresh[i] });
        expect(hits[0]!.similarity).toBeCloseTo(1, 5);
        expectSameHits(hits, await store.searchVectors(query(v, { exact: true })));
        // Under the tail's own filters too.
        const filtered = await store.searchVectors(query(v, { filter: { sessionIds: ['s4' as SessionId], kinds: ['user' as const] } }));
        expect(filtered.map((h) => h.eventId)).toEqual(
          (await store.searchVectors(query(v, { filter: { sessionIds: ['s4' as SessionId], kinds: ['user' as const] }, exact: true }))).map((h) => h.eventId),
        );
      }
      expect(await harness.codedSlots()).toBe(ids.length);
      expect(await store.maintainVectorIndex()).toMatchObject({ state: 'built' });
      expect(await harness.codedSlots()).toBe(ids.length + 3);
      expect(await store.maintainVectorIndex()).toMatchObject({ state: 'current' });
      for (const [i, v] of freshVectors.entries()) expect((await store.searchVectors(query(v)))[0]).toMatchObject({ eventId: fresh[i] });
    });

    it('zeroes the codes of purged vectors and never returns them', async () => {
      const report = await mem.purge({ sessionId: 's1' }, { actor: 'os:test' });
      expect(report.counts.vectors).toBe(100);
      expect(await harness.codedSlots()).toBe(ids.length - 100);
      const purged = new Set(ids.slice(0, 100));
      for (const q of [data[0]!, data[1]!, ...vectors(3, 5)]) {
        const fast = await store.searchVectors(query(q, { limit: 300 }));
        expect(fast).toHaveLength(200);
        expect(fast.filter((h) => purged.has(h.eventId))).toEqual([]);
        expectSameHits(fast, await store.searchVectors(query(q, { limit: 300, exact: true })));
      }
    });

    it('a second backend on the same store sees vectors and codes the first one wrote, and its purges', async () => {
      const other = await harness.openAgain();
      const q = data[5]!;
      expectSameHits(await other.searchVectors(query(q)), await store.searchVectors(query(q, { exact: true })));
      // Written through the first: found by the second at once (its tail), then from the blocks the first appended.
      const fresh = await append('s5', 2, 0);
      const v = normalize(Float32Array.from({ length: 16 }, (_, d) => (d === 3 ? 1 : 0.01)));
      await store.putVectors(MODEL.name, [{ eventId: fresh[0]!, vector: v }]);
      expect((await other.searchVectors(query(v)))[0]).toMatchObject({ eventId: fresh[0] });
      expect(await store.maintainVectorIndex()).toMatchObject({ state: 'built' });
      expect((await other.searchVectors(query(v)))[0]).toMatchObject({ eventId: fresh[0] });
      expect(await other.maintainVectorIndex()).toMatchObject({ state: 'current' });
      // A purge through the first: the second, which read the blocks before, no longer returns the vector.
      await mem.purge({ sessionId: 's5' }, { actor: 'os:test' });
      expect((await other.searchVectors(query(v, { limit: 400 }))).filter((h) => h.eventId === fresh[0])).toEqual([]);
      expectSameHits(await other.searchVectors(query(q)), await store.searchVectors(query(q, { exact: true })));
      expect(scannerOf(other).hasWorker).toBe(onWorker);
    });

    it('a model switch drops the codes; maintenance builds them again from the stored vectors', async () => {
      await store.setVectorModel({ name: 'other-16d@1', dimensions: 16 });
      expect(await harness.codedSlots()).toBe(0);
      await store.setVectorModel(MODEL);
      await store.putVectors(
        MODEL.name,
        ids.map((eventId, i) => ({ eventId, vector: data[i]! })),
      );
      const q = data[9]!;
      expectSameHits(await store.searchVectors(query(q)), await store.searchVectors(query(q, { exact: true })));
      expect(await store.maintainVectorIndex()).toMatchObject({ state: 'built', vectors: ids.length });
      expect(await harness.codedSlots()).toBe(ids.length);
      expectSameHits(await store.searchVectors(query(q)), await store.searchVectors(query(q, { exact: true })));
    });

    if (onWorker) {
      it('a worker that ends with scans in flight is reported and those scans finish on the calling thread', async () => {
        const scanner = harness.scanner();
        const q = data[11]!;
        const before = await store.searchVectors(query(q));
        expect(scanner.hasWorker).toBe(true);
        const warnings: Error[] = [];
        const onWarning = (w: Error): void => void warnings.push(w);
        process.on('warning', onWarning);
        try {
          const inFlight = [store.searchVectors(query(q)), store.searchVectors(query(q, { filter: { sessionIds: ['s2' as SessionId] } }))];
          // PostgreSQL reads the index's description first: the scans are posted a few round trips later.
          while (scanner.inFlight === 0) await new Promise((r) => setImmediate(r));
          await scanner.crashForTest();
          const [again, filtered] = await Promise.all(inFlight);
          expectSameHits(again!, before);
          expectSameHits(filtered!, await store.searchVectors(query(q, { filter: { sessionIds: ['s2' as SessionId] }, exact: true })));
          // Reported (a warning a worker, emitted on the next tick).
          await new Promise((r) => setImmediate(r));
          expect(warnings.filter((w) => (w as Error & { code?: string }).code === 'ENGRAM_CODE_SCAN_WORKER').length).toBeGreaterThanOrEqual(1);
        } finally {
          process.off('warning', onWarning);
        }
        // The next scan starts a new worker and answers the same.
        expectSameHits(await store.searchVectors(query(q)), before);
        expect(scanner.hasWorker).toBe(true);
      });
    }
  };

runStorageContract('vector code index', defineCodesSuite(false), { backends: codeBackends() });
runStorageContract('vector code index, first pass on a worker thread', defineCodesSuite(true), { backends: codeBackends(1) });
