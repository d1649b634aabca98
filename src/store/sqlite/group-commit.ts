import type Database from 'better-sqlite3';

type Db = Database.Database;

interface Job<R> {
  run: () => R;
  resolve: (value: R) => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit for one SQLite connection: writes that arrive while the event loop is busy with other work (a
 * server's concurrent requests) are run together in one transaction, committed once, at the next turn of the
 * event loop. Each write runs in a savepoint of its own, in arrival order, so one that throws is undone alone and
 * fails alone; the others still commit. Every caller's promise settles only after the commit that holds its
 * write (or with the commit's error: then none of the batch is stored), so an acknowledged write is as durable
 * as one committed alone.
 *
 * Why: every commit of a write transaction flushes FTS5's pending terms into a new index segment and writes the
 * touched pages to the WAL; one commit for several appends pays that once (bench/results/http-load.md).
 */
export class GroupCommit {
  private queue: Array<Job<unknown>> = [];
  private isScheduled = false;
  /** Writes in the last batch, and the most in one batch so far (bench and tests). */
  readonly stats = { batches: 0, writes: 0, largestBatch: 0 };

  constructor(
    private readonly db: Db,
    /** Most writes in one transaction; the rest go in the next. */
    private readonly maxBatch = 64,
    /**
     * While this returns a promise, the next batch waits for it: the owner's transaction on another connection of
     * this process holds the write lock, and this batch's BEGIN would wait for it in SQLite's busy handler, which
     * sleeps on the only thread that transaction can finish on.
     */
    private readonly heldBy: () => Promise<unknown> | null = () => null,
  ) {}

  /** Runs `write` (synchronous SQLite work) in the next group transaction; resolves with its result once committed. */
  submit<R>(write: () => R): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ run: write, resolve, reject } as Job<unknown>);
      if (!this.isScheduled) {
        this.isScheduled = true;
        setImmediate(() => this.flushScheduled());
      }
    });
  }

  /** Writes waiting for their transaction. */
  get pending(): number {
    return this.queue.length;
  }

  /** Commits every waiting write now (before the connection closes). */
  flushAll(): void {
    while (this.queue.length > 0) this.flushBatch();
  }

  private flushScheduled(afterHold = false): void {
    const hold = afterHold ? null : this.heldBy();
    if (hold) {
      // Still scheduled: the batch runs once the hold settles (submit does not schedule it twice), held once only.
      void hold.then(
        () => this.flushScheduled(true),
        () => this.flushScheduled(true),
      );
      return;
    }
    this.isScheduled = false;
    this.flushBatch();
    if (this.queue.length > 0) {
      this.isScheduled = true;
      setImmediate(() => this.flushScheduled());
    }
  }

  private flushBatch(): void {
    const batch = this.queue.splice(0, this.maxBatch);
    if (batch.length === 0) return;
    const outcomes: Array<{ ok: true; value: unknown } | { ok: false; err: unknown }> = [];
    // A nested better-sqlite3 transaction is a savepoint: a write that throws rolls back to it and rethrows.
    const one = this.db.transaction((job: Job<unknown>) => job.run());
    const all = this.db.transaction(() => {
      for (const job of batch) {
        try {
          outcomes.push({ ok: true, value: one(job) });
        } catch (err) {
          outcomes.push({ ok: false, err });
        }
      }
    });
    try {
      all.immediate();
    } catch (err) {
      // BEGIN or COMMIT failed (another process holds the lock past the busy timeout, disk full): nothing of the
      // batch is stored, every write fails with that error.
      for (const job of batch) job.reject(err);
      return;
    }
    this.stats.batches++;
    this.stats.writes += batch.length;
    if (batch.length > this.stats.largestBatch) this.stats.largestBatch = batch.length;
    batch.forEach((job, i) => {
      const o = outcomes[i]!;
      if (o.ok) job.resolve(o.value);
      else job.reject(o.err);
    });
  }
}
