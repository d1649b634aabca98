/**
 * Runs a code set's first pass (vector-code-set.ts) on a worker thread, so the thread that asked is free
 * meanwhile: recall starts its vector search before its full-text search (src/memory/recall.ts), and with
 * better-sqlite3 the full-text search runs on the calling thread, so the two overlap instead of adding up
 * (bench/results/scale.md, issue #14). The set's arrays are SharedArrayBuffers: a request posts them (shared, not
 * copied) with the slot count they held then, the query, the filter as lookup tables, `want` and the prefilter; the
 * worker posts back its best positions with their estimates. The exact re-rank stays with the caller. With
 * {@link CodeScannerOptions.threads} above one, the slots are split in even ranges, one a worker, gated by the same
 * cut and merged ({@link mergeRanges}): ties go to the lower position, so the result is the calling thread's.
 *
 * One worker per scanner (one per store's code index) by default, started when a large set starts loading
 * ({@link CodeScanner.prepare}) or at the first scan that wants it, and terminated by
 * {@link CodeScanner.close}; unreferenced while idle, so it never keeps a process alive. Sets smaller than
 * {@link CodeScannerOptions.minCodes} are scanned on the caller's thread: a round trip to the worker costs more
 * than their scan saves. A worker that fails or exits with scans in flight is reported (a process warning) and
 * those scans run on the caller's thread, so no query is lost; after {@link MAX_WORKER_FAILURES} failures the
 * scanner stays on the caller's thread.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { CodeFilter } from './vector-codes.js';
import type { CodeArrays, CodeQuery, CodeScanOptions, CodeSet, RangeScan, SlotFilter } from './vector-code-set.js';
import { isGated, mergeRanges, scanCodes } from './vector-code-set.js';

/** One range of a scan as posted to a worker (code-scan-worker.ts; vector-code-set.ts scanRange). */
export interface CodeScanRequest {
  id: number;
  set: CodeArrays;
  query: CodeQuery;
  filter: SlotFilter | null;
  want: number;
  prefilter: number;
  from: number;
  to: number;
  gated: boolean;
}

/** A worker's answer: its range's best, or why it failed. */
export type CodeScanResponse = { id: number; range: RangeScan } | { id: number; error: string };

export interface CodeScannerOptions {
  /**
   * Codes from which a scan runs on the worker thread (default {@link DEFAULT_WORKER_MIN_CODES}); `Infinity`
   * keeps every scan on the caller's thread.
   */
  minCodes?: number;
  /**
   * Worker threads a scan is split over, each taking an even range of the slots (default
   * {@link DEFAULT_SCAN_THREADS}, at most the machine's parallelism).
   */
  threads?: number;
}

/**
 * Sets from this many codes are scanned on the worker. Below it the scan is short (about 1.5 ms at 65,536 codes of
 * 256 bits, the gated scan being ~24 ms at 1M: bench/results/scale.md) and a worker round trip (~0.2-0.5 ms under
 * load) would take a good share of what it frees.
 */
export const DEFAULT_WORKER_MIN_CODES = 65_536;
/**
 * Worker threads a scan is split over by default: one. Two would halve the first pass (~22 ms at 1M codes on one
 * thread) only with two cores free beside the calling thread; on this project's 2-core machine shared with other
 * work, two were slower (bench/code-scan.ts, load average 5: p50 46 ms on two, 35 on one; min 25 / 22).
 */
export const DEFAULT_SCAN_THREADS = 1;
/** Worker failures after which a scanner stops starting workers. */
export const MAX_WORKER_FAILURES = 3;
/** The warning code of a worker failure (process.emitWarning). */
export const WORKER_WARNING_CODE = 'ENGRAM_CODE_SCAN_WORKER';

interface Pending {
  worker: Worker;
  resolve: (range: RangeScan) => void;
  reject: (err: Error) => void;
}

export class CodeScanner {
  private readonly workers: Array<Worker | undefined>;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private failures = 0;
  private isClosed = false;
  readonly minCodes: number;

  constructor(options: CodeScannerOptions = {}) {
    this.minCodes = options.minCodes ?? DEFAULT_WORKER_MIN_CODES;
    const threads = Math.max(1, Math.min(options.threads ?? DEFAULT_SCAN_THREADS, availableParallelism()));
    this.workers = new Array<Worker | undefined>(threads).fill(undefined);
  }

  /**
   * The `want` best slots of `set` for `query` among those passing `filter`, as positions, best first: what
   * `set.scan` returns, from the worker when the set is large enough. Scans the slots the set holds now; appends
   * made while it runs are not seen (the caller compares those exactly as its tail).
   */
  async scan(set: CodeSet, query: CodeQuery, filter: CodeFilter | null, want: number, options: CodeScanOptions): Promise<number[]> {
    if (!this.usesWorker(set.count)) return set.scan(query, filter, want, options);
    const snapshot = set.snapshot();
    const slots = set.slotFilter(filter);
    const { prefilter } = options;
    // Even ranges, one a worker; every range gated by the same cut, so the merged best is the whole set's.
    const ranges = (gated: boolean): Promise<RangeScan[]> => {
      const n = this.workers.length;
      const step = Math.ceil(snapshot.count / n);
      return Promise.all(
        this.workers.map((_, w) =>
          this.post(w, { id: this.nextId++, set: snapshot, query, filter: slots, want, prefilter, from: Math.min(snapshot.count, w * step), to: Math.min(snapshot.count, (w + 1) * step), gated }),
        ),
      );
    };
    try {
      const gated = isGated(snapshot.count, prefilter);
      let parts = await ranges(gated);
      // Fewer than `want` within the cut (a narrow filter): every allowed slot, as the calling thread does.
      if (gated && parts.reduce((n, p) => n + p.scored, 0) < want) parts = await ranges(false);
      return Array.from(mergeRanges(parts, want));
    } catch {
      // A worker failed (reported when it did): this scan runs here instead, on the same snapshot.
      return Array.from(scanCodes(snapshot, query, slots, want, prefilter));
    }
  }

  /**
   * Starts the worker now if a set of `count` codes would be scanned on it: called when a set starts loading, so
   * the worker's start (tens of ms: a thread, its modules) overlaps reading the blocks rather than the first query.
   */
  prepare(count: number): void {
    if (this.usesWorker(count)) this.workers.forEach((_, w) => this.start(w));
  }

  /** Whether a scan of `count` codes goes to the worker. */
  usesWorker(count: number): boolean {
    return !this.isClosed && count >= this.minCodes && this.failures < MAX_WORKER_FAILURES;
  }

  /** Scans posted to the worker and not answered yet. */
  get inFlight(): number {
    return this.pending.size;
  }

  /** Whether a worker is running (for tests and benchmarks). */
  get hasWorker(): boolean {
    return this.workers.some((w) => w !== undefined);
  }

  /** Stops the workers (scans in flight finish on the caller's thread); later scans run on the caller's thread. */
  async close(): Promise<void> {
    this.isClosed = true;
    const running = this.workers.filter((w): w is Worker => w !== undefined);
    for (const w of running) this.fail(w, null);
    await Promise.all(running.map((w) => w.terminate()));
  }

  /** Ends the workers as a crash would (tests): scans in flight fall back to the caller's thread. */
  async crashForTest(): Promise<void> {
    await Promise.all(this.workers.map((w) => w?.terminate()));
  }

  private post(w: number, request: CodeScanRequest): Promise<RangeScan> {
    const worker = this.start(w);
    return new Promise<RangeScan>((resolve, reject) => {
      this.pending.set(request.id, { worker, resolve, reject });
      // Referenced while a scan is in flight: a process awaiting only this answer must not exit meanwhile.
      worker.ref();
      worker.postMessage(request);
    });
  }

  private start(w: number): Worker {
    const running = this.workers[w];
    if (running) return running;
    const worker = spawnWorker();
    worker.unref();
    worker.on('message', (response: CodeScanResponse) => {
      const p = this.pending.get(response.id);
      if (!p) return;
      this.pending.delete(response.id);
      if (![...this.pending.values()].some((q) => q.worker === worker)) worker.unref();
      if ('error' in response) {
        this.warn(new Error(`the code scan worker failed a scan: ${response.error}`));
        p.reject(new Error(response.error));
      } else p.resolve(response.range);
    });
    worker.on('error', (err) => this.fail(worker, err));
    worker.on('exit', (code) => this.fail(worker, this.isClosed ? null : new Error(`the code scan worker exited (code ${code})`)));
    this.workers[w] = worker;
    return worker;
  }

  /** Drops `worker` (once) and hands its scans in flight back to their callers; `err` is reported and counted. */
  private fail(worker: Worker, err: Error | null): void {
    const w = this.workers.indexOf(worker);
    if (w < 0) return;
    this.workers[w] = undefined;
    if (err !== null) {
      this.failures++;
      this.warn(err);
    }
    for (const [id, p] of [...this.pending]) {
      if (p.worker !== worker) continue;
      this.pending.delete(id);
      p.reject(err ?? new Error('the code scanner closed'));
    }
  }

  private warn(err: Error): void {
    process.emitWarning(`${err.message}; the scan runs on the calling thread instead`, { code: WORKER_WARNING_CODE });
  }
}

/**
 * The worker, from the compiled file beside this one (dist/, which the CLI bundle's modules resolve to as well),
 * or when running from the TypeScript sources (tests, benchmarks under tsx) from the .ts file through tsx's loader.
 */
function spawnWorker(): Worker {
  const here = import.meta.url;
  if (here.endsWith('.ts')) {
    const url = new URL('./code-scan-worker.ts', here).href;
    const boot = `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(url)}); })`;
    return new Worker(boot, { eval: true });
  }
  return new Worker(new URL('./code-scan-worker.js', here));
}
