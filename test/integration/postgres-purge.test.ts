import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { dropSchema, testPgUrl, uniqueSchema } from '../fixtures/postgres.js';

// How a purge gets past PostgreSQL's immutability triggers (migration 9): a transaction-local setting naming the
// schema. These tests show it opens that transaction only, on that connection only, for that schema only.

let schema: string;
let mem: Engram;
let a: pg.Client;
let b: pg.Client;
let ids: string[];

beforeEach(async () => {
  schema = uniqueSchema('engram_pu');
  mem = await openEngram({ pg: `${testPgUrl()}?schema=${schema}` });
  ids = (await mem.append('s', [{ kind: 'user', content: 'one' }, { kind: 'user', content: 'two' }])).map((o) => o.record.id);
  a = new pg.Client({ connectionString: testPgUrl() });
  b = new pg.Client({ connectionString: testPgUrl() });
  await a.connect();
  await b.connect();
});
afterEach(async () => {
  await a?.end();
  await b?.end();
  await mem?.close();
  await dropSchema(schema);
});

const update = (c: pg.Client, id: string) => c.query(`UPDATE "${schema}".events SET content = 'changed' WHERE id = $1`, [id]);

describe('the purge flag on PostgreSQL', () => {
  it('lets its own transaction rewrite an event, and nothing after it commits on the same connection', async () => {
    await a.query('BEGIN');
    await a.query(`SELECT set_config('engram.purge', $1, true)`, [schema]);
    await update(a, ids[0]!);
    await a.query('COMMIT');
    await expect(update(a, ids[1]!)).rejects.toThrow(/engram: UPDATE refused on events/);
  });

  it('refuses a concurrent writer on another connection while a purge transaction is open', async () => {
    await a.query('BEGIN');
    await a.query(`SELECT set_config('engram.purge', $1, true)`, [schema]);
    await expect(update(b, ids[1]!)).rejects.toThrow(/engram: UPDATE refused on events/);
    await a.query('ROLLBACK');
  });

  it('opens only the schema it names, and never deletes an event or truncates', async () => {
    await a.query('BEGIN');
    await a.query(`SELECT set_config('engram.purge', 'another_schema', true)`);
    await expect(update(a, ids[0]!)).rejects.toThrow(/refused/);
    await a.query('ROLLBACK');
    await a.query('BEGIN');
    await a.query(`SELECT set_config('engram.purge', $1, true)`, [schema]);
    await expect(a.query(`DELETE FROM "${schema}".events WHERE id = $1`, [ids[0]!])).rejects.toThrow(/DELETE refused on events/);
    await a.query('ROLLBACK');
    await a.query('BEGIN');
    await a.query(`SELECT set_config('engram.purge', $1, true)`, [schema]);
    await expect(a.query(`TRUNCATE "${schema}".recall_log`)).rejects.toThrow(/refused|cannot truncate/);
    await a.query('ROLLBACK');
    expect((await mem.getEvent(ids[0]!)).content).toBe('one');
  });
});
