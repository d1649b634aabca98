/**
 * Hybrid recall on a kept 1M SQLite store with the code index's first pass on a worker thread (code-scanner.ts,
 * the default from 65,536 codes) against the same pass on the calling thread (`workerMinCodes: Infinity`, as before
 * the worker), in one process over one store file, interleaved query by query with the order alternated, so the
 * machine's load (shared, noisy) hits both alike. Wall time and process CPU (every thread) per recall; the hits of
 * the two must be the same events. Writes bench/results/hybrid-worker-ab.md unless --no-write.
 *
 *   node --import tsx bench/hybrid-worker-ab.ts --db /tmp/h5/keep/vectors-1000000.db [--queries 40] [--rounds 2]
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { openEngram, type Engram } from '../src/engine.js';
import { createBuiltinEmbedder } from '../src/providers/builtin-embedder.js';
import { recallQueries } from './lib/agent-trace.js';
import { machineLine, round, summarize } from './lib/stats.js';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { db: { type: 'string' }, queries: { type: 'string', default: '40' }, rounds: { type: 'string', default: '2' }, warmup: { type: 'string', default: '5' }, 'no-write': { type: 'boolean', default: false } },
  });
  if (values.db === undefined) throw new Error('--db FILE: a kept SQLite store with a code index (npm run bench -- scale-vectors --keep-store DIR)');
  const loadBefore = loadavg()[0]!;
  const embedder = await createBuiltinEmbedder();
  const open = (workerMinCodes?: number): Promise<Engram> =>
    openEngram({ db: values.db!, embedder, indexing: { background: false }, ...(workerMinCodes !== undefined ? { sqlite: { vectorIndex: { workerMinCodes } } } : {}) });
  const arms: Array<{ name: string; mem: Engram; wall: number[]; cpu: number[] }> = [
    { name: 'first pass on the calling thread (`workerMinCodes: Infinity`)', mem: await open(Infinity), wall: [], cpu: [] },
    { name: 'first pass on the worker thread (default)', mem: await open(), wall: [], cpu: [] },
  ];
  let differing = 0;
  try {
    for (const a of arms) console.error(a.name, await a.mem.maintainVectorIndex());
    const queries = recallQueries(Number(values.queries));
    const warmup = recallQueries(Number(values.warmup), 99);
    for (const q of warmup) for (const a of arms) await a.mem.recall(q, { retriever: 'hybrid', logRecall: false });
    for (let round_ = 0; round_ < Number(values.rounds); round_++) {
      for (const [i, q] of queries.entries()) {
        const order = (i + round_) % 2 === 0 ? arms : [...arms].reverse();
        const ids: string[][] = [];
        for (const a of order) {
          const c0 = process.cpuUsage();
          const t0 = performance.now();
          const result = await a.mem.recall(q, { retriever: 'hybrid', logRecall: false });
          a.wall.push(performance.now() - t0);
          const c = process.cpuUsage(c0);
          a.cpu.push((c.user + c.system) / 1000);
          ids.push(result.hits.map((h) => h.eventId));
        }
        if (JSON.stringify(ids[0]) !== JSON.stringify(ids[1])) differing++;
      }
    }
  } finally {
    for (const a of arms) await a.mem.close();
  }
  const loadAfter = loadavg()[0]!;
  const n = arms[0]!.wall.length;
  const rows = arms.map((a) => {
    const w = summarize(a.wall);
    const c = summarize(a.cpu);
    return `| ${a.name} | ${n} | ${round(w.p50, 1)} | ${round(w.p95, 1)} | ${round(w.mean, 1)} | ${round(c.p50, 1)} | ${round(c.p95, 1)} |`;
  });
  const command = `node --import tsx bench/hybrid-worker-ab.ts --db ${values.db} --queries ${values.queries} --rounds ${values.rounds}`;
  const md = `# Hybrid recall at 1M on SQLite: the code scan on a worker thread or on the calling thread

Written by \`${command}\`
on ${new Date().toISOString()} (${machineLine()}, 2 cores shared with other work: load average ${round(loadBefore, 2)} before, ${round(loadAfter, 2)} after).
One process, one store file opened twice (two engines), the same ${values.queries} agent-style queries (bench/lib/agent-trace.ts
recallQueries) ${values.rounds} times each, the two engines alternating which goes first, after ${values.warmup} warm-up queries each.
\`recall(q, { retriever: 'hybrid' })\` with default options. CPU: the process's user + system time over the recall,
every thread (the worker's included), so it shows what the worker costs beside what it saves in wall time.

| first pass | recalls | wall p50 ms | wall p95 ms | wall mean ms | CPU p50 ms | CPU p95 ms |
| --- | ---: | ---: | ---: | ---: | ---: | ---: |
${rows.join('\n')}

Recalls whose items differed between the two: ${differing} of ${n} (the worker's scan answers what the calling
thread's does: test/integration/code-scanner.test.ts, test/contract/vector-codes.test.ts).
`;
  console.log(md);
  if (!values['no-write']) writeFileSync(new URL('./results/hybrid-worker-ab.md', import.meta.url), md);
}

void main();
