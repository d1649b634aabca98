/**
 * Where a hybrid recall's time goes on a kept store (issue #14): the store's methods recall calls, the query's
 * embedding, and inside the SQLite vector search the code index's first pass (CodeSet.scan), each timed around the
 * call over agent-style queries; what is left of a recall (fusion, scoring, excerpts, packing) is the total minus
 * those. Prints a table; writes nothing.
 *
 *   node --import tsx bench/profile-hybrid.ts --db /tmp/keep/vectors-1000000.db [--queries 60] [--warmup 5]
 *   node --import tsx bench/profile-hybrid.ts --pg 'postgres://...?schema=engram_vectors_1000000' [--timeline 3]
 *
 * On PostgreSQL each SQL statement is timed too (grouped by its first words), and `--timeline N` prints the first
 * N measured recalls' calls in start order with start and end offsets, to see which of them overlap.
 */
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { openEngram } from '../src/engine.js';
import { createBuiltinEmbedder } from '../src/providers/builtin-embedder.js';
import { CodeScanner } from '../src/store/code-scanner.js';
import { CodeSet } from '../src/store/vector-code-set.js';
import { recallQueries } from './lib/agent-trace.js';
import { summarize } from './lib/stats.js';

type AnyFn = (...args: unknown[]) => unknown;

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { db: { type: 'string' }, pg: { type: 'string' }, timeline: { type: 'string', default: '0' }, queries: { type: 'string', default: '60' }, warmup: { type: 'string', default: '5' } } });
  if (values.db === undefined && values.pg === undefined) throw new Error('--db FILE or --pg URL: a kept store (npm run bench -- scale-vectors --keep-store DIR)');
  const warmup = Number(values.warmup);
  const times = new Map<string, number[]>();
  /** The calls of the recall under way, for --timeline: label, start and end (ms from the recall's start). */
  let spans: Array<{ label: string; start: number; end: number }> = [];
  let recallStart = 0;
  const record = (label: string, ms: number): void => {
    (times.get(label) ?? times.set(label, []).get(label)!).push(ms);
    const end = performance.now() - recallStart;
    spans.push({ label, start: end - ms, end });
  };
  /** Replaces `obj[name]` (an object's method or a prototype's) by a timed call (sync or async). */
  const time = (obj: Record<string, unknown>, name: string, label: string): void => {
    const fn = obj[name] as AnyFn;
    obj[name] = function (this: unknown, ...args: unknown[]): unknown {
      const t = performance.now();
      const out = fn.apply(this, args);
      if (out instanceof Promise) return out.finally(() => record(label, performance.now() - t));
      record(label, performance.now() - t);
      return out;
    };
  };

  const embedder = await createBuiltinEmbedder();
  time(embedder as unknown as Record<string, unknown>, 'embed', 'embed the query');
  const mem = await openEngram({ ...(values.pg !== undefined ? { pg: values.pg } : { db: values.db! }), embedder, indexing: { background: false } });
  try {
    console.error('maintain:', await mem.maintainVectorIndex(), await mem.maintainTextIndex());
    const store = mem.store as unknown as Record<string, unknown>;
    for (const m of ['searchText', 'searchVectors', 'getEvents', 'getVectors', 'findSuperseding', 'getSessionAccess']) if (typeof store[m] === 'function') time(store, m, `store.${m}`);
    const codes = (store.vectors as { vectorCodes?: Record<string, unknown> } | undefined)?.vectorCodes;
    if (codes) time(codes, 'search', 'code index search (all of it)');
    time(CodeSet.prototype as unknown as Record<string, unknown>, 'scan', 'code index first pass (CodeSet.scan)');
    // From 65,536 codes the first pass runs on a worker (code-scanner.ts): timed from post to answer.
    time(CodeScanner.prototype as unknown as Record<string, unknown>, 'scan', 'code index first pass (CodeScanner.scan, worker or here)');
    if (values.pg !== undefined) {
      // Every statement, by its first words (the backend's one query method; its methods above call it).
      const proto = Object.getPrototypeOf(store) as Record<string, unknown>;
      const query = proto.query as AnyFn;
      proto.query = function (this: unknown, sql: string, ...rest: unknown[]): unknown {
        const t = performance.now();
        const label = `  sql: ${sql.replace(/\s+/g, ' ').replace(/"[^"]*"\./g, '').slice(0, 70)}`;
        return (query.call(this, sql, ...rest) as Promise<unknown>).finally(() => record(label, performance.now() - t));
      };
      // And those sent on the pool itself (the identifier index's lookups).
      const pool = store.pool as Record<string, unknown>;
      const poolQuery = (pool.query as AnyFn).bind(pool);
      pool.query = (sql: string, ...rest: unknown[]): unknown => {
        const t = performance.now();
        const label = `  pool sql: ${sql.replace(/\s+/g, ' ').replace(/"[^"]*"\./g, '').slice(0, 70)}`;
        return (poolQuery(sql, ...rest) as Promise<unknown>).finally(() => record(label, performance.now() - t));
      };
    }

    const totals: number[] = [];
    const timelines: string[] = [];
    for (const [i, q] of recallQueries(Number(values.queries) + warmup).entries()) {
      if (i === warmup) times.clear();
      spans = [];
      const t = performance.now();
      recallStart = t;
      await mem.recall(q, { retriever: 'hybrid', logRecall: false });
      if (i >= warmup) totals.push(performance.now() - t);
      if (i >= warmup && i < warmup + Number(values.timeline)) {
        const lines = [...spans].sort((a, b) => a.start - b.start).map((x) => `  ${x.start.toFixed(1).padStart(7)} -> ${x.end.toFixed(1).padStart(7)}  ${x.label.trim()}`);
        timelines.push(`recall ${JSON.stringify(q)}: ${(performance.now() - t).toFixed(1)} ms\n${lines.join('\n')}`);
      }
    }
    if (timelines.length > 0) console.log(`${timelines.join('\n\n')}\n`);
    const row = (label: string, xs: number[]): string => {
      const s = summarize(xs);
      const perQuery = xs.reduce((a, b) => a + b, 0) / totals.length;
      return `| ${label} | ${xs.length} | ${s.p50.toFixed(1)} | ${s.p95.toFixed(1)} | ${perQuery.toFixed(1)} |`;
    };
    const lines = ['| stage | calls | p50 ms | p95 ms | ms per recall |', '| --- | ---: | ---: | ---: | ---: |', row('hybrid recall (total)', totals)];
    for (const [label, xs] of times) lines.push(row(label, xs));
    console.log(lines.join('\n'));
  } finally {
    await mem.close();
  }
}

void main();
