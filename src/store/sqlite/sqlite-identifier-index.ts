import type Database from 'better-sqlite3';
import type { TextIndexEntry } from '../backend.js';
import { identifierGrams } from '../identifier-grams.js';

/** The state row of the identifier index in `text_index_state` (migration 17). */
const STATE = 'identifier_fts';
/** The backfill's resume point: where its last page ended (JSON [sessionId, turn]). */
const CURSOR = 'identifier_fts_cursor';
/** Matching rows read at a time when a filter may drop some. */
const PAGE = 2_000;
/** Most rows read to tell which candidates hold an identifier. */
const MAX_HOLDERS = 20_000;
/** The token between two words' trigrams: no phrase of trigram tokens spans it. */
const WORD_BREAK = 's';

/** Where the identifier index stands: complete (queries use it) or pending a backfill (`engram reindex`). */
export type IdentifierIndexState = 'complete' | 'pending';

/**
 * An FTS5 token for a trigram key (48 bits; base 36, never the word break): the high 24 bits, then the low 24 as
 * exactly five digits, so the mapping is one-to-one. Two small integers, because V8 formats a number above 2^31
 * in base 36 on a slow path (7x slower; a quarter of an append's CPU was spent here).
 */
function gramToken(gram: number): string {
  const hi = Math.floor(gram / 0x1000000);
  return `g${hi.toString(36)}${(gram - hi * 0x1000000).toString(36).padStart(5, '0')}`;
}

/** The row an event gets: its trigram tokens in order, a word break between words (positions jump there). */
export function gramText(body: string, meta: string): string {
  const grams = identifierGrams(body, meta);
  const parts: string[] = [];
  let last = Number.NaN;
  for (const g of grams) {
    if (parts.length > 0 && g.pos !== last + 1) parts.push(WORD_BREAK);
    parts.push(gramToken(g.gram));
    last = g.pos;
  }
  return parts.join(' ');
}

/** The FTS5 phrase of an identifier's trigrams: they stand at consecutive positions inside one word. */
export function gramPhrase(grams: readonly number[]): string {
  return `"${grams.map(gramToken).join(' ')}"`;
}

/**
 * The identifier index on SQLite (docs/recall.md, "Full-text at scale"; keys in ../identifier-grams.ts), kept in
 * FTS5 (`event_grams`, migration 17): one row per event, its trigram keys as tokens, so appends cost what FTS5
 * costs (buffered, merged segments) and an identifier is a phrase of its trigrams. Appends fill it; events stored
 * before are added by the backfill, and until it completes searches do not use it.
 */
export class SqliteIdentifierIndex {
  private readonly insertRow: Database.Statement;
  private readonly dropRow: Database.Statement;
  private readonly readState: Database.Statement;
  private readonly writeState: Database.Statement;
  private readonly newestRows: Database.Statement;

  constructor(db: Database.Database) {
    this.insertRow = db.prepare('INSERT INTO event_grams (rowid, grams) VALUES (?, ?)');
    this.dropRow = db.prepare('DELETE FROM event_grams WHERE rowid = ?');
    this.readState = db.prepare('SELECT value FROM text_index_state WHERE name = ?');
    this.writeState = db.prepare('INSERT OR REPLACE INTO text_index_state (name, value) VALUES (?, ?)');
    this.newestRows = db.prepare('SELECT rowid FROM event_grams WHERE event_grams MATCH ? AND rowid <= ? ORDER BY rowid DESC LIMIT ?');
  }

  /** Indexes one event's text (an append, a rewrite, the backfill); the caller's transaction. */
  add(rowid: number | bigint, body: string, meta: string): void {
    const text = gramText(body, meta);
    if (text.length > 0) this.insertRow.run(rowid, text);
  }

  /** Indexes a batch of events (an append); the caller's transaction. */
  addMany(events: ReadonlyArray<{ rowid: number | bigint; body: string; meta: string }>): void {
    for (const e of events) this.add(e.rowid, e.body, e.meta);
  }

  /** Deletes one event's row (a purged event; before a rewrite). */
  remove(rowid: number | bigint): void {
    this.dropRow.run(rowid);
  }

  /** Writes one event's row again from its new text. */
  rewrite(rowid: number | bigint, body: string, meta: string): void {
    this.remove(rowid);
    this.add(rowid, body, meta);
  }

  state(): IdentifierIndexState {
    return (this.readState.get(STATE) as { value: string } | undefined)?.value === 'complete' ? 'complete' : 'pending';
  }

  /** The backfill's resume point (null: from the start). */
  cursor(): string | null {
    return (this.readState.get(CURSOR) as { value: string } | undefined)?.value ?? null;
  }

  setProgress(cursor: string | null, state: IdentifierIndexState): void {
    if (cursor !== null) this.writeState.run(CURSOR, cursor);
    this.writeState.run(STATE, state);
  }

  /**
   * The newest rows, newest first, in which the query's trigrams stand at consecutive positions (the identifier
   * occurs), that `accept` keeps (the search's filters), at most `want`.
   */
  newest(grams: readonly number[], want: number, accept: (rowids: number[]) => Set<number>): number[] {
    const phrase = gramPhrase(grams);
    const out: number[] = [];
    let before = Number.MAX_SAFE_INTEGER;
    for (;;) {
      const page = (this.newestRows.all(phrase, before, Math.max(want, PAGE)) as Array<{ rowid: number }>).map((r) => r.rowid);
      if (page.length === 0) break;
      const kept = accept(page);
      for (const r of page) if (kept.has(r) && out.length < want) out.push(r);
      if (out.length >= want || page.length < Math.max(want, PAGE)) break;
      before = page[page.length - 1]! - 1;
    }
    return out;
  }

  /** Which of `rowids` hold the identifier (as far as its newest {@link MAX_HOLDERS} rows show). */
  holding(grams: readonly number[], rowids: readonly number[]): Set<number> {
    if (rowids.length === 0) return new Set();
    const rows = new Set(this.newest(grams, MAX_HOLDERS, (r) => new Set(r)));
    return new Set(rowids.filter((r) => rows.has(r)));
  }
}

/** Writes these events' identifier rows again (the backfill); the caller's transaction. Missing events are skipped. */
export function fillIdentifierRows(db: Database.Database, index: SqliteIdentifierIndex, entries: readonly TextIndexEntry[]): number {
  const rowidOf = db.prepare('SELECT rowid FROM events WHERE id = ?');
  let written = 0;
  for (const e of entries) {
    const row = rowidOf.get(e.eventId) as { rowid: number } | undefined;
    if (!row) continue;
    index.rewrite(row.rowid, e.searchText, e.searchMeta);
    written++;
  }
  return written;
}
