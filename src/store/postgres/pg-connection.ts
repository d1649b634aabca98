import { EngramError } from '../../errors.js';
import { LATEST_POSTGRES_SCHEMA_VERSION, MIGRATIONS_TABLE, POSTGRES_MIGRATIONS, TEXT_SEARCH_CONFIG } from './migrations.js';
import { redactPgUrl, translatePgError } from './pg-errors.js';
import type { PgVectorIndexOptions } from './postgres-vector-index.js';

/** Connecting to PostgreSQL and creating or migrating Engram's schema; the backend itself is postgres-backend.ts. */

/** The schema Engram uses when neither the options nor the URL name one. */
export const DEFAULT_PG_SCHEMA = 'engram';
const DEFAULT_MAX_CONNECTIONS = 10;
// node-postgres waits forever by default; a server that is down should fail an open, not hang it.
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
// Unquoted-identifier shape: the name is also embedded in a regconfig literal, so no quoting games.
const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

export interface PostgresBackendOptions {
  /**
   * PostgreSQL schema that holds every Engram table, so Engram can share a database with other
   * applications. Default `engram`; a `?schema=` parameter in the URL sets it too (both must then agree).
   */
  schema?: string;
  /** Most connections this backend's pool opens. Default 10. */
  maxConnections?: number;
  /** How long to wait for a connection before failing with a retryable STORAGE_ERROR. Default 10,000 ms. */
  connectTimeoutMs?: number;
  /** Create the schema when it does not exist. Default true; false fails with NOT_FOUND instead. */
  create?: boolean;
  /** Vector search without pgvector above a size threshold: the IVF index, or the exact scan only (postgres-vector-index.ts). */
  vectorIndex?: PgVectorIndexOptions;
  /**
   * The opt-in phrase-pair index (postgres-phrase-pairs.ts; docs/recall.md): `true` builds it at open when it is
   * missing (CREATE INDEX CONCURRENTLY: minutes on a large store). Phrase queries then check fewer chunks (p95 77 ->
   * 47 ms at 100K events) and appends cost about 2.3x. Unset: used when it exists (built by `engram reindex
   * --phrase-pairs` or another process), never built.
   */
  phrasePairs?: boolean;
  /** How often (ms) the backend looks again whether the phrase-pair index exists. Default 300,000 (5 minutes). */
  phrasePairsRecheckMs?: number;
}



/** The part of node-postgres' result that the backend reads. */
export interface PgQueryResult<R> {
  rows: R[];
  rowCount: number | null;
}

/** The part of a node-postgres client (or pool) that the backend uses: one parameterised query. */
export interface PgQueryable {
  query<R>(text: string, values?: unknown[]): Promise<PgQueryResult<R>>;
}

export interface PgPoolClient extends PgQueryable {
  /** Returns the client to the pool; with an error, the pool discards the connection instead. */
  release(err?: Error | boolean): void;
}

/**
 * The subset of node-postgres' `Pool` the backend depends on, so that the rest of Engram (and its types)
 * never depends on the driver package. The driver itself is loaded only when a PostgreSQL store is opened.
 */
export interface PgPool extends PgQueryable {
  connect(): Promise<PgPoolClient>;
  end(): Promise<void>;
  on(event: 'error', listener: (err: Error) => void): unknown;
}

/** Where a URL and options say the store is. */
export interface PgLocation {
  /** The URL handed to the driver: `schema` removed. */
  connectionString: string;
  /** The URL for messages: password removed. */
  displayUrl: string;
  schema: string;
}

/** Splits a store URL into the driver's connection string, a password-free display form and the schema. */
export function parsePgLocation(url: string, options: PostgresBackendOptions = {}): PgLocation {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new EngramError('INVALID_INPUT', 'pg: not a valid URL (expected postgres://user:password@host:5432/database)', { field: 'pg' });
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new EngramError('INVALID_INPUT', `pg: expected a postgres:// or postgresql:// URL, got ${parsed.protocol}//...`, { field: 'pg' });
  }
  const fromUrl = parsed.searchParams.get('schema');
  parsed.searchParams.delete('schema');
  if (fromUrl !== null && options.schema !== undefined && fromUrl !== options.schema) {
    throw new EngramError('INVALID_INPUT', `schema: the URL says "${fromUrl}" but the options say "${options.schema}"`, { field: 'schema' });
  }
  const schema = fromUrl ?? options.schema ?? DEFAULT_PG_SCHEMA;
  if (!SCHEMA_NAME.test(schema)) {
    throw new EngramError('INVALID_INPUT', `schema: "${schema}" must be 1-63 letters, digits or _ and not start with a digit`, { field: 'schema' });
  }
  const connectionString = parsed.toString();
  return { connectionString, displayUrl: redactPgUrl(connectionString), schema };
}

export async function createPgPool(connectionString: string, options: PostgresBackendOptions): Promise<PgPool> {
  const pg = await import('pg');
  const pool = new pg.default.Pool({
    connectionString,
    max: options.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
    connectionTimeoutMillis: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    application_name: 'engram',
  });
  // An idle pooled connection that the server drops (restart, idle timeout) is reported here; without a
  // listener Node would crash the process. The pool discards that connection and opens a new one on demand.
  pool.on('error', () => undefined);
  return pool as unknown as PgPool;
}

/**
 * Creates or migrates the schema in one transaction under an advisory lock keyed by the schema name, so
 * several servers starting at once apply each step exactly once. Returns whether commits are power-loss
 * durable on this server (fsync and synchronous_commit on).
 */
export async function migrate(pool: PgPool, location: PgLocation, create: boolean): Promise<boolean> {
  let client: PgPoolClient;
  try {
    client = await pool.connect();
  } catch (err) {
    throw translatePgError(err, `cannot open the Engram store at ${location.displayUrl}`, location.displayUrl, 'connect');
  }
  const s = quoteIdent(location.schema);
  const where = `${location.displayUrl} schema ${location.schema}`;
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`engram:migrate:${location.schema}`]);
    const settings = (
      await client.query<{ schema_exists: boolean; marked: boolean; relations: string; fsync: string; sync: string }>(
        `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1) AS schema_exists,
           to_regclass($2) IS NOT NULL AS marked,
           (SELECT count(*) FROM pg_class k JOIN pg_namespace n ON n.oid = k.relnamespace WHERE n.nspname = $1) AS relations,
           current_setting('fsync') AS fsync, current_setting('synchronous_commit') AS sync`,
        [location.schema, `${s}.${MIGRATIONS_TABLE}`],
      )
    ).rows[0]!;
    const isPowerLossDurable = settings.fsync === 'on' && settings.sync !== 'off';
    let current = 0;
    if (settings.marked) {
      const row = (await client.query<{ v: number | null }>(`SELECT max(version) AS v FROM ${s}.${MIGRATIONS_TABLE}`)).rows[0];
      current = row?.v ?? 0;
    } else if (settings.schema_exists && Number(settings.relations) > 0) {
      throw new EngramError('NOT_AN_ENGRAM_STORE', `${where} holds tables that are not an Engram store; nothing was changed (choose another schema)`, {
        field: 'schema',
        schema: location.schema,
      });
    } else if (!settings.schema_exists && !create) {
      throw new EngramError('NOT_FOUND', `no Engram store at ${where}`, { field: 'schema', schema: location.schema });
    }
    if (current > LATEST_POSTGRES_SCHEMA_VERSION) {
      throw new EngramError(
        'SCHEMA_TOO_NEW',
        `${where} has schema version ${current}, newer than this Engram supports (${LATEST_POSTGRES_SCHEMA_VERSION}); upgrade Engram to open it`,
        { schema: location.schema, storeVersion: current, supportedVersion: LATEST_POSTGRES_SCHEMA_VERSION },
      );
    }
    if (current < LATEST_POSTGRES_SCHEMA_VERSION) {
      if (!settings.schema_exists) await client.query(`CREATE SCHEMA ${s}`);
      if (!settings.marked) {
        await client.query(`CREATE TABLE ${s}.${MIGRATIONS_TABLE} (
          version     integer PRIMARY KEY,
          description text NOT NULL,
          applied_at  timestamptz NOT NULL DEFAULT now()
        )`);
      }
      for (const m of POSTGRES_MIGRATIONS) {
        if (m.version <= current) continue;
        await client.query(m.sql(s));
        await client.query(`INSERT INTO ${s}.${MIGRATIONS_TABLE} (version, description) VALUES ($1, $2)`, [m.version, m.description]);
        if (m.version === 1) {
          await client.query(`INSERT INTO ${s}.store_meta (key, value) VALUES ('created_at', $1)`, [new Date().toISOString()]);
        }
      }
    }
    await client.query('COMMIT');
    return isPowerLossDurable;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
