/**
 * Where batched ingest's CPU goes (issue #14: ingest >= 0.9x raw SQLite + FTS5): the agent trace appended as
 * `npm run bench -- scale --parts ingest` appends it (batches of 500 per session through `mem.append`), then the
 * identifier index's catch-up (`mem.maintainTextIndex()`), then raw SQLite + FTS5 on the same events
 * (bench/lib/raw-fts5.ts), each under V8's sampling profiler (node:inspector, in this process). Every sample is
 * charged to the innermost frame that names a step (SQLite's native work to the JS frame that called it), so the
 * report says per event what each step of ours costs beyond raw's insert and FTS5. The profiler slows everything
 * by a similar factor: read the shares and the per-event differences, not the absolute rate. Before the profile, the
 * rates without the profiler: `--rounds` rounds of ours (appends, then the catch-up) and raw, alternating, each on a
 * new store, wall and CPU time (this process's user + system: less sensitive than wall time to other work on the
 * machine), medians. Writes bench/results/ingest-profile.{md,json}.
 *
 *   npm run bench -- ingest-profile [--events 30000] [--rounds 3]
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEngram } from '../src/engine.js';
import { agentTrace, appendTraceInBatches, type TraceEvent } from './lib/agent-trace.js';
import type { CpuProfile } from './lib/cpu-profile.js';
import { openRawFts5 } from './lib/raw-fts5.js';
import { machineLine, round } from './lib/stats.js';

const SEED = 42;
const BATCH = 500;

type Frame = { fn: string; url: string };

/** Steps, tested from the innermost frame outwards: the first frame some step matches takes the sample. */
const STEPS: Array<[string, (f: Frame) => boolean]> = [
  ['trace generation (the bench itself)', (f) => (f.url.includes('bench/lib/agent-trace.ts') && f.fn !== 'appendTraceInBatches') || f.url.includes('bench/lib/prng.ts')],
  ['redaction (credential scan)', (f) => f.url.includes('src/memory/redaction.ts') || f.url.includes('src/memory/event-redaction.ts')],
  ['validation (schemas, limits)', (f) => f.url.includes('src/model/event.ts') || f.url.includes('src/model/limits.ts') || f.url.includes('/zod/') || f.fn === 'validateEventInput'],
  ['artifacts: preview of large tool results', (f) => f.url.includes('src/memory/preview/')],
  ['artifacts: hashing and compression', (f) => f.url.includes('src/memory/artifact-codec.ts') || f.url.includes('node:zlib') || f.url.includes('node:internal/crypto')],
  ['turn context (earlier turns in the context column)', (f) => f.url.includes('src/memory/turn-context.ts') || f.fn === 'addTurnContext'],
  ['relative dates', (f) => f.url.includes('src/memory/relative-dates.ts')],
  ['private spans', (f) => f.url.includes('src/memory/private-spans.ts')],
  ['input hash (canonical JSON)', (f) => f.fn === 'canonicalHash' || f.fn === 'stableStringify'],
  ['catch-up: identifier trigram rows (keys, tokens)', (f) => f.url.includes('src/store/identifier-grams.ts') || f.fn === 'gramText' || f.fn === 'gramToken'],
  ['catch-up: FTS5 rows of the identifier index (insert, delete)', (f) => f.url.includes('sqlite-identifier-index.ts')],
  ['catch-up: reading the backlog (events, context, artifacts)', (f) => f.url.includes('src/memory/identifier-catch-up.ts') || f.url.includes('src/memory/index-text.ts') || f.fn === 'identifierBacklog' || f.fn === 'listEvents'],
  ['SQLite statements (events, FTS5 body + context column, sessions, artifacts)', (f) => f.url.includes('src/store/sqlite/') || f.url.includes('bench/lib/raw-fts5.ts')],
  ['commit (FTS5 segment flush, B-trees, WAL)', (f) => f.url.includes('better-sqlite3/lib/methods/transaction.js')],
  ['other ingest JS (drafts, ids, records)', (f) => f.url.includes('src/memory/ingest.ts') || f.url.includes('src/store/') || f.url.includes('src/model/')],
  ['garbage collection', (f) => f.fn === '(garbage collector)'],
  ['idle (waiting: I/O, the event loop)', (f) => f.fn === '(idle)'],
];

function steps(profile: CpuProfile): Map<string, number> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes as Array<CpuProfile['nodes'][number] & { children?: number[] }>) for (const c of n.children ?? []) parent.set(c, n.id);
  const stepOf = new Map<number, string>();
  const classify = (leaf: number): string => {
    const known = stepOf.get(leaf);
    if (known !== undefined) return known;
    let step = 'other';
    for (let id: number | undefined = leaf; id !== undefined; id = parent.get(id)) {
      const cf = byId.get(id)!.callFrame;
      const hit = STEPS.find(([, test]) => test({ fn: cf.functionName, url: cf.url }));
      if (hit) {
        step = hit[0];
        break;
      }
    }
    stepOf.set(leaf, step);
    return step;
  };
  const out = new Map<string, number>();
  (profile.samples ?? []).forEach((id, i) => {
    const s = classify(id);
    out.set(s, (out.get(s) ?? 0) + Math.max(0, profile.timeDeltas?.[i] ?? 0) / 1000);
  });
  return out;
}

/** CPU seconds (user + system) of this process since `start`. */
function cpuSince(start: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1e6;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

async function appendOurs(path: string, events: number): Promise<{ wall: number; cpu: number; catchUpWall: number; catchUpCpu: number }> {
  const mem = await openEngram({ db: path });
  let cpu0 = process.cpuUsage();
  let t0 = performance.now();
  await appendTraceInBatches((s, list) => mem.append(s, list), agentTrace(events, { seed: SEED }), BATCH);
  const wall = (performance.now() - t0) / 1000;
  const cpu = cpuSince(cpu0);
  cpu0 = process.cpuUsage();
  t0 = performance.now();
  await mem.maintainTextIndex();
  const catchUpWall = (performance.now() - t0) / 1000;
  const catchUpCpu = cpuSince(cpu0);
  await mem.close();
  return { wall, cpu, catchUpWall, catchUpCpu };
}

function appendRaw(path: string, events: number): { wall: number; cpu: number } {
  const raw = openRawFts5(path);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let batch: TraceEvent[] = [];
  for (const t of agentTrace(events, { seed: SEED })) {
    batch.push(t);
    if (batch.length >= BATCH) {
      raw.insertBatch(batch);
      batch = [];
    }
  }
  if (batch.length > 0) raw.insertBatch(batch);
  const out = { wall: (performance.now() - t0) / 1000, cpu: cpuSince(cpu0) };
  raw.db.close();
  return out;
}

async function profiled(session: Session, fn: () => Promise<void>): Promise<{ profile: CpuProfile; wallMs: number }> {
  await session.post('Profiler.start');
  const start = performance.now();
  await fn();
  const wallMs = performance.now() - start;
  const { profile } = await session.post('Profiler.stop');
  return { profile: profile as unknown as CpuProfile, wallMs };
}

export async function runIngestProfile(args: { events: number; rounds: number }): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'engram-ingest-profile-'));
  const rounds: Array<{ ours: Awaited<ReturnType<typeof appendOurs>>; raw: ReturnType<typeof appendRaw>; load: number }> = [];
  for (let r = 0; r < args.rounds; r++) {
    const ours = await appendOurs(join(dir, `ours-${r}.db`), args.events);
    const raw = appendRaw(join(dir, `raw-${r}.db`), args.events);
    rounds.push({ ours, raw, load: round(loadavg()[0]!, 2) });
    for (const f of [`ours-${r}.db`, `raw-${r}.db`]) for (const x of ['', '-wal', '-shm']) rmSync(join(dir, f + x), { force: true });
    console.error(`round ${r + 1}: ${JSON.stringify(rounds[r])}`);
  }
  const m = (f: (x: (typeof rounds)[number]) => number): number => median(rounds.map(f));
  const rate = {
    oursWall: m((x) => x.ours.wall),
    oursCpu: m((x) => x.ours.cpu),
    catchUpWall: m((x) => x.ours.catchUpWall),
    catchUpCpu: m((x) => x.ours.catchUpCpu),
    rawWall: m((x) => x.raw.wall),
    rawCpu: m((x) => x.raw.cpu),
    ratioWall: m((x) => x.raw.wall / x.ours.wall),
    ratioCaughtUpWall: m((x) => x.raw.wall / (x.ours.wall + x.ours.catchUpWall)),
    ratioCpu: m((x) => x.raw.cpu / x.ours.cpu),
    ratioCaughtUpCpu: m((x) => x.raw.cpu / (x.ours.cpu + x.ours.catchUpCpu)),
  };
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 500 });
  try {
    const loadBefore = loadavg().map((l) => round(l, 2));
    const mem = await openEngram({ db: join(dir, 'ours.db') });
    const appends = await profiled(session, async () => {
      await appendTraceInBatches((s, list) => mem.append(s, list), agentTrace(args.events, { seed: SEED }), BATCH);
    });
    const catchUp = await profiled(session, async () => {
      await mem.maintainTextIndex();
    });
    await mem.close();
    const raw = openRawFts5(join(dir, 'raw.db'));
    const rawRun = await profiled(session, async () => {
      let batch: TraceEvent[] = [];
      for (const t of agentTrace(args.events, { seed: SEED })) {
        batch.push(t);
        if (batch.length >= BATCH) {
          raw.insertBatch(batch);
          batch = [];
        }
      }
      if (batch.length > 0) raw.insertBatch(batch);
    });
    raw.db.close();
    const loadAfter = loadavg().map((l) => round(l, 2));

    const runs = { appends: steps(appends.profile), catchUp: steps(catchUp.profile), raw: steps(rawRun.profile) };
    const names = [...new Set([...STEPS.map(([n]) => n), 'other'])].filter((n) => runs.appends.has(n) || runs.catchUp.has(n) || runs.raw.has(n));
    const perEvent = (ms: number | undefined): number => round(((ms ?? 0) * 1000) / args.events, 1);
    const busy = (m: Map<string, number>): number => [...m].filter(([n]) => !n.startsWith('idle')).reduce((s, [, ms]) => s + ms, 0);
    const rows = names.map((n) => ({ step: n, appendsUs: perEvent(runs.appends.get(n)), catchUpUs: perEvent(runs.catchUp.get(n)), rawUs: perEvent(runs.raw.get(n)) }));
    const totals = { appendsUs: perEvent(busy(runs.appends)), catchUpUs: perEvent(busy(runs.catchUp)), rawUs: perEvent(busy(runs.raw)) };
    const wall = { appendsS: round(appends.wallMs / 1000, 2), catchUpS: round(catchUp.wallMs / 1000, 2), rawS: round(rawRun.wallMs / 1000, 2) };
    const when = new Date().toISOString();
    const command = `npm run bench -- ingest-profile --events ${args.events} --rounds ${args.rounds}`;
    writeFileSync(
      new URL('./results/ingest-profile.json', import.meta.url),
      `${JSON.stringify({ when, machine: machineLine(), command, events: args.events, rounds, rate, rows, totals, wall, loadAverage: { before: loadBefore, after: loadAfter } }, null, 2)}\n`,
    );
    const r2 = (x: number): number => round(x, 2);
    const md = `# Batched ingest: where the CPU goes, ours against raw SQLite + FTS5 (issue #14)

Last written by \`${command}\` on ${when} (${machineLine()}).

## Rates without the profiler

${args.rounds} rounds, each: ours (appends, then the catch-up) and raw on new stores, one after the other; medians of the rounds
(the ratios are medians of each round's ratio). CPU = this process's user + system time: other work on the machine
stretches wall time far more than it does CPU time.

| measure | ours appends | ours catch-up | raw | ratio appends (raw / ours) | ratio until caught up |
| --- | ---: | ---: | ---: | ---: | ---: |
| wall s | ${r2(rate.oursWall)} | ${r2(rate.catchUpWall)} | ${r2(rate.rawWall)} | ${r2(rate.ratioWall)} | ${r2(rate.ratioCaughtUpWall)} |
| CPU s | ${r2(rate.oursCpu)} | ${r2(rate.catchUpCpu)} | ${r2(rate.rawCpu)} | ${r2(rate.ratioCpu)} | ${r2(rate.ratioCaughtUpCpu)} |

Load average (1 min) after each round: ${rounds.map((x) => x.load).join(', ')}.

## Where the CPU goes (one more round, under the profiler)

${args.events.toLocaleString('en')} agent-trace events (seed ${SEED}) appended in batches of ${BATCH} per session through \`mem.append\` (no embedder), then
\`mem.maintainTextIndex()\` (the identifier index's catch-up), then raw SQLite + FTS5 (bench/lib/raw-fts5.ts: a plain table and
FTS5 on the content, one transaction per ${BATCH} events; no ids, keys, artifacts, redaction, validation, context column,
sessions or identifier index), each under V8's sampling profiler in this process (0.5 ms interval). A sample is charged
to the innermost frame naming a step; SQLite's native work is charged to the JS frame that called it. Microseconds of
CPU per event (the profiler adds overhead to all three alike).

| step | ours: appends µs/event | ours: catch-up µs/event | raw µs/event |
| --- | ---: | ---: | ---: |
${rows.map((r) => `| ${r.step} | ${r.appendsUs} | ${r.catchUpUs} | ${r.rawUs} |`).join('\n')}
| **busy total (idle excluded)** | **${totals.appendsUs}** | **${totals.catchUpUs}** | **${totals.rawUs}** |

Wall time under the profiler: appends ${wall.appendsS} s, catch-up ${wall.catchUpS} s, raw ${wall.rawS} s.
Load average (1, 5, 15 min) before: ${loadBefore.join(', ')}; after: ${loadAfter.join(', ')}.
`;
    writeFileSync(new URL('./results/ingest-profile.md', import.meta.url), md);
    console.log(md);
  } finally {
    session.disconnect();
    rmSync(dir, { recursive: true, force: true });
  }
}
