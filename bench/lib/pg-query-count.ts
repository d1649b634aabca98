/**
 * Counts the queries a serving process sends to PostgreSQL (each one a round trip), in the driver, for
 * bench/http-load.ts: node-postgres' `Client.prototype.query` wrapped before Engram loads the driver. On SIGUSR2 the
 * process writes its count so far to `<dir>/<pid>.<n>` (n: the signals received so far), which the bench reads.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

export function countPgQueries(dir: string): void {
  // The same module instance Engram's `import('pg')` gets: ESM import of a CommonJS package reuses require's cache.
  const pg = createRequire(import.meta.url)('pg') as { Client: { prototype: { query: (...args: unknown[]) => unknown } } };
  const proto = pg.Client.prototype;
  const query = proto.query;
  let count = 0;
  proto.query = function (this: unknown, ...args: unknown[]) {
    count++;
    return query.apply(this, args);
  };
  let signals = 0;
  process.on('SIGUSR2', () => {
    // Written whole, then renamed: the bench never reads a file half-written.
    const file = join(dir, `${process.pid}.${++signals}`);
    writeFileSync(`${file}.tmp`, String(count));
    renameSync(`${file}.tmp`, file);
  });
}
