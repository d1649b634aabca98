/**
 * Where a hybrid recall's time goes on a kept store (issue #14): the store's methods recall calls, the query's
 * embedding, and inside the SQLite vector search the code index's first pass (CodeSet.scan), each timed around the
 * call over agent-style queries; what is left of a recall (fusion, scoring, excerpts, packing) is the total minus
 * those. Prints a table; writes nothing.
 *
 *   node --import tsx bench/profile-hybrid.ts --db /tmp/keep/vectors-1000000.db [--queries 60] [--warmup 5]
 */
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { openEngram } from '../src/engine.js';
import { createBuiltinEmbedder } from '../src/providers/builtin-embedder.js';
import { CodeSet } from '../src/store/vector-code-set.js';
import { recallQueries } from './lib/agent-trace.js';
import { summarize } from './lib/stats.js';

type AnyFn = (...args: unknown[]) => unknown;

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { db: { type: 'string' }, queries: { type: 'string', default: '60' }, warmup: { type: 'string', default: '5' } } });
  if (values.db === undefined) throw new Error('--db FILE: a kept SQLite store (npm run bench -- scale-vectors --keep-store DIR)');
  const warmup = Number(values.warmup);
  const times = new Map<string, number[]>();
  const record = (label: string, ms: number): void => void (times.get(label) ?? times.set(label, []).get(label)!).push(ms);
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
  const mem = await openEngram({ db: values.db, embedder, indexing: { background: false } });
  try {
    console.error('maintain:', await mem.maintainVectorIndex());
    const store = mem.store as unknown as Record<string, unknown>;
    for (const m of ['searchText', 'searchVectors', 'getEvents', 'getVectors', 'findSuperseding', 'getSessionAccess']) if (typeof store[m] === 'function') time(store, m, `store.${m}`);
    const codes = (store.vectors as { vectorCodes?: Record<string, unknown> } | undefined)?.vectorCodes;
    if (codes) time(codes, 'search', 'code index search (all of it)');
    time(CodeSet.prototype as unknown as Record<string, unknown>, 'scan', 'code index first pass (CodeSet.scan)');

    const totals: number[] = [];
    for (const [i, q] of recallQueries(Number(values.queries) + warmup).entries()) {
      if (i === warmup) times.clear();
      const t = performance.now();
      await mem.recall(q, { retriever: 'hybrid', logRecall: false });
      if (i >= warmup) totals.push(performance.now() - t);
    }
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
