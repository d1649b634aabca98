import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { queryGrams } from '../../src/store/identifier-grams.js';
import { PostgresBackend } from '../../src/store/postgres/postgres-backend.js';
import { readIdentifierHead } from '../../src/store/postgres/postgres-identifier-index.js';
import { compileTsQuery } from '../../src/store/postgres/tsquery.js';
import { dropSchema, testPgUrl, uniqueSchema } from '../fixtures/postgres.js';

/**
 * The first round trip of an identifier search on PostgreSQL (readIdentifierHead): the queue's length, the queued
 * events holding the identifier, the trigrams' counts, in one statement; and the queue left alone when it is longer
 * than the search covers by phrase.
 */

let schema: string;
let backend: PostgresBackend;
let mem: Engram;
beforeEach(async () => {
  schema = uniqueSchema('engram_idhead');
  backend = await PostgresBackend.open(testPgUrl(), { schema, maxConnections: 4 });
  mem = await openEngram({ backend });
});
afterEach(async () => {
  await mem?.close();
  await dropSchema(schema);
});

const ID = 'build-7f3a9c21-relay';

describe('readIdentifierHead', () => {
  it('counts the queue, finds the queued holder and counts the trigrams in one statement; null past the cap', async () => {
    await mem.append('s', [
      { kind: 'tool_result', content: `deploy failed: artifact ${ID} was not found` },
      { kind: 'note', content: 'an unrelated note about the relay' },
      { kind: 'note', content: 'another build, 7f3a9c22' },
    ]);
    const internals = backend as unknown as { pool: Parameters<typeof readIdentifierHead>[0]; sql: { s: string; config: string } };
    const pk = (await internals.pool.query<{ pk: string }>(`SELECT pk FROM ${internals.sql.s}.events WHERE content LIKE $1`, [`%${ID}%`])).rows.map((r) => r.pk);
    const grams = queryGrams(ID)!;
    const tsquery = compileTsQuery([{ text: ID }]);
    const statements: string[] = [];
    const runner = { query: (sql: string, params?: unknown[]) => (statements.push(sql), internals.pool.query(sql, params)) } as Parameters<typeof readIdentifierHead>[0];
    const read = (cap: number | undefined) => readIdentifierHead(runner, internals.sql.s, internals.sql.config, grams, tsquery, cap);

    // Three events queued, none indexed yet: the holder is found in the queue, every trigram counts 0.
    const head = await read(10);
    expect(head.backlog).toBe(3);
    expect(head.queued).toEqual(pk);
    expect([...head.counts.values()].every((n) => n === 0)).toBe(true);
    expect(statements).toHaveLength(1);
    // A queue longer than the cap is left to another path: no phrase search of it.
    expect(await read(2)).toMatchObject({ backlog: 3, queued: null });
    // Without a cap (a later term of the same search) the queue is not counted.
    expect(await read(undefined)).toMatchObject({ backlog: undefined, queued: pk });

    // After the catch-up the queue is empty and the trigrams counted.
    await mem.maintainTextIndex();
    const after = await read(10);
    expect(after).toMatchObject({ backlog: 0, queued: [] });
    expect([...after.counts.values()].every((n) => n >= 1)).toBe(true);
    // And the search finds the holder through the index.
    const hits = await mem.store.searchText({ terms: [{ text: ID }], limit: 5 });
    expect(hits).toHaveLength(1);
  });
});
