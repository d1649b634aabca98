/**
 * The objects of the needle benchmark (ENGRAM §10.1, §10A, Annex A.8): needles of five types embedded early
 * in a trace, probes that ask for them as an agent would, and the turns that carry them.
 */
import type { EventInput } from '../../model/event.js';

/** The paper's five needle types (§10A.1). */
export const NEEDLE_TYPES = ['hash', 'path', 'error', 'parameter', 'rationale'] as const;
export type NeedleType = (typeof NEEDLE_TYPES)[number];

export const NEEDLE_TYPE_LABELS: Record<NeedleType, string> = {
  hash: 'hash fragments',
  path: 'file paths with line numbers',
  error: 'error messages',
  parameter: 'parameter strings',
  rationale: 'decision rationales',
};

/** One event of a trace with a label unique in the trace, so every condition can name the same event. */
export interface TraceEvent {
  label: string;
  event: EventInput;
}

/** What one agent step appends: a message, or a tool call with its result. Compaction is checked after each. */
export interface TraceTurn {
  phase: 'seed' | 'flood';
  events: TraceEvent[];
}

/** An exact string the agent must be able to reproduce later. */
export interface Needle {
  id: string;
  type: NeedleType;
  /** The exact string; an answer is correct only if it equals this. */
  value: string;
  /** What the needle is about, in the trace's words (`checkout build`), for reports. */
  subject: string;
  /**
   * Labels of the events of the needle's episode (the request, the tool call and result, the follow-up):
   * the events relevant to its probe, for precision@k. Later events that contain the value count too.
   */
  episodeLabels: string[];
}

/** A question about one needle, phrased as an agent would ask it: never a copy of the needle's value. */
export interface Probe {
  id: string;
  needleId: string;
  type: NeedleType;
  question: string;
}

/** A trace source: the synthetic generator or a replayed transcript. */
export interface NeedleTraceSource {
  /** Shown in reports: `synthetic seed 1 #3`, a file name. */
  name: string;
  needles: Needle[];
  probes: Probe[];
  /** The turns in order; may be long (the runner stops when every condition has reached its last checkpoint). */
  turns(): Iterable<TraceTurn>;
}

/** What the agent answered on one hop of a probe. */
export interface HopOutcome {
  /** The reader's answer, or null when it abstained. */
  answer: string | null;
  isExact: boolean;
  /** The exact value occurs somewhere in what the agent read by this hop. */
  isPresent: boolean;
  /** Tokens read on this hop (the window or pack for hop 0, the pull for later hops). */
  tokens: number;
}
