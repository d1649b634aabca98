import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * Runs WAL checkpoints on a worker thread with its own connection, so the copy from the WAL into the
 * database never lands on an append's latency. Measured on 3,000 single-event appends to a 10K-event store:
 * with SQLite's automatic checkpoint (every 1,000 pages, done by the committing connection) p99 was 3.6 ms,
 * without it 1.6 ms. PASSIVE checkpoints never block the writer or readers.
 */
export interface Checkpointer {
  stop(): Promise<void>;
}

const DEFAULT_INTERVAL_MS = 500;

// The worker is given as source (eval) so it runs the same way from compiled dist/ and from TypeScript
// sources under the test runner; it loads the very driver the main thread uses.
const WORKER_SOURCE = `
const { workerData, parentPort } = require('node:worker_threads');
const Database = require(workerData.driverPath);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma('busy_timeout = 0');
const timer = setInterval(() => {
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch { /* busy: the next tick tries again */ }
}, workerData.intervalMs);
parentPort.on('message', () => { clearInterval(timer); db.close(); parentPort.close(); });
`;

/**
 * The worker starts this long after the store opens, not with it: a short command (a CLI recall, `engram show`)
 * is done before then and never pays for a thread that boots Node and the driver (~30-60 ms of CPU on a 2-core
 * machine, issue #14 "CLI start to first recall"); until it starts, the committing connection's own fallback
 * checkpoint (sqlite-connection.ts) bounds the WAL.
 */
export const CHECKPOINTER_START_DELAY_MS = 1000;

export function startCheckpointer(path: string, intervalMs = DEFAULT_INTERVAL_MS, startDelayMs = CHECKPOINTER_START_DELAY_MS): Checkpointer {
  let worker: Worker | undefined;
  let stopped: Promise<void> | undefined;
  const startWorker = (): void => {
    const driverPath = createRequire(import.meta.url).resolve('better-sqlite3');
    worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path, driverPath, intervalMs } });
    // Never keep a CLI process alive just for checkpoints.
    worker.unref();
  };
  const timer = setTimeout(startWorker, startDelayMs);
  timer.unref();
  return {
    stop() {
      clearTimeout(timer);
      const running = worker;
      if (!running) return (stopped ??= Promise.resolve());
      stopped ??= new Promise<void>((resolve) => {
        // Keep the process alive until the worker has closed its connection (an unref'd worker
        // would let the event loop drain mid-close: Node then exits with code 13).
        running.ref();
        // A worker that died already never emits exit again: give up waiting after 2 s.
        const fallback = setTimeout(() => void running.terminate().then(done), 2000);
        function done(): void {
          clearTimeout(fallback);
          resolve();
        }
        running.once('exit', done);
        running.once('error', done);
        running.postMessage('stop');
      });
      return stopped;
    },
  };
}
