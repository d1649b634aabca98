/**
 * Identifier search while events wait past the identifier index's watermark (issue #14; docs/recall.md, "Full-text
 * at scale"): a copy of a caught-up scale store (default the 1M-event SQLite store of `npm run bench -- scale`), a
 * few thousand events appended to it without the catch-up (as `engram serve` holds them before its worker's next
 * round), then identifier queries timed three ways: on the connection that appended them (it holds their index text:
 * src/store/sqlite/sqlite-appended-tail.ts), on another connection (the tail matched by the FTS5 phrase, as before),
 * and after the catch-up (no tail). The first two must find the same events. Writes
 * bench/results/identifier-tail.{md,json}.
 *
 *   npm run bench -- identifier-tail [--source /tmp/engram-scale/ours-1000000.db] [--keep-store DIR] [--waiting 3000] [--queries 25]
 */
import { copyFileSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEngram, type Engram } from '../src/engine.js';
import { parseQuery } from '../src/memory/query-terms.js';
import type { StorageBackend } from '../src/store/backend.js';
import { openStore } from '../src/store/open-store.js';
import { agentTrace, appendTraceInBatches } from './lib/agent-trace.js';
import { machineLine, round, summarize } from './lib/stats.js';

export interface IdentifierTailArgs {
  source: string;
  dir: string;
  waiting: number;
  queries: number;
}

/** The search's result count, as scale's full-text part asks (bench/scale.ts SEARCH_LIMIT). */
const LIMIT = 40;
const BATCH = 500;
/** Not the scale store's seed (42): other events than those stored, with the same kinds of identifiers. */
const TAIL_SEED = 7;

interface Timing {
  /** The first query (on the held tail it makes the trigram rows of the waiting events). */
  first: number;
  p50: number;
  p95: number;
  hits: number;
}

async function timeQueries(backend: StorageBackend, queries: readonly string[]): Promise<{ timing: Timing; results: string[][] }> {
  const t0 = performance.now();
  for (const q of queries.slice(0, 1)) await backend.searchText({ terms: parseQuery(q).terms, limit: LIMIT });
  const first = performance.now() - t0;
  for (const q of queries.slice(1, 3)) await backend.searchText({ terms: parseQuery(q).terms, limit: LIMIT });
  const ms: number[] = [];
  const results: string[][] = [];
  for (const q of queries) {
    const t = performance.now();
    const hits = await backend.searchText({ terms: parseQuery(q).terms, limit: LIMIT });
    ms.push(performance.now() - t);
    results.push(hits.map((h) => h.eventId).sort());
  }
  const s = summarize(ms);
  return { timing: { first: round(first), p50: round(s.p50), p95: round(s.p95), hits: results.reduce((n, r) => n + r.length, 0) }, results };
}

export async function runIdentifierTail(args: IdentifierTailArgs): Promise<void> {
  if (!existsSync(args.source)) throw new Error(`no store at ${args.source}: build it with npm run bench -- scale --events 1000000 --parts fts`);
  mkdirSync(args.dir, { recursive: true });
  const path = join(args.dir, 'identifier-tail.db');
  for (const f of [path, `${path}-wal`, `${path}-shm`]) rmSync(f, { force: true });
  console.error(`copying ${args.source} to ${path}`);
  copyFileSync(args.source, path);

  const a = await openStore({ db: path });
  const mem: Engram = await openEngram({ backend: a });
  const before = await a.identifierIndexStatus();
  // A copy of a store not caught up (scale's store is, after its fts part) is caught up first: the tail is only ours.
  if (before.backlog > 0) await mem.maintainTextIndex();
  const stored = Number((await a.identifierIndexStatus()).cursor);

  const trace = [...agentTrace(args.waiting, { seed: TAIL_SEED })];
  const queries: string[] = [];
  for (const t of trace) {
    for (const w of t.event.content.split(/\s+/)) {
      const m = /^(src\/\w+\/\w+\.ts:\d+)/.exec(w);
      if (m && !queries.includes(m[1]!) && queries.length < args.queries) queries.push(m[1]!);
    }
  }
  const appendStart = performance.now();
  await appendTraceInBatches((s, list) => mem.append(s, list), trace, BATCH);
  const appendSeconds = (performance.now() - appendStart) / 1000;
  const waiting = (await a.identifierIndexStatus()).backlog;
  const loadBefore = loadavg().map((l) => round(l, 2));

  const held = await timeQueries(a, queries);
  const other = await openStore({ db: path });
  const phrase = await timeQueries(other, queries);
  await other.close();
  const same = held.results.every((r, i) => JSON.stringify(r) === JSON.stringify(phrase.results[i]));

  const catchUpStart = performance.now();
  const cpuStart = process.cpuUsage();
  await mem.maintainTextIndex();
  const cpu = process.cpuUsage(cpuStart);
  const catchUpSeconds = (performance.now() - catchUpStart) / 1000;
  const caughtUp = await timeQueries(a, queries);
  const sameAfter = caughtUp.results.every((r, i) => JSON.stringify(r) === JSON.stringify(held.results[i]));
  const loadAfter = loadavg().map((l) => round(l, 2));
  await mem.close();
  rmSync(path, { force: true });
  for (const f of [`${path}-wal`, `${path}-shm`]) rmSync(f, { force: true });

  const run = {
    when: new Date().toISOString(),
    machine: machineLine(),
    command: `npm run bench -- identifier-tail --source ${args.source} --waiting ${args.waiting} --queries ${args.queries}`,
    storedEvents: stored,
    waiting,
    appendSeconds: round(appendSeconds, 2),
    queries: queries.length,
    held: held.timing,
    phrase: phrase.timing,
    caughtUp: caughtUp.timing,
    sameEvents: same,
    sameEventsAfterCatchUp: sameAfter,
    catchUpSeconds: round(catchUpSeconds, 2),
    catchUpCpuSeconds: round((cpu.user + cpu.system) / 1e6, 2),
    loadAverage: { before: loadBefore, after: loadAfter },
    examples: queries.slice(0, 3),
  };
  const dir = new URL('./results/', import.meta.url);
  writeFileSync(new URL('identifier-tail.json', dir), `${JSON.stringify(run, null, 2)}\n`);
  const md = `# Identifier search while events wait for the identifier index (issue #14)

Last written by \`${run.command}\` on ${run.when} (${run.machine}).

A copy of a caught-up store of ${run.storedEvents.toLocaleString('en')} events; ${run.waiting.toLocaleString('en')} agent-trace
events (seed ${TAIL_SEED}) appended to it in batches of ${BATCH} per session (${run.appendSeconds} s), not caught up: they wait past the
identifier index's watermark, as a server's appends do until its worker's next round (docs/recall.md, "Full-text at
scale"). ${run.queries} identifiers \`src/<module>/<file>.ts:<line>\` taken from those events (e.g. ${run.examples.map((q) => `\`${q}\``).join(', ')}), each also
held by stored events; the backend's \`searchText\` (limit ${LIMIT}, the planner's default path), after 3 warm-up queries; ms.

| tail searched by | first query ms | p50 ms | p95 ms | events found (all queries) |
| --- | ---: | ---: | ---: | ---: |
| the appending connection: the trigram rows of the index text it holds (sqlite-appended-tail.ts; the first query makes them) | ${run.held.first} | ${run.held.p50} | ${run.held.p95} | ${run.held.hits} |
| another connection: the FTS5 phrase over the tail (\`rowid >\` watermark) | ${run.phrase.first} | ${run.phrase.p50} | ${run.phrase.p95} | ${run.phrase.hits} |
| no tail: after the catch-up | ${run.caughtUp.first} | ${run.caughtUp.p50} | ${run.caughtUp.p95} | ${run.caughtUp.hits} |

Same events for every query on both connections: ${run.sameEvents ? 'yes' : '**no**'}; and after the catch-up: ${run.sameEventsAfterCatchUp ? 'yes' : '**no**'}.
The catch-up of the ${run.waiting.toLocaleString('en')} waiting events (from the index text the connection held): ${run.catchUpSeconds} s wall, ${run.catchUpCpuSeconds} s CPU.

Load average (1, 5, 15 min) before the queries: ${run.loadAverage.before.join(', ')}; after: ${run.loadAverage.after.join(', ')}.
`;
  writeFileSync(new URL('identifier-tail.md', dir), md);
  console.log(md);
}

/** Defaults: the scale bench's 1M SQLite store, the copy under the system's temporary directory. */
export const IDENTIFIER_TAIL_DEFAULTS = { source: join(tmpdir(), 'engram-scale', 'ours-1000000.db'), dir: join(tmpdir(), 'engram-identifier-tail'), waiting: 3_000, queries: 25 };
