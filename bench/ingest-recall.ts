/**
 * Ingest throughput and recall latency on each backend, against raw SQLite + FTS5 on the same events (the
 * ratio is our overhead), plus concurrent writers. Writes bench/results/ingest-recall.{md,json}.
 *
 *   npm run bench -- ingest-recall [--sizes 10000,100000] [--queries 300] [--single 3000]
 *                                  [--backends sqlite,postgres] [--writers 1,2,4] [--writer-events 5000]
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import { openEngram, type Engram } from '../src/engine.js';
import { parseQuery } from '../src/memory/query-terms.js';
import type { StoreLocation } from '../src/store/open-store.js';
import { compileFts5Match } from '../src/store/sqlite/fts5-query.js';
import { agentTrace, appendTraceInBatches, recallQueries, type TraceEvent } from './lib/agent-trace.js';
import { openRawFts5 } from './lib/raw-fts5.js';
import { createBenchStore, type BenchBackend } from './lib/bench-stores.js';
import { machineLine, round, summarize } from './lib/stats.js';

const BATCH = 500;
const WRITER_BATCH = 100;

type Summary = ReturnType<typeof roundSummary>;

interface SizeResult {
  backend: BenchBackend;
  events: number;
  ingestEventsPerSec: number;
  recall: Summary;
  avgHits: number;
  /** SQLite only: raw SQLite + FTS5 on the same events. */
  raw?: { eventsPerSec: number; ingestRatio: number; fts: Summary };
}

interface SingleResult {
  backend: BenchBackend;
  durability: string;
  latency: Summary;
}

interface WriterResult {
  backend: BenchBackend;
  writers: number;
  events: number;
  eventsPerSec: number;
  scaling: number;
}

export interface IngestRecallArgs {
  sizes: number[];
  queries: number;
  single: number;
  backends: BenchBackend[];
  writers: number[];
  writerEvents: number;
}

export async function runIngestRecall(args: IngestRecallArgs): Promise<void> {
  const results: SizeResult[] = [];
  const singles: SingleResult[] = [];
  const writers: WriterResult[] = [];
  const queries = recallQueries(args.queries);
  // Warm the JIT, the tokenizer tables and the page cache on a throwaway store first: otherwise whichever
  // path runs first pays for compiling it (the first 10K SQLite run measured 0.52x raw cold, 0.75x at 100K).
  await warmUp(args.backends);
  for (const size of args.sizes) {
    const trace = [...agentTrace(size, { seed: 42 })];
    for (const backend of args.backends) {
      console.error(`== ${backend}, ${size} events`);
      const store = await createBenchStore(backend);
      try {
        const ingestEventsPerSec = await ingestOurs(store.location, trace);
        const mem = await openEngram(store.location);
        const recall = await timeRecall(mem, queries);
        await mem.close();
        const result: SizeResult = { backend, events: size, ingestEventsPerSec: round(ingestEventsPerSec, 0), recall: roundSummary(recall.latency), avgHits: round(recall.avgHits, 1) };
        if (backend === 'sqlite') {
          const work = mkdtempSync(join(tmpdir(), 'engram-raw-'));
          try {
            const raw = ingestRaw(join(work, 'raw.db'), trace);
            result.raw = { eventsPerSec: round(raw, 0), ingestRatio: round(ingestEventsPerSec / raw), fts: roundSummary(timeRawFts(join(work, 'raw.db'), queries)) };
          } finally {
            rmSync(work, { recursive: true, force: true });
          }
        }
        results.push(result);
        console.error(JSON.stringify(result));
      } finally {
        await store.cleanup();
      }
    }
  }
  for (const backend of args.backends) {
    const durabilities = backend === 'sqlite' ? (['normal', 'full'] as const) : (['default'] as const);
    for (const durability of durabilities) {
      const store = await createBenchStore(backend);
      try {
        const location: StoreLocation = durability === 'full' ? { ...store.location, sqlite: { durability: 'full' } } : store.location;
        singles.push({ backend, durability, latency: await singleIngest(location, args.single) });
        console.error(JSON.stringify(singles.at(-1)));
      } finally {
        await store.cleanup();
      }
    }
    let base = 0;
    for (const n of args.writers) {
      const store = await createBenchStore(backend);
      try {
        const eventsPerSec = await concurrentWriters(store.location, n, args.writerEvents);
        if (n === args.writers[0]) base = eventsPerSec;
        writers.push({ backend, writers: n, events: n * args.writerEvents, eventsPerSec: round(eventsPerSec, 0), scaling: round(eventsPerSec / base) });
        console.error(JSON.stringify(writers.at(-1)));
      } finally {
        await store.cleanup();
      }
    }
  }
  writeReport({ results, singles, writers, args });
}

async function warmUp(backends: BenchBackend[]): Promise<void> {
  const trace = [...agentTrace(3000, { seed: 7 })];
  for (const backend of backends) {
    const store = await createBenchStore(backend);
    try {
      await ingestOurs(store.location, trace);
      const mem = await openEngram(store.location);
      for (const q of recallQueries(30, 99)) await mem.recall(q);
      await mem.close();
    } finally {
      await store.cleanup();
    }
  }
  const work = mkdtempSync(join(tmpdir(), 'engram-raw-warm-'));
  try {
    ingestRaw(join(work, 'raw.db'), trace);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

async function ingestOurs(location: StoreLocation, trace: TraceEvent[]): Promise<number> {
  const mem = await openEngram(location);
  const start = performance.now();
  await appendTraceInBatches((s, list) => mem.append(s, list), trace, BATCH);
  const secs = (performance.now() - start) / 1000;
  await mem.close();
  return trace.length / secs;
}

/** The floor: plain INSERT into a table plus the same FTS5 index, same pragmas, same batches. */
function ingestRaw(path: string, trace: TraceEvent[]): number {
  const { db, insertBatch: tx } = openRawFts5(path);
  const start = performance.now();
  for (let i = 0; i < trace.length; i += BATCH) tx(trace.slice(i, i + BATCH));
  const secs = (performance.now() - start) / 1000;
  db.close();
  return trace.length / secs;
}

async function timeRecall(mem: Engram, queries: string[]): Promise<{ latency: number[]; avgHits: number }> {
  for (const q of queries.slice(0, 20)) await mem.recall(q); // warm caches and statements
  const latency: number[] = [];
  let hits = 0;
  for (const q of queries) {
    const t = performance.now();
    const r = await mem.recall(q);
    latency.push(performance.now() - t);
    hits += r.hits.length;
  }
  return { latency, avgHits: hits / queries.length };
}

/** bm25 top-10 of the query's terms OR-ed, nothing else: what a plain FTS5 MATCH costs. */
function timeRawFts(path: string, queries: string[]): number[] {
  const db = new Database(path, { readonly: true });
  const stmt = db.prepare('SELECT rowid, bm25(events_fts) AS s FROM events_fts WHERE events_fts MATCH ? ORDER BY s LIMIT 10');
  const matches = queries.map((q) => compileFts5Match(parseQuery(q).terms));
  for (const m of matches.slice(0, 20)) if (m) stmt.all(m);
  const latency: number[] = [];
  for (const m of matches) {
    if (!m) continue;
    const t = performance.now();
    stmt.all(m);
    latency.push(performance.now() - t);
  }
  db.close();
  return latency;
}

async function singleIngest(location: StoreLocation, count: number): Promise<Summary> {
  const mem = await openEngram(location);
  // A store with history: single appends are measured against 10K events already stored.
  const warm = [...agentTrace(10_000, { seed: 1 })];
  for (let i = 0; i < warm.length; i += BATCH) await mem.append('warm', warm.slice(i, i + BATCH).map((t) => t.event));
  const latency: number[] = [];
  for (const t of agentTrace(count, { seed: 2 })) {
    const start = performance.now();
    await mem.append(t.sessionId, t.event);
    latency.push(performance.now() - start);
  }
  await mem.close();
  return roundSummary(latency);
}

/** N writer processes, each with its own connection and sessions, released together; aggregate events/s. */
async function concurrentWriters(location: StoreLocation, n: number, eventsEach: number): Promise<number> {
  // Create the store (and run migrations) once, before the writers race to open it.
  await (await openEngram(location)).close();
  const children = Array.from({ length: n }, (_, i) =>
    spawn(process.execPath, ['--import', 'tsx', 'bench/lib/writer-process.ts', JSON.stringify(location), String(i), String(eventsEach), String(WRITER_BATCH)], {
      stdio: ['pipe', 'pipe', 'inherit'],
    }),
  );
  const done = children.map(
    (child) =>
      new Promise<{ events: number; ms: number }>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (d: Buffer) => (out += d.toString()));
        child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as { events: number; ms: number }) : reject(new Error(`writer exited ${code}`))));
      }),
  );
  // Let every child load and open its store, then release them together.
  await new Promise((r) => setTimeout(r, 3000));
  const start = performance.now();
  for (const child of children) child.stdin.end('go\n');
  const results = await Promise.all(done);
  const wallMs = performance.now() - start;
  return results.reduce((sum, r) => sum + r.events, 0) / (wallMs / 1000);
}

function roundSummary(samples: number[]) {
  const s = summarize(samples);
  return { p50: round(s.p50, 3), p95: round(s.p95, 3), p99: round(s.p99, 3), mean: round(s.mean, 3), n: s.n };
}

function writeReport(r: { results: SizeResult[]; singles: SingleResult[]; writers: WriterResult[]; args: IngestRecallArgs }): void {
  mkdirSync('bench/results', { recursive: true });
  const when = new Date().toISOString();
  writeFileSync('bench/results/ingest-recall.json', JSON.stringify({ when, machine: machineLine(), cpus: cpus().length, ...r }, null, 2) + '\n');
  const ms = (s: Summary): string => `${s.p50} / ${s.p95} / ${s.p99}`;
  const fmt = (n: number): string => n.toLocaleString('en');
  const sqlite = r.results.filter((x) => x.backend === 'sqlite');
  const rawRows = sqlite
    .map((x) => `| ${fmt(x.events)} | ${fmt(x.ingestEventsPerSec)} | ${fmt(x.raw!.eventsPerSec)} | ${x.raw!.ingestRatio} | ${ms(x.recall)} | ${ms(x.raw!.fts)} | ${x.avgHits} |`)
    .join('\n');
  const backendRows = r.results
    .map((x) => {
      const ref = sqlite.find((s) => s.events === x.events);
      const ingestVs = ref ? round(x.ingestEventsPerSec / ref.ingestEventsPerSec) : '-';
      const recallVs = ref ? round(x.recall.p95 / ref.recall.p95) : '-';
      return `| ${x.backend} | ${fmt(x.events)} | ${fmt(x.ingestEventsPerSec)} | ${ingestVs} | ${ms(x.recall)} | ${recallVs} | ${x.avgHits} |`;
    })
    .join('\n');
  const singleRows = r.singles.map((s) => `| ${s.backend} | ${s.durability} | ${s.latency.p50} | ${s.latency.p95} | ${s.latency.p99} | ${s.latency.n} |`).join('\n');
  const writerRows = r.writers.map((w) => `| ${w.backend} | ${w.writers} | ${fmt(w.events)} | ${fmt(w.eventsPerSec)} | ${w.scaling} |`).join('\n');
  const md = `# Ingest and recall: SQLite and PostgreSQL

Generated by \`npm run bench -- ingest-recall\` on ${when} (${machineLine()}, ${cpus().length} cores; PostgreSQL is the
local server on the same machine, so it shares those 2 cores with the benchmark).

Trace: \`bench/lib/agent-trace.ts\`, seed 42, 20 sessions, a coding agent's dialogue, tool calls and tool results
(build logs, JSON responses, grep output, test runs, stack traces) over a Zipfian vocabulary; about 100 words
per event, 4 % of tool results large enough to become artifacts. Recall: ${r.args.queries} queries from
\`recallQueries()\` (error codes, file paths with line numbers, 3-5 word questions), k = 10, 2,000-token
budget, after 20 warm-up queries; latencies are end to end (search, excerpts, token counting, packing).

## SQLite against raw SQLite + FTS5 (batches of ${BATCH} events)

Raw = a plain table + the same FTS5 index, same pragmas and batches, no validation, artifacts, previews,
compression, ids or keys; raw FTS5 = \`bm25\` top-10 of the same OR-ed terms, no excerpts or packing.

| events | ours events/s | raw events/s | ratio (target >= 0.8) | recall p50 / p95 / p99 ms | raw FTS5 p50 / p95 / p99 ms | avg hits |
| ---: | ---: | ---: | ---: | --- | --- | ---: |
${rawRows}

## Both backends (batches of ${BATCH} events)

| backend | events | ingest events/s | ingest vs SQLite | recall p50 / p95 / p99 ms | recall p95 vs SQLite | avg hits |
| --- | ---: | ---: | ---: | --- | ---: | ---: |
${backendRows}

## Single-event appends (one transaction each, store holding 10K events)

| backend | durability | p50 ms | p95 ms | p99 ms (target < 2) | n |
| --- | --- | ---: | ---: | ---: | ---: |
${singleRows}

SQLite \`normal\`: WAL with synchronous=NORMAL, survives a crash or kill of the process; \`full\`: fsync per commit,
survives power loss. PostgreSQL: the server's defaults (fsync on, synchronous_commit on), durable on commit.

## Concurrent writers (separate processes, own connections, batches of ${WRITER_BATCH})

| backend | writers | events | aggregate events/s | vs 1 writer |
| --- | ---: | ---: | ---: | ---: |
${writerRows}

Targets (DESIGN.md): durable single ingest p99 < 2 ms; batched >= 0.8x raw SQLite + FTS5; recall p95 < 10 ms at
100K events, < 50 ms at 1M.
`;
  writeFileSync('bench/results/ingest-recall.md', md);
  console.error(md);
}
