/**
 * A recall held to a small part of a large store (issue #32; docs/recall.md, "Full-text at scale": the span of a
 * session-held search). On each backend, a store of the agent trace's `--events` events in another project's sessions,
 * then 32 sessions of 50 events in project `bench` (as bench/http-load.ts's agents write theirs); then http-load's
 * ordinary queries recalled in-process as an agent of `bench` (its project sees 1,600 events), as an agent's needle
 * held to its own session, and unfiltered (an administrator's), each timed in wall and CPU time. Run it on two trees to
 * compare (the report says which commit it ran on). Writes bench/results/session-span.{md,json}. With `--dormant`
 * project `bench` is written first, so its sessions are the oldest of the store (a project revisited after the others
 * wrote most of it); writes bench/results/session-span-dormant.{md,json}.
 *
 *   npm run bench -- session-span [--events 100000] [--backends sqlite,postgres] [--queries 40] [--dormant] [--out session-span]
 */
import { execSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEngram, type Engram } from '../src/engine.js';
import type { SessionId } from '../src/model/ids.js';
import { agentTrace, appendTraceInBatches, recallQueries } from './lib/agent-trace.js';
import { benchPgUrl } from './lib/bench-stores.js';
import { Prng } from './lib/prng.js';
import { machineLine, round, summarize } from './lib/stats.js';

export interface SessionSpanArgs {
  events: number;
  backends: Array<'sqlite' | 'postgres'>;
  queries: number;
  out: string;
  /** Project `bench` written before the trace, not after: its sessions the oldest of the store. */
  dormant?: boolean;
}

const AGENTS = 32;
const AGENT_EVENTS = 50;
const WARMUP = 5;

interface Timing {
  mean: number;
  p50: number;
  p95: number;
  cpuMean: number;
}

interface BackendResult {
  backend: string;
  events: number;
  buildSeconds: number;
  agent: Timing;
  needle: Timing;
  unfiltered: Timing;
}

async function time(run: (i: number) => Promise<unknown>, n: number): Promise<Timing> {
  for (let i = 0; i < WARMUP; i++) await run(i);
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < n; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await run(WARMUP + i);
    wall.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }
  const s = summarize(wall);
  return { mean: round(s.mean), p50: round(s.p50), p95: round(s.p95), cpuMean: round(cpu.reduce((a, b) => a + b, 0) / cpu.length) };
}

async function fill(mem: Engram, events: number, dormant: boolean): Promise<Array<{ session: string; needle: string }>> {
  const trace = () => appendTraceInBatches((s, list) => mem.append(s, list, { project: 'other' }), agentTrace(events, { seed: 42 }), 500);
  if (!dormant) await trace();
  const needles: Array<{ session: string; needle: string }> = [];
  for (let a = 0; a < AGENTS; a++) {
    const rng = new Prng(1000 + a);
    const trace = agentTrace(1_000_000, { seed: 1 + a, sessions: 1 });
    const list = [];
    for (let j = 0; j < AGENT_EVENTS; j++) {
      const { event } = trace.next().value!;
      const needle = `needle-${a}-${j}-${rng.hex(8)}`;
      if (j % 5 === 0) needles.push({ session: `load-${a}`, needle });
      list.push({ ...event, ts: Date.now(), ...(j % 5 === 0 ? { content: `${event.content}\n${needle}` } : {}) });
    }
    await mem.append(`load-${a}`, list, { project: 'bench' });
  }
  if (dormant) await trace();
  await mem.maintainTextIndex();
  return needles;
}

async function measure(backend: 'sqlite' | 'postgres', args: SessionSpanArgs): Promise<BackendResult> {
  const dir = mkdtempSync(join(tmpdir(), 'engram-session-span-'));
  const schema = `engram_session_span_${process.pid}`;
  const base = backend === 'postgres' ? benchPgUrl() : '';
  const location = backend === 'sqlite' ? { db: join(dir, 'engram.db') } : { pg: `${base}${base.includes('?') ? '&' : '?'}schema=${schema}` };
  const mem = await openEngram(location);
  try {
    const start = performance.now();
    const needles = await fill(mem, args.events, args.dormant === true);
    const buildSeconds = round((performance.now() - start) / 1000, 1);
    const queries = recallQueries(10_000, 100).slice(0, args.queries + WARMUP);
    const agent = mem.viewAs({ kind: 'agent', agentId: 'bench-agent', agentName: 'agent-0', project: 'bench', isAdmin: false });
    const opts = { k: 5, budgetTokens: 1000, logRecall: false };
    const result: BackendResult = {
      backend,
      events: args.events + AGENTS * AGENT_EVENTS,
      buildSeconds,
      agent: await time((i) => agent.recall({ queries: [queries[i % queries.length]!], ...opts }), args.queries),
      needle: await time((i) => {
        const n = needles[i % needles.length]!;
        return agent.recall({ queries: [n.needle], sessionIds: [n.session as SessionId], ...opts });
      }, args.queries),
      unfiltered: await time((i) => mem.recall(queries[i % queries.length]!, opts), args.queries),
    };
    console.error(`${backend}: ${JSON.stringify(result)}`);
    return result;
  } finally {
    await mem.close();
    rmSync(dir, { recursive: true, force: true });
    if (backend === 'postgres') {
      const pg = await import('pg');
      const client = new pg.default.Client({ connectionString: base });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await client.end();
    }
  }
}

export async function runSessionSpan(args: SessionSpanArgs): Promise<void> {
  const results: BackendResult[] = [];
  for (const backend of args.backends) results.push(await measure(backend, args));
  const commit = (() => {
    try {
      return execSync('git rev-parse --short HEAD', { encoding: 'utf8' }).trim();
    } catch {
      return 'unknown';
    }
  })();
  const when = new Date().toISOString();
  const load = loadavg().map((l) => round(l, 2));
  const command = `npm run bench -- session-span --events ${args.events} --backends ${args.backends.join(',')} --queries ${args.queries}${args.dormant ? ' --dormant' : ''}${args.out !== (args.dormant ? 'session-span-dormant' : 'session-span') ? ` --out ${args.out}` : ''}`;
  writeFileSync(`bench/results/${args.out}.json`, JSON.stringify({ when, commit, command, load, args, results }, null, 2) + '\n');
  const t = (x: Timing): string => `${x.mean} / ${x.p50} / ${x.p95} | ${x.cpuMean}`;
  const md = `# A recall held to a small part of a large store

Generated by \`${command}\` on ${when} (${machineLine()}, 2 cores; commit ${commit}; load average after the runs ${load.join(', ')}).
Code: \`bench/session-span.ts\`.

Each backend: a fresh store of the agent trace's ${args.events.toLocaleString('en')} events (seed 42) in project \`other\`'s
sessions${args.dormant ? ', written after' : ', then'} ${AGENTS} sessions of ${AGENT_EVENTS} events in project \`bench\` (as bench/http-load.ts's agents write theirs; every fifth
event holds a needle)${args.dormant ? ": **a dormant project**, its sessions the oldest of the store, written first" : ''}, and the identifier index caught up. Then, in-process (no HTTP), ${args.queries} of http-load's ordinary
queries (after ${WARMUP} warm-up ones), k 5, 1,000 tokens, recall log off: as an agent of \`bench\` (its project sees
${(AGENTS * AGENT_EVENTS).toLocaleString('en')} of the events), a needle as that agent held to the needle's session, and
unfiltered (an administrator's recall: no span). Wall ms mean / p50 / p95, and CPU ms mean of this process (on
PostgreSQL the database's own CPU is not in it).

| backend | events | build s | agent of \`bench\`: wall mean / p50 / p95 | CPU mean | needle in its session: wall | CPU mean | unfiltered: wall | CPU mean |
| --- | ---: | ---: | --- | ---: | --- | ---: | --- | ---: |
${results.map((r) => `| ${r.backend} | ${r.events.toLocaleString('en')} | ${r.buildSeconds} | ${t(r.agent)} | ${t(r.needle)} | ${t(r.unfiltered)} |`).join('\n')}

Before the span (docs/recall.md, "A search held to a few sessions reads only their rowid span"), a search held to a
project or a session that is a small part of the store walked each common word's matches through the whole store,
testing each one's session. To compare, run this file on the tree before it (its report names the commit).${
    args.dormant
      ? `

A dormant project's span lies far below the store's newest rows, and FTS5 does not seek to a rowid bound: a walk
newest first reads past every newer match to reach it. Such a span is walked oldest first (docs/recall.md, "A search
held to a few sessions reads only their rowid span").`
      : ''
  }
`;
  writeFileSync(`bench/results/${args.out}.md`, md);
  console.error(`wrote bench/results/${args.out}.md`);
}
