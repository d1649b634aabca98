/**
 * The code index's vector search stage by stage on a kept store's codes (issue #14), with the first encoding's
 * settings beside the current ones in the same process, interleaved query by query (so machine load hits both
 * alike): the first pass over every code with the best 2,000 kept (the former default) against the Hamming-gated
 * pass with the best 1,000 (the current), then reading those candidates' float vectors from `event_vectors` as the
 * re-rank does. Prints p50 / p95 / min per stage; writes nothing.
 *
 *   node --import tsx bench/code-scan.ts --db /tmp/keep/vectors-1000000.db [--queries 60]
 */
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import { createBuiltinEmbedder } from '../src/providers/builtin-embedder.js';
import { CodeScanner } from '../src/store/code-scanner.js';
import { CodeSet } from '../src/store/vector-code-set.js';
import { blockFromBytes, codeWords, rotatedDims, rotatedQuery } from '../src/store/vector-codes.js';
import { recallQueries } from './lib/agent-trace.js';
import { summarize } from './lib/stats.js';

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { db: { type: 'string' }, queries: { type: 'string', default: '60' } } });
  if (values.db === undefined) throw new Error('--db FILE: a kept SQLite store with a code index (npm run bench -- scale-vectors --keep-store DIR)');
  const db = new Database(values.db, { readonly: true });
  const meta = JSON.parse((db.prepare("SELECT value FROM store_meta WHERE key = 'vector_codes'").get() as { value: string }).value) as { dimensions: number; encoding?: string };
  if (meta.encoding === undefined) throw new Error('the store has codes of the first encoding: run maintenance (engram reindex) first');
  const set = new CodeSet(codeWords(rotatedDims(meta.dimensions)));
  let t = performance.now();
  for (const data of db.prepare('SELECT data FROM vec_codes ORDER BY block').pluck().iterate() as Iterable<Buffer>) set.append(blockFromBytes(data));
  console.error(`read ${set.count.toLocaleString('en')} codes in ${(performance.now() - t).toFixed(0)} ms`);
  const embedder = await createBuiltinEmbedder();
  const queries = await embedder.embed(recallQueries(Number(values.queries) + 5));
  await embedder.close?.();
  const read = db.prepare('SELECT embedding FROM event_vectors WHERE event_rowid = ?').pluck();
  const settings = [
    { name: 'every code scored, best 2,000 (former)', prefilter: 0, rerank: 2000 },
    { name: 'Hamming gate ~100,000, best 1,000 (current)', prefilter: 100_000, rerank: 1000 },
  ];
  const times = new Map<string, number[]>();
  const record = (label: string, ms: number): void => void (times.get(label) ?? times.set(label, []).get(label)!).push(ms);
  // The current settings' first pass on worker threads (code-scanner.ts; started before the first query).
  const scanners = [1, 2].map((threads) => ({ threads, scanner: new CodeScanner({ minCodes: 1, threads }) }));
  for (const { scanner } of scanners) scanner.prepare(set.count);
  for (const [qi, q] of queries.entries()) {
    const current = settings[1]!;
    const inline = set.scan(rotatedQuery(q), null, current.rerank, { prefilter: current.prefilter });
    for (const { threads, scanner } of scanners) {
      t = performance.now();
      const positions = await scanner.scan(set, rotatedQuery(q), null, current.rerank, { prefilter: current.prefilter });
      const ms = performance.now() - t;
      if (positions.join() !== inline.join()) throw new Error(`the scan on ${threads} worker thread(s) differs from the calling thread's`);
      if (qi >= 5) record(`${current.name}: first pass on ${threads} worker thread${threads > 1 ? 's' : ''} (wall, round trip included)`, ms);
    }
    for (const s of settings) {
      t = performance.now();
      const positions = set.scan(rotatedQuery(q), null, s.rerank, { prefilter: s.prefilter });
      const scanMs = performance.now() - t;
      const rowids = positions.map((p) => set.rowids[p]!).sort((a, b) => a - b);
      t = performance.now();
      for (const r of rowids) read.get(r);
      const readMs = performance.now() - t;
      if (qi < 5) continue; // warm-up
      record(`${s.name}: first pass`, scanMs);
      record(`${s.name}: read ${s.rerank.toLocaleString('en')} vectors`, readMs);
      record(`${s.name}: both`, scanMs + readMs);
    }
  }
  for (const { scanner } of scanners) await scanner.close();
  db.close();
  const lines = ['| stage | p50 ms | p95 ms | min ms |', '| --- | ---: | ---: | ---: |'];
  for (const [label, xs] of times) {
    const s = summarize(xs);
    lines.push(`| ${label} | ${s.p50.toFixed(1)} | ${s.p95.toFixed(1)} | ${Math.min(...xs).toFixed(1)} |`);
  }
  console.log(lines.join('\n'));
}

void main();
