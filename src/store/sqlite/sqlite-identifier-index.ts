import type Database from 'better-sqlite3';
import type { TextIndexEntry } from '../backend.js';
import { forEachWordGrams, identifierGrams, MAX_GRAMS_PER_EVENT } from '../identifier-grams.js';
import { isOldSpan, SPAN_WALK_PER_ROW, type RowidSpan } from './fts5-bounded.js';

/** The state row of the identifier index in `text_index_state` (migration 17): complete or pending (a backfill due). */
const STATE = 'identifier_fts';
/**
 * The index's watermark: every event up to this rowid is indexed; events past it (the tail) await the catch-up
 * (memory/identifier-catch-up.ts). Written by the first append of a store that has none (see {@link SqliteIdentifierIndex.watermark}).
 */
const WATERMARK = 'identifier_fts_watermark';
/** Matching rows read at a time when a filter may drop some. */
const PAGE = 2_000;
/** Most rows read to tell which candidates hold an identifier. */
const MAX_HOLDERS = 20_000;
/** The token between two words' trigrams: no phrase of trigram tokens spans it. */
const WORD_BREAK = 's';

/** The unindexed events an identifier search covers through the plain full-text path (see {@link SqliteIdentifierIndex.newest}). */
export interface IdentifierTail {
  /** Rows above it are not in the index yet. */
  watermark: number;
  /** The FTS5 expression of the identifier on `events_fts` (its phrase), matched on the tail's rows. */
  match: string;
  /**
   * Rows past the watermark. 0 skips the tail's phrase query: FTS5 applies a rowid bound after reading the phrase's
   * postings, so that query costs what the plain path does (about 60 ms for `src/orders/client.ts:385` at 1M events)
   * even when no row is past the watermark.
   */
  size: number;
  /**
   * The tail's rows holding the identifier (its trigram keys), newest first, from the appends this connection holds
   * (sqlite-appended-tail.ts); undefined when it does not hold them all: then the phrase query.
   */
  held?: (grams: readonly number[]) => number[] | undefined;
}

/**
 * An FTS5 token for a trigram key (48 bits; base 36, never the word break): the high 24 bits, then the low 24 as
 * exactly five digits, so the mapping is one-to-one. Two small integers, because V8 formats a number above 2^31
 * in base 36 on a slow path (7x slower; a quarter of an append's CPU was spent here); the five low digits as
 * character codes, without a second number formatted and padded.
 */
function gramToken(gram: number): string {
  const hi = Math.floor(gram / 0x1000000);
  let lo = gram - hi * 0x1000000;
  const d4 = DIGITS[lo % 36]!;
  lo = (lo / 36) | 0;
  const d3 = DIGITS[lo % 36]!;
  lo = (lo / 36) | 0;
  const d2 = DIGITS[lo % 36]!;
  lo = (lo / 36) | 0;
  const d1 = DIGITS[lo % 36]!;
  return `g${hi.toString(36)}${String.fromCharCode(DIGITS[(lo / 36) | 0]!, d1, d2, d3, d4)}`;
}

/** The character codes of the base-36 digits. */
const DIGITS = Array.from('0123456789abcdefghijklmnopqrstuvwxyz', (c) => c.charCodeAt(0));

/**
 * The row an event gets: its trigram tokens in order, a word break between words (positions jump there). Built a
 * word at a time from the keys {@link forEachWordGrams} hashes in place (an ASCII word's tokens are never copied):
 * making these rows was most of the catch-up's CPU.
 */
export function gramText(body: string, meta: string): string {
  const tokens: string[] = [];
  let count = 0;
  let isCapped = false;
  forEachWordGrams([body, meta], (grams) => {
    count += grams.length;
    if (count > MAX_GRAMS_PER_EVENT) return !(isCapped = true);
    if (tokens.length > 0) tokens.push(WORD_BREAK);
    for (let g = 0; g < grams.length; g++) tokens.push(gramToken(grams[g]!));
    return true;
  });
  // Past the cap the row ends inside a word: the gram-at-a-time form cuts it exactly there.
  return isCapped ? gramTextOfGrams(body, meta) : tokens.join(' ');
}

/** {@link gramText} a trigram at a time, from the (gram, position) keys: the definition, and the form past the cap. */
export function gramTextOfGrams(body: string, meta: string): string {
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
 * FTS5 (`event_grams`, migration 17): one row per event, its trigram keys as tokens, so an identifier is a phrase of
 * its trigrams. Appends do not write it (computing the keys cost a quarter of an append's CPU): it keeps a watermark,
 * the catch-up (`mem.maintainTextIndex()`: `engram reindex`, `engram serve`'s worker) indexes the events past it in
 * pages, and a search covers those through the plain full-text phrase, so an event is found as soon as it is stored.
 */
export class SqliteIdentifierIndex {
  private readonly insertRow: Database.Statement;
  private readonly dropRow: Database.Statement;
  private readonly readState: Database.Statement;
  private readonly writeState: Database.Statement;
  private readonly newestRows: Database.Statement;
  private readonly walkRows: Database.Statement;
  private readonly walkRowsUp: Database.Statement;
  private readonly newestTailRows: Database.Statement;
  private readonly lastRowid: Database.Statement;
  /** The watermark once it is known to be stored (it only moves up, and only through this connection's writes or the catch-up's). */
  private hasStoredWatermark = false;

  constructor(db: Database.Database) {
    this.insertRow = db.prepare('INSERT INTO event_grams (rowid, grams) VALUES (?, ?)');
    this.dropRow = db.prepare('DELETE FROM event_grams WHERE rowid = ?');
    this.readState = db.prepare('SELECT value FROM text_index_state WHERE name = ?');
    this.writeState = db.prepare('INSERT OR REPLACE INTO text_index_state (name, value) VALUES (?, ?)');
    this.newestRows = db.prepare('SELECT rowid FROM event_grams WHERE event_grams MATCH ? AND rowid <= ? ORDER BY rowid DESC LIMIT ?');
    this.walkRows = db.prepare('SELECT rowid FROM event_grams WHERE event_grams MATCH ? AND rowid <= ? ORDER BY rowid DESC').pluck();
    this.walkRowsUp = db.prepare('SELECT rowid FROM event_grams WHERE event_grams MATCH ? AND rowid >= ? ORDER BY rowid ASC').pluck();
    this.newestTailRows = db.prepare('SELECT rowid FROM events_fts WHERE events_fts MATCH ? AND rowid > ? ORDER BY rowid DESC');
    this.lastRowid = db.prepare('SELECT COALESCE(MAX(rowid), 0) AS n FROM events');
  }

  /** Indexes one event's text (the catch-up, a rewrite); the caller's transaction. */
  add(rowid: number | bigint, body: string, meta: string): void {
    const text = gramText(body, meta);
    if (text.length > 0) this.insertRow.run(rowid, text);
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

  /**
   * Every event up to this rowid is indexed. A store from before the watermark existed has none stored: then every
   * event was indexed at its append if the index was complete (the watermark is the last rowid), else none is (0,
   * the catch-up does them all, as the backfill did).
   */
  watermark(): number {
    const stored = this.readState.get(WATERMARK) as { value: string } | undefined;
    if (stored) return Number(stored.value);
    const state = (this.readState.get(STATE) as { value: string } | undefined)?.value;
    return state === 'complete' ? (this.lastRowid.get() as { n: number }).n : 0;
  }

  /**
   * Called by every append before it inserts (its transaction): stores the watermark when the store has none yet,
   * so events appended from now on are past it. Reads it until it is seen stored (an append that wrote it may still
   * roll back), then nothing.
   */
  beforeAppend(): void {
    if (this.hasStoredWatermark) return;
    if (this.readState.get(WATERMARK)) this.hasStoredWatermark = true;
    else this.writeState.run(WATERMARK, String(this.watermark()));
  }

  /** Moves the watermark up to `rowid` (the catch-up, after it indexed every event up to it); the caller's transaction. */
  advance(rowid: number): void {
    if (rowid > this.watermark()) this.writeState.run(WATERMARK, String(rowid));
  }

  /** Events stored past the watermark (rowids are dense: events are never deleted, a purge keeps a tombstone). */
  tailSize(): number {
    return Math.max(0, (this.lastRowid.get() as { n: number }).n - this.watermark());
  }

  /**
   * The newest rows, newest first, in which the query's trigrams stand at consecutive positions (the identifier
   * occurs), that `accept` keeps (the search's filters), at most `want`. The tail's rows (past the watermark, newer
   * than every indexed row) come first, matched by the identifier's full-text phrase. With a `span` (sqlite-visible-span.ts),
   * only its rows: the pages start at its last row and stop at its first.
   */
  newest(grams: readonly number[], want: number, accept: (rowids: number[]) => Set<number>, tail: IdentifierTail, span: RowidSpan | null = null): number[] {
    const out: number[] = [];
    const inSpan = (r: number) => span === null || (r >= span.lo && r <= span.hi);
    const fresh = (
      tail.size === 0 ? [] : (tail.held?.(grams) ?? (this.newestTailRows.all(tail.match, tail.watermark) as Array<{ rowid: number }>).map((r) => r.rowid))
    ).filter(inSpan);
    if (fresh.length > 0) {
      const kept = accept(fresh);
      for (const r of fresh) if (kept.has(r) && out.length < want) out.push(r);
    }
    const phrase = gramPhrase(grams);
    let before = span === null ? tail.watermark : Math.min(tail.watermark, span.hi);
    if (span !== null && out.length < want && before >= span.lo && isOldSpan(span)) {
      // A span far below the newest rows is read oldest first, as fts5-bounded.ts `oldestFirstInSpan` reads it: a
      // newest-first walk would read past every newer row holding the trigrams to reach it.
      const read: number[] = [];
      for (const rowid of this.walkRowsUp.iterate(phrase, span.lo) as IterableIterator<number>) {
        if (rowid > before) break;
        read.push(rowid);
      }
      read.reverse();
      if (read.length > 0) {
        const kept = accept(read);
        for (const r of read) if (kept.has(r) && out.length < want) out.push(r);
      }
      return out;
    }
    if (span !== null && out.length < want && before >= span.lo) {
      // The span's rows read until its first, as fts5-bounded.ts `newestInSpan` reads them: a page would read on
      // below it to fill its limit.
      const read: number[] = [];
      let isWhole = true;
      for (const rowid of this.walkRows.iterate(phrase, before) as IterableIterator<number>) {
        if (rowid < span.lo) break;
        if (read.length >= Math.max(want, PAGE) * SPAN_WALK_PER_ROW) {
          isWhole = false;
          break;
        }
        read.push(rowid);
      }
      if (read.length > 0) {
        const kept = accept(read);
        for (const r of read) if (kept.has(r) && out.length < want) out.push(r);
      }
      if (isWhole || read.length === 0) return out;
      before = read[read.length - 1]! - 1;
    }
    while (out.length < want && (span === null || before >= span.lo)) {
      const page = (this.newestRows.all(phrase, before, Math.max(want, PAGE)) as Array<{ rowid: number }>).map((r) => r.rowid);
      const within = span === null ? page : page.filter(inSpan);
      if (within.length > 0) {
        const kept = accept(within);
        for (const r of within) if (kept.has(r) && out.length < want) out.push(r);
      }
      if (page.length < Math.max(want, PAGE) || within.length < page.length) break;
      before = page[page.length - 1]! - 1;
    }
    return out;
  }

  /** Which of `rowids` hold the identifier (as far as its newest {@link MAX_HOLDERS} rows, within `span` when given, show). */
  holding(grams: readonly number[], rowids: readonly number[], tail: IdentifierTail, span: RowidSpan | null = null): Set<number> {
    if (rowids.length === 0) return new Set();
    const rows = new Set(this.newest(grams, MAX_HOLDERS, (r) => new Set(r), tail, span));
    return new Set(rowids.filter((r) => rows.has(r)));
  }
}

/**
 * The catch-up's step, in the caller's transaction: writes these events' identifier rows (again: a row an older
 * version wrote at append is replaced, not doubled) and moves the watermark past `through`, the backlog page they
 * came from (purged events in it have no entry). Missing events are skipped; returns the rows written.
 */
export function fillIdentifierRows(db: Database.Database, index: SqliteIdentifierIndex, entries: readonly TextIndexEntry[], through: readonly string[]): number {
  const rowidOf = db.prepare('SELECT rowid FROM events WHERE id = ?');
  let written = 0;
  for (const e of entries) {
    const row = rowidOf.get(e.eventId) as { rowid: number } | undefined;
    if (!row) continue;
    index.rewrite(row.rowid, e.searchText, e.searchMeta);
    written++;
  }
  if (through.length > 0) {
    const last = db.prepare('SELECT MAX(rowid) AS n FROM events WHERE id IN (SELECT value FROM json_each(?))').get(JSON.stringify(through)) as { n: number | null };
    if (last.n !== null) index.advance(last.n);
  }
  return written;
}

/**
 * The catch-up's step for a page of this connection's own appends, in the caller's transaction, when the caller has
 * checked in that transaction that none of them has an identifier row: the watermark is below the first, and no
 * full-text row was rewritten since they were appended (the only other writers of a row past the watermark; see
 * sqlite-appended-tail.ts `pageRowids`). Each row is inserted by the rowid held, without the delete and the look-up of
 * {@link fillIdentifierRows}; the watermark moves past the last. `rowids[i]` is `entries[i]`'s.
 */
export function fillHeldIdentifierRows(index: SqliteIdentifierIndex, entries: readonly TextIndexEntry[], rowids: readonly number[]): number {
  for (let i = 0; i < entries.length; i++) index.add(rowids[i]!, entries[i]!.searchText, entries[i]!.searchMeta);
  if (rowids.length > 0) index.advance(rowids[rowids.length - 1]!);
  return entries.length;
}
