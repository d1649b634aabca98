import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { openEngram, type Engram } from '../../engine.js';
import { CATCH_UP_PAGE, HELD_CATCH_UP_PAGE } from '../../memory/identifier-catch-up.js';
import type { EventId } from '../../model/ids.js';
import { queryGrams } from '../identifier-grams.js';
import { SqliteBackend } from './sqlite-backend.js';
import { gramPhrase, SqliteIdentifierIndex } from './sqlite-identifier-index.js';

/**
 * The catch-up's page of a connection's own appends is written without deleting first (sqlite-backend.ts
 * `fillIdentifierIndex`, sqlite-identifier-index.ts `fillHeldIdentifierRows`) only while none of its rows can have an
 * identifier row: checked in the writing transaction. Another connection's catch-up or a rewrite between the page and
 * its write must not leave an event with two rows (it would be found twice, and its purge would leave one).
 */
const ID = 'src/held/fill_case.ts:42';

describe('identifier catch-up of a held page', () => {
  let dir: string;
  let path: string;
  let a: SqliteBackend;
  let memA: Engram;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'engram-held-fill-'));
    path = join(dir, 'store.db');
    a = SqliteBackend.open(path);
    memA = await openEngram({ backend: a });
    await memA.append('s', [{ kind: 'tool_result', toolName: 'bash', content: 'warm up' }]);
    await memA.maintainTextIndex();
    await memA.append('s', [
      { kind: 'tool_result', toolName: 'bash', content: `failed at ${ID} twice` },
      { kind: 'user', content: `look at ${ID}` },
      { kind: 'assistant', content: 'on it' },
    ]);
  });
  afterEach(async () => {
    await memA.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The identifier index's rows holding `ID` (rowids, repeats kept), read on a connection of its own. */
  function rowsHolding(): number[] {
    const db = new Database(path, { readonly: true });
    try {
      const rows = db.prepare('SELECT rowid FROM event_grams WHERE event_grams MATCH ? ORDER BY rowid').all(gramPhrase(queryGrams(ID)!)) as Array<{ rowid: number }>;
      return rows.map((r) => r.rowid);
    } finally {
      db.close();
    }
  }

  /**
   * One row per event holding `ID`: the tool result, the user turn, and the assistant turn, whose context column
   * holds the user turn's words (rowid 1 is the warm-up event, caught up before).
   */
  const EXPECTED_ROWS = [2, 3, 4];

  it('writes the page without deleting first, the rows the general path writes', async () => {
    const remove = vi.spyOn(SqliteIdentifierIndex.prototype, 'remove');
    try {
      expect(await memA.maintainTextIndex()).toMatchObject({ state: 'complete', events: 3 });
      expect(remove).not.toHaveBeenCalled();
    } finally {
      remove.mockRestore();
    }
    expect(rowsHolding()).toEqual(EXPECTED_ROWS);
  });

  it('takes the general path when another connection caught the page up after it was handed out', async () => {
    const page = (await a.heldIdentifierPage(1_000))!;
    expect(page.entries).toHaveLength(3);
    const b = SqliteBackend.open(path);
    try {
      const memB = await openEngram({ backend: b });
      expect(await memB.maintainTextIndex()).toMatchObject({ state: 'complete', events: 3 });
    } finally {
      await b.close();
    }
    // The general path (events read back, their text built again) wrote the same rows.
    expect(rowsHolding()).toEqual(EXPECTED_ROWS);
    const remove = vi.spyOn(SqliteIdentifierIndex.prototype, 'remove');
    try {
      await a.fillIdentifierIndex(page.entries, { through: page.through });
      // Written again over the rows the other connection wrote (deleted first), not added beside them.
      expect(remove).toHaveBeenCalledTimes(3);
    } finally {
      remove.mockRestore();
    }
    expect(rowsHolding()).toEqual(EXPECTED_ROWS);
  });

  it('takes the general path when a full-text row was rewritten after the page was handed out', async () => {
    const page = (await a.heldIdentifierPage(1_000))!;
    const b = SqliteBackend.open(path);
    try {
      // A rewrite of an event past the watermark writes its identifier row too (sqlite-text-index.ts).
      const user = page.entries[1]!;
      await b.replaceTextIndex([{ eventId: user.eventId as EventId, searchText: user.searchText, searchMeta: user.searchMeta }]);
    } finally {
      await b.close();
    }
    expect(rowsHolding()).toEqual([3]);
    const remove = vi.spyOn(SqliteIdentifierIndex.prototype, 'remove');
    try {
      await a.fillIdentifierIndex(page.entries, { through: page.through });
      expect(remove).toHaveBeenCalled();
    } finally {
      remove.mockRestore();
    }
    expect(rowsHolding()).toEqual(EXPECTED_ROWS);
  });
});

describe('identifier catch-up page sizes', () => {
  it('takes the rows the connection holds in pages of HELD_CATCH_UP_PAGE, others in pages of CATCH_UP_PAGE, within maxEvents', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'engram-held-pages-'));
    const path = join(dir, 'store.db');
    const events = Math.floor(HELD_CATCH_UP_PAGE * 1.5);
    const append = async (mem: Engram) => {
      for (let start = 0; start < events; start += 500) {
        const n = Math.min(500, events - start);
        await mem.append('s', Array.from({ length: n }, (_, j) => ({ kind: 'tool_result' as const, toolName: 'bash', content: `ok src/p/q${start + j}.ts:1` })));
      }
    };
    try {
      const mem = await openEngram({ db: path });
      await append(mem);
      const pages: number[] = [];
      let done = 0;
      const record = (p: { events: number }) => {
        pages.push(p.events - done);
        done = p.events;
      };
      expect(await mem.maintainTextIndex(record, { maxEvents: HELD_CATCH_UP_PAGE + 10 })).toMatchObject({ state: 'pending', events: HELD_CATCH_UP_PAGE + 10 });
      expect(pages).toEqual([HELD_CATCH_UP_PAGE, 10]);
      await mem.close();
      // A connection that holds none reads them back, a page of CATCH_UP_PAGE at a time.
      const fresh = await openEngram({ db: path });
      await append(fresh);
      await fresh.close();
      const other = await openEngram({ db: path });
      pages.length = 0;
      done = 0;
      const rest = events - HELD_CATCH_UP_PAGE - 10 + events;
      expect(await other.maintainTextIndex(record)).toMatchObject({ state: 'complete', events: rest });
      expect(pages.every((n) => n <= CATCH_UP_PAGE)).toBe(true);
      expect(pages.length).toBe(Math.ceil(rest / CATCH_UP_PAGE));
      await other.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
