/**
 * Dashboard endpoints at scale (issue #18: "smooth with thousands of engrams and 100K-event sessions"): over
 * real HTTP on loopback, the latency of what each screen loads (a session's timeline, a page of its events
 * from the middle, feed pages at the start and the end, the budget meters, the briefs, the overview) on one
 * session per size in --sizes and --engrams engrams; and how long a child's engram takes to reach an open live
 * stream. Writes bench/results/dashboard.{md,json}.
 *
 * The session list (host, first request and summary line of each session, issue #29 item 8) is timed on --sessions
 * small sessions besides: a page of the dashboard's list, and every session as `engram sessions` lists them.
 *
 *   npm run bench -- dashboard [--sizes 10000,100000] [--engrams 5000] [--sessions 2000]
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { openEngram } from '../src/engine.js';
import { startHttpServer } from '../src/interfaces/http/server.js';
import { createTempRepo } from './lib/temp-git-repo.js';
import { machineLine, round, summarize } from './lib/stats.js';

const REPEATS = 15;
const STREAM_SAMPLES = 10;
const TOPICS = ['ledger', 'gateway', 'retry', 'idempotency', 'reservation', 'rollback', 'cache', 'schema', 'queue', 'timeout'];

export async function runDashboardBench(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, strict: false, options: { sizes: { type: 'string' }, engrams: { type: 'string' }, sessions: { type: 'string' } } });
  const sessionCount = Number(values.sessions ?? 2000);
  const sizes = String(values.sizes ?? '10000,100000').split(',').map(Number);
  const engramCount = Number(values.engrams ?? 5000);
  const started = new Date();
  const dir = mkdtempSync(join(tmpdir(), 'engram-bench-dashboard-'));
  const repo = createTempRepo('engram-bench-dashboard-repo-');
  const sha = repo.commit({ 'src/a.py': Array.from({ length: 400 }, (_, i) => `line ${i + 1}`).join('\n') + '\n' });
  const mem = await openEngram({ db: join(dir, 'engram.db'), indexing: { background: false }, bus: { repoRoot: repo.dir, limits: { maxEngramsPerAgentPerMinute: 1_000_000 } } });
  const rows: Array<{ what: string; ms: ReturnType<typeof summarize> }> = [];
  const seeding: Record<string, number> = {};
  try {
    const { token: adminToken } = await mem.agents.add('root', { role: 'admin', isAdmin: true });
    const lead = await mem.agents.add('lead', { role: 'manager', project: 'shop' });
    const children = [];
    let childToken = '';
    for (let i = 0; i < 4; i++) {
      const added = await mem.agents.add(`child${i}`, { role: i % 2 ? 'tester' : 'programmer', parent: 'lead', project: 'shop' });
      children.push(added.agent);
      if (i === 0) childToken = added.token;
    }

    let t0 = performance.now();
    for (let i = 0; i < engramCount; i++) {
      const topic = TOPICS[i % TOPICS.length]!;
      const line = 1 + (i % 390);
      await mem.bus.engrams.put(
        children[i % children.length]!,
        {
          kind: ['fact', 'risk', 'decision', 'todo'][i % 4],
          claim: `Engram ${i} about the ${topic}: ${topic} step ${i % 97} changes ${TOPICS[(i * 7) % TOPICS.length]}.`,
          pointers: [{ type: 'repo', ref: `repo:src/a.py#L${line}-L${line + 5}@${sha}` }],
          confidence: 0.8,
          ttl: 'P7D',
          scope: 'project',
        },
        mem.bus.defaultRunId,
      );
    }
    seeding[`${engramCount} engrams put`] = performance.now() - t0;

    const shop = mem.viewAs({ kind: 'agent', agentId: lead.agent.id, agentName: 'lead', project: 'shop', isAdmin: false });
    for (const size of sizes) {
      t0 = performance.now();
      const id = `session-${size}`;
      for (let at = 0; at < size; at += 500) {
        const batch = [];
        for (let i = at; i < Math.min(size, at + 500); i++) {
          batch.push({ kind: i % 2 ? 'assistant' : 'user', content: `Turn ${i}: the ${TOPICS[i % TOPICS.length]} work goes on with step ${i % 113}.` });
        }
        await shop.append(id, batch as never);
      }
      seeding[`session of ${size} events appended`] = performance.now() - t0;
    }

    // Many small sessions as an importer stores them (keyed events; a prompt wrapped in the host's IDE note).
    t0 = performance.now();
    for (let i = 0; i < sessionCount; i++) {
      const topic = TOPICS[i % TOPICS.length]!;
      await shop.append(`import-${String(i).padStart(5, '0')}`, [
        { kind: 'user', content: `<ide_opened_file>src/${topic}.ts</ide_opened_file>Fix the ${topic} bug number ${i}.`, key: `cc:u${i}:0`, meta: { cwd: '/repo' } },
        { kind: 'tool_call', content: JSON.stringify({ file_path: `/repo/src/${topic}.ts`, old_string: 'a', new_string: 'b' }), toolName: 'Edit', toolCallId: `t${i}`, key: `cc:a${i}:0`, meta: { cwd: '/repo' } },
        { kind: 'tool_result', content: `The file /repo/src/${topic}.ts has been updated.`, toolName: 'Edit', toolCallId: `t${i}`, key: `cc:u${i}:1`, meta: { cwd: '/repo' } },
        { kind: 'assistant', content: `Fixed the ${topic} bug ${i}.`, key: `cc:a${i}:1`, meta: { cwd: '/repo' } },
      ] as never);
    }
    seeding[`${sessionCount} sessions of 4 events appended`] = performance.now() - t0;

    const server = await startHttpServer(mem, { port: 0, version: 'bench' });
    const get = async (path: string, token = adminToken): Promise<unknown> => {
      const res = await fetch(`${server.url}${path}`, { headers: { Authorization: `Bearer ${token}` } });
      const body = await res.json();
      if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(body)}`);
      return body;
    };
    const time = async (what: string, path: string, token?: string) => {
      await get(path, token);
      const samples: number[] = [];
      for (let i = 0; i < REPEATS; i++) {
        const t = performance.now();
        await get(path, token);
        samples.push(performance.now() - t);
      }
      rows.push({ what, ms: summarize(samples) });
      console.error(`${what}: p50 ${round(summarize(samples).p50, 1)} ms`);
    };
    try {
      for (const size of sizes) {
        // The first open reads every event once (kinds and turns are counted); later opens read only new ones.
        const path = `/v1/dashboard/sessions/session-${size}/timeline`;
        let t = performance.now();
        await get(path);
        rows.push({ what: `timeline of a ${size.toLocaleString('en')}-event session, first open`, ms: summarize([performance.now() - t]) });
        await shop.append(`session-${size}`, Array.from({ length: 500 }, (_, i) => ({ kind: 'tool_result', content: `new result ${i}` })) as never);
        t = performance.now();
        await get(path);
        rows.push({ what: `the same timeline after 500 more events (a live refresh)`, ms: summarize([performance.now() - t]) });
        await time(`timeline of a ${size.toLocaleString('en')}-event session, opened again`, path);
        await time(`500 events from the middle of the ${size.toLocaleString('en')}-event session`, `/v1/sessions/session-${size}/events?afterTurn=${size / 2}&limit=500`);
      }
      await time(`feed: first page of 100 (of ${engramCount.toLocaleString('en')} engrams)`, '/v1/dashboard/engrams?limit=100');
      await time(`feed: page at offset ${Math.max(0, Math.min(engramCount, 5000) - 100)}`, `/v1/dashboard/engrams?limit=100&offset=${Math.max(0, Math.min(engramCount, 5000) - 100)}`);
      await time('feed filtered by kind=risk and role=tester', '/v1/dashboard/engrams?limit=100&kind=risk&role=tester');
      await time('briefs (one parent, 4 children)', '/v1/dashboard/briefs');
      await time('budget meters (6 agents)', '/v1/dashboard/agents');
      await time(`sessions, first page of 100 (of ${(sessionCount + sizes.length).toLocaleString('en')}; host, first request, summary line)`, '/v1/dashboard/sessions?limit=100');
      const listed: number[] = [];
      for (let i = 0; i <= REPEATS; i++) {
        const t = performance.now();
        const all = await mem.viewAs().sessionOverviews();
        if (all.length !== sessionCount + sizes.length) throw new Error(`sessions: ${all.length}`);
        if (i > 0) listed.push(performance.now() - t);
      }
      rows.push({ what: `every session with host, first request and summary line (\`engram sessions\`, in process; ${(sessionCount + sizes.length).toLocaleString('en')} sessions)`, ms: summarize(listed) });
      await time('overview', '/v1/dashboard/overview');

      // Live: how long from a child's engram put until an open stream delivers it.
      const ac = new AbortController();
      const res = await fetch(`${server.url}/v1/dashboard/stream`, { headers: { Authorization: `Bearer ${lead.token}` }, signal: ac.signal });
      const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      const waitFor = async (text: string) => {
        while (!buffer.includes(text)) {
          const { value, done } = await reader.read();
          if (done) throw new Error('stream ended');
          buffer += value;
        }
      };
      await waitFor('event: ready');
      const delays: number[] = [];
      for (let i = 0; i < STREAM_SAMPLES; i++) {
        const claim = `Live engram ${i} for the stream.`;
        const t = performance.now();
        const put = await fetch(`${server.url}/v1/engram`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${childToken}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ kind: 'fact', claim, pointers: [{ type: 'repo', ref: `repo:src/a.py#L1-L2@${sha}` }], confidence: 0.9, ttl: 'P1D', scope: 'project' }),
        });
        if (put.status !== 201) throw new Error(`put: ${put.status}`);
        const count = (buffer.match(/less\.engram\.put/g) ?? []).length;
        while ((buffer.match(/less\.engram\.put/g) ?? []).length <= count) {
          const { value, done } = await reader.read();
          if (done) throw new Error('stream ended');
          buffer += value;
        }
        delays.push(performance.now() - t);
      }
      ac.abort();
      rows.push({ what: 'live: engram put until the stream delivers it', ms: summarize(delays) });
    } finally {
      await server.close();
    }
  } finally {
    await mem.close();
    rmSync(dir, { recursive: true, force: true });
    repo.remove();
  }

  const out = join('bench', 'results');
  mkdirSync(out, { recursive: true });
  const report = { started: started.toISOString(), machine: machineLine(), sizes, engrams: engramCount, sessions: sessionCount, seedingMs: seeding, rows };
  writeFileSync(join(out, 'dashboard.json'), `${JSON.stringify(report, null, 2)}\n`);
  const md = [
    '# Dashboard endpoints at scale',
    '',
    `\`npm run bench -- dashboard --sizes ${sizes.join(',')} --engrams ${engramCount} --sessions ${sessionCount}\` (bench/dashboard.ts), ${started.toISOString().slice(0, 10)}; ${machineLine()}.`,
    '',
    `SQLite store, real HTTP on loopback, admin token; each request ${REPEATS} times after one warm-up (the live row: ${STREAM_SAMPLES} engrams).`,
    'The page renders only the rows in view and asks for pages as it scrolls (100 engrams, 500 events at a time).',
    '',
    '| request | p50 ms | p95 ms | n |',
    '| --- | ---: | ---: | ---: |',
    ...rows.map((r) => `| ${r.what} | ${round(r.ms.p50, 1)} | ${round(r.ms.p95, 1)} | ${r.ms.n} |`),
    '',
    'Seeding: ' + Object.entries(seeding).map(([k, v]) => `${k} in ${round(v / 1000, 1)} s`).join('; ') + '.',
    '',
    'The live stream polls the store once a second (and telemetry is written within 250 ms of the event), so a',
    'change reaches an open page in about one poll.',
    '',
  ].join('\n');
  writeFileSync(join(out, 'dashboard.md'), md);
  console.error(md);
}
