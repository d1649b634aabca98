import type Database from 'better-sqlite3';
import { readVarints } from './fts5-varints.js';

/** store_meta key of the remembered document frequencies (JSON, {@link MemoRecord}). */
export const DF_MEMO_KEY = 'fts_df_memo';
/**
 * Tokens in fewer rows than this are not remembered: FTS5 counts them in well under a millisecond. A token in half
 * of a 1M-event store takes 15-40 ms to count (fts5vocab walks its whole doclist), three of them most of a CLI
 * recall's budget (issue #14, "CLI start to first recall").
 */
export const DF_MEMO_MIN_DF = 2_000;
/** Most tokens remembered; the least frequent go first. */
export const DF_MEMO_MAX_TOKENS = 2_000;
/**
 * The memo holds while FTS5's own totals (rows, and tokens per column) are within this share of those it was
 * counted at: appends, a purge or a text reindex that move them further make every count again. The planner's
 * in-process cache already tolerates a minute of appends; 1 % of a large store is the same kind of staleness.
 */
export const DF_MEMO_TOLERANCE = 0.01;

interface MemoRecord {
  /** FTS5's totals record when the counts were taken: rows, then tokens per column. */
  totals: number[];
  /**
   * The store's count of full-text rewrites (`text_rewrites`, sqlite-appended-tail.ts) when the counts were taken: a
   * purge moves it, and a memo from before a purge names tokens the purge removed, so no connection keeps or writes
   * it back (the purge deletes the stored one; this catches the copies other connections hold in memory).
   */
  rewrites?: string;
  df: Record<string, number>;
}

/**
 * Document frequencies of common tokens kept in the store (store_meta), so a new process (each CLI call) does not
 * count them again. Derived data: dropped and recounted whenever FTS5's totals move beyond {@link DF_MEMO_TOLERANCE}.
 * Written only when something new was counted, never waiting for another writer's lock (a busy store skips it).
 */
export class Fts5DfMemo {
  private readonly totalsStmt: Database.Statement;
  /** Undefined without a store_meta table (an index opened on its own): the memo then lives in this process only. */
  private readonly readStmt: Database.Statement | undefined;
  private readonly writeStmt: Database.Statement | undefined;
  private readonly rewritesStmt: Database.Statement | undefined;
  private memo: MemoRecord | undefined;
  private isLoaded = false;
  private isDirty = false;
  /** FTS5's row count at the last {@link refresh}. */
  private rowsAtRefresh = 0;

  constructor(private readonly db: Database.Database) {
    this.totalsStmt = db.prepare('SELECT block FROM events_fts_data WHERE id = 1');
    const hasMeta = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'store_meta'").get() !== undefined;
    this.readStmt = hasMeta ? db.prepare('SELECT value FROM store_meta WHERE key = ?') : undefined;
    const hasState = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'text_index_state'").get() !== undefined;
    this.rewritesStmt = hasState ? db.prepare("SELECT value FROM text_index_state WHERE name = 'text_rewrites'") : undefined;
    this.writeStmt = !hasMeta || db.readonly ? undefined : db.prepare('INSERT INTO store_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value');
  }

  /** Checks the memo against FTS5's current totals (loading it from the store the first time); call before a plan's lookups. */
  refresh(): void {
    const totals = this.totals();
    this.rowsAtRefresh = totals[0] ?? 0;
    const rewrites = this.rewrites();
    if (!this.isLoaded) {
      this.isLoaded = true;
      this.memo = this.read();
    }
    if (this.memo && (!isClose(this.memo.totals, totals) || (this.memo.rewrites ?? '0') !== rewrites)) {
      this.memo = undefined;
      this.isDirty = false;
    }
    this.memo ??= { totals, rewrites, df: {} };
  }

  /** The index's row count (the one FTS5's bm25 uses) as read by the last {@link refresh}. */
  rows(): number {
    return this.rowsAtRefresh;
  }

  /** The remembered frequency of a token (a stemmed index term), if any. */
  get(token: string): number | undefined {
    const df = this.memo?.df[token];
    return typeof df === 'number' && Number.isFinite(df) ? df : undefined;
  }

  /** Remembers a token's frequency when it is costly to count. */
  remember(token: string, df: number): void {
    if (!this.memo || df < DF_MEMO_MIN_DF || this.memo.df[token] === df) return;
    this.memo.df[token] = df;
    this.isDirty = true;
  }

  /** Writes what was remembered since the last flush; a read-only or busy store keeps it in memory only. */
  flush(): void {
    if (!this.isDirty || !this.memo || !this.writeStmt) return;
    this.isDirty = false;
    const entries = Object.entries(this.memo.df);
    if (entries.length > DF_MEMO_MAX_TOKENS) {
      entries.sort((a, b) => b[1] - a[1]);
      this.memo.df = Object.fromEntries(entries.slice(0, DF_MEMO_MAX_TOKENS));
    }
    // A recall must never wait for another process's write lock for this: try once, without the busy timeout.
    const busyTimeoutMs = this.db.pragma('busy_timeout', { simple: true }) as number;
    this.db.pragma('busy_timeout = 0');
    try {
      this.writeStmt.run(DF_MEMO_KEY, JSON.stringify(this.memo));
    } catch {
      // Busy or read-only: the counts stay in this process's memo; a later flush may write them.
    } finally {
      this.db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    }
  }

  private rewrites(): string {
    return (this.rewritesStmt?.get() as { value: string } | undefined)?.value ?? '0';
  }

  private totals(): number[] {
    const row = this.totalsStmt.get() as { block: Buffer } | undefined;
    return row ? readVarints(row.block) : [];
  }

  private read(): MemoRecord | undefined {
    const row = this.readStmt?.get(DF_MEMO_KEY) as { value: string } | undefined;
    if (!row) return undefined;
    try {
      const parsed = JSON.parse(row.value) as Partial<MemoRecord>;
      if (!Array.isArray(parsed.totals) || typeof parsed.df !== 'object' || parsed.df === null) return undefined;
      return { totals: parsed.totals, ...(typeof parsed.rewrites === 'string' ? { rewrites: parsed.rewrites } : {}), df: { ...parsed.df } };
    } catch {
      return undefined; // damaged derived data: counted again
    }
  }
}

/** Every total within the tolerance of the remembered one (and as many of them: the same columns). */
function isClose(remembered: readonly number[], current: readonly number[]): boolean {
  if (remembered.length !== current.length || current.length === 0) return false;
  return current.every((v, i) => Math.abs(v - remembered[i]!) <= DF_MEMO_TOLERANCE * Math.max(1, remembered[i]!));
}
