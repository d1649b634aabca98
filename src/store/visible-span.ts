/**
 * When a search held to some sessions (a list, or a project's visible sessions) is bounded to the span of keys their
 * events lie between (docs/recall.md, "Full-text at scale"; SQLite `sqlite/sqlite-visible-span.ts`, PostgreSQL
 * `postgres/pg-visible-span.ts`). Each backend's key (SQLite's rowid, PostgreSQL's `events.pk`) grows with the
 * turns of a session: one insert gives an appended event its session's next turn and the next key, under the
 * session's lock, so a session's events lie between the keys of its first and last turn.
 */

/** A span is worth its look-ups when the sessions admitted hold less than this share of the store's events. */
export const SPAN_MAX_SHARE = 1 / 4;
/** Most sessions whose span is looked up (two index probes each; 500 sessions took 0.5 ms on SQLite). */
export const SPAN_MAX_SESSIONS = 1_000;
/** Stores smaller than this take no span: a walk over all their rows costs about what the look-ups would. */
export const SPAN_MIN_EVENTS = 20_000;

/** Keys from `lo` to `hi`, both included, where every event the search's filter admits lies. */
export interface KeySpan {
  lo: number;
  hi: number;
}

/** Both spans' common part; null stands for no bound. */
export function intersectKeySpans<S extends KeySpan>(a: S | null, b: S | null, make: (lo: number, hi: number) => S): S | null {
  if (a === null) return b;
  if (b === null) return a;
  return make(Math.max(a.lo, b.lo), Math.min(a.hi, b.hi));
}
