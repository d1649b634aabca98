import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseQuery } from '../../src/memory/query-terms.js';
import { compileFts5Match } from '../../src/store/sqlite/fts5-query.js';
import { agentTrace, recallQueries, type TraceEvent } from './agent-trace.js';
import { Prng } from './prng.js';
import type { HttpFloor } from './http-floor.js';
import { openRawFts5 } from './raw-fts5.js';
import { round } from './stats.js';

/** What SQLite + FTS5 alone cost for http-load's requests: the floor under issue #32's per-core targets. */
export interface SqliteFloor {
  events: number;
  agents: number;
  batch: number;
  /** CPU ms per append of `batch` events, one transaction each, as the store grew from empty to `events`. */
  appendMs: number;
  /**
   * The same appends into a raw store that also writes the identifier index (issue #32's second form): in each
   * append's transaction, and as Engram's server does, after the appends in a transaction per page of
   * {@link IDENTIFIER_PAGE_EVENTS} (the page's CPU shared out over its appends).
   */
  appendBothMs: number;
  appendBothPagedMs: number;
  /** CPU ms per bm25 top-40 query over the full store: the ordinary queries (terms OR-ed), the needles (a phrase). */
  ordinaryQueryMs: number;
  needleQueryMs: number;
  /** The two in http-load's recall mix (half each). */
  recallMixMs: number;
  queries: number;
  /** What HTTP and JSON alone cost (http-floor.ts), when measured. */
  http?: HttpFloor;
}

/** Events per identifier-index transaction in `engram serve` (identifier-catch-up-worker.ts WORKER_PAGE_EVENTS). */
export const IDENTIFIER_PAGE_EVENTS = 200;

/** Candidates recall asks full-text search for at k 5 (recall/candidates.ts: max(40, 4k)). */
const CANDIDATES = 40;

/**
 * The floor (issue #32): raw SQLite + FTS5 (bench/lib/raw-fts5.ts: a plain table and the same FTS5 index, nothing Engram
 * adds) on the events and queries http-load sends, in this process: `agents` sessions of agent-trace events (seeds as
 * http-load's agents), appended `batch` at a time in one transaction each until the store holds `events`; then the
 * ordinary queries of http-load's recall loop as one bm25 top-40 statement each (their terms OR-ed, as scale.md's raw
 * column), and needle phrases of the same shape as its needles. CPU time of this thread (process.cpuUsage), so the
 * figures compare with the server's CPU per request.
 */
export function measureSqliteFloor(options: { events: number; agents: number; batch: number; queries?: number }): SqliteFloor {
  const { events, agents, batch } = options;
  const dir = mkdtempSync(join(tmpdir(), 'engram-floor-'));
  try {
    const raw = openRawFts5(join(dir, 'raw.db'));
    const traces = Array.from({ length: agents }, (_, a) => agentTrace(1_000_000, { seed: 1 + a, sessions: 1 }));
    const rng = new Prng(1000);
    const needles: string[] = [];
    const batches: TraceEvent[][] = [];
    for (let n = 0; n < events; ) {
      for (let a = 0; a < agents && n < events; a++) {
        const size = Math.min(batch, events - n);
        const needle = `needle-${a}-${batches.length}-${rng.hex(8)}`;
        needles.push(needle);
        batches.push(
          Array.from({ length: size }, (_, j) => {
            const t = traces[a]!.next().value!;
            return { ...t, sessionId: `load-${a}`, ...(j === 0 ? { event: { ...t.event, content: `${t.event.content}\n${needle}` } } : {}) };
          }),
        );
        n += size;
      }
    }
    const appendCpu = cpuMsOf(() => {
      for (const b of batches) raw.insertBatch(b);
    });
    const both = openRawFts5(join(dir, 'raw-both.db'), { identifierIndex: true });
    const appendBothCpu = cpuMsOf(() => {
      for (const b of batches) both.insertBatch(b);
    });
    both.db.close();
    const paged = openRawFts5(join(dir, 'raw-paged.db'), { identifierIndex: { pageEvents: IDENTIFIER_PAGE_EVENTS } });
    const appendPagedCpu = cpuMsOf(() => {
      for (const b of batches) paged.insertBatch(b);
      paged.flush();
    });
    paged.db.close();
    const rank = raw.db.prepare(`SELECT rowid, bm25(events_fts) AS score FROM events_fts WHERE events_fts MATCH ? ORDER BY score LIMIT ${CANDIDATES}`);
    const count = options.queries ?? 1_000;
    const ordinary = recallQueries(count, 100).flatMap((q) => compileFts5Match(parseQuery(q).terms) ?? []);
    const phrases = Array.from({ length: count }, () => compileFts5Match(parseQuery(rng.pick(needles)).terms)!);
    // Warm the page cache and the statement, as the server is warm when its window opens.
    for (const q of [...ordinary.slice(0, 50), ...phrases.slice(0, 50)]) rank.all(q);
    const ordinaryCpu = cpuMsOf(() => {
      for (const q of ordinary) rank.all(q);
    });
    const needleCpu = cpuMsOf(() => {
      for (const q of phrases) rank.all(q);
    });
    raw.db.close();
    const ordinaryQueryMs = ordinaryCpu / ordinary.length;
    const needleQueryMs = needleCpu / phrases.length;
    return {
      events,
      agents,
      batch,
      appendMs: round(appendCpu / batches.length, 3),
      appendBothMs: round(appendBothCpu / batches.length, 3),
      appendBothPagedMs: round(appendPagedCpu / batches.length, 3),
      ordinaryQueryMs: round(ordinaryQueryMs, 4),
      needleQueryMs: round(needleQueryMs, 4),
      recallMixMs: round((ordinaryQueryMs + needleQueryMs) / 2, 3),
      queries: ordinary.length + phrases.length,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function cpuMsOf(run: () => void): number {
  const start = process.cpuUsage();
  run();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

/** The floor's section of the http-load report: the per-core targets beside what SQLite + FTS5, and HTTP, alone cost. */
export function renderSqliteFloor(floor: SqliteFloor, targets: { appendMs: number; recallMs: number }): string {
  const fmt = (n: number) => n.toLocaleString('en');
  const http = floor.http;
  const plain = http?.frameworks.find((f) => f.framework === 'node-http');
  const httpSection = http
    ? `
**HTTP alone** (bench/lib/http-floor.ts): a server that only reads each request's body, parses its JSON and answers
(an id per event for an append; a JSON document of ${fmt(http.answerBytes)} bytes for a recall, about Engram's answer at k 5
and 1,000 tokens), in its own process, under ${http.agents} closed loops of the runs' requests over keep-alive sockets:
${http.seconds} s of appends, then ${http.seconds} s of recalls. Server CPU from /proc per request, as the runs' figures.

| framework | append (${http.batch} events), CPU ms | recall, CPU ms |
| --- | ---: | ---: |
${http.frameworks.map((f) => `| ${f.framework === 'hono' ? 'Hono on @hono/node-server (what `engram serve` runs)' : 'node:http'} | ${f.appendMs} | ${f.recallMs} |`).join('\n')}
`
    : '';
  const under = plain
    ? (() => {
        const row = (what: string, storeMs: number, httpMs: number, target: number) => {
          const sum = round(storeMs + httpMs, 3);
          const left = round(target - sum, 3);
          return `| ${what} | ${storeMs} + ${httpMs} = ${sum} | <= ${target} | ${left}${left < 0 ? ' (**over the target**)' : ''} |`;
        };
        return `
**Under the targets.** The two floors added: what the target leaves for everything else of a request when SQLite and
HTTP cost no more than they cost alone (HTTP: node:http). A negative margin means that no server keeping those
indexes and answering over HTTP meets the target at the machine's speed during this run (the floor moves between runs
as the runs' own figures do: measure both in one run, as here).

| request | floor: SQLite + HTTP, CPU ms | issue #32's target, ms (SQLite) | left for everything else, ms |
| --- | ---: | ---: | ---: |
${row(`append (${floor.batch} events): FTS5 alone`, floor.appendMs, plain.appendMs, targets.appendMs)}
${row(`append (${floor.batch} events): both indexes, the identifier index in pages of ${IDENTIFIER_PAGE_EVENTS} (as \`engram serve\` writes it)`, floor.appendBothPagedMs, plain.appendMs, targets.appendMs)}
${row(`append (${floor.batch} events): both indexes, in the append's transaction`, floor.appendBothMs, plain.appendMs, targets.appendMs)}
${row("recall: the runs' mix", floor.recallMixMs, plain.recallMs, targets.recallMs)}
`;
      })()
    : '';
  return `## The floor: SQLite + FTS5, and HTTP, alone on the same requests

Raw SQLite + FTS5 (bench/lib/raw-fts5.ts: a plain table and the same FTS5 index, the same pragmas; no ids, keys,
redaction, turn context, access checks or HTTP), measured in the load generator's process after the
runs, CPU time of its thread: ${fmt(floor.events)} agent-trace events in ${floor.agents} sessions (the seeds of the runs' agents) appended
${floor.batch} at a time in one transaction each, then ${fmt(floor.queries)} bm25 top-${CANDIDATES} queries over them (recall's candidate count at k 5):
the ordinary queries of the recall loop with their terms OR-ed, and needle phrases of the runs' shape. The same
appends again into a raw store that also keeps the identifier index (its FTS5 table of trigram rows, made by its own
\`gramText\`): written in each append's transaction, and written as \`engram serve\` writes it, a transaction per page of
${IDENTIFIER_PAGE_EVENTS} events after the appends (the pages' CPU shared out over the appends).

| request | SQLite alone, CPU ms | issue #32's target, ms (SQLite) | left for everything else, ms |
| --- | ---: | ---: | ---: |
| append (${floor.batch} events, one transaction): FTS5 alone | ${floor.appendMs} | <= ${targets.appendMs} | ${round(targets.appendMs - floor.appendMs, 3)} |
| append: both indexes, the identifier index in pages of ${IDENTIFIER_PAGE_EVENTS} | ${floor.appendBothPagedMs} | <= ${targets.appendMs} | ${round(targets.appendMs - floor.appendBothPagedMs, 3)} |
| append: both indexes, in the append's transaction | ${floor.appendBothMs} | <= ${targets.appendMs} | ${round(targets.appendMs - floor.appendBothMs, 3)} |
| recall: an ordinary query's full-text search | ${floor.ordinaryQueryMs} | | |
| recall: a needle's full-text search | ${floor.needleQueryMs} | | |
| recall: the runs' mix (half each) | ${floor.recallMixMs} | <= ${targets.recallMs} | ${round(targets.recallMs - floor.recallMixMs, 3)} |

The last column is what the target leaves for the rest of a request: HTTP parsing and the response write, token
authentication, validation, and Engram's own work (redaction, turn context, keys; for a recall the visibility
check, excerpts, token counting, MMR, the log). The server's search is cheaper than this raw one (the planner, rare
terms first, weightless words out: docs/recall.md), the append costlier (it maintains more).
${httpSection}${under}`;
}
