import { ulid } from 'ulid';

/** Depths of the summary DAG (Lossless Context Patterns, Pattern 4; ENGRAM §8). */
export const SUMMARY_DEPTHS = [0, 1, 2] as const;
export type SummaryDepth = (typeof SUMMARY_DEPTHS)[number];
export const SUMMARY_DEPTH_NAMES: Readonly<Record<SummaryDepth, string>> = { 0: 'session', 1: 'arc', 2: 'epoch' };

export const SUMMARY_ID_PREFIX = 'sum_';

export function newSummaryId(nowMs: number = Date.now()): string {
  return `${SUMMARY_ID_PREFIX}${ulid(nowMs)}`;
}

export function isSummaryId(value: string): boolean {
  return value.startsWith(SUMMARY_ID_PREFIX) && value.length === SUMMARY_ID_PREFIX.length + 26;
}

/**
 * A derived summary: of an episode of one session (depth 0), of N sessions (an arc, depth 1) or of M arcs (an
 * epoch, depth 2). Never the only copy: depth 0 names the events it was made from, higher depths their children.
 * A summary replaced by a newer one (a session that grew) goes to the cold tier with `coldSourceId` naming it.
 */
export interface SummaryRecord {
  id: string;
  project: string;
  depth: SummaryDepth;
  /** Depth 0: the session summarized; null above. */
  sessionId: string | null;
  /** Depth 0: the episode's index within its session (0 for a session of one episode). */
  episode: number;
  /** Depth 0: the last turn of the session the summary covers (a session that grows is summarized again). */
  throughTurn: number;
  /** Time range of the sources, epoch ms. */
  startMs: number;
  endMs: number;
  /** The arc or epoch that includes this summary, once one does. */
  parentId: string | null;
  /** Depth > 0: the summaries it condenses, oldest first. */
  childIds: string[];
  /** Depth 0: the events it was made from, in turn order. */
  sourceEventIds: string[];
  /** Every session it covers (for depth 0, its own). */
  sessionIds: string[];
  /** The session of the project that came before (depth 0), for navigation. */
  predecessorSessionId: string | null;
  text: string;
  /** `text` counted by the project's tokenizer. */
  tokens: number;
  /** How it was made (consolidate/escalation.ts) and the confidence of that level. */
  level: 'normal' | 'aggressive' | 'deterministic';
  confidence: number;
  /** The model that wrote it, absent at the deterministic level. */
  model: string | null;
  createdAt: string;
  /** Set when the summary is in the cold tier: when, why, and the object that replaced it (if any). */
  coldAt: string | null;
  coldReason: string | null;
  coldSourceId: string | null;
  /**
   * `decision`: a decision record (consolidate/decision-records.ts), one decision of one session (depth 0, its
   * event in `sourceEventIds`), cold once a later decision supersedes it (`coldSourceId`). Absent: a summary.
   */
  kind?: SummaryKind;
  /** A decision record's subject key (lower case), when it has one: a later decision on the same subject replaces it. */
  subject?: string | null;
}

/** What a row of the summaries table is: a summary of the DAG, or a decision record. */
export const SUMMARY_KINDS = ['summary', 'decision'] as const;
export type SummaryKind = (typeof SUMMARY_KINDS)[number];

/** A `session_skipped` record of the significance gate as stored, with the project the session belonged to. */
export interface StoredSkip {
  sessionId: string;
  project: string;
  throughTurn: number;
  decidedAt: string;
  /** The gate's record (consolidate/significance-gate.ts `SessionSkippedRecord`), as JSON. */
  record: Record<string, unknown>;
  /** When a backfill consolidated the session anyway; null while it stays skipped. */
  backfilledAt: string | null;
}
