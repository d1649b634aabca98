import type Database from 'better-sqlite3';
import { LruCache } from '../../util/lru-cache.js';

type Db = Database.Database;
type Statement = Database.Statement;

/**
 * How many distinct SQL texts keep their compiled statement. Queries built per call (an `IN (?, ?, ...)` list
 * per chunk size, a filter combination) vary in a few dozen shapes; each statement is a few KB.
 */
export const STATEMENT_CACHE_ENTRIES = 256;

/**
 * Makes `db.prepare` reuse compiled statements by SQL text. Every query the backend builds per call (recall's
 * full-text search, event lists and id lookups) used to be compiled again on each request: 4 % of the server's
 * CPU under `npm run bench -- http-load --profile` (bench/results/http-load.md). A cached statement is handed
 * out again only when it is not running (an `iterate()` in progress keeps it busy), and with its result modes
 * (pluck, raw, expand) reset, so a caller always gets what a fresh `prepare` would give it. Statements from
 * `db.prepare` are shared: never `bind()` one (bound parameters cannot be reset) nor switch `safeIntegers` on it.
 */
export function cacheStatements(db: Db, maxEntries: number = STATEMENT_CACHE_ENTRIES): void {
  const prepare = db.prepare.bind(db) as (sql: string) => Statement;
  const cache = new LruCache<string, Statement>(maxEntries);
  const cached = (sql: string): Statement => {
    const hit = cache.get(sql);
    if (hit && !hit.busy) {
      if (hit.reader) hit.pluck(false).raw(false).expand(false);
      return hit;
    }
    const statement = prepare(sql);
    if (!hit) cache.set(sql, statement);
    return statement;
  };
  db.prepare = cached as Db['prepare'];
}
