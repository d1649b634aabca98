import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { PostgresBackend } from '../../src/store/postgres/postgres-backend.js';
import { dropSchema, testPgUrl, uniqueSchema } from '../fixtures/postgres.js';

/**
 * An identifier search on PostgreSQL reads the identifier index and the queue of events not indexed yet in two
 * statements; the catch-up may index an event between them (a server's worker runs it beside recalls). Whichever
 * moment it runs, the event is found.
 */

let schema: string;
let backend: PostgresBackend;
let mem: Engram;
beforeEach(async () => {
  schema = uniqueSchema('engram_idrace');
  backend = await PostgresBackend.open(testPgUrl(), { schema, maxConnections: 4 });
  mem = await openEngram({ backend });
});
afterEach(async () => {
  await mem?.close();
  await dropSchema(schema);
});

describe('identifier search beside the catch-up', () => {
  it('finds an event the catch-up indexes between the search reading the queue and reading the index', async () => {
    const [out] = await mem.append('race', [{ kind: 'tool_result', content: 'deploy failed: artifact build-7f3a9c21-relay was not found in the cache' }]);
    await mem.append('race', [{ kind: 'note', content: 'an unrelated note about the relay' }]);
    // Runs the catch-up right after the search's first read of the index or the queue, as a concurrent worker may.
    const pool = (backend as unknown as { pool: { query: (...args: unknown[]) => Promise<unknown> } }).pool;
    const query = pool.query.bind(pool);
    let caughtUp = false;
    pool.query = async (...args: unknown[]) => {
      const result = await query(...args);
      const sql = typeof args[0] === 'string' ? args[0] : String((args[0] as { text?: string }).text);
      if (!caughtUp && (/event_idgrams_backlog b JOIN/.test(sql) || /FROM \S+\.event_idgrams WHERE gram/.test(sql))) {
        caughtUp = true;
        expect((await mem.maintainTextIndex()).events).toBe(2);
      }
      return result;
    };
    const hits = await mem.store.searchText({ terms: [{ text: 'build-7f3a9c21-relay' }], limit: 5 });
    expect(caughtUp).toBe(true);
    expect(hits.map((h) => h.eventId)).toEqual([out!.record.id]);
  });
});
