import { closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { EngramError, isEngramError } from '../../errors.js';
import { startCheckpointer, type Checkpointer } from './checkpointer.js';
import { ENGRAM_APPLICATION_ID, LATEST_SQLITE_SCHEMA_VERSION, SQLITE_MIGRATIONS } from './migrations.js';
import { translateSqliteError } from './sqlite-errors.js';
import { cacheStatements } from './statement-cache.js';
import { loadVectorExtension } from './sqlite-vectors.js';
import type { VectorIndexOptions } from './sqlite-vector-index.js';

/**
 * Opening a SQLite store file: refusing foreign or newer files, pragmas, the sqlite-vec extension, creating or
 * migrating Engram's schema (or, read-only, checking it needs none) and the WAL checkpointer. The backend
 * itself is sqlite-backend.ts.
 */

type Db = Database.Database;

export interface SqliteBackendOptions {
  /**
   * `normal` (default): in WAL mode a commit survives a process crash or kill; a power loss may drop the last
   * few commits but never corrupts the store. `full`: fsync on every commit, survives power loss too, slower.
   */
  durability?: 'normal' | 'full';
  /** How long a writer waits for another process's lock before failing with STORAGE_ERROR. Default 5000 ms. */
  busyTimeoutMs?: number;
  /** Open without writing anything (no migrations); appends fail. */
  readonly?: boolean;
  /** Create the file when it does not exist. Default true; false fails with NOT_FOUND instead. */
  create?: boolean;
  /** Checkpoint the WAL on a worker thread instead of on commits (see checkpointer.ts). Default true. */
  backgroundCheckpoint?: boolean;
  /** Vector search above a size threshold: the IVF index, or exact only (sqlite-vector-index.ts). */
  vectorIndex?: VectorIndexOptions;
}

// Safety net if the checkpoint worker cannot keep up or is disabled: the committing connection
// checkpoints once the WAL holds this many pages (~40 MB), instead of SQLite's default 1,000.
const FALLBACK_AUTOCHECKPOINT_PAGES = 10_000;

// Another process (a CLI ingest while `engram serve` runs) may hold the write lock briefly.
const DEFAULT_BUSY_TIMEOUT_MS = 5000;

/**
 * Opens (creating if needed and allowed) the store's file as one connection, set up for Engram: pragmas,
 * sqlite-vec, and the schema migrated to the latest version, or checked to be latest when read-only.
 * Closes the connection again when any of that fails.
 */
export function openSqliteConnection(path: string, options: SqliteBackendOptions): Db {
  const isMemory = path === ':memory:';
  if (!isMemory) {
    if (existsSync(path)) {
      if (statSync(path).isDirectory()) {
        throw new EngramError('INVALID_INPUT', `${path} is a directory, not a database file`, { field: 'db', path });
      }
      checkExistingFile(path);
      warnIfOthersMayRead(path);
    } else {
      if (options.readonly || options.create === false) {
        throw new EngramError('NOT_FOUND', `no Engram store at ${path} (create one with: engram init, or engram ingest FILE)`, {
          field: 'db',
          path,
        });
      }
      createPrivateFile(path);
    }
  }
  let db: Db;
  try {
    db = new Database(path, { readonly: options.readonly ?? false, fileMustExist: options.readonly ?? false });
  } catch (err) {
    throw translateSqliteError(err, `cannot open ${path}`);
  }
  try {
    const durability = options.durability ?? 'normal';
    db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS}`);
    if (!options.readonly) {
      db.pragma('journal_mode = WAL');
      db.pragma(`synchronous = ${durability === 'full' ? 'FULL' : 'NORMAL'}`);
    }
    db.pragma('foreign_keys = ON');
    db.pragma('cache_size = -65536'); // 64 MiB page cache
    // Vector search reads every stored vector (100 MB at 100K events of 256 dimensions): memory-mapped reads
    // skip the page cache's copies (measured with sqlite-vec at 100K: KNN 59 -> 38 ms).
    db.pragma('mmap_size = 1073741824');
    loadVectorExtension(db);
    if (!options.readonly) migrate(db);
    else if (readVersion(db) !== LATEST_SQLITE_SCHEMA_VERSION) {
      throw new EngramError('STORAGE_ERROR', `store at ${path} needs a migration; open it once without readonly`, { path });
    }
    cacheStatements(db);
    return db;
  } catch (err) {
    db.close();
    throw isEngramError(err) ? err : translateSqliteError(err, `cannot open ${path}`);
  }
}

/**
 * Starts the WAL checkpointer of a writable file store (not of an in-memory or read-only one, nor with
 * `backgroundCheckpoint: false`), with the committing connection's own checkpoints kept as a fallback.
 */
export function startWalCheckpointer(db: Db, path: string, options: SqliteBackendOptions): Checkpointer | undefined {
  if (options.readonly || path === ':memory:' || options.backgroundCheckpoint === false) return undefined;
  db.pragma(`wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT_PAGES}`);
  return startCheckpointer(path);
}

/**
 * A new store's folder (0700, those of its parents Engram creates too) and file (0600), before SQLite opens it: the
 * store holds everything an agent saw, and under the usual umask (022) SQLite would create it 0644, readable by every
 * user of the machine (issue #31). SQLite's unix VFS gives the `-wal` and `-shm` files it creates the main file's
 * permissions, so they are 0600 too. The modes are upper bounds: a stricter umask takes more away.
 */
function createPrivateFile(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  try {
    closeSync(openSync(path, 'wx', 0o600));
  } catch (err) {
    // Created meanwhile by another process: it is opened as it is, like any existing store.
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw translateSqliteError(err, `cannot create ${path}`);
  }
}

/** Stores already warned about in this process: the warning is said once. */
const warnedPaths = new Set<string>();

/**
 * Says once per process, on stderr, when an existing store's file (or its WAL) may be read by other users: a store
 * made before Engram created its files private, or copied with a permissive mode. Never changes the mode itself:
 * the file is the user's, and a shared group may be meant.
 */
function warnIfOthersMayRead(path: string): void {
  if (warnedPaths.has(path)) return;
  for (const file of [path, `${path}-wal`]) {
    const mode = statSync(file, { throwIfNoEntry: false })?.mode;
    if (mode === undefined || (mode & 0o077) === 0) continue;
    warnedPaths.add(path);
    process.stderr.write(
      `engram: warning: ${file} can be read by other users (mode ${(mode & 0o777).toString(8).padStart(4, '0')}); ` +
        `it holds everything stored: chmod 600 ${path}* and chmod 700 ${dirname(path)} (docs/security.md)\n`,
    );
    return;
  }
}

/**
 * Refuses, before anything is written, a file that is not an Engram store or was written by a newer
 * Engram. Opening read-only first matters: switching to WAL would already modify a foreign file.
 */
function checkExistingFile(path: string): void {
  if (statSync(path).size === 0) return; // an empty file is a new store
  let db: Db | undefined;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
    const appId = db.pragma('application_id', { simple: true }) as number;
    const version = db.pragma('user_version', { simple: true }) as number;
    const tables = (db.prepare("SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table'").get() as { n: number }).n;
    if (appId !== ENGRAM_APPLICATION_ID && !(appId === 0 && tables === 0)) {
      throw new EngramError('NOT_AN_ENGRAM_STORE', `${path} is a SQLite database but not an Engram store; nothing was changed`, {
        path,
        applicationId: appId,
      });
    }
    if (version > LATEST_SQLITE_SCHEMA_VERSION) {
      throw new EngramError(
        'SCHEMA_TOO_NEW',
        `${path} has schema version ${version}, newer than this Engram supports (${LATEST_SQLITE_SCHEMA_VERSION}); upgrade Engram to open it`,
        { path, storeVersion: version, supportedVersion: LATEST_SQLITE_SCHEMA_VERSION },
      );
    }
  } catch (err) {
    if (isEngramError(err)) throw err;
    const code = (err as { code?: string }).code;
    if (code === 'SQLITE_NOTADB' || code === 'SQLITE_CORRUPT') {
      throw new EngramError('NOT_AN_ENGRAM_STORE', `${path} is not a SQLite database (and so not an Engram store); nothing was changed`, {
        path,
      });
    }
    throw translateSqliteError(err, `cannot read ${path}`);
  } finally {
    db?.close();
  }
}

export function readVersion(db: Db): number {
  return db.pragma('user_version', { simple: true }) as number;
}

function migrate(db: Db): void {
  const current = readVersion(db);
  if (current > LATEST_SQLITE_SCHEMA_VERSION) {
    throw new EngramError('SCHEMA_TOO_NEW', `store has schema version ${current}; this Engram supports ${LATEST_SQLITE_SCHEMA_VERSION}`, {
      storeVersion: current,
      supportedVersion: LATEST_SQLITE_SCHEMA_VERSION,
    });
  }
  for (const m of SQLITE_MIGRATIONS) {
    if (m.version <= current) continue;
    db.transaction(() => {
      // Another process may have applied it since the version was read (two hooks, or a hook and `engram mcp`,
      // opening a new store at once): read again under the write lock this transaction holds.
      if (readVersion(db) >= m.version) return;
      db.exec(m.sql);
      if (m.version === 1) {
        db.pragma(`application_id = ${ENGRAM_APPLICATION_ID}`);
        db.prepare('INSERT INTO store_meta (key, value) VALUES (?, ?)').run('created_at', new Date().toISOString());
      }
      db.pragma(`user_version = ${m.version}`);
    }).immediate();
  }
}
