import type { EventRecord } from '../model/event.js';

export interface EpisodeOptions {
  /** A pause longer than this starts a new episode. Default 30 minutes. */
  gapMs?: number;
  /** An episode holds at most this many events (a very long run of work is cut). Default 400. */
  maxEvents?: number;
  /**
   * Topic shift: at a user message, once the episode has `topicMinEvents` events (default 30), a new episode starts
   * when the words of the next `topicWindow` events (default 12) share less than `topicMaxOverlap` (default 0.08,
   * Jaccard over words of 4+ letters) with the last `topicWindow` events. 0 turns it off.
   */
  topicMaxOverlap?: number;
  topicMinEvents?: number;
  topicWindow?: number;
}

export const DEFAULT_EPISODE_GAP_MS = 30 * 60_000;
export const DEFAULT_EPISODE_MAX_EVENTS = 400;

/**
 * Splits a session's events (turn order) into episodes: a new one starts after a pause longer than `gapMs`, when
 * the task changes (`taskId` set to another value), or when the episode reached `maxEvents`. Task-state versions
 * follow their neighbours. Every event is in exactly one episode, in order.
 */
export function segmentEpisodes(events: readonly EventRecord[], options: EpisodeOptions = {}): EventRecord[][] {
  const gapMs = options.gapMs ?? DEFAULT_EPISODE_GAP_MS;
  const maxEvents = options.maxEvents ?? DEFAULT_EPISODE_MAX_EVENTS;
  const episodes: EventRecord[][] = [];
  let current: EventRecord[] = [];
  let lastMs = Number.NaN;
  let task: string | undefined;
  const maxOverlap = options.topicMaxOverlap ?? 0.08;
  const minEvents = options.topicMinEvents ?? 30;
  const window = options.topicWindow ?? 12;
  for (const [i, e] of events.entries()) {
    const ms = Date.parse(e.ts);
    const isTaskChange = e.taskId !== undefined && task !== undefined && e.taskId !== task;
    const isTopicShift =
      maxOverlap > 0 && e.kind === 'user' && current.length >= minEvents && overlap(words(current.slice(-window)), words(events.slice(i, i + window))) < maxOverlap;
    if (current.length > 0 && (ms - lastMs > gapMs || isTaskChange || isTopicShift || current.length >= maxEvents)) {
      episodes.push(current);
      current = [];
    }
    current.push(e);
    lastMs = ms;
    if (e.taskId !== undefined) task = e.taskId;
  }
  if (current.length > 0) episodes.push(current);
  return episodes;
}

/** Words of 4+ letters of some events, lower-cased. */
function words(events: readonly EventRecord[]): Set<string> {
  const out = new Set<string>();
  for (const e of events) for (const w of e.content.toLowerCase().split(/[^\p{L}\p{N}]+/u)) if (w.length >= 4) out.add(w);
  return out;
}

/** Jaccard overlap of two word sets (1 when both are empty: no evidence of a shift). */
function overlap(a: Set<string>, b: Set<string>): number {
  if (a.size === 0 && b.size === 0) return 1;
  let shared = 0;
  for (const w of a) if (b.has(w)) shared++;
  return shared / (a.size + b.size - shared);
}
