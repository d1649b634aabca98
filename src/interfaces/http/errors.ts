import type { ErrorCode } from '../../errors.js';
import { EngramError, isEngramError } from '../../errors.js';

/** The body of every error response: `{ "error": { "code", "message", "data" } }`. */
export interface HttpErrorBody {
  error: { code: ErrorCode; message: string; data: Record<string, unknown> };
}

export interface HttpError {
  status: number;
  body: HttpErrorBody;
  headers: Record<string, string>;
  /** Whether the server should log it: a failure of the server, not of the request. */
  isServerFault: boolean;
}

/**
 * The one place error codes become HTTP statuses. A code's status never changes once released; clients
 * branch on `error.code`, the status is for proxies and humans.
 *
 * - `BUDGET_EXCEEDED` is 422: the request is well-formed but asks for more than a budget allows (a window too
 *   small for the task card). 429 would tell clients to retry later, which would fail again the same way.
 * - `AMBIGUOUS_ID` is 400: the caller fixes it by sending more characters of the id.
 * - `STORAGE_ERROR` is 503 with `Retry-After` when the store says a retry may succeed (locked, unreachable),
 *   else 500. Server faults (500) never carry the internal message or data: they are logged instead.
 */
export function httpStatusFor(code: ErrorCode): number {
  switch (code) {
    case 'INVALID_INPUT':
    case 'POINTER_INVALID':
    case 'AMBIGUOUS_ID':
      return 400;
    case 'UNAUTHENTICATED':
      return 401;
    case 'FORBIDDEN':
    case 'SCOPE_DENIED':
    case 'DEREF_DENIED':
      return 403;
    case 'NOT_FOUND':
      return 404;
    case 'CONFLICT':
    case 'IDEMPOTENCY_CONFLICT':
      return 409;
    case 'PAYLOAD_TOO_LARGE':
      return 413;
    case 'UNSUPPORTED_MEDIA_TYPE':
      return 415;
    case 'BUDGET_EXCEEDED':
      return 422;
    case 'PROVIDER_ERROR':
      return 502;
    case 'STORAGE_ERROR':
    case 'NOT_AN_ENGRAM_STORE':
    case 'SCHEMA_TOO_NEW':
    case 'INTERNAL':
      return 500;
  }
}

/** Maps anything thrown while serving a request to a response; anything not an {@link EngramError} is INTERNAL. */
export function toHttpError(err: unknown): HttpError {
  const e = isEngramError(err) ? err : new EngramError('INTERNAL', err instanceof Error ? err.message : String(err));
  if (e.code === 'STORAGE_ERROR' && e.data.retryable === true) {
    return {
      status: 503,
      body: { error: { code: e.code, message: 'the store is temporarily unavailable; retry shortly', data: { retryable: true } } },
      headers: { 'Retry-After': '1' },
      isServerFault: true,
    };
  }
  const status = httpStatusFor(e.code);
  if (status >= 500 && e.code !== 'PROVIDER_ERROR') {
    // Paths, SQL, URLs and stack traces stay in the server's log.
    return { status, body: { error: { code: e.code, message: 'internal error; see the server log', data: {} } }, headers: {}, isServerFault: true };
  }
  const headers: Record<string, string> = status === 401 ? { 'WWW-Authenticate': 'Bearer realm="engram"' } : {};
  return { status, body: { error: { code: e.code, message: e.message, data: e.data } }, headers, isServerFault: status >= 500 };
}
