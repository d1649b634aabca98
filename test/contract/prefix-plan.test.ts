import { afterAll, beforeAll, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { parseQuery } from '../../src/memory/query-terms.js';
import { runStorageContract } from './harnesses.js';
import type { BackendHarness } from './storage-contract.js';

/**
 * A query holding a run of hex letters or digits (`E11000`, MongoDB's duplicate-key code; any number of six digits or
 * more) is also asked for as a hash prefix (query-terms.ts). Its frequency is counted like any term's, so where it
 * matches many events the search is planned as any common term's is: on the bounded path (forced here with
 * `boundAbove`, as a store of a million events takes it), the newest events holding every term. SQLite's planner
 * once left a prefix term's frequency unknown, which kept every such query on the exact path: bm25 over all 82,405
 * events holding `E11000` in a 1M-event store, ~110 ms a search.
 */
const OLD = 300;
/** More than the bounded path's candidates (BOUNDED_CANDIDATES, 400): its newest rows are then all newer events. */
const NEW = 450;

runStorageContract('a hex-like code planned by its frequency', ({ createHarness }) => {
  let harness: BackendHarness;
  let mem: Engram;
  let oldIds: Set<string>;
  let newIds: Set<string>;

  beforeAll(async () => {
    harness = await createHarness();
    mem = await openEngram({ backend: harness.backend });
    // The older events are short (bm25 ranks them first); the newer ones long. Tool results: no turn context.
    const old = await mem.append('old', Array.from({ length: OLD }, (_, i) => ({ kind: 'tool_result' as const, toolName: 'mongo', content: `E11000 orders ${i}` })));
    const filler = 'while writing the batch the driver reported a duplicate key on the unique index of the collection and gave up';
    const fresh = await mem.append('new', Array.from({ length: NEW }, (_, i) => ({ kind: 'tool_result' as const, toolName: 'mongo', content: `E11000 ${filler} in orders ${i}` })));
    oldIds = new Set(old.map((o) => String(o.record.id)));
    newIds = new Set(fresh.map((o) => String(o.record.id)));
  }, 60_000);
  afterAll(async () => {
    await mem?.close();
    await harness?.cleanup();
  });

  const search = async (query: string, boundAbove: number): Promise<string[]> =>
    (await harness.backend.searchText({ terms: parseQuery(query).terms, limit: 10, boundAbove })).map((h) => String(h.eventId));

  it('the query holds the code as a word and as a prefix', () => {
    expect(parseQuery('E11000 in orders').terms).toContainEqual({ text: 'E11000', isPrefix: true });
  });

  it('exact path: bm25 over every match ranks the short older events first', async () => {
    const hits = await search('E11000 in orders', Number.POSITIVE_INFINITY);
    expect(hits).toHaveLength(10);
    expect(hits.every((id) => oldIds.has(id))).toBe(true);
  });

  it('bounded path: the newest events holding every term, though one term is a prefix', async () => {
    const hits = await search('E11000 in orders', 0);
    expect(hits).toHaveLength(10);
    expect(hits.every((id) => newIds.has(id))).toBe(true);
  });
});
