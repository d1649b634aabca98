/**
 * `engram serve` under load: N agents, each with its own token and session, append turns and recall over
 * loopback HTTP (node:http keep-alive, bench/lib/http-client.ts; `--client fetch` for Node's fetch) for a fixed time. Reports throughput and latency per operation and
 * errors, then checks that every acknowledged event is stored exactly once (over HTTP and in the store
 * file after a graceful shutdown). Writes bench/results/http-load.{md,json}, or http-load-builtin.{md,json} with the
 * built-in embedder (hybrid recall, the embedding worker running in the server).
 *
 *   npm run bench -- http-load [--agents 8,32] [--backends sqlite,postgres] [--embedder none|builtin] [--seconds 20] [--warmup 2]
 *                              [--batch 4] [--retry-rate 0.05] [--profile] [--workers 1,2] [--mode mixed,append,recall]
 *                              [--prefill-events N] [--client node-http|fetch] [--servers 1,2]
 *                              [--store FILE | --store-events N] [--out NAME]
 *
 * Modes (issue #14 states its two targets separately): `mixed` alternates an append and a recall per agent;
 * `append` is appends only (every agent appends turns); `recall` is recalls only, over a store first filled by the
 * same agents' appends (not measured) to the size the mixed run of the same backend and agent count reached, or
 * `--prefill-events`. Each backend, mode and agent count is its own run on a fresh store; the report puts them side
 * by side with the targets of issue #14, issue #32's per-core figures (server CPU per append and per recall against
 * their targets, and what 4 and 8 cores would give: lib/per-core.ts), then each run's detail (lib/http-load-report.ts).
 * `--servers N` runs N `engram serve` processes on one store; on PostgreSQL every run also counts the queries the servers
 * send and the CPU of the backends serving them (lib/pg-observe.ts). `--store` serves a copy of a prebuilt SQLite
 * store (`--store-events N`: bench/scale.ts's store of N events), so recall's CPU at 1M events is measured over HTTP.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { openEngram } from '../src/engine.js';
import type { StoreLocation } from '../src/store/open-store.js';
import { benchPgUrl, createBenchStore, type BenchBackend } from './lib/bench-stores.js';
import { createPgObserver, type PgObserver } from './lib/pg-observe.js';
import { DEFAULT_PREFILL_EVENTS, HTTP_TARGETS, renderReport, renderSuiteReport, type HttpLoadReport, type Op } from './lib/http-load-report.js';
import { measureHttpFloor } from './lib/http-floor.js';
import { measureSqliteFloor, type SqliteFloor } from './lib/sqlite-floor.js';
import type { EventInput } from '../src/model/event.js';
import { agentTrace, recallQueries } from './lib/agent-trace.js';
import { Prng } from './lib/prng.js';
import { profileWindow, summarizeCpuProfile, type CpuProfile, type ProfileEntry } from './lib/cpu-profile.js';
import { profileAreas } from './lib/profile-areas.js';
import { machineLine, round, summarize } from './lib/stats.js';
import { createHttpClient, type HttpAnswer, type HttpClientKind } from './lib/http-client.js';
import { childPids, readMaxRssMb, readTreeCpuMs } from './lib/proc-cpu.js';

export interface HttpLoadArgs {
  agents: number;
  seconds: number;
  /** Seconds of load before measuring (JIT, page cache); its events are verified like the others. */
  warmupSeconds: number;
  /** Events per append request (one agent turn). */
  batch: number;
  /** Share of successful appends sent again as a client retry would (must come back as duplicates). */
  retryRate: number;
  /** Run the server under `--cpu-prof` and report where its time went. */
  profile: boolean;
  /** The store the server runs on. Default sqlite (a fresh file); postgres gets a fresh schema (bench-stores.ts). */
  backend?: BenchBackend;
  /** The server's embedder (`--embedder`): `none` (default) measures full-text recall; `builtin` adds hybrid recall and the embedding worker. */
  embedder?: 'none' | 'builtin';
  /** Write bench/results/http-load.{md,json} for this run alone. Default true. */
  writeReport?: boolean;
  /** `engram serve --workers N`: processes serving HTTP (node:cluster). Default 1. */
  workers?: number;
  /** What each agent's closed loop sends: an append then a recall (default), appends only, or recalls only. */
  mode?: HttpLoadMode;
  /** The load generator's HTTP client: `node-http` (bench/lib/http-client.ts, lean; default) or Node's `fetch`. */
  client?: HttpClientKind;
  /** Recall mode: events the agents append before the measured loop (default {@link DEFAULT_PREFILL_EVENTS}). */
  prefillEvents?: number;
  /** `prefillEvents` is the size the mixed run of the same backend and agent count reached (the suite sets it). */
  prefillFromMixed?: boolean;
  /**
   * `--servers N`: N `engram serve` processes on the one store (PostgreSQL: one schema; each its own port), the agents
   * spread over them in turn. Default 1.
   */
  servers?: number;
  /**
   * `--store FILE`: serve a copy of this prebuilt SQLite store (the original is left as it is) instead of a fresh one;
   * the agents add their sessions to it. `--store-events N` sets it to bench/scale.ts's store of N events, built first
   * when no earlier run completed one.
   */
  store?: string;
  /** The events the prebuilt store held before the run (set when it is opened). */
  storeBaseEvents?: number;
  /** Report file name under bench/results/ (without extension); default by embedder, profile and client. */
  out?: string;
}

export type HttpLoadMode = 'mixed' | 'append' | 'recall';
export const HTTP_LOAD_MODES: readonly HttpLoadMode[] = ['mixed', 'append', 'recall'];
export { DEFAULT_PREFILL_EVENTS, HTTP_TARGETS, renderReport, renderSuiteReport, type HttpLoadReport } from './lib/http-load-report.js';

/** Events per append request while filling the store for a recall-only run (one request, one transaction). */
const PREFILL_BATCH = 50;
/** Seconds of appends, then of recalls, per framework, of the HTTP floor (http-floor.ts). */
const HTTP_FLOOR_SECONDS = 5;

export interface HttpLoadSuiteArgs extends Omit<HttpLoadArgs, 'agents' | 'backend' | 'writeReport' | 'workers' | 'mode' | 'servers'> {
  /** Each count of `engram serve` processes in turn (`--servers 1,2`). Default [1]. */
  servers?: number[];
  /** `--store-events N`: the store of bench/scale.ts with N events (built unless an earlier run completed it) as `store`. */
  storeEvents?: number;
  agents: number[];
  backends: BenchBackend[];
  /** Each count of serving processes in turn (`--workers 1,2`). Default [1]. */
  workers?: number[];
  /** Each mode in turn (`--mode mixed,append,recall`). Default: mixed only. */
  modes?: HttpLoadMode[];
}


interface Sample {
  op: Op;
  ms: number;
  isMeasured: boolean;
}

interface AgentState {
  name: string;
  token: string;
  sessionId: string;
  /** Acknowledged events: key -> id. */
  acked: Map<string, string>;
  /** Needles of acknowledged batches, for recall checks. */
  needles: string[];
  needleQueries: number;
  needleFound: number;
  retryMismatches: number;
}

/**
 * The report's file name: full-text runs and runs with the built-in embedder are kept side by side, and a run under
 * the profiler (slower by the profiler's own cost) beside the plain one rather than over it.
 */
function reportName(embedder: HttpLoadArgs['embedder'], profile = false, client: HttpClientKind = 'node-http'): string {
  return `${embedder === 'builtin' ? 'http-load-builtin' : 'http-load'}${profile ? '-profile' : ''}${client === 'fetch' ? '-fetch-client' : ''}`;
}

/** Every backend and agent count in turn, each on a fresh store; writes the combined report. */
export async function runHttpLoadSuite(args: HttpLoadSuiteArgs): Promise<HttpLoadReport[]> {
  const runs: HttpLoadReport[] = [];
  const modes = args.modes ?? ['mixed'];
  let store = args.store;
  if (args.storeEvents !== undefined) {
    const { buildSqlite } = await import('./scale.js');
    const start = performance.now();
    const built = await buildSqlite(args.storeEvents, true);
    store = built.location.db!;
    console.error(`== store of ${args.storeEvents} events: ${store} (${built.built ? `built in ${round((performance.now() - start) / 1000, 0)} s` : 'reused'})`);
  }
  if (store !== undefined && args.backends.some((b) => b !== 'sqlite')) throw new Error('--store and --store-events serve a SQLite store: use them with --backends sqlite');
  const setups = (args.workers ?? [1]).flatMap((workers) => (args.servers ?? [1]).map((servers) => ({ workers, servers })));
  for (const backend of args.backends) {
    for (const { workers, servers } of setups) {
      for (const agents of args.agents) {
        // Mixed first, so a recall-only run after it can fill its store to the size the mixed run reached.
        let mixedEvents: number | undefined;
        for (const mode of HTTP_LOAD_MODES.filter((m) => modes.includes(m))) {
          // Over a prebuilt store the agents' own turns are few (its other events are the store), not the mixed run's.
          const prefillEvents = args.prefillEvents ?? (store === undefined ? mixedEvents : undefined);
          const prefillFromMixed = args.prefillEvents === undefined && store === undefined && mixedEvents !== undefined;
          const { storeEvents: _built, ...runArgs } = args;
          const run = await runHttpLoad({ ...runArgs, agents, backend, workers, servers, mode, writeReport: false, prefillFromMixed, ...(store !== undefined ? { store } : {}), ...(prefillEvents !== undefined ? { prefillEvents } : {}) });
          if (mode === 'mixed') mixedEvents = run.verification.acknowledgedEvents;
          runs.push(run);
        }
      }
    }
  }
  // The floor under the per-core targets: SQLite + FTS5 alone on the events and queries of a fresh store's runs, at the
  // size its recall-only run searched (issue #32). Not for a prebuilt store (its events are scale.ts's, not the agents').
  const sqliteRecall = runs.find((r) => r.config.backend === 'sqlite' && r.config.mode === 'recall' && r.config.store === undefined);
  const floorEvents = sqliteRecall?.storeEvents ?? (store === undefined && args.backends.includes('sqlite') ? DEFAULT_PREFILL_EVENTS : undefined);
  let floor: SqliteFloor | undefined;
  if (floorEvents !== undefined && !args.profile) {
    console.error(`== the floor: raw SQLite + FTS5 on ${floorEvents} events`);
    floor = measureSqliteFloor({ events: floorEvents, agents: Math.max(...args.agents), batch: args.batch ?? 4 });
    console.error('== the floor: HTTP alone');
    floor.http = await measureHttpFloor({ agents: Math.max(...args.agents), batch: args.batch ?? 4, seconds: HTTP_FLOOR_SECONDS });
  }
  mkdirSync('bench/results', { recursive: true });
  const name = args.out ?? reportName(args.embedder, args.profile, args.client);
  writeFileSync(`bench/results/${name}.json`, JSON.stringify({ targets: HTTP_TARGETS, runs, ...(floor ? { floor } : {}) }, null, 2) + '\n');
  writeFileSync(`bench/results/${name}.md`, renderSuiteReport(runs, floor));
  console.error(renderSuiteReport(runs, floor));
  if (runs.some((r) => !r.verification.httpVerified || !r.verification.storeVerified || r.server.exitCode !== 0)) process.exitCode = 1;
  return runs;
}

export async function runHttpLoad(args: HttpLoadArgs): Promise<HttpLoadReport> {
  const dir = mkdtempSync(join(tmpdir(), 'engram-http-load-'));
  const backend = args.backend ?? 'sqlite';
  const store = backend === 'sqlite' ? { location: { db: join(dir, 'engram.db') } as StoreLocation, cleanup: async () => {} } : await createBenchStore(backend);
  let observer: PgObserver | undefined;
  try {
    const mode = args.mode ?? 'mixed';
    const prebuilt = args.store !== undefined ? await copyPrebuiltStore(args.store, store.location.db!) : undefined;
    if (prebuilt) args = { ...args, storeBaseEvents: prebuilt.events };
    if (store.location.pg !== undefined) observer = await createPgObserver(store.location.pg, benchPgUrl());
    const serveAt: StoreLocation = observer ? { pg: observer.url } : store.location;
    const serverCount = args.servers ?? 1;
    console.error(`== starting ${serverCount > 1 ? `${serverCount} x ` : ''}engram serve on ${backend} (${args.agents} agents, ${mode}${prebuilt ? `, a copy of ${args.store}: ${prebuilt.events} events` : ''})`);
    const profileDir = join(dir, 'profile');
    const env = observer?.env ?? {};
    // A prebuilt store's sessions went idle long ago and were never summarized: the consolidation worker would spend
    // the run summarizing them. A fresh store's sessions never idle long enough for it, so the two runs compare.
    const serveFlags = prebuilt ? ['--no-consolidate'] : [];
    // The first server bootstraps the admin agent of a fresh store; the others start on the store it has set up.
    const servers = [await startServer(serveAt, args.embedder ?? 'none', args.profile ? profileDir : undefined, args.workers ?? 1, env, serveFlags)];
    for (let i = 1; i < serverCount; i++) servers.push(await startServer(serveAt, args.embedder ?? 'none', undefined, args.workers ?? 1, env, serveFlags));
    const server = servers[0]!;
    const admin = prebuilt?.adminToken ?? server.info.admin?.token;
    if (!admin) throw new Error('expected a fresh store with a bootstrap admin token');
    const clients = servers.map((s) => createHttpClient(s.info.url, Math.ceil(args.agents / serverCount), args.client ?? 'node-http'));
    const client = clients[0]!;
    const post = (path: string, token: string, body: unknown) => client.post(path, token, JSON.stringify(body));

    const agents: AgentState[] = [];
    for (let i = 0; i < args.agents; i++) {
      const res = await post('/v1/agents', admin, { name: `agent-${i}`, role: 'programmer', parent: 'admin', project: 'bench' });
      if (res.status !== 201) throw new Error(`adding agent-${i}: ${res.status} ${res.text}`);
      const { token } = JSON.parse(res.text) as { token: string };
      agents.push({ name: `agent-${i}`, token, sessionId: `load-${i}`, acked: new Map(), needles: [], needleQueries: 0, needleFound: 0, retryMismatches: 0 });
    }

    const samples: Sample[] = [];
    const errors = new Map<string, number>();
    const countError = (op: Op, what: string) => errors.set(`${op} ${what}`, (errors.get(`${op} ${what}`) ?? 0) + 1);
    // Each agent's event source and turn counter, shared by the prefill and the loop.
    /** Agent `index` talks to server `index % servers` (with one server, all to it). */
    const clientOf = (index: number) => clients[index % clients.length]!;
    const sources = agents.map((_, index) => ({ rng: new Prng(1000 + index), trace: agentTrace(1_000_000, { seed: 1 + index, sessions: 1 }), turn: 0 }));
    const makeTurn = (index: number, size: number): { events: EventInput[]; needle: string } => {
      const src = sources[index]!;
      src.turn++;
      const needle = `needle-${index}-${src.turn}-${src.rng.hex(8)}`;
      const events: EventInput[] = [];
      for (let j = 0; j < size; j++) {
        const { event } = src.trace.next().value!;
        events.push({ ...event, ts: Date.now(), key: `${agents[index]!.name}:${src.turn}:${j}`, ...(j === 0 ? { content: `${event.content}\n${needle}` } : {}) });
      }
      return { events, needle };
    };
    let prefill: HttpLoadReport['prefill'] | undefined;
    if (mode === 'recall') {
      // The store a recall-only run searches: the same agents append into their own sessions first (not measured).
      // Over a prebuilt store one request of each agent's own turns, for its needles; the store is the rest.
      const target = args.prefillEvents ?? (prebuilt ? agents.length * PREFILL_BATCH : DEFAULT_PREFILL_EVENTS);
      const perAgent = Math.ceil(target / agents.length);
      const start = performance.now();
      await Promise.all(
        agents.map(async (agent, index) => {
          for (let done = 0; done < perAgent; ) {
            const { events, needle } = makeTurn(index, Math.min(PREFILL_BATCH, perAgent - done));
            const res = await clientOf(index).post('/v1/events', agent.token, JSON.stringify({ sessionId: agent.sessionId, events }));
            if (!res.ok) throw new Error(`prefill append of ${agent.name}: ${res.status} ${res.text}`);
            const out = (JSON.parse(res.text) as { events: Array<{ id: string }> }).events;
            out.forEach((e, j) => agent.acked.set(events[j]!.key!, e.id));
            agent.needles.push(needle);
            done += events.length;
          }
        }),
      );
      const filledSeconds = (performance.now() - start) / 1000;
      // The server's background work on those events (the identifier index's catch-up) would otherwise run in the
      // measured window and be charged to the recalls: wait until the server is idle.
      const quietSeconds = await waitUntilIdle(servers.map((s) => s.pid), args.profile ? PROFILED_IDLE_CORE_SHARE : IDLE_CORE_SHARE);
      prefill = { events: perAgent * agents.length, batch: PREFILL_BATCH, seconds: round(filledSeconds, 1), quietSeconds: round(quietSeconds, 1) };
      console.error(`== prefilled ${prefill.events} events in ${prefill.seconds} s, server idle after ${prefill.quietSeconds} s more`);
    }
    const t0 = performance.now();
    const measureFrom = t0 + args.warmupSeconds * 1000;
    const endAt = measureFrom + args.seconds * 1000;
    console.error(`== ${args.agents} agents for ${args.warmupSeconds} + ${args.seconds} s`);
    // CPU time of each process over the measured window: the server's from /proc, the load generator's own.
    const cpuAt: CpuMoment[] = [];
    // monoUs: CLOCK_MONOTONIC, the clock V8 stamps the server's profile samples with, to cut the profile to this window.
    const servingPids = () => servers.flatMap((s) => [s.pid, ...childPids(s.pid)]);
    const pgSnapshots: Array<Promise<void>> = [];
    const cpuSnapshot = () => {
      const perServer = servers.map((s) => readTreeCpuMs(s.pid));
      cpuAt.push({ server: perServer.some((x) => x === null) ? null : perServer.reduce<number>((a, b) => a + b!, 0), perServer, client: cpuMs(process.cpuUsage()), loadAvg: loadavg()[0]!, monoUs: Number(process.hrtime.bigint() / 1000n) });
      if (observer) pgSnapshots.push(observer.snapshot(cpuAt.length === 1 ? 'from' : 'to', servingPids()));
    };
    const cpuTimers = [setTimeout(cpuSnapshot, measureFrom - performance.now()), setTimeout(cpuSnapshot, endAt - performance.now())];

    const timed = async (op: Op, fn: () => Promise<HttpAnswer>): Promise<{ res: HttpAnswer; body: any } | null> => {
      const start = performance.now();
      try {
        const res = await fn();
        const text = res.text;
        samples.push({ op, ms: performance.now() - start, isMeasured: start >= measureFrom && start < endAt });
        if (!res.ok) {
          const code = /"code":"(\w+)"/.exec(text)?.[1] ?? '';
          countError(op, `${res.status} ${code}`.trim());
          return null;
        }
        return { res, body: JSON.parse(text) };
      } catch (err) {
        countError(op, (err as { code?: string }).code ?? (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name);
        return null;
      }
    };

    /** One agent turn appended (and, at the retry rate, sent again); the answer, or null after an error. */
    const appendTurn = async (index: number): Promise<{ res: HttpAnswer; body: any } | null> => {
      const agent = agents[index]!;
      const { rng } = sources[index]!;
      const { events, needle } = makeTurn(index, args.batch);
      // Serialised once: a retry sends the same bytes, as a client resending its request would.
      const json = JSON.stringify({ sessionId: agent.sessionId, events });
      const appended = await timed('append', () => clientOf(index).post('/v1/events', agent.token, json));
      if (appended) {
        const out = appended.body.events as Array<{ id: string; isDuplicate: boolean }>;
        out.forEach((e, j) => agent.acked.set(events[j]!.key!, e.id));
        agent.needles.push(needle);
        if (rng.next() < args.retryRate) {
          const again = await timed('retry', () => clientOf(index).post('/v1/events', agent.token, json));
          const ids = (again?.body.events ?? []) as Array<{ id: string; isDuplicate: boolean }>;
          if (again && !ids.every((e, j) => e.isDuplicate && e.id === out[j]!.id)) agent.retryMismatches++;
        }
      }
      return appended;
    };

    await Promise.all(
      agents.map(async (agent, index) => {
        const { rng } = sources[index]!;
        const queries = recallQueries(10_000, 100 + index);
        let turn = 0;
        while (performance.now() < endAt) {
          turn++;
          if (mode !== 'recall') await appendTurn(index);
          if (mode === 'append') continue;
          // Half the recalls look for an exact needle of an earlier acknowledged turn, half are ordinary queries.
          const isNeedle = rng.next() < 0.5 && agent.needles.length > 0;
          const query = isNeedle ? rng.pick(agent.needles) : queries[turn % queries.length]!;
          const recalled = await timed('recall', () =>
            clientOf(index).post('/v1/recall', agent.token, JSON.stringify({ query, k: 5, budgetTokens: 1000, ...(isNeedle ? { sessionIds: [agent.sessionId] } : {}) })),
          );
          if (isNeedle && recalled) {
            agent.needleQueries++;
            const hits = recalled.body.results[0].hits as Array<{ excerpt: string }>;
            if (hits.some((h) => h.excerpt.includes(query))) agent.needleFound++;
          }
        }
      }),
    );
    const loadSeconds = args.seconds;
    cpuTimers.forEach(clearTimeout);
    const cpu = cpuUsage(cpuAt, loadSeconds, samples.filter((s) => s.isMeasured).length);
    await Promise.all(pgSnapshots);
    const pgWindow = observer?.window();
    const measuredCount = samples.filter((s) => s.isMeasured).length;

    console.error('== verifying over HTTP');
    let httpVerified = true;
    const problems: string[] = [];
    for (const agent of agents) {
      const stored: Array<{ id: string; key?: string; turn: number }> = [];
      for (let after = 0; ; ) {
        const res = await client.get(`/v1/sessions/${agent.sessionId}/events?afterTurn=${after}&limit=1000`, agent.token);
        const page = JSON.parse(res.text) as { events: Array<{ id: string; key?: string; turn: number }>; nextAfterTurn?: number };
        stored.push(...page.events);
        if (page.nextAfterTurn === undefined) break;
        after = page.nextAfterTurn;
      }
      const keys = new Set(stored.map((e) => e.key));
      const gapFree = stored.every((e, i) => e.turn === i + 1);
      const idsMatch = stored.length === agent.acked.size && stored.every((e) => e.key !== undefined && agent.acked.get(e.key) === e.id);
      if (!(keys.size === stored.length && gapFree && idsMatch)) {
        httpVerified = false;
        problems.push(`${agent.sessionId}: stored ${stored.length}, acknowledged ${agent.acked.size}, gap-free ${gapFree}, ids match ${idsMatch}`);
      }
    }

    const maxRssMb = servingPids().map(readMaxRssMb).reduce<number | null>((sum, mb) => (sum === null || mb === null ? null : sum + mb), 0);
    clients.forEach((c) => c.close());
    console.error('== SIGTERM');
    const stopStart = performance.now();
    for (const s of servers) s.child.kill('SIGTERM');
    const exitCodes = await Promise.all(servers.map((s) => s.exited));
    const exitCode = exitCodes.find((code) => code !== 0) ?? exitCodes[0]!;
    const shutdownMs = performance.now() - stopStart;

    const measuredRequests = samples.filter((s) => s.isMeasured).length;
    const profile = args.profile ? readProfile(profileDir, cpuAt.length === 2 ? { fromUs: cpuAt[0]!.monoUs, toUs: cpuAt[1]!.monoUs, requests: measuredRequests } : undefined) : null;
    const mem = await openEngram({ ...store.location, ...(backend === 'sqlite' ? { sqlite: { create: false } } : {}) });
    const stats = await mem.stats();
    await mem.close();
    const acked = agents.reduce((n, a) => n + a.acked.size, 0);
    // A prebuilt store held its own events and sessions before the agents added theirs.
    const baseEvents = prebuilt?.events ?? 0;
    const storeVerified = stats.events - baseEvents === acked && stats.sessions - (prebuilt?.sessions ?? 0) === agents.length;
    if (!storeVerified) problems.push(`store holds ${stats.events} events in ${stats.sessions} sessions (${baseEvents} events before the run); ${acked} acknowledged`);

    const measured = (op: Op) => samples.filter((s) => s.op === op && s.isMeasured).map((s) => s.ms);
    const opStats = (op: Op) => {
      const ms = measured(op);
      const s = summarize(ms);
      return { requests: s.n, perSec: round(s.n / loadSeconds, 1), p50Ms: round(s.p50, 1), p95Ms: round(s.p95, 1), p99Ms: round(s.p99, 1), meanMs: round(s.mean, 1) };
    };
    const report: HttpLoadReport = {
      when: new Date().toISOString(),
      machine: machineLine(),
      cpus: cpus().length,
      memGiB: round(totalmem() / 2 ** 30, 0),
      config: { ...args, backend, mode, embedder: args.embedder ?? 'none', transport: `HTTP/1.1 keep-alive over loopback (${(args.client ?? 'node-http') === 'fetch' ? 'Node fetch' : 'node:http, one kept-alive socket per agent'})` },
      ...(prefill ? { prefill } : {}),
      ops: { append: opStats('append'), recall: opStats('recall'), retry: opStats('retry') },
      eventsPerSec: round((opStats('append').requests * args.batch) / loadSeconds, 0),
      errors: Object.fromEntries(errors),
      verification: {
        acknowledgedEvents: acked,
        storedEvents: stats.events,
        httpVerified,
        storeVerified,
        retriedBatches: samples.filter((s) => s.op === 'retry').length,
        retryMismatches: agents.reduce((n, a) => n + a.retryMismatches, 0),
        needleQueries: agents.reduce((n, a) => n + a.needleQueries, 0),
        needleFound: agents.reduce((n, a) => n + a.needleFound, 0),
        problems,
      },
      server: { maxRssMb, shutdownMs: round(shutdownMs, 0), exitCode },
      // Events in the store when the measured window ended: nothing is appended after it but the verification reads.
      storeEvents: stats.events,
      ...(cpu ? { cpu } : {}),
      ...(cpu && servers.length > 1 ? { perServer: perServerCpu(cpuAt, loadSeconds, servers.length, measuredCount) } : {}),
      ...(pgWindow ? { pg: pgFigures(pgWindow, measuredCount, loadSeconds) } : {}),
      ...(profile ? { profile } : {}),
    };
    if (args.writeReport ?? true) {
      mkdirSync('bench/results', { recursive: true });
      const name = args.out ?? reportName(args.embedder, args.profile, args.client);
      writeFileSync(`bench/results/${name}.json`, JSON.stringify(report, null, 2) + '\n');
      writeFileSync(`bench/results/${name}.md`, renderReport(report));
      console.error(renderReport(report));
      if (!httpVerified || !storeVerified || exitCode !== 0) process.exitCode = 1;
    }
    return report;
  } finally {
    await observer?.close();
    await store.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Copies a prebuilt SQLite store (with its WAL, if any) to `db` and readies the copy: its events and sessions
 * counted, and an admin agent added when it has none (a server on a store with agents bootstraps none).
 */
async function copyPrebuiltStore(source: string, db: string): Promise<{ events: number; sessions: number; adminToken: string }> {
  const start = performance.now();
  copyFileSync(source, db);
  for (const suffix of ['-wal', '-shm']) if (existsSync(`${source}${suffix}`)) copyFileSync(`${source}${suffix}`, `${db}${suffix}`);
  const mem = await openEngram({ db, sqlite: { create: false } });
  try {
    const stats = await mem.stats();
    if ((await mem.agents.list()).length > 0) throw new Error(`--store: ${source} has agents already; the bench needs a store without agents (it adds its own admin)`);
    const admin = await mem.agents.add('admin', { role: 'admin', isAdmin: true });
    console.error(`== copied ${source} (${stats.events} events) in ${round((performance.now() - start) / 1000, 1)} s`);
    return { events: stats.events, sessions: stats.sessions, adminToken: admin.token };
  } finally {
    await mem.close();
  }
}

interface StartedServer {
  child: ReturnType<typeof spawn>;
  pid: number;
  info: { url: string; admin: { token: string } | null };
  exited: Promise<number | null>;
}

async function startServer(location: StoreLocation, embedder: 'none' | 'builtin', profileDir: string | undefined, workers: number, env: Record<string, string> = {}, flags: readonly string[] = []): Promise<StartedServer> {
  const profiling = profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [];
  const store = location.pg !== undefined ? ['--pg', location.pg] : ['--db', location.db!];
  const child = spawn(process.execPath, [...profiling, '--import', 'tsx', 'bench/lib/serve-child.ts', 'serve', ...store, '--port', '0', '--json', '--embedder', embedder, '--workers', String(workers), ...flags], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ENGRAM_DB: '', ENGRAM_PG_URL: '', ...env },
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const info = await new Promise<StartedServer['info']>((resolve, reject) => {
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve(JSON.parse(line) as StartedServer['info']);
    });
    void exited.then((code) => reject(new Error(`engram serve exited ${code} before listening`)));
  });
  return { child, pid: child.pid!, info, exited };
}

/**
 * The server's CPU profile over the measured window (`window`, on the monotonic clock; without it the whole run,
 * start-up and verification included): top functions and files by self time, and time by area.
 */
function readProfile(profileDir: string, window?: { fromUs: number; toUs: number; requests: number }): HttpLoadReport['profile'] | null {
  const file = readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) return null;
  // ENGRAM_BENCH_PROFILE_OUT=dir keeps the whole profile (Chrome DevTools, or inclusive times) beside the summary.
  const keep = process.env.ENGRAM_BENCH_PROFILE_OUT;
  if (keep) {
    mkdirSync(keep, { recursive: true });
    copyFileSync(join(profileDir, file), join(keep, `http-load-${Date.now()}.cpuprofile`));
  }
  const whole = JSON.parse(readFileSync(join(profileDir, file), 'utf8')) as CpuProfile;
  const profile = window ? profileWindow(whole, window.fromUs, window.toUs) : whole;
  const summary = summarizeCpuProfile(profile, 15);
  const r = (e: ProfileEntry) => ({ ...e, selfMs: round(e.selfMs, 0), share: round(e.share, 3) });
  return {
    totalMs: round(summary.totalMs, 0),
    functions: summary.functions.map(r),
    files: summary.files.map(r),
    areas: profileAreas(profile),
    ...(window ? { window: { seconds: round((window.toUs - window.fromUs) / 1e6, 1), requests: window.requests } } : {}),
  };
}

/** Server CPU under this share of a core over a second counts as idle (its timers, the WAL checkpoint). */
const IDLE_CORE_SHARE = 0.05;
/** The same under `--profile`: V8's sampling thread alone keeps an idle server above 5 % of a core (it never counted as idle, and the prefill waited the full 300 s). */
const PROFILED_IDLE_CORE_SHARE = 0.2;

/**
 * Waits until the server (all its processes) uses under `idleShare` of a core over a second, at most
 * `maxSeconds`; returns the seconds waited. Without /proc it returns at once.
 */
async function waitUntilIdle(pids: readonly number[], idleShare: number, maxSeconds = 300): Promise<number> {
  const start = performance.now();
  const read = () => pids.reduce<number | null>((sum, pid) => (sum === null ? null : ((ms) => (ms === null ? null : sum + ms))(readTreeCpuMs(pid))), 0);
  let before = read();
  while (before !== null && performance.now() - start < maxSeconds * 1000) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const now = read();
    if (now === null || now - before < 1000 * idleShare) break;
    before = now;
  }
  return (performance.now() - start) / 1000;
}

function cpuMs(usage: NodeJS.CpuUsage): number {
  return (usage.user + usage.system) / 1000;
}

/** CPU times at the start and the end of the measured window (ms; `server` summed over `perServer`). */
interface CpuMoment {
  server: number | null;
  perServer: Array<number | null>;
  client: number;
  loadAvg: number;
  monoUs: number;
}

/** Each `engram serve` process of a `--servers N` run: cores it kept busy, and its CPU ms per request of the whole run. */
function perServerCpu(at: readonly CpuMoment[], seconds: number, servers: number, requests: number): NonNullable<HttpLoadReport['perServer']> {
  const [from, to] = at;
  return Array.from({ length: servers }, (_, i) => {
    const a = from?.perServer[i];
    const b = to?.perServer[i];
    const ms = a === null || a === undefined || b === null || b === undefined ? null : b - a;
    return { cores: ms === null ? null : round(ms / (seconds * 1000), 2), msPerRequest: ms === null || requests === 0 ? null : round(ms / requests, 2) };
  });
}

/** The PostgreSQL figures of a run's measured window, per request answered. */
function pgFigures(w: ReturnType<PgObserver['window']>, requests: number, seconds: number): NonNullable<HttpLoadReport['pg']> {
  return {
    queries: w.queries,
    queriesPerRequest: w.queries === null || requests === 0 ? null : round(w.queries / requests, 2),
    backendCpuMs: w.backendCpuMs === null ? null : round(w.backendCpuMs, 0),
    backendCores: w.backendCpuMs === null ? null : round(w.backendCpuMs / (seconds * 1000), 2),
    backendMsPerRequest: w.backendCpuMs === null || requests === 0 ? null : round(w.backendCpuMs / requests, 2),
    backends: w.backends,
  };
}

/** Cores each process kept busy over the measured window, and CPU ms per request answered. */
function cpuUsage(at: ReadonlyArray<{ server: number | null; client: number; loadAvg: number }>, seconds: number, requests: number): HttpLoadReport['cpu'] | null {
  const [from, to] = at;
  if (!from || !to || from.server === null || to.server === null || requests === 0) return null;
  const server = to.server - from.server;
  const client = to.client - from.client;
  return {
    serverCores: round(server / (seconds * 1000), 2),
    clientCores: round(client / (seconds * 1000), 2),
    serverMsPerRequest: round(server / requests, 2),
    clientMsPerRequest: round(client / requests, 2),
    loadAverage: round(to.loadAvg, 2),
  };
}

