import type { ErrorCode } from '../../errors.js';

/**
 * Exit codes of the `engram` CLI. Documented in docs/interfaces.md and docs/errors.md; scripts and hooks rely on them, so a code's
 * meaning never changes once released.
 */
export const EXIT = {
  OK: 0,
  /** Anything not listed below (a bug: please report it). */
  FAILURE: 1,
  /** Bad arguments or bad input data (the message names the field or line). */
  INVALID_INPUT: 2,
  /** The id, session or file does not exist, or an id prefix is ambiguous. */
  NOT_FOUND: 3,
  /** The store cannot be used: not an Engram store, written by a newer Engram, locked or failing I/O. */
  STORE_UNAVAILABLE: 4,
  /** An idempotency key was reused for different content, or a concurrent writer won a race. */
  CONFLICT: 5,
  /** A budget, scope or permission check refused the request. */
  DENIED: 6,
  /** An import finished with --skip-invalid and left invalid records out (listed in the report). */
  PARTIAL: 7,
  /** An external model provider (embeddings, LLM) failed or is misconfigured. */
  PROVIDER: 8,
  /**
   * Not an error: `engram recall` ran and no event in memory matches the query (its result's `match` is `none`). A
   * code of its own, like grep's 1, so a script can tell "nothing found" from a failure (1).
   */
  NO_MATCH: 9,
  /** Interrupted (Ctrl-C); everything acknowledged before is stored. */
  INTERRUPTED: 130,
} as const;

/** The one place error codes become exit codes. */
export function exitCodeFor(code: ErrorCode): number {
  switch (code) {
    case 'INVALID_INPUT':
    case 'POINTER_INVALID':
    case 'PAYLOAD_TOO_LARGE':
    case 'UNSUPPORTED_MEDIA_TYPE':
      return EXIT.INVALID_INPUT;
    case 'NOT_FOUND':
    case 'AMBIGUOUS_ID':
      return EXIT.NOT_FOUND;
    case 'NOT_AN_ENGRAM_STORE':
    case 'SCHEMA_TOO_NEW':
    case 'STORAGE_ERROR':
      return EXIT.STORE_UNAVAILABLE;
    case 'IDEMPOTENCY_CONFLICT':
    case 'CONFLICT':
      return EXIT.CONFLICT;
    case 'BUDGET_EXCEEDED':
    case 'DEREF_DENIED':
    case 'SCOPE_DENIED':
    case 'UNAUTHENTICATED':
    case 'FORBIDDEN':
      return EXIT.DENIED;
    case 'PROVIDER_ERROR':
      return EXIT.PROVIDER;
    case 'INTERNAL':
      return EXIT.FAILURE;
  }
}
