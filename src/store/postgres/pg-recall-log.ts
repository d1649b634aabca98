import type { RecallLogInput } from '../backend.js';

/** Most rows in one statement; more wait for the next. */
const MAX_BATCH = 64;

/**
 * The recall log rows of recalls that finish in the same turn of the event loop, written by one statement: one round
 * trip instead of one per recall (a round trip costs a server ~0.3 ms of CPU: bench/results/http-load-profile-postgres.md,
 * "PostgreSQL client"). Each recall's promise settles with its row's id once the statement has run, or with its error:
 * then none of the batch is stored, as a failed single insert stores nothing.
 */
export class PgRecallLogBatch {
  private queue: Array<{ entry: RecallLogInput; resolve: (id: number) => void; reject: (err: unknown) => void }> = [];
  private isScheduled = false;
  /** The statements running now. */
  private readonly running = new Set<Promise<void>>();

  /** `insertMany` writes the rows in the order given and returns their ids in that order. */
  constructor(private readonly insertMany: (entries: readonly RecallLogInput[]) => Promise<number[]>) {}

  add(entry: RecallLogInput): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      this.queue.push({ entry, resolve, reject });
      this.schedule();
    });
  }

  /** Writes what waits now and resolves once every row given so far is written or failed (before the pool closes). */
  async settle(): Promise<void> {
    while (this.queue.length > 0 || this.running.size > 0) {
      if (this.queue.length > 0) void this.flush();
      await Promise.all([...this.running]);
    }
  }

  private schedule(): void {
    if (this.isScheduled) return;
    this.isScheduled = true;
    setImmediate(() => {
      this.isScheduled = false;
      void this.flush();
    });
  }

  private flush(): Promise<void> {
    const batch = this.queue.splice(0, MAX_BATCH);
    if (this.queue.length > 0) this.schedule();
    if (batch.length === 0) return Promise.resolve();
    const run = (async () => {
      try {
        const ids = await this.insertMany(batch.map((b) => b.entry));
        if (ids.length !== batch.length) throw new Error(`recall log: ${ids.length} ids for ${batch.length} rows`);
        batch.forEach((b, i) => b.resolve(ids[i]!));
      } catch (err) {
        for (const b of batch) b.reject(err);
      }
    })();
    this.running.add(run);
    void run.finally(() => this.running.delete(run));
    return run;
  }
}

/**
 * The rows as the batch statement's parameters, one array per column, in order. The JSON columns go as JSON text each,
 * cast by PostgreSQL per row (as the single insert casts its parameter): a query may hold `\u0000`, which the json type
 * keeps as written but a JSON document taken apart by json_to_recordset cannot hold.
 */
export function recallLogColumns(entries: readonly RecallLogInput[]): unknown[] {
  return [
    entries.map((e) => e.tsMs),
    entries.map((e) => e.sessionId ?? null),
    entries.map((e) => e.taskId ?? null),
    entries.map((e) => JSON.stringify(e.query)),
    entries.map((e) => JSON.stringify(e.options)),
    entries.map((e) => JSON.stringify(e.results)),
    entries.map((e) => e.durationMs),
    entries.map((e) => e.project ?? null),
  ];
}

/**
 * The batch statement: a row per array position, in order (unnest of arrays of one length walks them together).
 * Identity values are drawn as the rows are inserted, in that order, so the ids returned, sorted, are the rows' in
 * order (the caller sorts them: RETURNING itself promises no order).
 */
export function insertRecallLogManySql(s: string): string {
  return `INSERT INTO ${s}.recall_log (ts_ms, session_id, task_id, query, options, results, duration_ms, project)
    SELECT r.ts_ms, r.session_id, r.task_id, r.query::json, r.options::json, r.results::json, r.duration_ms, r.project
    FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::float8[], $8::text[])
      AS r(ts_ms, session_id, task_id, query, options, results, duration_ms, project)
    RETURNING id`;
}
