/**
 * What building a large PostgreSQL store with vectors takes now (issue #14: the hybrid target at 1M on PostgreSQL
 * needs a 1M-event store with vectors, and none has been built): the agent trace appended in batches of 500 per
 * session (as bench/scale-vectors.ts builds its store) to a new schema, in windows of `--window` events; after each
 * window the identifier index's catch-up (`mem.maintainTextIndex()`, as `engram serve`'s worker runs it), timed
 * apart. The engine has the built-in embedder from the start (appends queue their events for embedding, as in a real
 * build); at the end the first {@link EMBED_SAMPLE} queued events are embedded to time embedding at that size. The
 * rates per window show how appends and the catch-up change as the store grows. The schema is dropped at the end.
 *
 *   npx tsx bench/pg-build-rate.ts [--events 300000] [--window 50000]
 *
 * Writes bench/results/pg-build-rate.{md,json}.
 */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { openEngram } from '../src/engine.js';
import { createBuiltinEmbedder } from '../src/providers/builtin-embedder.js';
import { agentTrace, appendTraceInBatches, type TraceEvent } from './lib/agent-trace.js';
import { benchPgUrl } from './lib/bench-stores.js';
import { machineLine, round } from './lib/stats.js';

const BATCH = 500;
const SEED = 42;
/** Events embedded to time embedding at the final size. */
const EMBED_SAMPLE = 20_000;

interface WindowRow {
  from: number;
  to: number;
  appendsPerSec: number;
  catchUpPerSec: number;
  loadAverage: number;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { events: { type: 'string', default: '300000' }, window: { type: 'string', default: '50000' } } });
  const events = Number(values.events);
  const windowSize = Number(values.window);
  const url = benchPgUrl();
  const schema = `engram_build_rate_${process.pid}`;
  const location = { pg: `${url}${url.includes('?') ? '&' : '?'}schema=${schema}` };
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const rows: WindowRow[] = [];
  let embedPerSec = 0;
  let embedded = 0;
  const started = new Date().toISOString();
  try {
    // The trace is generated once for the whole size (sessions depend on it), then appended window by window.
    const trace: TraceEvent[] = [...agentTrace(events, { seed: SEED })];
    // With the embedder from the start, as scale-vectors builds: each append also queues its events for embedding.
    const mem = await openEngram({ ...location, embedder: await createBuiltinEmbedder(), indexing: { background: false, batchSize: 256 } });
    for (let from = 0; from < events; from += windowSize) {
      const to = Math.min(events, from + windowSize);
      const t0 = performance.now();
      await appendTraceInBatches((s, list) => mem.append(s, list), trace.slice(from, to), BATCH);
      const appendS = (performance.now() - t0) / 1000;
      const t1 = performance.now();
      await mem.maintainTextIndex();
      const catchUpS = (performance.now() - t1) / 1000;
      rows.push({ from, to, appendsPerSec: round((to - from) / appendS, 0), catchUpPerSec: round((to - from) / catchUpS, 0), loadAverage: round(loadavg()[0]!, 2) });
      console.error(JSON.stringify(rows.at(-1)));
    }
    // Embedding at that size: the queue's first EMBED_SAMPLE events (the rest are left; the schema is dropped).
    const t2 = performance.now();
    while (embedded < Math.min(EMBED_SAMPLE, events)) {
      const r = await mem.indexer!.runOnce();
      if (r.embedded + r.skipped + r.failed === 0) break;
      embedded += r.embedded;
    }
    embedPerSec = round(embedded / ((performance.now() - t2) / 1000), 0);
    console.error(`embedded ${embedded} at ${embedPerSec}/s`);
    await mem.close();
  } finally {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  }
  const command = `npx tsx bench/pg-build-rate.ts --events ${events} --window ${windowSize}`;
  const last = rows.at(-1)!;
  const md = `# Building a PostgreSQL store: rates as it grows (issue #14)

Last written by \`${command}\` (started ${started}, ${machineLine()}).
The agent trace (seed ${SEED}) appended in batches of ${BATCH} per session to a new schema, ${windowSize.toLocaleString('en')} events
per window, by an engine with the built-in embedder (appends queue embedding jobs); after each window the identifier
index's catch-up (\`maintainTextIndex()\`); then the first ${embedded.toLocaleString('en')} queued events embedded. No phrase-pair index (opt-in). Events per second.

| events | appends/s | catch-up/s | load average (1 min) |
| --- | ---: | ---: | ---: |
${rows.map((r) => `| ${r.from.toLocaleString('en')}-${r.to.toLocaleString('en')} | ${r.appendsPerSec} | ${r.catchUpPerSec} | ${r.loadAverage} |`).join('\n')}

Embedding at ${last.to.toLocaleString('en')} events (${embedded.toLocaleString('en')} events): ${embedPerSec} vectors/s.
`;
  writeFileSync('bench/results/pg-build-rate.md', md);
  writeFileSync('bench/results/pg-build-rate.json', `${JSON.stringify({ started, command, machine: machineLine(), events, windowSize, rows, embedPerSec }, null, 2)}\n`);
  console.log(md);
}

await main();
