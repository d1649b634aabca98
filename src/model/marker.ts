import type { SessionId } from './ids.js';

/**
 * A time-range marker (ENGRAM §4.3): an immutable signpost left in the cache in place of a contiguous
 * run of evicted events. It names the turn range and a few factual topics, never the events' ids; the
 * model uses `recall(query)` to get the evidence back. Build one with `buildMarker` or `createMarker`
 * (`markers.ts`), which enforce the 60-token cap and freeze the value.
 */
export interface Marker {
  /** First turn covered, inclusive (an `EventRecord.turn`). */
  readonly fromTurn: number;
  /** Last turn covered, inclusive; `>= fromTurn`. */
  readonly toTurn: number;
  readonly sessionId: SessionId;
  /** Topic keywords, most important first, each at most 4 words; rendered in this order. May be empty. */
  readonly topics: readonly string[];
  /**
   * Importance of each topic, aligned with `topics` (same length, non-increasing). Unitless: roughly
   * "events of the span that mention it x how specific it is to the span". Weights add up when markers
   * merge, so a parent keeps the topics that dominate the union (ENGRAM §6.4 step 3).
   */
  readonly topicWeights: readonly number[];
  /** 0 for a marker built from evicted events; a merged marker is one more than its deeper child. */
  readonly level: number;
  /** How many evicted events the marker stands for (over all merged children). */
  readonly eventCount: number;
  /** Timestamp of the earliest covered event (ISO-8601, as in `EventRecord.ts`). */
  readonly firstTs: string;
  /** Timestamp of the latest covered event (ISO-8601). */
  readonly lastTs: string;
}
