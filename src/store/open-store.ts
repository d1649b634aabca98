import { resolve } from 'node:path';
import { EngramError } from '../errors.js';
import type { StorageBackend } from './backend.js';
// Types only: erased at run time, so naming the options loads neither driver.
import type { PostgresBackendOptions } from './postgres/pg-connection.js';
import type { SqliteBackendOptions } from './sqlite/sqlite-connection.js';

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

/** The kinds of store a location can name; each has one backend folder under `src/store/`. */
export type StoreKind = 'sqlite' | 'postgres';

/** Opens a location of one kind. Loads its backend on first use. */
type BackendLoader = (location: StoreLocation) => Promise<StorageBackend>;

/**
 * The backends, by kind. Each is imported only when a location of its kind is opened, so opening SQLite never
 * loads `pg` and opening PostgreSQL never loads `better-sqlite3` (nor `sqlite-vec`), and reading a default
 * from this module (the CLI does) loads no driver at all.
 */
const BACKENDS: Record<StoreKind, BackendLoader> = {
  async sqlite(location) {
    const { SqliteBackend } = await import('./sqlite/sqlite-backend.js');
    const path = location.db ?? DEFAULT_DB_PATH;
    return SqliteBackend.open(path === ':memory:' ? path : resolve(path), location.sqlite ?? {});
  },
  async postgres(location) {
    const { PostgresBackend } = await import('./postgres/postgres-backend.js');
    return PostgresBackend.open(location.pg!, location.postgres ?? {});
  },
};

/** The kind of store a location names: PostgreSQL when `pg` is set (checked to be a postgres URL), else SQLite. */
function storeKind(location: StoreLocation): StoreKind {
  if (location.pg === undefined) return 'sqlite';
  if (!/^postgres(ql)?:\/\//i.test(location.pg)) {
    throw new EngramError('INVALID_INPUT', 'pg: expected a postgres:// or postgresql:// URL', { field: 'pg' });
  }
  return 'postgres';
}

/** Opens the backend a location names. The one place that picks a driver. */
export async function openStore(location: StoreLocation = {}): Promise<StorageBackend> {
  return BACKENDS[storeKind(location)](location);
}
