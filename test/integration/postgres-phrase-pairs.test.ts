import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { parseQuery } from '../../src/memory/query-terms.js';
import { PostgresBackend } from '../../src/store/postgres/postgres-backend.js';
import { compileTsQuery } from '../../src/store/postgres/tsquery.js';
import { dropSchema, testPgUrl, uniqueSchema, withPgClient } from '../fixtures/postgres.js';

/**
 * The phrase-pair index (postgres-phrase-pairs.ts) only narrows which chunks PostgreSQL checks a lone phrase on: a
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
});
