import { describe, expect, it } from 'vitest';
import { MAX_RANKED_ROWS, NOT_COUNTED, TsqueryPlanner } from './tsquery-planner.js';

/** A counter over a fixed table of frequencies, recording how often it is asked. */
function counter(table: Record<string, number>) {
  const calls: string[][] = [];
  const count = async (queries: string[], cap: number): Promise<number[]> => {
    calls.push(queries);
    return queries.map((q) => Math.min(cap, table[q] ?? 0));
  };
  return { count, calls };
}

describe('TsqueryPlanner', () => {
  it('ORs every term when all of them are rare enough to rank', async () => {
    const { count } = counter({ "'zeppelin'": 3, "'hangar'": 40 });
    const plan = await new TsqueryPlanner(count).plan([{ text: 'zeppelin' }, { text: 'hangar' }]);
    expect(plan).toBe("'zeppelin' | 'hangar'");
  });

  it('lets the rare terms select rows and all terms rank them when a common term would exceed the budget', async () => {
    const { count } = counter({ "'zeppelin'": 3, "'the'": MAX_RANKED_ROWS * 10, "'config'": MAX_RANKED_ROWS });
    const plan = await new TsqueryPlanner(count).plan([{ text: 'config' }, { text: 'zeppelin' }, { text: 'the' }]);
    expect(plan).toBe("('zeppelin') & ('zeppelin' | 'config' | 'the')");
  });

  it('does not let a term no chunk holds be the only selecting term: a term some chunk holds selects too', async () => {
    const { count } = counter({ "'absentword'": 0, "'cache'": MAX_RANKED_ROWS * 3, "'customer'": MAX_RANKED_ROWS * 2 });
    const plan = await new TsqueryPlanner(count).plan([{ text: 'cache' }, { text: 'absentword' }, { text: 'customer' }]);
    // Both common counts are capped alike, so the first of them in the query selects.
    expect(plan).toBe("('absentword' | 'cache') & ('absentword' | 'cache' | 'customer')");
  });

  it('always keeps phrases and prefix terms among the selecting terms', async () => {
    const { count } = counter({ "('src' <-> 'db' <-> 'pool' <-> 'ts')": MAX_RANKED_ROWS * 2, "'3f9a2c':*": MAX_RANKED_ROWS * 2, "'error'": 10 });
    const plan = await new TsqueryPlanner(count).plan([{ text: 'src/db/pool.ts' }, { text: '3f9a2c', isPrefix: true }, { text: 'error' }]);
    expect(plan).toBe("'error' | ('src' <-> 'db' <-> 'pool' <-> 'ts') | '3f9a2c':*");
  });

  it('asks the database once per term and then answers from its cache', async () => {
    const { count, calls } = counter({ "'alpha'": 1, "'beta'": 2 });
    const planner = new TsqueryPlanner(count);
    await planner.plan([{ text: 'alpha' }, { text: 'beta' }]);
    await planner.plan([{ text: 'beta' }, { text: 'alpha' }]);
    expect(calls).toEqual([["'alpha'", "'beta'"]]);
  });

  it('counts a single term for the bound estimate, and returns null without a count for no usable term', async () => {
    const { count, calls } = counter({ "'solo'": 9 });
    expect(await new TsqueryPlanner(count).planDetailed([{ text: 'solo' }])).toEqual({ q: "'solo'", estimate: 9, all: "('solo')", isSinglePhrase: false, terms: [{ q: "'solo'", df: 9, text: 'solo', isRare: true }] });
    expect(await new TsqueryPlanner(count).plan([{ text: '--' }])).toBeNull();
    expect(calls).toEqual([["'solo'"]]);
  });

  it('does not count a lone phrase (nothing reads its count), but counts a phrase among other terms', async () => {
    const { count, calls } = counter({ "('or' <-> 'request' <-> 'worker')": 6, "'worker'": 50 });
    const planner = new TsqueryPlanner(count);
    expect(await planner.planDetailed([{ text: 'or request worker' }])).toEqual({
      q: "('or' <-> 'request' <-> 'worker')",
      estimate: NOT_COUNTED,
      all: "(('or' <-> 'request' <-> 'worker'))",
      isSinglePhrase: true,
      terms: [{ q: "('or' <-> 'request' <-> 'worker')", df: NOT_COUNTED, text: 'or request worker', isRare: true }],
    });
    expect(calls).toEqual([]);
    // A count the caller knows (an identifier's, from the identifier index) is still reported.
    expect((await planner.planDetailed([{ text: 'or request worker' }], () => 4))?.estimate).toBe(4);
    await planner.plan([{ text: 'or request worker' }, { text: 'worker' }]);
    expect(calls).toEqual([["('or' <-> 'request' <-> 'worker')", "'worker'"]]);
  });
});
