import { resolve } from 'node:path';
import { EngramError } from '../errors.js';
import type { StorageBackend } from './backend.js';
import type { PostgresBackendOptions } from './postgres/postgres-backend.js';
import { PostgresBackend } from './postgres/postgres-backend.js';
import type { SqliteBackendOptions } from './sqlite/sqlite-backend.js';
import { SqliteBackend } from './sqlite/sqlite-backend.js';

/** Where the embedded store lives when nothing else is said: relative to the working directory. */
export const DEFAULT_DB_PATH = '.engram/engram.db';

export interface StoreLocation {
  /** SQLite file path. Default {@link DEFAULT_DB_PATH}. Ignored when {@link pg} is set. */
  db?: string;
  sqlite?: SqliteBackendOptions;
  /**
   * A PostgreSQL URL (`postgres://user:password@host:5432/database`, `postgresql://` too; `?schema=name`
   * picks the schema, default `engram`). When set it wins over {@link db}.
   */
  pg?: string;
  postgres?: PostgresBackendOptions;
}

/** Opens the backend a location names. The one place that picks a driver. */
export async function openStore(location: StoreLocation = {}): Promise<StorageBackend> {
  if (location.pg !== undefined) {
    if (!/^postgres(ql)?:\/\//i.test(location.pg)) {
      throw new EngramError('INVALID_INPUT', 'pg: expected a postgres:// or postgresql:// URL', { field: 'pg' });
    }
    return PostgresBackend.open(location.pg, location.postgres ?? {});
  }
  const path = location.db ?? DEFAULT_DB_PATH;
  return SqliteBackend.open(path === ':memory:' ? path : resolve(path), location.sqlite ?? {});
}
