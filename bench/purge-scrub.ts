/**
 * What a scrubbing purge costs on a store of `--events` events (issue #31, item 1): the purge of one event and of one
 * session on a copy of the same SQLite store, each timed whole and by part (the transaction, with its FTS5 rewrite;
 * the scrub: VACUUM and the truncating checkpoint), then the parts alone on a fresh copy (FTS5 `optimize` of each
 * index, VACUUM, checkpoint), with the file's size before and after. Writes bench/results/purge-scrub.{md,json}.
 *
 *   npm run bench -- purge-scrub [--events 100000] [--keep-store DIR]
 */
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import { openEngram } from '../src/engine.js';
import type { PurgeSelector } from '../src/memory/purge.js';
import * as sqliteVec from 'sqlite-vec';
import { agentTrace, appendTraceInBatches } from './lib/agent-trace.js';
import { machineLine, round } from './lib/stats.js';

const SEED = 42;
const BATCH = 500;

export interface PurgeScrubArgs {
  events: number;
  /** Keep (and reuse) the built store here. */
  keepStore?: string;
}

interface PurgeRun {
  selector: string;
  events: number;
  totalMs: number;
  /** The scrub after the commit: VACUUM and the truncating checkpoint. */
  scrubMs: number;
  /** Selecting, the transaction (with its FTS5 rewrite) and the cold-folder sweep. */
  purgeMs: number;
  mbBefore: number;
  mbAfter: number;
}

interface Part {
  part: string;
  ms: number;
}

export async function runPurgeScrubBench(args: PurgeScrubArgs): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'engram-purge-scrub-'));
  const loadBefore = loadavg();
  try {
    const storeDir = args.keepStore ?? work;
    mkdirSync(storeDir, { recursive: true });
    const source = join(storeDir, `purge-scrub-${args.events}.db`);
    const buildSeconds = existsSync(source) ? undefined : await build(source, args.events);
    const runs: PurgeRun[] = [];
    for (const [label, selectorOf] of [
      ['one event (--event)', (ids: { event: string; session: string }) => ({ eventIds: [ids.event] })],
      ['one session (--session)', (ids: { event: string; session: string }) => ({ sessionId: ids.session })],
    ] as const) {
      runs.push(await timePurge(source, join(work, 'copy.db'), label, selectorOf));
    }
    const parts = timeParts(source, join(work, 'parts.db'));
    const report = { generatedAt: new Date().toISOString(), machine: machineLine(), load: { before: loadBefore, after: loadavg() }, events: args.events, buildSeconds, runs, parts };
    mkdirSync('bench/results', { recursive: true });
    writeFileSync('bench/results/purge-scrub.json', JSON.stringify(report, null, 2) + '\n');
    writeFileSync('bench/results/purge-scrub.md', markdown(report));
    console.log(markdown(report));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

async function build(path: string, events: number): Promise<number> {
  const start = performance.now();
  const mem = await openEngram({ db: path });
  await appendTraceInBatches((s, list) => mem.append(s, list), agentTrace(events, { seed: SEED }), BATCH);
  await mem.maintainTextIndex();
  await mem.close();
  return round((performance.now() - start) / 1000, 1);
}

async function timePurge(source: string, copy: string, label: string, selectorOf: (ids: { event: string; session: string }) => PurgeSelector): Promise<PurgeRun> {
  for (const f of [copy, `${copy}-wal`, `${copy}-shm`]) rmSync(f, { force: true });
  copyFileSync(source, copy);
  const mbBefore = statSync(copy).size / 2 ** 20;
  const mem = await openEngram({ db: copy });
  try {
    // A session in the middle of the store, and its first event.
    const sessions = await mem.listSessions({ limit: 1000 });
    const session = sessions[Math.floor(sessions.length / 2)]!.id;
    const [event] = await mem.listEvents({ sessionId: session, limit: 1 });
    const start = performance.now();
    const report = await mem.purge(selectorOf({ event: event!.id, session }), { actor: 'os:bench' });
    const totalMs = performance.now() - start;
    const scrubMs = report.scrub?.ms ?? 0;
    await mem.close();
    return {
      selector: label,
      events: report.counts.events,
      totalMs: round(totalMs, 0),
      scrubMs,
      purgeMs: round(totalMs - scrubMs, 0),
      mbBefore: round(mbBefore, 1),
      mbAfter: round(statSync(copy).size / 2 ** 20, 1),
    };
  } catch (err) {
    await mem.close();
    throw err;
  }
}

/** The scrub's parts alone, on a fresh copy, in the order a purge runs them. */
function timeParts(source: string, copy: string): Part[] {
  for (const f of [copy, `${copy}-wal`, `${copy}-shm`]) rmSync(f, { force: true });
  copyFileSync(source, copy);
  const db = new Database(copy);
  sqliteVec.load(db);
  db.pragma('journal_mode = WAL');
  db.pragma('secure_delete = ON');
  const parts: Part[] = [];
  const time = (part: string, fn: () => unknown): void => {
    const start = performance.now();
    fn();
    parts.push({ part, ms: round(performance.now() - start, 0) });
  };
  for (const table of ['events_fts', 'event_grams', 'summaries_fts']) time(`FTS5 optimize ${table}`, () => db.prepare(`INSERT INTO ${table} (${table}) VALUES ('optimize')`).run());
  time('VACUUM', () => db.exec('VACUUM'));
  time('wal_checkpoint(TRUNCATE)', () => db.pragma('wal_checkpoint(TRUNCATE)'));
  db.close();
  return parts;
}

function markdown(r: { generatedAt: string; machine: string; load: { before: number[]; after: number[] }; events: number; buildSeconds?: number; runs: PurgeRun[]; parts: Part[] }): string {
  const fmt = (l: number[]) => l.map((x) => x.toFixed(2)).join(', ');
  return `# A purge that scrubs: its cost

Generated by \`npm run bench -- purge-scrub --events ${r.events}\` on ${r.generatedAt} (${r.machine}; load average ${fmt(r.load.before)} when it
started and ${fmt(r.load.after)} when it ended). Code: \`bench/purge-scrub.ts\`.

**Setup.** A SQLite store of ${r.events.toLocaleString('en-US')} events of the agent trace (seed ${SEED}), identifier index caught up${
    r.buildSeconds !== undefined ? ` (built in ${r.buildSeconds} s)` : ''
  }. Each purge runs on a fresh copy of it. A purge (src/store/sqlite/sqlite-purge.ts) commits its transaction with
\`secure_delete\` on and its FTS5 indexes rewritten (\`optimize\`: a contentless FTS5 table keeps a deleted row's terms in its
blocks otherwise), then scrubs the file: VACUUM and a truncating WAL checkpoint. The cost is the store's size, not the
purge's: a purge of one event rewrites as much as a purge of a session.

| purge | events purged | total ms | of which scrub (VACUUM, checkpoint) ms | selection + transaction ms | file MB before | after |
| --- | ---: | ---: | ---: | ---: | ---: | ---: |
${r.runs.map((x) => `| ${x.selector} | ${x.events} | ${x.totalMs} | ${x.scrubMs} | ${x.purgeMs} | ${x.mbBefore} | ${x.mbAfter} |`).join('\n')}

The parts alone, on another fresh copy, in the order a purge runs them:

| part | ms |
| --- | ---: |
${r.parts.map((p) => `| ${p.part} | ${p.ms} |`).join('\n')}
`;
}
