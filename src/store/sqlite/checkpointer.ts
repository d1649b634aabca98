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

export function startCheckpointer(path: string, intervalMs = DEFAULT_INTERVAL_MS): Checkpointer {
  const driverPath = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path, driverPath, intervalMs } });
  // Never keep a CLI process alive just for checkpoints.
  worker.unref();
  let stopped: Promise<void> | undefined;
  return {
    stop() {
      stopped ??= new Promise<void>((resolve) => {
        // Keep the process alive until the worker has closed its connection (an unref'd worker
        // would let the event loop drain mid-close: Node then exits with code 13).
        worker.ref();
        // A worker that died already never emits exit again: give up waiting after 2 s.
        const fallback = setTimeout(() => void worker.terminate().then(done), 2000);
        function done(): void {
          clearTimeout(fallback);
          resolve();
        }
        worker.once('exit', done);
        worker.once('error', done);
        worker.postMessage('stop');
      });
      return stopped;
    },
  };
}
