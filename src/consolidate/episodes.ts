import type { EventRecord } from '../model/event.js';

export interface EpisodeOptions {
  /** A pause longer than this starts a new episode. Default 30 minutes. */
  gapMs?: number;
  /** An episode holds at most this many events (a very long run of work is cut). Default 400. */
  maxEvents?: number;
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
  for (const e of events) {
    const ms = Date.parse(e.ts);
    const isTaskChange = e.taskId !== undefined && task !== undefined && e.taskId !== task;
    if (current.length > 0 && (ms - lastMs > gapMs || isTaskChange || current.length >= maxEvents)) {
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
