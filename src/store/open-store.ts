import { resolve } from 'node:path';
import type { StorageBackend } from './backend.js';
import type { SqliteBackendOptions } from './sqlite/sqlite-backend.js';
import { SqliteBackend } from './sqlite/sqlite-backend.js';

/** Where the embedded store lives when nothing else is said: relative to the working directory. */
export const DEFAULT_DB_PATH = '.engram/engram.db';

export interface StoreLocation {
  /** SQLite file path. Default {@link DEFAULT_DB_PATH}. */
  db?: string;
  sqlite?: SqliteBackendOptions;
}

/** Opens the backend a location names. The one place that picks a driver. */
export async function openStore(location: StoreLocation = {}): Promise<StorageBackend> {
  const path = location.db ?? DEFAULT_DB_PATH;
  return SqliteBackend.open(path === ':memory:' ? path : resolve(path), location.sqlite ?? {});
}
