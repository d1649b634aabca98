import type Database from 'better-sqlite3';
import type { TextIndexEntry } from '../backend.js';
import { distinctGrams, holdsChain, identifierGrams } from '../identifier-grams.js';

/** The state row of the identifier index in `text_index_state` (migration 15). */
const STATE = 'identifier_grams';
/** The backfill's resume point: where its last page ended (JSON [sessionId, turn]). */
const CURSOR = 'identifier_grams_cursor';
/** Candidate rows read from the rarest trigram's postings at a time. */
const PAGE = 2_000;
/** Rows counted of a trigram to pick the rarest (beyond it, any such trigram will do). */
const COUNT_CAP = 2_000;

/** Where the identifier index stands: complete (queries use it) or pending a backfill (`engram reindex`). */
export type IdentifierIndexState = 'complete' | 'pending';

/**
 * The identifier index on SQLite (docs/recall.md, "Full-text at scale"; keys in ../identifier-grams.ts): rows
 * `(gram, event_rowid, pos)` in a WITHOUT ROWID table, so one trigram's rows are one range, newest last; and each
 * event's distinct grams in `event_idgram_sets`, so a purge or a rewrite deletes exactly its rows. Appends fill it
 * from migration 15 on; events stored before are added by the backfill, and until it completes searches do not
 * use the index.
 */
export class SqliteIdentifierIndex {
  private readonly insertGram: Database.Statement;
  private readonly insertSet: Database.Statement;
  private readonly readSet: Database.Statement;
  private readonly dropGram: Database.Statement;
  private readonly dropSet: Database.Statement;
  private readonly readState: Database.Statement;
  private readonly writeState: Database.Statement;
  private readonly capped: Database.Statement;
  private readonly postings: Database.Statement;
  private readonly positions: Database.Statement;
  private readonly positionsIn: Database.Statement;

  constructor(private readonly db: Database.Database) {
    this.insertGram = db.prepare('INSERT OR IGNORE INTO event_idgrams (gram, event_rowid, pos) VALUES (?, ?, ?)');
    this.insertSet = db.prepare('INSERT OR REPLACE INTO event_idgram_sets (event_rowid, grams) VALUES (?, ?)');
    this.readSet = db.prepare('SELECT grams FROM event_idgram_sets WHERE event_rowid = ?');
    this.dropGram = db.prepare('DELETE FROM event_idgrams WHERE gram = ? AND event_rowid = ?');
    this.dropSet = db.prepare('DELETE FROM event_idgram_sets WHERE event_rowid = ?');
    this.readState = db.prepare('SELECT value FROM text_index_state WHERE name = ?');
    this.writeState = db.prepare('INSERT OR REPLACE INTO text_index_state (name, value) VALUES (?, ?)');
    this.capped = db.prepare('SELECT count(*) AS n FROM (SELECT 1 FROM event_idgrams WHERE gram = ? LIMIT ?)');
    this.postings = db.prepare('SELECT event_rowid AS rowid, pos FROM event_idgrams WHERE gram = ? AND event_rowid <= ? ORDER BY event_rowid DESC LIMIT ?');
    this.positions = db.prepare('SELECT pos FROM event_idgrams WHERE gram = ? AND event_rowid = ?');
    this.positionsIn = db.prepare('SELECT event_rowid AS rowid, pos FROM event_idgrams WHERE gram = ? AND event_rowid IN (SELECT value FROM json_each(?))');
  }

  /** Indexes one event's text (an append, a rewrite, the backfill); the caller's transaction. */
  add(rowid: number | bigint, body: string, meta: string): void {
    const grams = identifierGrams(body, meta);
    if (grams.length === 0) return;
    for (const g of grams) this.insertGram.run(g.gram, rowid, g.pos);
    this.insertSet.run(rowid, Buffer.from(new Float64Array(distinctGrams(grams)).buffer));
  }

  /** Deletes one event's rows (a purged event; before a rewrite). */
  remove(rowid: number | bigint): void {
    const row = this.readSet.get(rowid) as { grams: Buffer } | undefined;
    if (!row) return;
    const b = row.grams;
    const grams = new Float64Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
    for (const g of grams) this.dropGram.run(g, rowid);
    this.dropSet.run(rowid);
  }

  /** Writes one event's rows again from its new text. */
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
   * occurs), that `accept` keeps (the search's filters), at most `want`. Reads the rarest trigram's postings
   * page by page from the newest and checks the others per row.
   */
  newest(grams: readonly number[], want: number, accept: (rowids: number[]) => Set<number>): number[] {
    const distinct = [...new Set(grams)];
    let rarest = distinct[0]!;
    let fewest = Number.POSITIVE_INFINITY;
    for (const g of distinct) {
      const n = (this.capped.get(g, fewest === Number.POSITIVE_INFINITY ? COUNT_CAP : fewest) as { n: number }).n;
      if (n < fewest) {
        fewest = n;
        rarest = g;
      }
      if (n === 0) return [];
    }
    const out: number[] = [];
    let before = Number.MAX_SAFE_INTEGER;
    for (;;) {
      const page = this.postings.all(rarest, before, PAGE) as Array<{ rowid: number; pos: number }>;
      if (page.length === 0) break;
      const rows = [...new Set(page.map((p) => p.rowid))];
      // A row's postings may straddle the page's end: the last row is read whole on the next page.
      const complete = page.length < PAGE ? rows : rows.slice(0, -1);
      const last = page.length < PAGE ? -1 : rows[rows.length - 1]!;
      const holding = this.holding(grams, rarest, page, complete);
      const kept = holding.length > 0 ? accept(holding) : new Set<number>();
      for (const r of holding) if (kept.has(r) && out.length < want) out.push(r);
      if (out.length >= want || page.length < PAGE) break;
      if (complete.length === 0) {
        // One row holds a whole page of this trigram: check it alone.
        if (this.holds(grams, last) && accept([last]).has(last)) out.push(last);
        before = last - 1;
      } else before = last;
    }
    return out;
  }

  /**
   * Which of `rows` hold the query's trigrams at consecutive positions: the rarest trigram's positions from its
   * postings page, each other trigram's read for all the rows at once.
   */
  private holding(grams: readonly number[], rarest: number, page: ReadonlyArray<{ rowid: number; pos: number }>, rows: number[]): number[] {
    if (rows.length === 0) return [];
    const byGram = new Map<number, Map<number, Set<number>>>();
    const add = (gram: number, rowid: number, pos: number): void => {
      let byRow = byGram.get(gram);
      if (!byRow) byGram.set(gram, (byRow = new Map()));
      const set = byRow.get(rowid);
      if (set) set.add(pos);
      else byRow.set(rowid, new Set([pos]));
    };
    for (const p of page) add(rarest, p.rowid, p.pos);
    const ids = JSON.stringify(rows);
    for (const g of new Set(grams)) {
      if (g === rarest) continue;
      for (const r of this.positionsIn.all(g, ids) as Array<{ rowid: number; pos: number }>) add(g, r.rowid, r.pos);
    }
    return rows.filter((rowid) => holdsChain(grams, (g) => byGram.get(g)?.get(rowid)));
  }

  /** Whether the row holds the query's trigrams at consecutive positions. */
  holds(grams: readonly number[], rowid: number): boolean {
    const cache = new Map<number, Set<number>>();
    const positionsOf = (g: number): Set<number> => {
      let set = cache.get(g);
      if (!set) {
        set = new Set((this.positions.all(g, rowid) as Array<{ pos: number }>).map((r) => r.pos));
        cache.set(g, set);
      }
      return set;
    };
    return holdsChain(grams, positionsOf);
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
