import { EngramError, isEngramError } from '../../errors.js';
import { IMMUTABLE_SQLSTATE } from './migrations.js';

/** What an error data of a PostgreSQL failure carries. */
export interface PgErrorData {
  /** The SQLSTATE, or the Node.js system error code (`ECONNREFUSED`) when the failure was below SQL. */
  sqlstate?: string;
  systemCode?: string;
  /** Whether retrying the same call may succeed (the server was unreachable, a deadlock, a restart). */
  retryable: boolean;
  /** The store's URL without its password. */
  url?: string;
  constraint?: string;
  field?: string;
  [key: string]: unknown;
}

/** Where a failure happened: connection failures are told apart from failures of a statement. */
export type PgErrorPhase = 'connect' | 'query' | 'search';

// Node.js socket errors while reaching the server: the server may come back, so a retry may succeed.
const RETRYABLE_SYSTEM_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

// SQLSTATEs after which the same call may succeed when retried. Appends are safe to retry: a retried event
// key is stored once.
const RETRYABLE_SQLSTATES = new Set([
  '40001', // serialization_failure
  '40P01', // deadlock_detected
  '55P03', // lock_not_available
  '57014', // query_canceled (statement_timeout)
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, shutting down)
  '53300', // too_many_connections
]);

/**
 * Translates a node-postgres failure into an {@link EngramError} by SQLSTATE or Node.js system code, never
 * by message text. `url` must already be redacted; it is the only place the location appears.
 */
export function translatePgError(err: unknown, context: string, url: string, phase: PgErrorPhase = 'query'): EngramError {
  if (isEngramError(err)) return err;
  const code = typeof (err as { code?: unknown })?.code === 'string' ? (err as { code: string }).code : '';
  const message = err instanceof Error ? err.message : String(err);
  const sqlstate = isServerError(err) && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
  const constraint = (err as { constraint?: unknown } | null)?.constraint;
  const base = (retryable: boolean): PgErrorData => {
    const data: PgErrorData = { retryable, url };
    if (sqlstate !== undefined) data.sqlstate = sqlstate;
    else if (code) data.systemCode = code;
    if (typeof constraint === 'string') data.constraint = constraint;
    return data;
  };
  const fail = (engramCode: ConstructorParameters<typeof EngramError>[0], text: string, data: PgErrorData): EngramError =>
    new EngramError(engramCode, `${context}: ${text}`, data, { cause: err });

  if (sqlstate === undefined) {
    if (RETRYABLE_SYSTEM_CODES.has(code)) return fail('STORAGE_ERROR', `cannot reach PostgreSQL at ${url} (${code})`, base(true));
    if (code === 'ENOTFOUND') return fail('STORAGE_ERROR', `unknown host in ${url} (${code})`, base(false));
    // node-postgres reports a dropped connection or a connect timeout as a plain Error without a code;
    // during connection they are the server being unreachable, so a retry may succeed.
    if (phase === 'connect') return fail('STORAGE_ERROR', `cannot connect to PostgreSQL at ${url}: ${message}`, base(true));
    return fail('STORAGE_ERROR', `${message} (PostgreSQL at ${url})`, base(false));
  }

  if (sqlstate === '28P01' || sqlstate === '28000') {
    return fail('STORAGE_ERROR', `PostgreSQL refused the credentials for ${url} (authentication failed)`, { ...base(false), field: 'pg' });
  }
  if (sqlstate === '3D000') {
    return fail('NOT_FOUND', `the database of ${url} does not exist; create it first (createdb), or fix the URL`, { ...base(false), field: 'pg' });
  }
  if (sqlstate === '42501') {
    return fail('STORAGE_ERROR', `permission denied at ${url}: ${message}`, base(false));
  }
  if (sqlstate === IMMUTABLE_SQLSTATE) return fail('STORAGE_ERROR', message, base(false));
  if (sqlstate === '22021' || sqlstate === '22P05') {
    // PostgreSQL text cannot hold NUL characters. Event content is escaped for it; short fields (key, task
    // id, tool name) are refused rather than silently altered.
    return fail('INVALID_INPUT', `a text field holds a character PostgreSQL cannot store, such as NUL (${message})`, { ...base(false), field: 'events' });
  }
  if (sqlstate === '23505') {
    // Appends check keys and assign turns under the session lock, so this means a writer that bypassed it
    // (or a race not foreseen): the batch was rolled back whole, and a retry re-checks under the lock.
    return fail('STORAGE_ERROR', `a concurrent write conflicted (${String(constraint ?? 'unique constraint')}); retrying is safe`, base(true));
  }
  if (phase === 'search' && (sqlstate === '42601' || sqlstate === '22023' || sqlstate === '54000')) {
    return fail('INVALID_INPUT', `the search query could not be run (${message})`, { ...base(false), field: 'query' });
  }
  if (sqlstate.startsWith('08')) return fail('STORAGE_ERROR', `connection to PostgreSQL at ${url} failed: ${message}`, base(true));
  return fail('STORAGE_ERROR', `${message} (SQLSTATE ${sqlstate})`, base(RETRYABLE_SQLSTATES.has(sqlstate)));
}

/**
 * Whether the server answered with an error, so the connection itself is fine. A server error (node-postgres'
 * DatabaseError) carries a severity beside its SQLSTATE; a socket error carries a Node.js system code (EPIPE,
 * which has the shape of a SQLSTATE) and no severity.
 */
export function isServerError(err: unknown): boolean {
  return typeof (err as { severity?: unknown } | null)?.severity === 'string';
}

/**
 * A URL for messages: the password (in the authority or as a `password` parameter) replaced by `***`.
 * Never throws; an unparsable URL is shown as `(invalid URL)` since it may contain a password anywhere.
 */
export function redactPgUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    if (u.searchParams.has('password')) u.searchParams.set('password', '***');
    return u.toString();
  } catch {
    return '(invalid URL)';
  }
}
