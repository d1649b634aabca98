import { afterAll, beforeAll, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { parseQuery } from '../../src/memory/query-terms.js';
import type { SessionId } from '../../src/model/ids.js';
import type { BackendHarness } from './storage-contract.js';
import { runStorageContract } from './harnesses.js';

/**
 * An identifier whose trigrams are mostly common (issue #14): every filler event names the same file with another
 * line, so two of `src/db/pool.ts:42`'s trigrams have thousands of postings and only the line's is rare. The identifier
 * index then checks the common trigrams in the rare one's events only (on PostgreSQL pair by pair in the primary key,
 * postgres-identifier-index.ts `PROBE_MAX_PAIRS`); the events found are exactly those holding the identifier, never a
 * near miss sharing its rare trigram, on the path that uses the index as on the plain one.
 */
const IDENTIFIER = 'src/db/pool.ts:42';
const FILLER = 2_400;
/** Filler positions that hold the identifier. */
const HOLDERS = [5, 700, 1_234, 2_001, 2_399];
/** Near misses: the rare trigram (`pool ts 42`) or every token, not as the identifier. */
const NEAR_MISSES = ['lib/db/pool.ts:42 failed', 'src/db/pool.ts:420 and src/db/pool.ts:4', 'pool.ts:42 src/db', 'src/db/pool.js:42 src/api/pool.ts:42'];

/** What each holder says besides the identifier (different, so recall's novelty order keeps all of them). */
const HOLDER_TEXT = ['a deadlock between two writers', 'the migration timed out', 'connections leaked on retry', 'slow query plan chosen', 'the pool size was zero'];

function content(i: number): string {
  const holder = HOLDERS.indexOf(i);
  if (holder >= 0) return `${HOLDER_TEXT[holder]!}: src/db/pool.ts:42 after src/db/pool.ts reload`;
  const extra = i % 600 === 17 ? ` ${NEAR_MISSES[(i / 600) | 0]!}` : '';
  const rare = i % 240 === 3 ? ' zebrafish' : '';
  return `checked src/db/pool.ts:${100 + (i % 300)} after src/db/pool.ts reload${extra}${rare}`;
}

runStorageContract('identifier of common trigrams', ({ createHarness }) => {
  let harness: BackendHarness;
  let mem: Engram;
  let ids: string[];

  beforeAll(async () => {
    harness = await createHarness();
    mem = await openEngram({ backend: harness.backend });
    ids = [];
    for (let start = 0; start < FILLER; start += 400) {
      const out = await mem.append(`s${(start / 400) % 2}`, Array.from({ length: 400 }, (_, j) => ({ kind: 'tool_result' as const, toolName: 'bash', content: content(start + j) })));
      ids.push(...out.map((o) => String(o.record.id)));
    }
    // The identifier index catches up (appends leave it to maintenance), so the lookup reads its postings.
    await mem.maintainTextIndex();
  }, 120_000);
  afterAll(async () => {
    await mem?.close();
    await harness?.cleanup();
  });

  it('finds exactly the events holding it, on the identifier index as on the plain path', async () => {
    expect(NEAR_MISSES.every((_, k) => ids[k * 600 + 17] !== undefined)).toBe(true);
    const expected = HOLDERS.map((i) => ids[i]!).sort();
    const search = async (boundAbove: number): Promise<string[]> =>
      (await harness.backend.searchText({ terms: parseQuery(IDENTIFIER).terms, limit: 50, boundAbove })).map((h) => String(h.eventId)).sort();
    expect(await search(0)).toEqual(expected);
    expect(await search(Number.POSITIVE_INFINITY)).toEqual(expected);
  });

  it('bounded with a session filter: the same events as the plain path (fewer matches than the bound)', async () => {
    // `boundAbove: 0` takes the bounded path, whose newest matches are read recent part first (pg-recent-chunks.ts).
    const terms = parseQuery('zebrafish').terms;
    const search = async (boundAbove: number): Promise<string[]> =>
      (await harness.backend.searchText({ terms, limit: 50, boundAbove, filter: { sessionIds: ['s1' as SessionId] } })).map((h) => String(h.eventId)).sort();
    const expected = ids.filter((_, i) => i % 240 === 3 && Math.floor(i / 400) % 2 === 1).sort();
    expect(expected.length).toBeGreaterThan(2);
    expect(await search(0)).toEqual(expected);
    expect(await search(Number.POSITIVE_INFINITY)).toEqual(expected);
  });

  it('recall of the identifier returns those events first', async () => {
    const r = await mem.recall(IDENTIFIER, { k: 5, logRecall: false });
    expect(r.hits.map((h) => String(h.eventId)).sort()).toEqual(HOLDERS.map((i) => ids[i]!).sort());
  });
});
