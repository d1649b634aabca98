import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { PostgresBackend } from '../../src/store/postgres/postgres-backend.js';
import { PgVisibleSpans, TOO_LARGE_TTL_MS } from '../../src/store/postgres/pg-visible-span.js';
import { SPAN_MAX_SHARE, SPAN_MIN_EVENTS } from '../../src/store/visible-span.js';
import { dropSchema, testPgUrl, uniqueSchema } from '../fixtures/postgres.js';

/**
 * The spans of a PostgreSQL store's held searches (pg-visible-span.ts) remember, for a while, a project or list of
 * sessions that holds too much of the store to be bounded: most stores are one project, and each of its agents'
 * searches would otherwise pay a round trip for no bound. A small one is looked up every time (its span moves with
 * every append). On a real PostgreSQL store, its size given as the search gives it (its largest key).
 */

const STORED = SPAN_MIN_EVENTS;
/** Project `big` holds a quarter of a store of STORED events: too much for a span. */
const BIG = STORED * SPAN_MAX_SHARE;

let schema: string;
let backend: PostgresBackend;
let mem: Engram;
beforeAll(async () => {
  schema = uniqueSchema('engram_spanmem');
  backend = await PostgresBackend.open(testPgUrl(), { schema, maxConnections: 4 });
  mem = await openEngram({ backend });
  for (let done = 0; done < BIG; done += 500) {
    await mem.append('big-1', Array.from({ length: 500 }, (_, i) => ({ kind: 'note' as const, content: `big note ${done + i}` })), { project: 'big' });
  }
  await mem.append('small-1', [{ kind: 'note', content: 'small note' }], { project: 'small' });
}, 120_000);
afterAll(async () => {
  await mem?.close();
  await dropSchema(schema);
});

describe('PgVisibleSpans', () => {
  it('looks a too-large project or list up once per TTL, a small one every time, and bounds only the small one', async () => {
    const internals = backend as unknown as { pool: { query: (sql: string, params?: unknown[]) => Promise<{ rows: unknown[] }> }; sql: { s: string } };
    let statements = 0;
    let now = 1_000_000;
    const query = async <R>(sql: string, params: unknown[]): Promise<R[]> => {
      statements++;
      return (await internals.pool.query(sql, params)).rows as R[];
    };
    const spans = new PgVisibleSpans(query, internals.sql.s, () => now);
    const smallPk = Number(((await internals.pool.query(`SELECT pk FROM ${internals.sql.s}.events WHERE session_id = 'small-1'`)).rows[0] as { pk: string }).pk);

    // The small project is bounded to its one event, and looked up again each time.
    expect(await spans.span({ visibleToProject: 'small' }, STORED)).toEqual({ lo: smallPk, hi: smallPk });
    expect(await spans.span({ visibleToProject: 'small' }, STORED)).toEqual({ lo: smallPk, hi: smallPk });
    expect(statements).toBe(2);

    // The big one: no bound, looked up once, then taken at its word until the TTL runs out.
    expect(await spans.span({ visibleToProject: 'big' }, STORED)).toBeNull();
    expect(statements).toBe(3);
    expect(await spans.span({ visibleToProject: 'big' }, STORED)).toBeNull();
    now += TOO_LARGE_TTL_MS - 1;
    expect(await spans.span({ visibleToProject: 'big' }, STORED)).toBeNull();
    expect(statements).toBe(3);
    now += 2;
    expect(await spans.span({ visibleToProject: 'big' }, STORED)).toBeNull();
    expect(statements).toBe(4);

    // Lists of sessions likewise, each list on its own (in any order, repeats and all).
    expect(await spans.span({ sessionIds: ['big-1', 'small-1'] }, STORED)).toBeNull();
    expect(await spans.span({ sessionIds: ['small-1', 'big-1', 'small-1'] }, STORED)).toBeNull();
    expect(statements).toBe(5);
    // The project remembered as too large, the list bounded: the list's span, one statement.
    expect(await spans.span({ visibleToProject: 'big', sessionIds: ['small-1'] }, STORED)).toEqual({ lo: smallPk, hi: smallPk });
    expect(statements).toBe(6);
    // A store under the span's minimum takes no span and sends nothing.
    expect(await spans.span({ visibleToProject: 'small' }, STORED - 1)).toBeNull();
    expect(statements).toBe(6);
  });
});
