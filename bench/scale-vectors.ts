/**
 * Vectors at scale (issue #14): stores of the synthetic agent trace embedded with the built-in embedder (real
 * vectors, not synthetic ones: an IVF index's recall depends on how vectors cluster), then the same queries through
 * exact search and the fast path: vector search p50 / p95, hybrid recall p50 / p95, and recall@10 of the fast
 * path against exact. Exported for `bench/scale.ts`; `npm run bench -- scale-vectors` writes
 * bench/results/vectors-scale.{md,json}.
 *
 *   npm run bench -- scale-vectors [--events 100000] [--queries 200] [--backends sqlite,postgres] [--pg-events 100000]
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { openEngram, type Engram } from '../src/engine.js';
import type { Embedder } from '../src/providers/embedder.js';
import { createBuiltinEmbedder } from '../src/providers/builtin-embedder.js';
import type { StorageBackend, VectorHit } from '../src/store/backend.js';
import type { StoreLocation } from '../src/store/open-store.js';
import { agentTrace, appendTraceInBatches, recallQueries } from './lib/agent-trace.js';
import { benchPgUrl, createBenchStore } from './lib/bench-stores.js';
import { machineLine, round, summarize } from './lib/stats.js';

export interface ScaleVectorsOptions {
  events: number;
  backends: Array<'sqlite' | 'postgres'>;
  queries: number;
  /** Events of the PostgreSQL store (default `events`): its exact scan is slow to fill at 1M on 2 cores. */
  pgEvents?: number;
  /**
   * A directory for the SQLite store, kept after the run: a store built there before (marked complete) is reused,
   * so a second run skips ingest and embedding (an hour of this machine at 1M). Without it the store is temporary.
   */
  keepStore?: string;
}

/** What recall asks the store for (recall.ts, MIN_VECTOR_CANDIDATES). */
const VECTOR_DEPTH = 100;
const BATCH = 500;
const WARMUP = 10;

interface Latency {
  p50: number;
  p95: number;
}

export interface ScaleVectorsRow {
  backend: 'sqlite' | 'postgres';
  events: number;
  vectors: number;
  /** How the fast path answers on this backend. */
  fastPath: string;
  ingestSeconds: number;
  embedPerSec: number;
  /** Building the fast path's index (first query above the threshold), ms; null where there is none. */
  indexBuildMs: number | null;
  vector: { exact: Latency; fast: Latency };
  hybrid: { exact: Latency; fast: Latency };
  /** Mean share of exact search's top 10 the fast path returns (ties at the 10th similarity count as found). */
  recallAt10: number;
}

/** Builds the stores, measures, and returns the report (markdown and JSON); writes nothing. */
export async function runScaleVectors(opts: ScaleVectorsOptions): Promise<{ markdown: string; json: unknown }> {
  const started = new Date();
  const embedder = await createBuiltinEmbedder();
  const rows: ScaleVectorsRow[] = [];
  for (const backend of opts.backends) {
    const events = backend === 'postgres' ? (opts.pgEvents ?? opts.events) : opts.events;
    console.error(`== scale-vectors: ${backend}, ${events.toLocaleString('en')} events`);
    const kept = opts.keepStore !== undefined ? join(opts.keepStore, backend === 'sqlite' ? `vectors-${events}.db` : `pg-vectors-${events}`) : undefined;
    if (opts.keepStore !== undefined) mkdirSync(opts.keepStore, { recursive: true });
    if (kept !== undefined && backend === 'postgres' && !existsSync(`${kept}.complete`)) await dropPgSchema(`engram_vectors_${events}`);
    const store = kept ? { location: keptLocation(backend, kept, events), cleanup: async () => undefined } : await createBenchStore(backend);
    try {
      rows.push(await measure(backend, store.location, events, opts.queries, embedder, kept));
    } finally {
      await store.cleanup();
    }
  }
  const json = {
    generatedAt: started.toISOString(),
    machine: `${machineLine()}, ${cpus().length} cores`,
    embedder: embedder.name,
    vectors: 'built-in embedder (256 dimensions) over the synthetic agent trace',
    options: opts,
    rows,
  };
  return { markdown: toMarkdown(json, rows), json };
}

async function measure(
  backend: 'sqlite' | 'postgres',
  location: StoreLocation,
  events: number,
  queries: number,
  embedder: Embedder,
  kept?: string,
): Promise<ScaleVectorsRow> {
  const marker = kept !== undefined ? `${kept}.complete` : undefined;
  const reused = marker !== undefined && existsSync(marker);
  // Two engines over one store: default options (the fast path above its threshold) and exact search only.
  const fastMem = await openEngram({ ...location, embedder: shared(embedder), indexing: { background: false, batchSize: 256 } });
  const exactLocation: StoreLocation =
    backend === 'sqlite' ? { ...location, sqlite: { vectorIndex: { mode: 'exact' } } } : { ...location, postgres: { vectorIndex: { mode: 'exact' } } };
  let exactMem: Engram | undefined;
  try {
    const t0 = performance.now();
    await appendTraceInBatches((s, list) => fastMem.append(s, list), reused ? [] : agentTrace(events), BATCH);
    const t1 = performance.now();
    const done = await fastMem.indexer!.drain();
    let embedPerSec = done.embedded / ((performance.now() - t1) / 1000);
    let ingestSeconds = round((t1 - t0) / 1000, 1);
    if (marker !== undefined && reused) ({ ingestSeconds, embedPerSec } = JSON.parse(readFileSync(marker, 'utf8')) as { ingestSeconds: number; embedPerSec: number });
    else if (marker !== undefined) writeFileSync(marker, JSON.stringify({ ingestSeconds, embedPerSec }));
    console.error(`   ingest ${round((t1 - t0) / 1000, 1)} s, embedded ${done.embedded} at ${round(embedPerSec, 0)}/s`);
    exactMem = await openEngram({ ...exactLocation, embedder: shared(embedder), indexing: { background: false } });

    const texts = recallQueries(queries);
    const vectors = await embedder.embed(texts);
    const search = (store: StorageBackend, vector: Float32Array, limit: number, exact: boolean): Promise<VectorHit[]> =>
      store.searchVectors({ vector, model: embedder.name, limit, ...(exact ? { exact: true } : {}) });

    // Maintenance builds the index when the store is above the threshold (`engram reindex` does the same); queries never do.
    const tb = performance.now();
    const maintained = await fastMem.maintainVectorIndex();
    const firstMs = performance.now() - tb;
    // And the identifier index of full-text search, which appends leave to a catch-up (`engram reindex` runs it too),
    // so the hybrid queries' full-text side is measured as a maintained store answers it.
    await fastMem.maintainTextIndex();
    const fastPath = await describeFastPath(fastMem.store);
    const indexBuildMs = maintained.state === 'built' ? round(firstMs, 0) : null;
    console.error(`   fast path: ${fastPath}${indexBuildMs !== null ? `, index build ${indexBuildMs} ms` : ''}`);

    const vector = { exact: await timed(vectors, (v) => search(exactMem!.store, v, VECTOR_DEPTH, true)), fast: await timed(vectors, (v) => search(fastMem.store, v, VECTOR_DEPTH, false)) };
    const hybrid = {
      exact: await timed(texts, (q) => exactMem!.recall(q, { retriever: 'hybrid', logRecall: false })),
      fast: await timed(texts, (q) => fastMem.recall(q, { retriever: 'hybrid', logRecall: false })),
    };
    let found = 0;
    let wanted = 0;
    for (const v of vectors) {
      const exact = await search(fastMem.store, v, 10, true);
      const fast = await search(fastMem.store, v, 10, false);
      if (exact.length === 0) continue;
      const ids = new Set(exact.map((h) => h.eventId));
      const tenth = exact[exact.length - 1]!.similarity;
      found += fast.filter((h) => ids.has(h.eventId) || h.similarity >= tenth - 1e-6).length;
      wanted += exact.length;
    }
    const stats = await fastMem.store.embeddingQueueStats();
    console.error(`   vector exact ${vector.exact.p95} fast ${vector.fast.p95}, hybrid exact ${hybrid.exact.p95} fast ${hybrid.fast.p95} (p95 ms), recall@10 ${round(found / wanted, 4)}`);
    return {
      backend,
      events,
      vectors: reused ? await countVectors(fastMem.store) : done.embedded,
      fastPath,
      ingestSeconds,
      embedPerSec: round(embedPerSec, 0),
      indexBuildMs,
      vector,
      hybrid,
      recallAt10: round(wanted === 0 ? 1 : found / wanted, 4),
      ...(stats.pending > 0 ? { pendingEmbeddings: stats.pending } : {}),
    };
  } finally {
    if (exactMem) await exactMem.close();
    await fastMem.close();
  }
}

/**
 * Where a kept store lives: the SQLite file, or for PostgreSQL the schema `engram_vectors_<events>` on the bench
 * server (its marker file `<keep-store>/pg-vectors-<events>.complete` says it was filled).
 */
function keptLocation(backend: 'sqlite' | 'postgres', kept: string, events: number): StoreLocation {
  if (backend === 'sqlite') return { db: kept };
  const base = benchPgUrl();
  return { pg: `${base}${base.includes('?') ? '&' : '?'}schema=engram_vectors_${events}` };
}

/** Drops a kept PostgreSQL store left unfinished by an earlier run (no marker), so it is filled from empty. */
async function dropPgSchema(schema: string): Promise<void> {
  const pgMod = await import('pg');
  const client = new pgMod.default.Client({ connectionString: benchPgUrl() });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

/** Stored vectors of a reused store. */
async function countVectors(store: StorageBackend): Promise<number> {
  if (store.name !== 'sqlite') {
    const pg = store as unknown as { query<R>(sql: string, params: unknown[], context: string): Promise<R[]>; sql: { s: string } };
    return Number((await pg.query<{ n: string }>(`SELECT count(*) AS n FROM ${pg.sql.s}.event_vectors`, [], 'bench'))[0]?.n ?? 0);
  }
  const db = (store as unknown as { db: { prepare(sql: string): { get(): { n: number } } } }).db;
  return db.prepare('SELECT count(*) AS n FROM event_vectors').get().n;
}

/** The engine closes its embedder; the benchmark's is shared by every engine, so it is wrapped without close. */
function shared(embedder: Embedder): Embedder {
  return { name: embedder.name, dimensions: embedder.dimensions, embed: (texts) => embedder.embed(texts) };
}

async function timed<T>(inputs: T[], fn: (input: T) => Promise<unknown>): Promise<Latency> {
  for (const x of inputs.slice(0, WARMUP)) await fn(x);
  const times: number[] = [];
  for (const x of inputs) {
    const t = performance.now();
    await fn(x);
    times.push(performance.now() - t);
  }
  const s = summarize(times);
  return { p50: round(s.p50), p95: round(s.p95) };
}

/** The index the fast path used, read from the store's own description of it (store_meta `vector_ivf`). */
async function describeFastPath(store: StorageBackend): Promise<string> {
  let meta: { lists: number; trainedOn: number } | null = null;
  if (store.name === 'sqlite') {
    const vectors = (store as unknown as { vectors: { vectorIndex: { readMeta(): typeof meta }; vectorCodes: { rerank: number; readMeta(): { vectors: number; blocks: number } | null } } }).vectors;
    const codes = vectors.vectorCodes.readMeta();
    if (codes) return `one-bit codes of ${codes.vectors.toLocaleString('en')} vectors (${codes.blocks} blocks), exact re-rank of the best ${vectors.vectorCodes.rerank.toLocaleString('en')}`;
    meta = vectors.vectorIndex.readMeta();
  } else {
    const pg = store as unknown as {
      query<R>(sql: string, params: unknown[], context: string): Promise<R[]>;
      sql: { s: string };
      vectors: { vectorCodes: { rerank: number; readMeta(): Promise<{ vectors: number; blocks: number } | null> } };
    };
    const codes = await pg.vectors.vectorCodes.readMeta();
    if (codes) return `one-bit codes of ${codes.vectors.toLocaleString('en')} vectors (${codes.blocks} blocks), exact re-rank of the best ${pg.vectors.vectorCodes.rerank.toLocaleString('en')}`;
    const rows = await pg.query<{ value: string }>(`SELECT value FROM ${pg.sql.s}.store_meta WHERE key = 'vector_ivf'`, [], 'bench');
    meta = rows[0] ? (JSON.parse(rows[0].value) as typeof meta) : null;
  }
  return meta ? `IVF, ${meta.lists} lists over ${meta.trainedOn.toLocaleString('en')} vectors` : 'exact (below the index threshold)';
}

export function toMarkdown(json: { generatedAt: string; machine: string; embedder: string; options: ScaleVectorsOptions }, rows: ScaleVectorsRow[]): string {
  const o = json.options;
  const table = rows
    .map(
      (r) =>
        `| ${r.backend} | ${r.events.toLocaleString('en')} | ${r.fastPath} | ${r.indexBuildMs === null ? '-' : (r.indexBuildMs / 1000).toFixed(1) + ' s'} | ` +
        `${r.vector.exact.p50} / ${r.vector.exact.p95} | ${r.vector.fast.p50} / ${r.vector.fast.p95} | ${r.hybrid.exact.p50} / ${r.hybrid.exact.p95} | ` +
        `${r.hybrid.fast.p50} / ${r.hybrid.fast.p95} | ${(r.recallAt10 * 100).toFixed(1)} % |`,
    )
    .join('\n');
  return `## Vectors at scale

Generated by \`npm run bench -- scale-vectors --events ${o.events} --queries ${o.queries} --backends ${o.backends.join(',')}${o.pgEvents !== undefined ? ` --pg-events ${o.pgEvents}` : ''}\`
on ${json.generatedAt} (${json.machine}; shared machine, noisy). Vectors: \`${json.embedder}\` (256 dimensions) over the
synthetic agent trace (real embeddings, so the index sees how real vectors cluster). ${o.queries} agent-style queries; vector
search asks for ${VECTOR_DEPTH} neighbours (recall's depth); hybrid is \`recall(q, { retriever: 'hybrid' })\` with default
options and the recall log off. Exact: brute force (\`vec_events\` on SQLite, \`exact: true\`); fast: the backend's default (built by \`maintainVectorIndex()\`, as \`engram reindex\` does).
recall@10: share of exact search's 10 nearest the fast path returns (a tie with the 10th similarity counts as found).

| backend | events | fast path | index build | vector exact p50 / p95 ms | vector fast p50 / p95 ms | hybrid exact p50 / p95 ms | hybrid fast p50 / p95 ms | recall@10 fast vs exact |
| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |
${table}

Targets (issue #14): hybrid recall p95 at 1M events < 80 ms on SQLite, < 150 ms on PostgreSQL.
`;
}
