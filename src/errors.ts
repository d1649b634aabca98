/**
 * The one error type Engram throws. Interfaces map `code` to an HTTP status, an MCP error result
 * or a CLI exit code, each in exactly one place; core code branches on `code`, never on messages.
 */
export const ERROR_CODES = [
  /** The caller sent something malformed: `data.field` names what. */
  'INVALID_INPUT',
  /** An id or path does not exist. */
  'NOT_FOUND',
  /** An event key was reused with different content. */
  'IDEMPOTENCY_CONFLICT',
  /** A concurrent writer changed the same object first (a compaction, a card version): re-read and retry. */
  'CONFLICT',
  /** The database file exists but is not an Engram store. */
  'NOT_AN_ENGRAM_STORE',
  /** The store was written by a newer Engram; upgrading would be needed to open it. */
  'SCHEMA_TOO_NEW',
  /** An id prefix matches more than one object. */
  'AMBIGUOUS_ID',
  /** A budget invariant was violated (pack budgets, inline tokens). */
  'BUDGET_EXCEEDED',
  'DEREF_DENIED',
  'SCOPE_DENIED',
  'POINTER_INVALID',
  /** No valid credentials: a missing, unknown or revoked bearer token. */
  'UNAUTHENTICATED',
  /** The caller is known but not allowed to do this (e.g. a non-admin agent managing agents). */
  'FORBIDDEN',
  /** A request body is larger than the server accepts: `data.maxBytes`. */
  'PAYLOAD_TOO_LARGE',
  /** A request body in a format the endpoint does not read (form data, text where JSON is expected): `data.accepted`. */
  'UNSUPPORTED_MEDIA_TYPE',
  /** An external model provider (embeddings, LLM) failed or refused: `data.status`, `data.retryable`. */
  'PROVIDER_ERROR',
  /** The storage backend failed for a reason not covered above (I/O, lock timeout). */
  'STORAGE_ERROR',
  /** A bug: an invariant inside Engram did not hold. */
  'INTERNAL',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export interface ErrorData {
  /** Dotted path of the offending field, e.g. `events[3].kind`. */
  field?: string;
  /** 1-based line number in an input file. */
  line?: number;
  [key: string]: unknown;
}

export class EngramError<D extends ErrorData = ErrorData> extends Error {
  override readonly name = 'EngramError';

  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly data: D = {} as D,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }

  toJSON(): { code: ErrorCode; message: string; data: D } {
    return { code: this.code, message: this.message, data: this.data };
  }
}

export function isEngramError(err: unknown, code?: ErrorCode): err is EngramError {
  return err instanceof EngramError && (code === undefined || err.code === code);
}

/** Converts the first zod issue into an INVALID_INPUT error that names the field. */
export function invalidInputFromZod(
  issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }>,
  prefix = '',
): EngramError {
  const first = issues[0];
  const path = first ? first.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('') : '';
  const field = `${prefix}${path}`.replace(/^\./, '') || '(root)';
  const message = first ? `${field}: ${first.message}` : 'invalid input';
  // A limit check (model/limits.ts) names its limit in the issue's params: `limit`, `max`, `actual`.
  const params = (first as { params?: Record<string, unknown> } | undefined)?.params;
  return new EngramError('INVALID_INPUT', message, {
    field,
    ...(params ?? {}),
    issues: issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message })),
  });
}
