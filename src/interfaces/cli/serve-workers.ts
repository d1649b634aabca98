import cluster, { type Worker } from 'node:cluster';
import { EngramError } from '../../errors.js';

/** Set in the environment of the processes `engram serve --workers N` forks: they serve HTTP and nothing else. */
export const SERVE_WORKER_ENV = 'ENGRAM_SERVE_WORKER';
/** Most processes `--workers` starts. */
export const MAX_SERVE_WORKERS = 64;
/** A worker that dies is replaced, unless this many died within {@link RESPAWN_WINDOW_MS} (a crash loop). */
const MAX_RESPAWNS = 5;
const RESPAWN_WINDOW_MS = 10_000;

/** What a worker tells the primary. */
type WorkerMessage = { engramServe: 'listening'; url: string; port: number } | { engramServe: 'failed'; message: string };

/** True in a process forked by {@link startServeWorkers}. */
export function isServeWorker(): boolean {
  return cluster.isWorker && process.env[SERVE_WORKER_ENV] !== undefined;
}

/** Parses `--workers`: a whole number from 1 to {@link MAX_SERVE_WORKERS}. */
export function parseWorkers(value: string | undefined): number {
  if (value === undefined) return 1;
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isInteger(n) || n < 1 || n > MAX_SERVE_WORKERS) {
    throw new EngramError('INVALID_INPUT', `--workers: expected a whole number from 1 to ${MAX_SERVE_WORKERS}, got "${value}"`, { field: 'workers' });
  }
  return n;
}

/** In a worker: tells the primary the server listens (or could not start). */
export function reportToPrimary(message: WorkerMessage): void {
  process.send?.(message);
}

/** In a worker, once its server is closed: lets the process exit (the IPC channel to the primary would keep it alive). */
export function leavePrimary(): void {
  if (process.connected) process.disconnect?.();
}

/** In a worker: resolves when the primary is gone (its IPC channel closed), so the worker stops too. */
export function primaryGone(): Promise<void> {
  return new Promise((resolve) => {
    if (!process.connected) resolve();
    process.once('disconnect', () => resolve());
  });
}

export interface ServeWorkers {
  url: string;
  port: number;
  /** Live worker processes' ids (the bench reads their CPU time). */
  pids(): number[];
  /** Sends SIGTERM to every worker (each finishes its requests in flight) and resolves once all have exited; true if all exited 0. */
  stop(): Promise<boolean>;
}

/**
 * `engram serve --workers N` (node:cluster): N processes run the same command line, each with its own connection to
 * the store, and share the listening socket (the primary hands each new connection to the next worker in turn).
 * SQLite in WAL mode lets them read at once and serializes their write transactions; PostgreSQL serves them as any
 * several servers. This process, the primary, answers no request: it keeps the background work (the embedding
 * worker, consolidation, the artifact lifecycle), so that runs once per store. A worker that dies is replaced.
 */
export async function startServeWorkers(count: number, log: (line: string) => void): Promise<ServeWorkers> {
  let isStopping = false;
  const deaths: number[] = [];
  const live = new Set<Worker>();
  /** Workers that have reported listening: one stopped before that never took a request, so its exit is not a failure. */
  const serving = new WeakSet<Worker>();
  let listening: { url: string; port: number } | undefined;

  const fork = (): Promise<{ url: string; port: number }> =>
    new Promise((resolve, reject) => {
      const worker = cluster.fork({ [SERVE_WORKER_ENV]: String(live.size + 1) });
      live.add(worker);
      let started = false;
      worker.on('message', (m: WorkerMessage) => {
        if (m?.engramServe === 'listening') {
          started = true;
          serving.add(worker);
          resolve({ url: m.url, port: m.port });
        } else if (m?.engramServe === 'failed') reject(new EngramError('INVALID_INPUT', m.message, { field: 'workers' }));
      });
      worker.once('exit', (code, signal) => {
        live.delete(worker);
        if (!started) {
          reject(new EngramError('STORAGE_ERROR', `a serve worker exited (${signal ?? code}) before listening`, {}));
          return;
        }
        // A clean exit was asked for (Ctrl-C reaches every process of the terminal's group): not replaced.
        if (isStopping || (code === 0 && signal === null)) return;
        const now = Date.now();
        deaths.push(now);
        while (deaths.length > 0 && deaths[0]! < now - RESPAWN_WINDOW_MS) deaths.shift();
        if (deaths.length > MAX_RESPAWNS) {
          log(`engram serve: worker ${worker.process.pid} exited (${signal ?? code}); ${deaths.length} exits within ${RESPAWN_WINDOW_MS / 1000} s, not replaced`);
          return;
        }
        log(`engram serve: worker ${worker.process.pid} exited (${signal ?? code}); starting another`);
        fork().catch((err: unknown) => log(`engram serve: replacing a worker failed: ${(err as Error).message}`));
      });
    });

  const stop = async (): Promise<boolean> => {
    isStopping = true;
    const exits = [...live].map(
      (w) =>
        new Promise<boolean>((resolve) => {
          if (w.isDead()) return resolve(w.process.exitCode === 0 || !serving.has(w));
          w.once('exit', (code) => resolve(code === 0 || !serving.has(w)));
          try {
            w.process.kill('SIGTERM');
          } catch {
            // Already gone: its exit event settles this.
          }
        }),
    );
    return (await Promise.all(exits)).every(Boolean);
  };

  try {
    // The first worker picks the port (with --port 0, a free one); the others then share it.
    listening = await fork();
    const rest = await Promise.all(Array.from({ length: count - 1 }, () => fork()));
    if (rest.some((r) => r.port !== listening!.port)) throw new EngramError('STORAGE_ERROR', 'serve workers listen on different ports', {});
  } catch (err) {
    await stop();
    throw err;
  }
  return { ...listening, pids: () => [...live].flatMap((w) => (w.process.pid !== undefined ? [w.process.pid] : [])), stop };
}
