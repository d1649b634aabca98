import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { agentTrace, recallQueries } from './agent-trace.js';
import { createHttpClient } from './http-client.js';
import { Prng } from './prng.js';
import { readCpuMs } from './proc-cpu.js';
import { round } from './stats.js';

/** The frameworks the floor is measured on: plain node:http, and Hono on @hono/node-server (what `engram serve` runs). */
export const HTTP_FLOOR_FRAMEWORKS = ['node-http', 'hono'] as const;
export type HttpFloorFramework = (typeof HTTP_FLOOR_FRAMEWORKS)[number];

/** A recall answer's size in bytes, about Engram's at k 5 and 1,000 tokens (6,365 on average over 200 of the loop's ordinary queries). */
export const RECALL_ANSWER_BYTES = 6_000;

/** What HTTP and JSON alone cost a server per request: CPU ms of the serving process, by framework. */
export interface HttpFloor {
  agents: number;
  batch: number;
  seconds: number;
  answerBytes: number;
  frameworks: Array<{ framework: HttpFloorFramework; appendMs: number; appends: number; recallMs: number; recalls: number }>;
}

/**
 * The HTTP floor under issue #32's per-core targets: a server that does nothing but HTTP and JSON
 * (http-floor-child.ts) in its own process, driven by `agents` closed loops over keep-alive sockets with the requests
 * http-load sends (an append of `batch` agent-trace events, keyed, a needle in the first; a recall of one of its
 * queries), `seconds` of appends then `seconds` of recalls, each after a second of warm-up. Server CPU from /proc over
 * each window, per request, as the server's figures in http-load.
 */
export async function measureHttpFloor(options: { agents: number; batch: number; seconds: number }): Promise<HttpFloor> {
  const frameworks: HttpFloor['frameworks'] = [];
  for (const framework of HTTP_FLOOR_FRAMEWORKS) frameworks.push({ framework, ...(await measureOne(framework, options)) });
  return { ...options, answerBytes: RECALL_ANSWER_BYTES, frameworks };
}

async function measureOne(framework: HttpFloorFramework, { agents, batch, seconds }: { agents: number; batch: number; seconds: number }) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/lib/http-floor-child.ts', framework, String(RECALL_ANSWER_BYTES)], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const first = await new Promise<string>((resolve, reject) => {
      child.stdout.once('data', (chunk: Buffer) => resolve(String(chunk)));
      child.once('exit', (code) => reject(new Error(`the HTTP floor's server (${framework}) exited with ${code} before it listened`)));
    });
    const port = Number(first.trim());
    if (!Number.isInteger(port) || port <= 0) throw new Error(`the HTTP floor's server printed ${first}`);
    const client = createHttpClient(`http://127.0.0.1:${port}`, agents);
    const traces = Array.from({ length: agents }, (_, a) => ({ trace: agentTrace(1_000_000, { seed: 1 + a, sessions: 1 }), rng: new Prng(1000 + a), queries: recallQueries(1_000, 100 + a), turn: 0 }));
    const appendBody = (a: number): string => {
      const src = traces[a]!;
      src.turn++;
      const needle = `needle-${a}-${src.turn}-${src.rng.hex(8)}`;
      const events = Array.from({ length: batch }, (_, j) => {
        const { event } = src.trace.next().value!;
        return { ...event, ts: Date.now(), key: `agent-${a}:${src.turn}:${j}`, ...(j === 0 ? { content: `${event.content}\n${needle}` } : {}) };
      });
      return JSON.stringify({ sessionId: `load-${a}`, events });
    };
    const recallBody = (a: number): string => {
      const src = traces[a]!;
      src.turn++;
      return JSON.stringify({ query: src.queries[src.turn % src.queries.length], k: 5, budgetTokens: 1000 });
    };
    const run = async (path: string, body: (a: number) => string): Promise<{ ms: number; requests: number }> => {
      let requests = 0;
      let measuring = false;
      let stop = false;
      const loops = Array.from({ length: agents }, async (_, a) => {
        while (!stop) {
          const res = await client.post(path, 'floor', body(a));
          if (!res.ok) throw new Error(`the HTTP floor's server answered ${res.status} to ${path}`);
          if (measuring) requests++;
        }
      });
      await sleep(1_000);
      measuring = true;
      const from = readCpuMs(child.pid!);
      const startedAt = performance.now();
      await sleep(seconds * 1_000);
      const to = readCpuMs(child.pid!);
      measuring = false;
      stop = true;
      await Promise.all(loops);
      if (from === null || to === null) throw new Error('the HTTP floor needs /proc to read the server\'s CPU time');
      if (requests === 0) throw new Error(`no ${path} request was answered in ${round((performance.now() - startedAt) / 1000, 1)} s`);
      return { ms: round((to - from) / requests, 3), requests };
    };
    const appended = await run('/v1/events', appendBody);
    const recalled = await run('/v1/recall', recallBody);
    client.close();
    return { appendMs: appended.ms, appends: appended.requests, recallMs: recalled.ms, recalls: recalled.requests };
  } finally {
    child.kill();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
