/**
 * The parts of `npm run bench -- scale` that other benchmarks measure (issue #14: one report beside every target):
 * `http` runs bench/http-load.ts's runner at 8 and 32 agents on each backend, `cache` replays bench/context.ts's
 * synthetic session and transcript at the 8K and 32K windows, and `hybrid` (bench/scale-vectors.ts, called by
 * bench/scale.ts) gives its rows. Each part returns its section's markdown and JSON; the target rows are computed from
 * the JSON alone, so a report that keeps a part from a previous run (`--parts`) still lists that part's targets.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEngram } from '../../src/engine.js';
import { runHttpLoad, HTTP_TARGETS, type HttpLoadMode, type HttpLoadReport } from '../http-load.js';
import { cacheReadMean, cacheReadTokenWeighted, loadTranscript, replaySynthetic, replayTranscript, type ContextBenchArgs, type ReplaySummary } from '../context.js';
import type { BenchBackend } from './bench-stores.js';
import { round } from './stats.js';
import { perCoreFigure } from './per-core.js';

/** A part's section: markdown for scale.md, JSON kept in scale.json (and read back by a later `--parts` run). */
export interface ScalePartSection {
  markdown: string;
  json: unknown;
}

/** The agent counts the HTTP part runs (issue #14 reports throughput and p95 at 8 and 32 agents). */
export const HTTP_AGENTS = [8, 32] as const;
/** The windows of the modelled prompt-cache target (issue #14: >= 70 % at 8K, >= 90 % at 32K). */
export const CACHE_TARGETS: ReadonlyArray<{ window: number; target: number }> = [
  { window: 8192, target: 0.7 },
  { window: 32768, target: 0.9 },
];
/** Hybrid recall p95 targets at 1M events (issue #14). */
export const HYBRID_TARGET_MS: Record<BenchBackend, number> = { sqlite: 80, postgres: 150 };

const verdict = (ok: boolean): string => (ok ? 'met' : '**not met**');
const fmt = (n: number): string => n.toLocaleString('en');

// --- http ------------------------------------------------------------------------------------------------------

export interface ScaleHttpOptions {
  backends: BenchBackend[];
  /** Measured seconds per run (http-load's default 20) after `warmupSeconds`. */
  seconds: number;
  warmupSeconds: number;
}

interface HttpRun {
  backend: BenchBackend;
  /** http-load's mode (absent in reports before modes: mixed). */
  mode?: HttpLoadMode;
  agents: number;
  appendPerSec: number;
  appendP95Ms: number;
  recallPerSec: number;
  recallP95Ms: number;
  errors: number;
  exactlyOnce: boolean;
  serverCores?: number;
  serverMsPerRequest?: number;
  loadAverage?: number;
  /** Appends (retries included) and recalls answered in the measured window: the mixed run's per-core target weights. */
  appendRequests?: number;
  recallRequests?: number;
  /** Events in the store at the end of the run. */
  storeEvents?: number;
}

/**
 * `engram serve` under http-load's closed loop, each run on a fresh store: on each backend the mixed loop (append then
 * recall) at 8 and 32 agents, then at 32 agents appends only and recalls only (issue #14 states the append and the
 * recall target separately), the recall-only store filled to the size the 32-agent mixed run reached.
 */
export async function runScaleHttp(opts: ScaleHttpOptions): Promise<ScalePartSection> {
  const runs: HttpRun[] = [];
  const base = { seconds: opts.seconds, warmupSeconds: opts.warmupSeconds, batch: 4, retryRate: 0.05, profile: false, writeReport: false } as const;
  for (const backend of opts.backends) {
    let mixedEvents = 0;
    for (const agents of HTTP_AGENTS) {
      const r = await runHttpLoad({ ...base, agents, backend, mode: 'mixed' });
      if (agents === 32) mixedEvents = r.verification.acknowledgedEvents;
      runs.push(httpRun(r));
      console.error(`http: ${JSON.stringify(runs.at(-1))}`);
    }
    runs.push(httpRun(await runHttpLoad({ ...base, agents: 32, backend, mode: 'append' })));
    console.error(`http: ${JSON.stringify(runs.at(-1))}`);
    runs.push(httpRun(await runHttpLoad({ ...base, agents: 32, backend, mode: 'recall', prefillEvents: mixedEvents, prefillFromMixed: true })));
    console.error(`http: ${JSON.stringify(runs.at(-1))}`);
  }
  const json = { seconds: opts.seconds, warmupSeconds: opts.warmupSeconds, batch: 4, targets: HTTP_TARGETS, runs };
  return { markdown: httpMarkdown(json), json };
}

function httpRun(r: HttpLoadReport): HttpRun {
  return {
    backend: r.config.backend,
    mode: r.config.mode ?? 'mixed',
    agents: r.config.agents,
    appendPerSec: r.ops.append.perSec,
    appendP95Ms: r.ops.append.p95Ms,
    recallPerSec: r.ops.recall.perSec,
    recallP95Ms: r.ops.recall.p95Ms,
    errors: Object.values(r.errors).reduce((n, e) => n + e, 0),
    exactlyOnce: r.verification.httpVerified && r.verification.storeVerified && r.server.exitCode === 0,
    appendRequests: r.ops.append.requests + r.ops.retry.requests,
    recallRequests: r.ops.recall.requests,
    ...(r.storeEvents !== undefined ? { storeEvents: r.storeEvents } : {}),
    ...(r.cpu ? { serverCores: r.cpu.serverCores, serverMsPerRequest: r.cpu.serverMsPerRequest, loadAverage: r.cpu.loadAverage } : { loadAverage: round(loadavg()[0]!, 2) }),
  };
}

type HttpJson = { seconds: number; warmupSeconds: number; batch: number; runs: HttpRun[] };

function httpMarkdown(json: HttpJson): string {
  const rows = json.runs.map(
    (r) =>
      `| ${r.backend} | ${r.mode ?? 'mixed'} | ${r.agents} | ${r.mode === 'recall' ? '-' : fmt(r.appendPerSec)} | ${r.mode === 'recall' ? '-' : r.appendP95Ms} | ${r.mode === 'append' ? '-' : fmt(r.recallPerSec)} | ${r.mode === 'append' ? '-' : r.recallP95Ms} | ${r.errors} | ${r.mode === 'recall' ? '-' : r.exactlyOnce ? 'yes' : 'NO'} | ${r.serverMsPerRequest ?? '?'} | ${r.loadAverage ?? '?'} |`,
  );
  return `\`runHttpLoad\` of bench/http-load.ts (the runner of \`npm run bench -- http-load\`, where each run's detail and
profile options are): \`engram serve\` on loopback, a fresh store per row, for ${json.warmupSeconds} s of warm-up and ${json.seconds} s measured,
each agent in a closed loop: \`mixed\` appends a turn of ${json.batch} events then recalls (full-text); \`append\` only appends;
\`recall\` only recalls, over a store the same agents filled first (not measured) to the size the 32-agent mixed run
reached. The load generator shares the 2 cores with the server.

| backend | mode | agents | appends/s | append p95 ms | recalls/s | recall p95 ms | errors | exactly once | server CPU ms per request | load average |
| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |
${rows.join('\n')}
`;
}

/** Target rows of the HTTP part: 32 agents on each backend measured. */
export function httpTargetRows(json: unknown): string[] {
  const t = HTTP_TARGETS;
  const runs = (json as Partial<HttpJson> | undefined)?.runs ?? [];
  const rows: string[] = [];
  for (const r of runs.filter((x) => x.agents === 32)) {
    const mode = r.mode ?? 'mixed';
    if (mode === 'mixed') {
      const ok = r.appendPerSec >= t.appendPerSec && r.recallPerSec >= t.recallPerSec && r.appendP95Ms < t.appendP95Ms && r.recallP95Ms < t.recallP95Ms;
      rows.push(`| \`engram serve\` append (4 events) / recall throughput, p95, 32 agents, mixed loop (${r.backend}) | >= ${fmt(t.appendPerSec)} / >= ${t.recallPerSec} req/s, p95 < ${t.appendP95Ms} / ${t.recallP95Ms} ms | ${fmt(r.appendPerSec)} / ${fmt(r.recallPerSec)} req/s, p95 ${r.appendP95Ms} / ${r.recallP95Ms} ms | ${verdict(ok)} |`);
    } else if (mode === 'append') {
      const ok = r.appendPerSec >= t.appendPerSec && r.appendP95Ms < t.appendP95Ms;
      rows.push(`| \`engram serve\` append (4 events) throughput, p95, 32 agents, appends only (${r.backend}) | >= ${fmt(t.appendPerSec)} req/s, p95 < ${t.appendP95Ms} ms | ${fmt(r.appendPerSec)} req/s, p95 ${r.appendP95Ms} ms (${r.serverMsPerRequest ?? '?'} ms server CPU each) | ${verdict(ok)} |`);
    } else {
      const ok = r.recallPerSec >= t.recallPerSec && r.recallP95Ms < t.recallP95Ms;
      rows.push(`| \`engram serve\` recall throughput, p95, 32 agents, recalls only (${r.backend}) | >= ${t.recallPerSec} req/s, p95 < ${t.recallP95Ms} ms | ${fmt(r.recallPerSec)} req/s, p95 ${r.recallP95Ms} ms (${r.serverMsPerRequest ?? '?'} ms server CPU each) | ${verdict(ok)} |`);
    }
    if (r.serverMsPerRequest !== undefined) rows.push(perCoreRow(r));
  }
  return rows;
}

/** Issue #32's per-core target of a run: server CPU ms per request (bench/lib/per-core.ts). */
function perCoreRow(r: HttpRun): string {
  const mode = r.mode ?? 'mixed';
  // Runs recorded before request counts: the mixed run's rates weight its target instead.
  const appends = r.appendRequests ?? r.appendPerSec;
  const recalls = r.recallRequests ?? r.recallPerSec;
  const f = perCoreFigure({
    config: { backend: r.backend, mode, agents: r.agents, batch: 4 },
    ops: { append: { requests: appends, perSec: r.appendPerSec }, recall: { requests: recalls, perSec: r.recallPerSec }, retry: { requests: 0, perSec: 0 } },
    cpu: { serverMsPerRequest: r.serverMsPerRequest!, clientMsPerRequest: 0 },
  });
  const what = mode === 'mixed' ? 'per request of the mixed loop (targets weighted by its appends and recalls)' : mode === 'append' ? 'per append of 4 events' : 'per recall';
  const size = r.storeEvents !== undefined ? `, ${fmt(r.storeEvents)} events` : '';
  return `| \`engram serve\` server CPU ${what}, 32 agents (${r.backend}${size}; issue #32, per core) | <= ${f.targetMs} ms (${fmt(f.targetPerCore)}/s per core) | ${f.ms} ms (${f.perCore !== null ? fmt(f.perCore) : '?'}/s per core) | ${verdict(f.pass === true)} |`;
}

// --- cache -----------------------------------------------------------------------------------------------------

export interface ScaleCacheOptions {
  /** The Claude Code transcript replayed beside the synthetic session (bench/run.ts's default for `context`). */
  transcript: string;
  turns: number;
  seed: number;
}

interface CacheRow {
  source: string;
  window: number;
  packs: number;
  compactions: number;
  /** Mean over every compared pack (compaction turns included) of the modelled Anthropic cache read. */
  cacheReadAllTurns: number;
  /** Read tokens over all tokens sent, summed over the same packs (what a bill shows); absent in older reports. */
  cacheReadTokenWeighted?: number;
}

type CacheJson = { turns: number; seed: number; transcript: string; rows: CacheRow[] };

/**
 * The context bench's replays (bench/context.ts, as its `prefix` part runs them) at the target windows, only those the
 * targets are about: the synthetic session in the default block order and the transcript's model calls.
 */
export async function runScaleCache(opts: ScaleCacheOptions): Promise<ScalePartSection> {
  const windows = CACHE_TARGETS.map((c) => c.window);
  const args: ContextBenchArgs = {
    parts: ['prefix'],
    windows,
    transcriptWindows: windows,
    turns: opts.turns,
    seed: opts.seed,
    transcript: opts.transcript,
    lowWaterSweep: [],
    sizes: [],
    steadyTurns: 0,
    latencyWindow: 0,
    probesPerType: 0,
    profile: false,
  };
  const dir = mkdtempSync(join(tmpdir(), 'engram-scale-cache-'));
  const replays: ReplaySummary[] = [];
  try {
    const mem = await openEngram({ db: join(dir, 'cache.db') });
    try {
      for (const window of windows) replays.push(await replaySynthetic(mem, window, 'default', args));
      const { events } = await loadTranscript(mem, opts.transcript);
      for (const window of windows) replays.push(await replayTranscript(mem, events, window, 'model-calls'));
    } finally {
      await mem.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const rows = replays.map((s) => ({ source: s.source, window: s.window, packs: s.packs, compactions: s.compactions, cacheReadAllTurns: round(cacheReadMean(s.turns), 4), cacheReadTokenWeighted: round(cacheReadTokenWeighted(s.turns), 4) }));
  const json: CacheJson = { turns: opts.turns, seed: opts.seed, transcript: opts.transcript.replace(/^.*\//, ''), rows };
  return { markdown: cacheMarkdown(json), json };
}

const pct = (x: number): string => (x * 100).toFixed(1);

function cacheMarkdown(json: CacheJson): string {
  const rows = json.rows.map((r) => `| ${r.source} | ${fmt(r.window)} | ${r.packs} | ${r.compactions} | ${pct(r.cacheReadAllTurns)} % | ${weighted(r)} |`);
  return `The replays of bench/context.ts (\`npm run bench -- context --parts prefix\` has their detail and the task-first order):
the synthetic session (${json.turns} turns, seed ${json.seed}, default block order) and the model calls of the Claude Code transcript
\`${json.transcript}\` replayed through \`pack()\`; modelled Anthropic prompt-cache read per pack, the mean over every pack compared, compaction
turns included.

| source | window | packs compared | compactions | modelled cache read over all turns, mean per pack | token-weighted |
| --- | ---: | ---: | ---: | ---: | ---: |
${rows.join('\n')}
`;
}

/** Target rows of the cache part: one per source and window. */
export function cacheTargetRows(json: unknown): string[] {
  const rows = (json as Partial<CacheJson> | undefined)?.rows ?? [];
  return rows.flatMap((r) => {
    const t = CACHE_TARGETS.find((c) => c.window === r.window);
    if (!t) return [];
    // Judged on the mean per pack, the stricter of the two; the token-weighted share is beside it.
    return [`| modelled prompt-cache read over all turns, ${fmt(r.window)} window (${r.source}) | >= ${pct(t.target)} % | ${pct(r.cacheReadAllTurns)} % per pack (token-weighted ${weighted(r)}) | ${verdict(r.cacheReadAllTurns >= t.target)} |`];
  });
}

const weighted = (r: CacheRow): string => (r.cacheReadTokenWeighted === undefined ? '-' : `${pct(r.cacheReadTokenWeighted)} %`);

// --- hybrid ----------------------------------------------------------------------------------------------------

interface HybridRowJson {
  backend: BenchBackend;
  events: number;
  hybrid: { exact: { p95: number }; fast: { p95: number } };
  recallAt10: number;
}

/** Target rows of bench/scale-vectors.ts's JSON: hybrid recall p95 with the backend's fast path, per backend. */
export function hybridTargetRows(json: unknown): string[] {
  const rows = (json as { rows?: HybridRowJson[] } | undefined)?.rows ?? [];
  return rows.map((r) => {
    const target = HYBRID_TARGET_MS[r.backend];
    return `| hybrid recall p95 (${r.backend}, ${fmt(r.events)} events; recall@10 ${pct(r.recallAt10)} % of exact) | < ${target} ms | ${r.hybrid.fast.p95} ms (exact search ${r.hybrid.exact.p95} ms) | ${verdict(r.hybrid.fast.p95 < target)} |`;
  });
}
