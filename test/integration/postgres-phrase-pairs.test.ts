import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { parseQuery } from '../../src/memory/query-terms.js';
import { PostgresBackend } from '../../src/store/postgres/postgres-backend.js';
import { compileTsQuery } from '../../src/store/postgres/tsquery.js';
import { dropSchema, testPgUrl, uniqueSchema, withPgClient } from '../fixtures/postgres.js';

/**
 * The opt-in phrase-pair index (postgres-phrase-pairs.ts), built here first, only narrows which chunks PostgreSQL checks a lone phrase on: a
 * phrase search finds exactly the events whose tsvector matches the phrase (checked here straight against
 * `event_text` without the index), across the tokens the parser splits or folds (hyphens, apostrophes, numbers,
 * paths, case, stems) and in long texts cut into several chunks.
 */
const TEXTS = [
  'The retry build deploy step failed twice',
  'retries built deploying: a stemmed match of the same phrase',
  'deploy build retry in the wrong order',
  'retry the build then deploy (loose words)',
  'a well-known fix for the well known issue',
  "it's the user's config that broke",
  'version 2.5 of build 42 shipped on 2026-01-02',
  'see src/db/pool.ts:42 for the pool config',
  'RETRY BUILD DEPLOY shouted',
  `${'filler words to push the phrase far along '.repeat(400)} retry build deploy at the end`,
  'e-mail the on-call about the retry-build-deploy script',
];
const PHRASES = [
  '"retry build deploy"',
  '"build deploy"',
  '"well known"',
  '"well-known fix"',
  '"it\'s the user\'s config"',
  '"user\'s config"',
  '"build 42 shipped"',
  '"version 2.5"',
  '"pool config"',
  '"src/db/pool.ts:42 for"',
  '"on-call about"',
  '"the end"',
  '"deploy build retry"',
];

describe('PostgreSQL phrase pairs', () => {
  let schema: string;
  let backend: PostgresBackend;
  let mem: Engram;
  let ids: string[];

  beforeAll(async () => {
    schema = uniqueSchema();
    backend = await PostgresBackend.open(testPgUrl(), { schema, maxConnections: 2 });
    mem = await openEngram({ backend });
    expect((await mem.setPhrasePairIndex(true)).action).toBe('built');
    const out = await mem.append(
      's1',
      TEXTS.map((content) => ({ kind: 'tool_result' as const, toolName: 'bash', content })),
    );
    ids = out.map((o) => String(o.record.id));
  });
  afterAll(async () => {
    await mem?.close();
    await dropSchema(schema);
  });

  it.each(PHRASES)('%s: the events whose chunks match the phrase, no more, no fewer', async (phrase) => {
    const terms = parseQuery(phrase).terms;
    const tsquery = compileTsQuery(terms)!;
    const reference = await withPgClient(async (c) =>
      (
        await c.query<{ id: string }>(
          `SELECT DISTINCT e.id FROM "${schema}".event_text t JOIN "${schema}".events e ON e.pk = t.event_pk
           WHERE t.tsv @@ to_tsquery('"${schema}".engram_text'::regconfig, $1)`,
          [tsquery],
        )
      ).rows.map((r) => r.id),
    );
    const found = (await backend.searchText({ terms, limit: 100 })).map((h) => String(h.eventId));
    expect(found.sort()).toEqual(reference.sort());
    expect(found.every((id) => ids.includes(id))).toBe(true);
  });

  it("the planner's capped counts: exact below the cap, the cap above it, with and without column statistics", async () => {
    const counts = (terms: string[], cap: number): Promise<number[]> =>
      (backend as unknown as { cappedCounts(q: string[], cap: number): Promise<number[]> }).cappedCounts(terms, cap);
    const terms = ["'retry'", "'build' <-> 'deploy'", "'well' <-> 'known'", "'shouted'", "'nowhere'", "'buil':*"];
    // The reference: every chunk matching each term, counted straight from event_text.
    const expected = await withPgClient(async (c) => {
      const out: number[] = [];
      for (const t of terms) {
        const r = await c.query<{ n: string }>(`SELECT count(*) AS n FROM "${schema}".event_text WHERE tsv @@ to_tsquery('"${schema}".engram_text'::regconfig, $1)`, [t]);
        out.push(Number(r.rows[0]!.n));
      }
      return out;
    });
    expect(expected.filter((n) => n > 3).length).toBeGreaterThan(1);
    expect(await counts(terms, 100)).toEqual(expected);
    expect(await counts(terms, 3)).toEqual(expected.map((n) => Math.min(n, 3)));
    // With statistics (ANALYZE): a common lexeme may be taken from them, never changing a count.
    await withPgClient((c) => c.query(`ANALYZE "${schema}".event_text`));
    const fresh = await PostgresBackend.open(testPgUrl(), { schema, maxConnections: 1 });
    try {
      const after = (terms2: string[], cap: number): Promise<number[]> =>
        (fresh as unknown as { cappedCounts(q: string[], cap: number): Promise<number[]> }).cappedCounts(terms2, cap);
      expect(await after(terms, 100)).toEqual(expected);
      expect(await after(terms, 1)).toEqual(expected.map((n) => Math.min(n, 1)));
    } finally {
      await fresh.close();
    }
  });

  it('uses the pairs for a chain of plain lexemes only', async () => {
    const pairsOf = (q: string): Promise<number[] | null> =>
      withPgClient(async (c) => (await c.query<{ p: number[] | null }>(`SELECT "${schema}".tsquery_pairs(to_tsquery('"${schema}".engram_text'::regconfig, $1)) AS p`, [q])).rows[0]!.p);
    expect(await pairsOf("'retry' <-> 'build' <-> 'deploy'")).toHaveLength(2);
    expect(await pairsOf("'retry' <-> 'build' <-> 'retry' <-> 'build'")).toHaveLength(2);
    expect(await pairsOf("'retry' <2> 'deploy'")).toBeNull();
    expect(await pairsOf("'retri':* <-> 'build'")).toBeNull();
    expect(await pairsOf("'retry' & 'build'")).toBeNull();
    expect(await pairsOf("'retry'")).toBeNull();
    // The long text's phrase sits in a later chunk: found all the same.
    const hits = await backend.searchText({ terms: parseQuery('"retry build deploy"').terms, limit: 100 });
    expect(hits.map((h) => String(h.eventId))).toContain(ids[9]);
  });

  it('building it again is a no-op; an invalid leftover of an interrupted concurrent build is dropped and rebuilt', async () => {
    expect((await backend.setPhrasePairIndex(true)).action).toBe('present');
    // An interrupted or failed CREATE INDEX CONCURRENTLY leaves the index, marked invalid: here one that fails (a
    // unique index on a constant), left under the pair index's name.
    await withPgClient((c) => c.query(`DROP INDEX "${schema}".event_text_pairs`));
    await expect(withPgClient((c) => c.query(`CREATE UNIQUE INDEX CONCURRENTLY event_text_pairs ON "${schema}".event_text ((1))`))).rejects.toThrow();
    const rebuilt = await backend.setPhrasePairIndex(true);
    expect(rebuilt.action).toBe('rebuilt');
    expect(rebuilt.indexBytes).toBeGreaterThan(0);
    const valid = await withPgClient(async (c) => (await c.query<{ v: boolean }>(`SELECT indisvalid AS v FROM pg_index WHERE indexrelid = '"${schema}".event_text_pairs'::regclass`)).rows[0]!.v);
    expect(valid).toBe(true);
  });
});

describe('PostgreSQL phrase pairs, opt-in', () => {
  let schema: string;
  let backend: PostgresBackend;
  let mem: Engram;

  beforeAll(async () => {
    schema = uniqueSchema();
    // A short re-check window, so the test sees an index another connection builds.
    backend = await PostgresBackend.open(testPgUrl(), { schema, maxConnections: 2, phrasePairsRecheckMs: 300 });
    mem = await openEngram({ backend });
    await mem.append(
      's1',
      TEXTS.map((content) => ({ kind: 'tool_result' as const, toolName: 'bash', content })),
    );
  });
  afterAll(async () => {
    await mem?.close();
    await dropSchema(schema);
  });

  const hasIndex = (): Promise<boolean> =>
    withPgClient(async (c) => (await c.query(`SELECT 1 FROM pg_indexes WHERE schemaname = $1 AND indexname = 'event_text_pairs'`, [schema])).rows.length > 0);
  /** Whether the backend's searches and counts take the pairs (its probe, as it last looked). */
  const usesPairs = (): Promise<boolean> => (backend as unknown as { phrasePairIndex: { isReady(): Promise<boolean> } }).phrasePairIndex.isReady();
  const reference = (tsquery: string): Promise<string[]> =>
    withPgClient(async (c) =>
      (
        await c.query<{ id: string }>(
          `SELECT DISTINCT e.id FROM "${schema}".event_text t JOIN "${schema}".events e ON e.pk = t.event_pk
           WHERE t.tsv @@ to_tsquery('"${schema}".engram_text'::regconfig, $1)`,
          [tsquery],
        )
      ).rows.map((r) => r.id),
    );
  const counts = (terms: string[], cap: number): Promise<number[]> =>
    (backend as unknown as { cappedCounts(q: string[], cap: number): Promise<number[]> }).cappedCounts(terms, cap);
  const PAIR_TERMS = ["'build' <-> 'deploy'", "'well' <-> 'known'", "'retry'"];
  /** Every chunk matching each term, counted straight from event_text. */
  const referenceCounts = (): Promise<number[]> =>
    withPgClient(async (c) => {
      const out: number[] = [];
      for (const q of PAIR_TERMS) {
        const r = await c.query<{ n: string }>(`SELECT count(*) AS n FROM "${schema}".event_text WHERE tsv @@ to_tsquery('"${schema}".engram_text'::regconfig, $1)`, [q]);
        out.push(Number(r.rows[0]!.n));
      }
      return out;
    });

  it('a new store has no pair index (migration 20 makes its functions only); phrases and counts take the plain path, the same events', async () => {
    expect(await hasIndex()).toBe(false);
    expect(await usesPairs()).toBe(false);
    for (const phrase of PHRASES) {
      const terms = parseQuery(phrase).terms;
      const found = (await backend.searchText({ terms, limit: 100 })).map((h) => String(h.eventId));
      expect(found.sort()).toEqual((await reference(compileTsQuery(terms)!)).sort());
    }
    const expected = await referenceCounts();
    expect(expected[0]).toBeGreaterThan(1);
    expect(await counts(PAIR_TERMS, 100)).toEqual(expected);
  });

  it('uses the index within its re-check window once another connection builds it, and stops when it is dropped', async () => {
    const terms = parseQuery('"retry build deploy"').terms;
    const expected = (await reference(compileTsQuery(terms)!)).sort();
    expect(await usesPairs()).toBe(false);
    await withPgClient((c) => c.query(`CREATE INDEX event_text_pairs ON "${schema}".event_text USING gin ("${schema}".tsv_pairs(tsv))`));
    // After the re-check window the backend has looked again.
    await new Promise((r) => setTimeout(r, 400));
    expect((await backend.searchText({ terms, limit: 100 })).map((h) => String(h.eventId)).sort()).toEqual(expected);
    expect(await usesPairs()).toBe(true);
    expect(await counts(PAIR_TERMS, 100)).toEqual(await referenceCounts());
    // Dropped by another connection: the plain path again after the window.
    await withPgClient((c) => c.query(`DROP INDEX "${schema}".event_text_pairs`));
    await new Promise((r) => setTimeout(r, 400));
    expect(await usesPairs()).toBe(false);
    expect((await backend.searchText({ terms, limit: 100 })).map((h) => String(h.eventId)).sort()).toEqual(expected);
  });

  it('the library option phrasePairs: true builds it when the backend opens', async () => {
    expect(await hasIndex()).toBe(false);
    const other = await PostgresBackend.open(testPgUrl(), { schema, maxConnections: 1, phrasePairs: true });
    try {
      expect(await hasIndex()).toBe(true);
      const terms = parseQuery('"build deploy"').terms;
      expect((await other.searchText({ terms, limit: 100 })).map((h) => String(h.eventId)).sort()).toEqual((await reference(compileTsQuery(terms)!)).sort());
    } finally {
      await other.close();
    }
  });
});
