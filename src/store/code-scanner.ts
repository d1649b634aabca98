/**
 * Runs a code set's first pass (vector-code-set.ts) on a worker thread, so the thread that asked is free
 * meanwhile: recall starts its vector search before its full-text search (src/memory/recall.ts), and with
 * better-sqlite3 the full-text search runs on the calling thread, so the two overlap instead of adding up
 * (bench/results/scale.md, issue #14). The set's arrays are SharedArrayBuffers: a request posts them (shared, not
 * copied) with the slot count they held then, the query, the filter as lookup tables, `want` and the prefilter; the
 * worker posts back the positions. The exact re-rank stays with the caller.
 *
 * One worker per scanner (one per store's code index), started at the first scan that wants it and terminated by
 * {@link CodeScanner.close}; unreferenced while idle, so it never keeps a process alive. Sets smaller than
 * {@link CodeScannerOptions.minCodes} are scanned on the caller's thread: a round trip to the worker costs more
 * than their scan saves. A worker that fails or exits with scans in flight is reported (a process warning) and
 * those scans run on the caller's thread, so no query is lost; after {@link MAX_WORKER_FAILURES} failures the
 * scanner stays on the caller's thread.
 */
import { Worker } from 'node:worker_threads';
import type { CodeFilter } from './vector-codes.js';
import type { CodeArrays, CodeQuery, CodeScanOptions, CodeSet, SlotFilter } from './vector-code-set.js';
import { scanCodes } from './vector-code-set.js';

/** A scan as posted to the worker (code-scan-worker.ts). */
export interface CodeScanRequest {
  id: number;
  set: CodeArrays;
  query: CodeQuery;
  filter: SlotFilter | null;
  want: number;
  prefilter: number;
}

/** The worker's answer: the positions found, best first, or why it failed. */
export type CodeScanResponse = { id: number; positions: Int32Array } | { id: number; error: string };

export interface CodeScannerOptions {
  /**
   * Codes from which a scan runs on the worker thread (default {@link DEFAULT_WORKER_MIN_CODES}); `Infinity`
   * keeps every scan on the caller's thread.
   */
  minCodes?: number;
}

/**
 * Sets from this many codes are scanned on the worker. Below it the scan is short (about 1.5 ms at 65,536 codes of
 * 256 bits, the gated scan being ~24 ms at 1M: bench/results/scale.md) and a worker round trip (~0.2-0.5 ms under
 * load) would take a good share of what it frees.
 */
export const DEFAULT_WORKER_MIN_CODES = 65_536;
/** Worker failures after which a scanner stops starting workers. */
export const MAX_WORKER_FAILURES = 3;
/** The warning code of a worker failure (process.emitWarning). */
export const WORKER_WARNING_CODE = 'ENGRAM_CODE_SCAN_WORKER';

interface Pending {
  resolve: (positions: Int32Array) => void;
  reject: (err: Error) => void;
}

export class CodeScanner {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private failures = 0;
  private isClosed = false;
  readonly minCodes: number;

  constructor(options: CodeScannerOptions = {}) {
    this.minCodes = options.minCodes ?? DEFAULT_WORKER_MIN_CODES;
  }

  /**
   * The `want` best slots of `set` for `query` among those passing `filter`, as positions, best first: what
   * `set.scan` returns, from the worker when the set is large enough. Scans the slots the set holds now; appends
   * made while it runs are not seen (the caller compares those exactly as its tail).
   */
  async scan(set: CodeSet, query: CodeQuery, filter: CodeFilter | null, want: number, options: CodeScanOptions): Promise<number[]> {
    if (!this.usesWorker(set.count)) return set.scan(query, filter, want, options);
    const request: CodeScanRequest = { id: this.nextId++, set: set.snapshot(), query, filter: set.slotFilter(filter), want, prefilter: options.prefilter };
    try {
      return Array.from(await this.post(request));
    } catch {
      // The worker failed (reported when it did): this scan runs here instead, on the same snapshot.
      return Array.from(scanCodes(request.set, query, request.filter, want, options.prefilter));
    }
  }

  /**
   * Starts the worker now if a set of `count` codes would be scanned on it: called when a set starts loading, so
   * the worker's start (tens of ms: a thread, its modules) overlaps reading the blocks rather than the first query.
   */
  prepare(count: number): void {
    if (this.usesWorker(count)) this.start();
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
    return this.worker !== undefined;
  }

  /** Stops the worker (scans in flight finish on the caller's thread); later scans run on the caller's thread. */
  async close(): Promise<void> {
    this.isClosed = true;
    const worker = this.worker;
    if (!worker) return;
    this.fail(worker, null);
    await worker.terminate();
  }

  /** Ends the worker as a crash would (tests): scans in flight fall back to the caller's thread. */
  async crashForTest(): Promise<void> {
    const worker = this.worker;
    if (worker) await worker.terminate();
  }

  private post(request: CodeScanRequest): Promise<Int32Array> {
    const worker = this.start();
    return new Promise<Int32Array>((resolve, reject) => {
      this.pending.set(request.id, { resolve, reject });
      // Referenced while a scan is in flight: a process awaiting only this answer must not exit meanwhile.
      if (this.pending.size === 1) worker.ref();
      worker.postMessage(request);
    });
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = spawnWorker();
    worker.unref();
    worker.on('message', (response: CodeScanResponse) => {
      const p = this.pending.get(response.id);
      if (!p) return;
      this.pending.delete(response.id);
      if (this.pending.size === 0) worker.unref();
      if ('error' in response) {
        this.warn(new Error(`the code scan worker failed a scan: ${response.error}`));
        p.reject(new Error(response.error));
      } else p.resolve(response.positions);
    });
    worker.on('error', (err) => this.fail(worker, err));
    worker.on('exit', (code) => this.fail(worker, this.isClosed ? null : new Error(`the code scan worker exited (code ${code})`)));
    this.worker = worker;
    return worker;
  }

  /** Drops `worker` (once) and hands its scans in flight back to their callers; `err` is reported and counted. */
  private fail(worker: Worker, err: Error | null): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    if (err !== null) {
      this.failures++;
      this.warn(err);
    }
    const stranded = [...this.pending.values()];
    this.pending.clear();
    for (const p of stranded) p.reject(err ?? new Error('the code scanner closed'));
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
