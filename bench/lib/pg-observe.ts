/**
 * Where a PostgreSQL run's time goes beyond the server's own CPU: the queries the servers sent (each one a round
 * trip; counted in the driver of every serving process, bench/lib/pg-query-count.ts) and the CPU of the PostgreSQL
 * backends that served them (from /proc, found in pg_stat_activity by the application name the bench gives the
 * servers' connection URL; other sessions on the same PostgreSQL are not counted).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { readCpuMs } from './proc-cpu.js';

/** The environment variable that turns the driver's query counter on in bench/lib/serve-child.ts (its value: a directory). */
export const QUERY_COUNT_ENV = 'ENGRAM_BENCH_QUERY_COUNT_DIR';

export interface PgObserver {
  /** The store URL with this run's application name (the servers connect with it). */
  url: string;
  /** Environment for the serving processes: turns the query counter on. */
  env: Record<string, string>;
  /** Asks every serving process for its query count (SIGUSR2) and notes the backends' CPU; `label` names the moment. */
  snapshot(label: 'from' | 'to', serverPids: readonly number[]): Promise<void>;
  /** Queries sent and backend CPU ms between the two snapshots; null where one is missing. */
  window(): { queries: number | null; backendCpuMs: number | null; backends: number };
  close(): Promise<void>;
}

interface Moment {
  counts: Map<number, number>;
  backendCpu: Map<number, number>;
}

/** An observer for the servers of one run on `storeUrl` (the bench's PostgreSQL URL with `?schema=`), `baseUrl` for its own queries. */
export async function createPgObserver(storeUrl: string, baseUrl: string): Promise<PgObserver> {
  const appName = `engram-bench-${randomBytes(4).toString('hex')}`;
  const dir = mkdtempSync(join(tmpdir(), 'engram-pg-count-'));
  const client = new pg.Client({ connectionString: baseUrl, application_name: 'engram-bench-observer' });
  await client.connect();
  const moments = new Map<string, Moment>();
  let signals = 0;
  return {
    // The URL's application_name wins over the one Engram gives its pool (node-postgres reads the URL last).
    url: `${storeUrl}${storeUrl.includes('?') ? '&' : '?'}application_name=${appName}`,
    env: { [QUERY_COUNT_ENV]: dir },
    async snapshot(label, serverPids) {
      const seq = ++signals;
      for (const pid of serverPids) {
        try {
          process.kill(pid, 'SIGUSR2');
        } catch {
          // exited: its count is lost
        }
      }
      const { rows } = await client.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [appName]);
      const backendCpu = new Map<number, number>();
      for (const { pid } of rows) {
        const ms = readCpuMs(pid);
        if (ms !== null) backendCpu.set(pid, ms);
      }
      // Each process writes `<pid>.<seq>` when it handles the signal; wait for them (a busy event loop answers late).
      const counts = new Map<number, number>();
      const deadline = Date.now() + 5000;
      while (Date.now() < deadline) {
        for (const pid of serverPids) {
          const file = join(dir, `${pid}.${seq}`);
          if (!counts.has(pid) && existsSync(file)) counts.set(pid, Number(readFileSync(file, 'utf8')));
        }
        if (counts.size === serverPids.length) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      moments.set(label, { counts, backendCpu });
    },
    window() {
      const from = moments.get('from');
      const to = moments.get('to');
      if (!from || !to) return { queries: null, backendCpuMs: null, backends: 0 };
      let queries: number | null = 0;
      for (const [pid, n] of to.counts) {
        const before = from.counts.get(pid);
        if (before === undefined) queries = null;
        else if (queries !== null) queries += n - before;
      }
      if (to.counts.size === 0) queries = null;
      // A backend that connected during the window counts from zero (its start-up is in it).
      let backendCpuMs = 0;
      for (const [pid, ms] of to.backendCpu) backendCpuMs += ms - (from.backendCpu.get(pid) ?? 0);
      return { queries, backendCpuMs: to.backendCpu.size > 0 ? backendCpuMs : null, backends: to.backendCpu.size };
    },
    async close() {
      await client.end();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
