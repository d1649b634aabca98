import { beforeAll, afterAll, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import type { BackendHarness } from './storage-contract.js';
import { parseQuery } from '../../src/memory/query-terms.js';
import { runStorageContract } from './harnesses.js';

/**
 * The full-text planner at scale on every backend (docs/recall.md, "Full-text at scale"): on a store of 10K
 * events, the bounded path (forced on with `boundAbove: 0`, as it runs at a million events) finds exactly the
 * events an identifier or a phrase occurs in, the same ones the exact path finds, and never a near miss; for
 * common words it returns the newest rows that hold every word.
 */
const EVENTS = 10_000;
const COMMON = ['config', 'service', 'request', 'handler', 'module', 'build', 'cache', 'worker'];
const RARE = Array.from({ length: 400 }, (_, i) => `zq${i.toString(36)}vex`);
const IDENTIFIER = 'src/db/pool.ts:42';
const PHRASE = 'retry the flaky upload';
/** Events (by position in the store) that hold the identifier or the phrase; spread from the oldest to the newest. */
const HAS_IDENTIFIER = [3, 1_500, 4_242, 7_001, 9_990];
const HAS_PHRASE = [17, 2_000, 5_555, 8_888, 9_999];
/** Near misses: the identifier's or the phrase's tokens, not in that order or with another neighbour. */
const NEAR_MISSES = [
  'see src/db/pool.ts:43 and src/api/pool.ts:42',
  'pool ts 42 src db in the wrong order: db/src/pool.ts:42',
  'retry the upload, flaky again',
  'the flaky upload retry',
];

/**
 * Events after the 10K that hold one identifier in the ways an agent's text does (docs/recall.md, identifiers): in a
 * stack frame with a column, bare, with a longer line number, and a near miss holding every trigram of it in two
 * other paths. An identifier of three or more tokens is looked up in the identifier index on the bounded path.
 */
const PATH_EVENTS = {
  frame: 'TypeError: boom\n    at handler (src/orders/client.ts:385:6)\n    at run (src/core/queue.ts:12:3)',
  bare: 'failed: src/orders/client.ts',
  longerLine: 'see src/orders/client.ts:3850 for the retry',
  twoPaths: 'compare src/orders/client.go with lib/orders/client.ts today',
} as const;

function content(i: number): string {
  // mulberry32, seeded by the position: the same text for an event on every run and backend.
  let seed = i + 1;
  const next = (n: number): number => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) % n;
  };
  const words = Array.from({ length: 12 }, () => (next(3) === 0 ? RARE[next(RARE.length)]! : COMMON[next(COMMON.length)]!));
  if (HAS_IDENTIFIER.includes(i)) words.splice(5, 0, `failed at ${IDENTIFIER}`);
  if (HAS_PHRASE.includes(i)) words.splice(3, 0, PHRASE);
  if (i % 997 === 1) words.push(NEAR_MISSES[i % NEAR_MISSES.length]!);
  return words.join(' ');
}

runStorageContract('full-text planner at scale', ({ createHarness }) => {
  let harness: BackendHarness;
  let mem: Engram;
  let ids: string[];
  let pathIds: Record<keyof typeof PATH_EVENTS, string>;

  beforeAll(async () => {
    harness = await createHarness();
    mem = await openEngram({ backend: harness.backend });
    ids = [];
    // Tool results: no turn context, so an event matches by its own text only.
    for (let start = 0; start < EVENTS; start += 500) {
      const batch = Array.from({ length: Math.min(500, EVENTS - start) }, (_, j) => ({ kind: 'tool_result' as const, toolName: 'bash', content: content(start + j) }));
      const out = await mem.append(`s${(start / 500) % 3}`, batch);
      ids.push(...out.map((o) => o.record.id));
    }
    // The identifier index catches up on these (appends leave it to maintenance); the path events below stay past
    // its watermark, so their identifiers are found through the full-text phrase of the tail.
    await mem.maintainTextIndex();
    const out = await mem.append('paths', Object.values(PATH_EVENTS).map((c) => ({ kind: 'tool_result' as const, toolName: 'bash', content: c })));
    pathIds = Object.fromEntries(Object.keys(PATH_EVENTS).map((k, i) => [k, String(out[i]!.record.id)])) as Record<keyof typeof PATH_EVENTS, string>;
  }, 120_000);
  afterAll(async () => {
    await mem?.close();
    await harness?.cleanup();
  });

  const search = async (query: string, boundAbove: number, limit = 40): Promise<string[]> =>
    (await harness.backend.searchText({ terms: parseQuery(query).terms, limit, boundAbove })).map((h) => h.eventId);

  describe('an exact identifier or phrase', () => {
    it.each([
      ['identifier', IDENTIFIER, HAS_IDENTIFIER],
      ['quoted phrase', `"${PHRASE}"`, HAS_PHRASE],
    ])('%s: the bounded path finds exactly the events holding it, as the exact path does', async (_label, query, positions) => {
      const expected = positions.map((i) => ids[i]!).sort();
      const exact = await search(query, Number.POSITIVE_INFINITY);
      const bounded = await search(query, 0);
      expect([...exact].sort()).toEqual(expected);
      expect([...bounded].sort()).toEqual(expected);
    });

    it.each([
      ['identifier', `which config service request touched ${IDENTIFIER} in the build?`, HAS_IDENTIFIER],
      ['rare word', `config service request handler ${RARE[11]!}`, null],
    ])('%s among common words: the bounded path ranks every event holding it first, as the exact path does', async (_label, query, positions) => {
      // The common words match thousands of newer events; the rare term's events must still all come first.
      const rare = positions ? null : RARE[11]!;
      const expected = (positions ? positions.map((i) => ids[i]!) : ids.filter((_, i) => content(i).split(' ').includes(rare!))).sort();
      expect(expected.length).toBeGreaterThan(0);
      const limit = expected.length + 20;
      const exact = await search(query, Number.POSITIVE_INFINITY, limit);
      const bounded = await search(query, 0, limit);
      expect(exact.slice(0, expected.length).sort()).toEqual(expected);
      expect(bounded.slice(0, expected.length).sort()).toEqual(expected);
    });

    it('a phrase of common words: exactly the events holding them in order, though thousands hold every word', async () => {
      // SQLite checks positions; PostgreSQL checks the phrase on the chunks holding all its words, or, with its opt-in
      // phrase-pair index, on those holding its pairs of words (postgres-phrase-pairs.ts): the same events either way.
      const phrase = ['config', 'service', 'request'];
      const words = (i: number): string[] => content(i).split(' ');
      const expected = ids.filter((_, i) => words(i).some((_, j) => phrase.every((p, k) => words(i)[j + k] === p))).sort();
      const loose = ids.filter((_, i) => phrase.every((p) => words(i).includes(p)));
      expect(expected.length).toBeGreaterThan(10);
      expect(loose.length).toBeGreaterThan(expected.length * 10);
      // The same words in another order are another phrase.
      const reversed = ids.filter((_, i) => words(i).some((_, j) => [...phrase].reverse().every((p, k) => words(i)[j + k] === p))).sort();
      const check = async (): Promise<void> => {
        for (const bound of [0, Number.POSITIVE_INFINITY]) expect((await search(`"${phrase.join(' ')}"`, bound, 1000)).sort()).toEqual(expected);
        expect((await search(`"${[...phrase].reverse().join(' ')}"`, 0, 1000)).sort()).toEqual(reversed);
      };
      await check();
      const backend = harness.backend;
      if (backend.setPhrasePairIndex) {
        expect((await backend.setPhrasePairIndex(true)).action).toBe('built');
        try {
          await check();
        } finally {
          expect((await backend.setPhrasePairIndex(false)).action).toBe('dropped');
        }
      }
    });

    it('finds the same events through recall with the default bound', async () => {
      const r = await mem.recall(IDENTIFIER, { retriever: 'fts', logRecall: false, k: 10 });
      expect(r.hits.map((h) => h.eventId).sort()).toEqual(HAS_IDENTIFIER.map((i) => ids[i]!).sort());
    });
  });

  describe('an identifier inside longer identifiers', () => {
    it.each([
      ['src/orders/client.ts:385', ['frame']],
      ['orders/client.ts:385', ['frame']],
      ['src/orders/client.ts', ['frame', 'bare', 'longerLine']],
      ['lib/orders/client.ts', ['twoPaths']],
      ['src/core/queue.ts:12:3', ['frame']],
    ] as const)('%s: the bounded path finds exactly the events holding it, as the exact path does', async (query, which) => {
      const expected = which.map((k) => pathIds[k]).sort();
      expect((await search(query, Number.POSITIVE_INFINITY)).sort()).toEqual(expected);
      expect((await search(query, 0)).sort()).toEqual(expected);
    });

    it('a purged event is no longer found by its identifier, on either path', async () => {
      await mem.purge({ eventIds: [pathIds.bare] }, { actor: 'os:test' });
      const expected = [pathIds.frame, pathIds.longerLine].sort();
      expect((await search('src/orders/client.ts', 0)).sort()).toEqual(expected);
      expect((await search('src/orders/client.ts', Number.POSITIVE_INFINITY)).sort()).toEqual(expected);
      expect(await search('failed: src/orders/client.ts', 0)).not.toContain(pathIds.bare);
    });
  });

  describe('common words', () => {
    it('bounded: the newest events holding every word, limited, each holding the words', async () => {
      const bounded = await search('config service request', 0, 20);
      expect(bounded).toHaveLength(20);
      const position = new Map(ids.map((id, i) => [id, i]));
      const all = ids.map((_, i) => i).filter((i) => ['config', 'service', 'request'].every((w) => content(i).split(' ').includes(w)));
      // Every hit holds all three words, and comes from the newest few hundred such events (the candidates).
      const newest = new Set(all.slice(-400));
      expect(all.length).toBeGreaterThan(400);
      for (const id of bounded) expect(newest.has(position.get(id)!)).toBe(true);
      // The exact path ranks all matches; it finds only events holding at least one word.
      const exact = await search('config service request', Number.POSITIVE_INFINITY, 20);
      expect(exact).toHaveLength(20);
      for (const id of exact) expect(/config|service|request/.test(content(position.get(id)!))).toBe(true);
    });

    it('a rare word is found in every event holding it on both paths', async () => {
      const word = RARE[7]!;
      const holding = ids.filter((_, i) => content(i).split(' ').includes(word)).sort();
      expect(holding.length).toBeGreaterThan(0);
      expect((await search(word, 0, 1000)).sort()).toEqual(holding);
      expect((await search(word, Number.POSITIVE_INFINITY, 1000)).sort()).toEqual(holding);
    });
  });
});
