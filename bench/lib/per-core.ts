/**
 * Issue #32's per-core figures for bench/http-load.ts: server CPU per append and per recall beside their targets
 * (a target per server core, what a user sizing a machine needs), the mixed run against the same targets, and what
 * 4 and 8 cores would give from the figures measured here. Pure: it reads finished runs and renders Markdown.
 */
import { round } from './stats.js';

export type PerCoreBackend = 'sqlite' | 'postgres';
export type PerCoreMode = 'mixed' | 'append' | 'recall';

/** Issue #32: server CPU ms per append of 4 events and per recall, per backend (1000 / ms is the rate per core). */
export const PER_CORE_TARGETS: Readonly<Record<PerCoreBackend, { appendMs: number; recallMs: number }>> = {
  sqlite: { appendMs: 0.5, recallMs: 2.0 },
  postgres: { appendMs: 1.0, recallMs: 2.5 },
};

/** Core counts the projection is computed for (issue #32: "what 4 and 8 cores would give"). */
export const PROJECTED_CORES: readonly number[] = [1, 4, 8];

/** The parts of a finished http-load run (HttpLoadReport) these figures are computed from. */
export interface PerCoreRun {
  config: { backend: PerCoreBackend; mode?: PerCoreMode; workers?: number; servers?: number; agents: number; batch: number };
  ops: Record<'append' | 'recall' | 'retry', { requests: number; perSec: number }>;
  /** Events in the store when the measured window ended. */
  storeEvents?: number;
  cpu?: { serverMsPerRequest: number; clientMsPerRequest: number };
  /** PostgreSQL runs: its backends' CPU and the queries the servers sent, per request answered (bench/lib/pg-observe.ts). */
  pg?: { backendMsPerRequest: number | null; queriesPerRequest: number | null };
}

export interface PerCoreFigure {
  backend: PerCoreBackend;
  mode: PerCoreMode;
  workers: number;
  servers: number;
  agents: number;
  storeEvents?: number;
  /** What one request is: `append (4 events)`, `recall`, or the mixed loop's `append + recall`. */
  operation: string;
  /** Server CPU ms per request answered (every serving process summed); null without /proc. */
  ms: number | null;
  /** The target in ms: the operation's own, or for the mixed run the targets weighted by its requests of each kind. */
  targetMs: number;
  /** 1000 / ms: requests a server core answers per second at this cost. */
  perCore: number | null;
  targetPerCore: number;
  pass: boolean | null;
  /**
   * Mixed runs: the CPU per request the single-mode runs of the same configuration predict for this mix (their ms,
   * weighted by the mixed run's appends and recalls); "no worse in the mixed run" compares `ms` with it.
   */
  expectedFromSingleMs?: number;
}

const sameSetup = (a: PerCoreRun, b: PerCoreRun): boolean =>
  a.config.backend === b.config.backend &&
  (a.config.workers ?? 1) === (b.config.workers ?? 1) &&
  (a.config.servers ?? 1) === (b.config.servers ?? 1) &&
  a.config.agents === b.config.agents &&
  a.config.batch === b.config.batch;

/** Appends (retries included: a retry is an append request the server answers as a duplicate) and recalls. */
function requestCounts(r: PerCoreRun): { appends: number; recalls: number } {
  return { appends: r.ops.append.requests + r.ops.retry.requests, recalls: r.ops.recall.requests };
}

/** One run's figure against its target; `runs` (the whole suite) gives a mixed run its single-mode prediction. */
export function perCoreFigure(run: PerCoreRun, runs: readonly PerCoreRun[] = []): PerCoreFigure {
  const c = run.config;
  const mode = c.mode ?? 'mixed';
  const t = PER_CORE_TARGETS[c.backend];
  const ms = run.cpu ? run.cpu.serverMsPerRequest : null;
  let targetMs: number;
  let operation: string;
  let expectedFromSingleMs: number | undefined;
  if (mode === 'append') {
    targetMs = t.appendMs;
    operation = `append (${c.batch} events)`;
  } else if (mode === 'recall') {
    targetMs = t.recallMs;
    operation = 'recall';
  } else {
    const { appends, recalls } = requestCounts(run);
    const total = appends + recalls;
    targetMs = total > 0 ? (appends * t.appendMs + recalls * t.recallMs) / total : t.appendMs + t.recallMs;
    operation = `append (${c.batch} events) + recall`;
    const single = (m: PerCoreMode) => runs.find((r) => r !== run && (r.config.mode ?? 'mixed') === m && sameSetup(r, run) && r.cpu);
    const a = single('append');
    const q = single('recall');
    if (a?.cpu && q?.cpu && total > 0) expectedFromSingleMs = (appends * a.cpu.serverMsPerRequest + recalls * q.cpu.serverMsPerRequest) / total;
  }
  return {
    backend: c.backend,
    mode,
    workers: c.workers ?? 1,
    servers: c.servers ?? 1,
    agents: c.agents,
    ...(run.storeEvents !== undefined ? { storeEvents: run.storeEvents } : {}),
    operation,
    ms,
    targetMs: round(targetMs, 3),
    perCore: ms !== null && ms > 0 ? round(1000 / ms, 0) : null,
    targetPerCore: round(1000 / targetMs, 0),
    // The target holds for a turn of 4 events; a run with another batch is reported, not judged.
    pass: ms === null || c.batch !== 4 ? null : ms <= targetMs,
    ...(expectedFromSingleMs !== undefined ? { expectedFromSingleMs: round(expectedFromSingleMs, 2) } : {}),
  };
}

export interface CoreProjection {
  cores: number;
  /** cores x 1000 / server ms: the serving processes alone on the cores (load generator and PostgreSQL elsewhere). */
  serverOnly: number;
  /** cores x 1000 / (server + load generator [+ PostgreSQL] ms): everything on the same cores, as in this run. */
  sameMachine: number;
}

/**
 * Requests/s that `cores` cores give at the measured CPU per request: linear in cores (each serving process
 * independent, as `--workers N` and `--servers N` run them), with the load generator's and PostgreSQL's CPU per
 * request taken out of the same cores in `sameMachine`. `dbMs` only where PostgreSQL runs on the same machine.
 */
export function coreProjection(serverMs: number, clientMs: number, cores: number, dbMs = 0): CoreProjection {
  return {
    cores,
    serverOnly: serverMs > 0 ? round((cores * 1000) / serverMs, 0) : 0,
    sameMachine: serverMs + clientMs + dbMs > 0 ? round((cores * 1000) / (serverMs + clientMs + dbMs), 0) : 0,
  };
}

const fmt = (n: number) => n.toLocaleString('en');
const passCell = (p: boolean | null) => (p === null ? '-' : p ? 'pass' : '**FAIL**');

/** The per-core section of the suite report: figures against targets, then the projection to 4 and 8 cores. */
export function renderPerCore(runs: readonly PerCoreRun[]): string {
  if (runs.length === 0) return '';
  const figures = runs.map((r) => perCoreFigure(r, runs));
  const rows = figures.map((f) => {
    const mixedNote = f.expectedFromSingleMs !== undefined ? `${f.expectedFromSingleMs}` : '-';
    return `| ${f.backend} | ${f.mode} | ${f.workers} | ${f.servers} | ${f.agents} | ${f.storeEvents !== undefined ? fmt(f.storeEvents) : '?'} | ${f.operation} | ${f.ms ?? '?'} | <= ${f.targetMs} | ${f.perCore !== null ? fmt(f.perCore) : '?'} | >= ${fmt(f.targetPerCore)} | ${passCell(f.pass)} | ${mixedNote} |`;
  });
  const projections = runs.filter((r) => r.cpu).map((r) => {
    const c = r.config;
    const cpu = r.cpu!;
    const db = r.pg?.backendMsPerRequest ?? 0;
    const p = PROJECTED_CORES.map((n) => coreProjection(cpu.serverMsPerRequest, cpu.clientMsPerRequest, n, db));
    // The same setup with one process: how much more CPU a request costs when more processes serve it.
    const one = runs.find((o) => o.cpu && (o.config.mode ?? 'mixed') === (c.mode ?? 'mixed') && o.config.backend === c.backend && o.config.agents === c.agents && o.config.batch === c.batch && (o.config.workers ?? 1) === 1 && (o.config.servers ?? 1) === 1);
    const vsOne = one && one !== r && one.cpu!.serverMsPerRequest > 0 ? `${round(cpu.serverMsPerRequest / one.cpu!.serverMsPerRequest, 2)}x` : '-';
    return `| ${c.backend} | ${c.mode ?? 'mixed'} | ${c.workers ?? 1} | ${c.servers ?? 1} | ${c.agents} | ${cpu.serverMsPerRequest} | ${vsOne} | ${cpu.clientMsPerRequest} | ${r.pg?.backendMsPerRequest ?? '-'} | ${p.map((x) => `${fmt(x.serverOnly)} / ${fmt(x.sameMachine)}`).join(' | ')} |`;
  });
  return `## Per server core (issue #32)

Server CPU per request (user + system from /proc over the measured window, every serving process summed: the
\`--workers\` processes, the \`--servers\` processes) against issue #32's targets: SQLite <= ${PER_CORE_TARGETS.sqlite.appendMs} ms per append of 4 events
(${fmt(1000 / PER_CORE_TARGETS.sqlite.appendMs)}/s per core) and <= ${PER_CORE_TARGETS.sqlite.recallMs} ms per recall (${fmt(1000 / PER_CORE_TARGETS.sqlite.recallMs)}/s per core); PostgreSQL <= ${PER_CORE_TARGETS.postgres.appendMs} ms per append
and <= ${PER_CORE_TARGETS.postgres.recallMs} ms per recall. An append request includes the retried ones (answered as duplicates). The mixed run's
target is the two targets weighted by its appends and recalls ("no worse in the mixed run"); its last column is
what the single-mode runs of the same setup predict for that mix, so a mixed figure above it costs more than its parts.
Runs with another \`--batch\` than 4 are not judged.

| backend | mode | workers | servers | agents | store events (end) | request | server CPU ms | target ms | per core /s | target /s | | mixed: predicted from single modes, ms |
| --- | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | --- | ---: |
${rows.join('\n')}

**What 1, 4 and 8 cores would give** (requests/s), computed from the per-request CPU above, not measured: cores x 1000 /
server ms with the serving processes alone on the cores (the load generator, and PostgreSQL, on other machines), and
cores x 1000 / (server + load generator + PostgreSQL backends ms) with all of them sharing the cores as they do here.
Assumptions: one serving process per core (\`--workers N\` or \`--servers N\`) and the CPU per request of the run's own
process count (a run with more workers carries their coordination in its ms); no lock or I/O limit: SQLite takes
one writer at a time, so appends on one store stop scaling when its write transaction, not the CPU, is the bottleneck;
PostgreSQL's background processes (WAL writer, checkpointer) are not counted. "vs one process": the server ms beside
that of the same run with one process (\`--workers 1\`, one server); above 1x, more processes cost more CPU per request
and the projection from that run's ms already carries it.

| backend | mode | workers | servers | agents | server ms | vs one process | load generator ms | PostgreSQL ms | ${PROJECTED_CORES.map((n) => `${n} core${n > 1 ? 's' : ''}: alone / shared`).join(' | ')} |
| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ${PROJECTED_CORES.map(() => '---:').join(' | ')} |
${projections.join('\n')}
`;
}
