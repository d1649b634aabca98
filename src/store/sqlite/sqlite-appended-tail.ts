import type Database from 'better-sqlite3';
import type { EventId } from '../../model/ids.js';
import type { TextIndexEntry } from '../backend.js';
import { MAX_IDENTIFIER_TAIL_EVENTS } from '../identifier-grams.js';
import { gramPhrase, gramText } from './sqlite-identifier-index.js';

/** The `text_index_state` row counting rewrites of full-text rows (a purge, `replaceTextIndex`), by any connection. */
const REWRITES = 'text_rewrites';
/** Most characters of index text held: past it an append's rows are not held (the tail then takes the FTS5 phrase). */
const MAX_HELD_CHARS = 64 * 1024 * 1024;

/** Counts a rewrite of full-text rows, in the rewriting transaction: the tails other connections hold are stale after it. */
export function countTextRewrite(db: Database.Database): void {
  db.prepare(
    `INSERT INTO text_index_state (name, value) VALUES (?, '1')
       ON CONFLICT (name) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)`,
  ).run(REWRITES);
}

/** One event this connection appended, with the text its full-text row was written with. */
interface HeldRow {
  id: string;
  body: string;
  meta: string;
  /** Its identifier-index row (sqlite-identifier-index.ts `gramText`), made on first use. */
  grams?: string;
}

/** An appended event's full-text row, handed over once its append has committed. */
export interface AppendedRow {
  rowid: number;
  id: string;
  body: string;
  meta: string;
}

/**
 * The events past the identifier index's watermark that this connection appended, with the text their full-text
 * rows were written with (docs/recall.md, "Full-text at scale", watermark and tail). Two uses:
 * - an identifier search matches the tail here, on the identifier-index rows of these texts, instead of the FTS5
 *   phrase over `events_fts` (which reads the phrase's whole postings before applying the rowid bound: ~100 ms at
 *   1M events however short the tail), when every event past the watermark is held and no full-text row was
 *   rewritten since they were appended (`text_rewrites`, counted by every connection's purge and rewrite);
 * - the catch-up takes these texts, a page of the events next past the watermark at a time, instead of reading the
 *   events back and building each one's index text again (its context, relative dates, an artifact's text).
 * Held by rowid, only after the append's commit (a rolled-back append's rowid is used again); dropped below the
 * watermark. Past {@link MAX_IDENTIFIER_TAIL_EVENTS} events or {@link MAX_HELD_CHARS} an append's rows are not held,
 * and the tail takes the phrase query until the catch-up has passed them.
 */
export class AppendedTail {
  private readonly rows = new Map<number, HeldRow>();
  private chars = 0;
  /** The rewrite count the held rows were appended under. */
  private rewrites: string | undefined;
  private readonly readRewrites: Database.Statement;
  /** The page {@link page} handed out last, with its rows' rowids and the rewrite count they were held under. */
  private lastPage: { entries: readonly TextIndexEntry[]; through: readonly string[]; rowids: number[]; rewrites: string | undefined } | undefined;

  constructor(db: Database.Database) {
    // Not plucked: the connection's statement cache (statement-cache.ts) shares this statement with other readers.
    this.readRewrites = db.prepare('SELECT value FROM text_index_state WHERE name = ?');
  }

  /** The rewrite count now (read inside an append's transaction, handed to {@link hold} with its rows). */
  rewriteCount(): string {
    return (this.readRewrites.get(REWRITES) as { value: string } | undefined)?.value ?? '0';
  }

  /** Holds a committed append's rows; `rewrites`: {@link rewriteCount} read in its transaction. */
  hold(rows: readonly AppendedRow[], rewrites: string): void {
    if (rewrites !== this.rewrites) {
      // A rewrite committed before this append: rows held from earlier appends may show text no longer indexed.
      this.clear();
      this.rewrites = rewrites;
    }
    for (const r of rows) {
      if (this.rows.size >= MAX_IDENTIFIER_TAIL_EVENTS || this.chars + r.body.length + r.meta.length > MAX_HELD_CHARS) return;
      this.rows.set(r.rowid, { id: r.id, body: r.body, meta: r.meta });
      this.chars += r.body.length + r.meta.length;
    }
  }

  /** Drops every held row (this connection rewrote full-text rows). */
  clear(): void {
    this.rows.clear();
    this.chars = 0;
  }

  /** Drops the rows the identifier index holds now (at or below its watermark). */
  private prune(watermark: number): void {
    for (const [rowid, row] of this.rows) {
      if (rowid > watermark) continue;
      this.rows.delete(rowid);
      this.chars -= row.body.length + row.meta.length;
    }
  }

  /**
   * The rows past `watermark`, through `last` (the newest rowid), holding the identifier (its trigram keys, in
   * order), newest first; undefined unless every one of those rows is held and no rewrite happened since.
   */
  match(grams: readonly number[], watermark: number, last: number): number[] | undefined {
    this.prune(watermark);
    if (last - watermark !== this.rows.size || this.rows.size === 0) return undefined;
    if (this.rewriteCount() !== this.rewrites) {
      this.clear();
      return undefined;
    }
    // The identifier's trigram tokens at consecutive positions: the phrase, as a run of whole tokens of the row.
    const phrase = gramPhrase(grams).slice(1, -1);
    const out: number[] = [];
    for (const [rowid, row] of this.rows) {
      if (rowid > last) return undefined;
      row.grams ??= gramText(row.body, row.meta);
      if (holdsRun(row.grams, phrase)) out.push(rowid);
    }
    return out.sort((a, b) => b - a);
  }

  /**
   * The catch-up's next page from the held rows: the events right past `watermark`, in rowid order, as far as they
   * are held without a gap (at most `limit`), with their full-text texts; undefined when the first is not held, or a
   * full-text row was rewritten since they were appended (a purged event is never in a page: its purge counts).
   */
  page(watermark: number, limit: number): { entries: TextIndexEntry[]; through: EventId[] } | undefined {
    this.prune(watermark);
    if (this.rows.size === 0) return undefined;
    if (this.rewriteCount() !== this.rewrites) {
      this.clear();
      return undefined;
    }
    const entries: TextIndexEntry[] = [];
    const rowids: number[] = [];
    for (let rowid = watermark + 1; entries.length < limit; rowid++) {
      const row = this.rows.get(rowid);
      if (!row) break;
      entries.push({ eventId: row.id as EventId, searchText: row.body, searchMeta: row.meta });
      rowids.push(rowid);
    }
    if (entries.length === 0) return undefined;
    const page = { entries, through: entries.map((e) => e.eventId) };
    this.lastPage = { ...page, rowids, rewrites: this.rewrites };
    return page;
  }

  /**
   * The rowids of the page {@link page} handed out last, when `entries` and `through` are that page's, and the rewrite
   * count its rows were held under: its rows have no identifier row yet while the watermark is still below them and
   * that count has not moved (the catch-up then writes them without deleting first: sqlite-identifier-index.ts
   * `fillHeldIdentifierRows`). Undefined for any other entries.
   */
  pageRowids(entries: readonly TextIndexEntry[], through: readonly string[]): { rowids: readonly number[]; rewrites: string | undefined } | undefined {
    const last = this.lastPage;
    return last && last.entries === entries && last.through === through ? { rowids: last.rowids, rewrites: last.rewrites } : undefined;
  }
}

/** Whether `text` (tokens separated by single spaces) holds `run` (the same) as whole tokens. */
function holdsRun(text: string, run: string): boolean {
  for (let at = text.indexOf(run); at >= 0; at = text.indexOf(run, at + 1)) {
    const end = at + run.length;
    if ((at === 0 || text.charCodeAt(at - 1) === 32) && (end === text.length || text.charCodeAt(end) === 32)) return true;
  }
  return false;
}
