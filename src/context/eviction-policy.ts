/**
 * Which items leave the window when it is full (ENGRAM §6.2, Annex A.4): a type-weighted LRU with
 * hysteresis. Nothing happens until the cache exceeds the high-water mark; then one batch of evictions
 * brings it down to the low-water mark, so the prompt prefix changes only at compaction. Evicting never
 * deletes anything: events stay in the store and a marker takes their place. Pure: no I/O, no clock.
 */
import { EngramError } from '../errors.js';
import { STORED_EVENT_KINDS as EVENT_KINDS } from '../model/event.js';
import type { EventKind, EventRecord } from '../model/event.js';
import type { CacheItem } from './cache-item.js';
import { DEFAULT_MAX_MARKERS } from './marker-merge.js';
import { MARKER_MAX_TOKENS } from './markers.js';

/**
 * Eviction priority by event kind: higher leaves the window first, 0 never leaves. Tool results and tool
 * calls use the paper's weights (Annex A.4: 1.0 and 0.8): results are the largest items and the easiest to
 * find again by keyword, so a miss costs least; calls are small and recoverable through their result.
 * Dialogue (user, assistant and in-session system messages) is 0.5: it carries the rationale that is hard
 * to reconstruct. Notes (0.35) and decisions (0.2, the paper's value) go last. The system prompt itself
 * is not a session event and never in this cache.
 */
export const DEFAULT_KIND_WEIGHTS: Readonly<Record<EventKind, number>> = Object.freeze({
  tool_result: 1,
  tool_call: 0.8,
  user: 0.5,
  assistant: 0.5,
  system: 0.5,
  note: 0.35,
  decision: 0.2,
  // Versions of the task card: the current one is pushed in its own block, old ones are history.
  task_state: 0,
});

/**
 * Tags that lower an event's priority, by tag (exact match). An event's weight is the smallest of its
 * kind's weight and the weights of its tags, so a tag can only protect, never expose. `constraint` (the
 * paper's constraint weight 0.0) and `task_state` (task-state versions, ENGRAM §6.2 "never evict") are 0.
 */
export const DEFAULT_TAG_WEIGHTS: Readonly<Record<string, number>> = Object.freeze({ constraint: 0, task_state: 0 });

/** The last this many events (by turn) are never evicted: the hot tail (ENGRAM §6.2, §9.1 B_tail). */
export const DEFAULT_KEEP_LAST_TURNS = 8;

/** Knobs of compaction. Token amounts are in the caller's tokenizer's tokens, as in `CacheItem.tokens`. */
export interface CompactionOptions {
  /** Compact only when the cache holds more than this many tokens. Required, > 0. */
  highWaterTokens: number;
  /** Evict down to at most this many tokens (markers included). Required, >= 0 and < `highWaterTokens`. */
  lowWaterTokens: number;
  /** Never evict the last k events by turn. Default 8 (`DEFAULT_KEEP_LAST_TURNS`). */
  keepLastTurns?: number;
  /** Overrides of `DEFAULT_KIND_WEIGHTS`, per kind; each >= 0, 0 = never evict. */
  kindWeights?: Partial<Record<EventKind, number>>;
  /** Added to (and overriding, per tag) `DEFAULT_TAG_WEIGHTS`; each >= 0, 0 = never evict. */
  tagWeights?: Readonly<Record<string, number>>;
  /** Most markers the window should hold (K_max, ENGRAM §6.4). Default 8 (`DEFAULT_MAX_MARKERS`). */
  maxMarkers?: number;
  /**
   * Tokens the plan assumes for each new marker. Default 60 (`MARKER_MAX_TOKENS`), the hard cap, so the
   * estimate is an upper bound and reaching low water in the plan means reaching it in the cache.
   */
  markerTokens?: number;
  /**
   * The first this many items of the cache (the stable head, `cache-head.ts`) are never evicted, so the prompt up
   * to their end stays the same across the compaction. Default 0.
   */
  keepHeadItems?: number;
}

/** `CompactionOptions` with every default filled in and every value checked. */
export interface ResolvedCompactionOptions {
  readonly highWaterTokens: number;
  readonly lowWaterTokens: number;
  readonly keepLastTurns: number;
  readonly kindWeights: Readonly<Record<EventKind, number>>;
  readonly tagWeights: Readonly<Record<string, number>>;
  readonly maxMarkers: number;
  readonly markerTokens: number;
  readonly keepHeadItems: number;
}

/** Why no compaction happens: an expected outcome, not an error. */
export type CompactionSkipReason =
  /** The cache holds at most `highWaterTokens`: the window and its prefix stay as they are. */
  | 'below_high_water'
  /** Over high water, but every item is protected (pinned, unindexed, tail, weight 0, marker) or too small to pay for its marker. */
  | 'nothing_evictable';

export interface CompactionSkipped {
  readonly shouldCompact: false;
  readonly reason: CompactionSkipReason;
  /** Tokens in the cache as given. */
  readonly tokensBefore: number;
}

/** The batch to evict. */
export interface EvictionDecision {
  readonly shouldCompact: true;
  /** Positions in the cache of the events to evict, ascending; never empty. */
  readonly victimIndexes: readonly number[];
  readonly tokensBefore: number;
  /** Tokens after eviction with `markerTokens` per new marker, before markers merge: an upper bound. */
  readonly estimatedTokensAfter: number;
  /** Whether `estimatedTokensAfter <= lowWaterTokens`. False when protected items alone keep it above. */
  readonly isLowWaterReached: boolean;
  /** Victims added only to join runs of markers, so that at most `maxMarkers` markers remain (see `planEviction`). */
  readonly coalescedCount: number;
}

export type EvictionPlan = CompactionSkipped | EvictionDecision;

/**
 * Checks options and fills in defaults.
 * @throws EngramError `INVALID_INPUT` naming the field, e.g. `lowWaterTokens` when it is not below `highWaterTokens`.
 */
export function resolveCompactionOptions(options: CompactionOptions): ResolvedCompactionOptions {
  const fail = (field: string, rule: string): never => {
    throw new EngramError('INVALID_INPUT', `${field} must be ${rule}`, { field });
  };
  const { highWaterTokens, lowWaterTokens } = options;
  if (!Number.isFinite(highWaterTokens) || highWaterTokens <= 0) fail('highWaterTokens', 'a finite number > 0');
  if (!Number.isFinite(lowWaterTokens) || lowWaterTokens < 0) fail('lowWaterTokens', 'a finite number >= 0');
  if (lowWaterTokens >= highWaterTokens) fail('lowWaterTokens', `less than highWaterTokens (${highWaterTokens})`);
  const keepLastTurns = options.keepLastTurns ?? DEFAULT_KEEP_LAST_TURNS;
  if (!Number.isSafeInteger(keepLastTurns) || keepLastTurns < 0) fail('keepLastTurns', 'an integer >= 0');
  const maxMarkers = options.maxMarkers ?? DEFAULT_MAX_MARKERS;
  if (!Number.isSafeInteger(maxMarkers) || maxMarkers < 1) fail('maxMarkers', 'an integer >= 1');
  const markerTokens = options.markerTokens ?? MARKER_MAX_TOKENS;
  if (!Number.isFinite(markerTokens) || markerTokens < 0) fail('markerTokens', 'a finite number >= 0');
  const keepHeadItems = options.keepHeadItems ?? 0;
  if (!Number.isSafeInteger(keepHeadItems) || keepHeadItems < 0) fail('keepHeadItems', 'an integer >= 0');

  const kindWeights: Record<EventKind, number> = { ...DEFAULT_KIND_WEIGHTS };
  for (const [kind, weight] of Object.entries(options.kindWeights ?? {})) {
    if (!(EVENT_KINDS as readonly string[]).includes(kind)) fail(`kindWeights.${kind}`, `one of the event kinds (${EVENT_KINDS.join(', ')})`);
    if (weight === undefined) continue;
    if (!Number.isFinite(weight) || weight < 0) fail(`kindWeights.${kind}`, 'a finite number >= 0');
    kindWeights[kind as EventKind] = weight;
  }
  const tagWeights: Record<string, number> = { ...DEFAULT_TAG_WEIGHTS };
  for (const [tag, weight] of Object.entries(options.tagWeights ?? {})) {
    if (!Number.isFinite(weight) || weight < 0) fail(`tagWeights.${tag}`, 'a finite number >= 0');
    tagWeights[tag] = weight;
  }
  return {
    highWaterTokens,
    lowWaterTokens,
    keepLastTurns,
    kindWeights: Object.freeze(kindWeights),
    tagWeights: Object.freeze(tagWeights),
    maxMarkers,
    markerTokens,
    keepHeadItems,
  };
}

/**
 * An event's eviction weight under the options: the smallest of its kind's weight and its tags' weights.
 * 0 means it never leaves the window on its own account (pinning, indexing and the tail are checked by
 * `planEviction`).
 */
export function evictionWeight(event: EventRecord, options: ResolvedCompactionOptions): number {
  // A kind this build does not know (a store written by a newer Engram) is never evicted.
  let weight = options.kindWeights[event.kind] ?? 0;
  for (const tag of event.tags) {
    const tagWeight = options.tagWeights[tag];
    if (tagWeight !== undefined && tagWeight < weight) weight = tagWeight;
  }
  return weight;
}

/**
 * Decides one compaction batch. Deterministic: the same items and options always give the same plan.
 *
 * 1. At or below `highWaterTokens`: `{ shouldCompact: false, reason: 'below_high_water' }`.
 * 2. Candidates are events that are not pinned, are indexed, are not among the last `keepLastTurns` events
 *    by turn nor the first `keepHeadItems` items, and have a weight > 0. Markers are never candidates.
 * 3. Candidates are taken in order of weight (highest first), then recency (least recent first, where
 *    recency is the later of the event's turn and `lastAccessTurn`), then turn, then position, until the
 *    estimate is at or below `lowWaterTokens`. The estimate charges `markerTokens` for every new run of
 *    evicted items, since each becomes a marker.
 * 4. A run that does not touch a marker and holds no more tokens than its marker would cost is kept:
 *    evicting it would not make room.
 * 5. Runs of evicted items and existing markers that are adjacent end up as one marker after merging;
 *    when there would be more than `maxMarkers` such groups, the cheapest gaps between them (fewest tokens,
 *    then oldest) are evicted too, if every item in the gap is a candidate. A gap holding a protected item
 *    is never filled. Filling removes the gap's tokens; only a gap between two existing markers adds a
 *    run to the estimate, and merging folds that run's marker into its neighbours.
 * If every candidate is taken and the estimate is still above low water, the plan says
 * `isLowWaterReached: false`; protected items are never evicted to get there.
 * @throws EngramError `INVALID_INPUT` for invalid options or an item whose `tokens` is not a finite number >= 0.
 */
export function planEviction(items: readonly CacheItem[], options: CompactionOptions): EvictionPlan {
  const opts = resolveCompactionOptions(options);
  const n = items.length;
  const tokens = items.map((item, i) => {
    if (!Number.isFinite(item.tokens) || item.tokens < 0) {
      throw new EngramError('INVALID_INPUT', `items[${i}].tokens must be a finite number >= 0`, { field: `items[${i}].tokens` });
    }
    return item.tokens;
  });
  const tokensBefore = tokens.reduce((a, b) => a + b, 0);
  if (tokensBefore <= opts.highWaterTokens) return { shouldCompact: false, reason: 'below_high_water', tokensBefore };

  const weights = candidateWeights(items, opts);
  const candidates: number[] = [];
  for (let i = 0; i < n; i++) if ((weights[i] ?? 0) > 0) candidates.push(i);
  const recency = (i: number): number => {
    const item = items[i];
    return item?.type === 'event' ? Math.max(item.event.turn, item.lastAccessTurn ?? Number.NEGATIVE_INFINITY) : 0;
  };
  const turn = (i: number): number => {
    const item = items[i];
    return item?.type === 'event' ? item.event.turn : 0;
  };
  candidates.sort((a, b) => (weights[b] ?? 0) - (weights[a] ?? 0) || recency(a) - recency(b) || turn(a) - turn(b) || a - b);

  const isVictim = new Uint8Array(n);
  const M = opts.markerTokens;
  let estimate = tokensBefore;
  for (const i of candidates) {
    if (estimate <= opts.lowWaterTokens) break;
    const left = i > 0 && isVictim[i - 1] === 1;
    const right = i < n - 1 && isVictim[i + 1] === 1;
    // A new run costs a marker; joining two runs saves one.
    estimate += -(tokens[i] ?? 0) + M * (left && right ? -1 : left || right ? 0 : 1);
    isVictim[i] = 1;
  }

  keepRunsSmallerThanTheirMarker(items, tokens, isVictim, M);
  const coalescedCount = coalesceMarkerGroups(items, tokens, weights, isVictim, opts.maxMarkers, opts.keepHeadItems);

  const victimIndexes: number[] = [];
  let kept = 0;
  let runs = 0;
  for (let i = 0; i < n; i++) {
    if (isVictim[i] === 1) {
      victimIndexes.push(i);
      if (i === 0 || isVictim[i - 1] !== 1) runs += 1;
    } else {
      kept += tokens[i] ?? 0;
    }
  }
  if (victimIndexes.length === 0) return { shouldCompact: false, reason: 'nothing_evictable', tokensBefore };
  const estimatedTokensAfter = kept + M * runs;
  return {
    shouldCompact: true,
    victimIndexes,
    tokensBefore,
    estimatedTokensAfter,
    isLowWaterReached: estimatedTokensAfter <= opts.lowWaterTokens,
    coalescedCount,
  };
}

/** Per position: the eviction weight of a candidate, 0 for anything protected. */
function candidateWeights(items: readonly CacheItem[], opts: ResolvedCompactionOptions): Float64Array {
  const weights = new Float64Array(items.length);
  const byTurn: { i: number; turn: number }[] = [];
  items.forEach((item, i) => {
    if (item.type === 'event') byTurn.push({ i, turn: item.event.turn });
  });
  byTurn.sort((a, b) => b.turn - a.turn || b.i - a.i);
  const tail = new Set(byTurn.slice(0, opts.keepLastTurns).map(({ i }) => i));
  items.forEach((item, i) => {
    if (item.type !== 'event' || item.isPinned === true || !item.isIndexed || tail.has(i) || i < opts.keepHeadItems) return;
    weights[i] = evictionWeight(item.event, opts);
  });
  return weights;
}

/**
 * Un-evicts runs that touch no marker and cost no more tokens than the marker that would replace them
 * (step 4). Each such run is its own marker group, so this also never adds a group.
 */
function keepRunsSmallerThanTheirMarker(items: readonly CacheItem[], tokens: number[], isVictim: Uint8Array, markerTokens: number): void {
  const n = items.length;
  for (let start = 0; start < n; start++) {
    if (isVictim[start] !== 1) continue;
    let end = start;
    let sum = 0;
    while (end < n && isVictim[end] === 1) sum += tokens[end++] ?? 0;
    const touchesMarker = items[start - 1]?.type === 'marker' || items[end]?.type === 'marker';
    if (!touchesMarker && sum <= markerTokens) isVictim.fill(0, start, end);
    start = end;
  }
}

/**
 * Fills the cheapest gaps between marker groups (maximal runs of victims and markers) while there are more
 * groups than `maxMarkers` (step 5). Returns how many items it added.
 */
function coalesceMarkerGroups(
  items: readonly CacheItem[],
  tokens: number[],
  weights: Float64Array,
  isVictim: Uint8Array,
  maxMarkers: number,
  headItems: number,
): number {
  // Markers in the stable head stay as they are and do not count (see `mergeAdjacentMarkers`' `fromIndex`).
  const inGroup = (i: number): boolean => i >= headItems && (isVictim[i] === 1 || items[i]?.type === 'marker');
  const gaps: { start: number; end: number; cost: number }[] = [];
  let groups = 0;
  let lastGroupEnd = -1;
  for (let i = headItems; i < items.length; i++) {
    if (!inGroup(i)) continue;
    if (i === headItems || !inGroup(i - 1)) {
      groups += 1;
      if (lastGroupEnd >= 0) {
        let cost = 0;
        let isFillable = true;
        for (let j = lastGroupEnd + 1; j < i; j++) {
          cost += tokens[j] ?? 0;
          if ((weights[j] ?? 0) <= 0) isFillable = false;
        }
        if (isFillable) gaps.push({ start: lastGroupEnd + 1, end: i, cost });
      }
    }
    lastGroupEnd = i;
  }
  if (groups <= maxMarkers) return 0;
  gaps.sort((a, b) => a.cost - b.cost || a.start - b.start);
  let added = 0;
  for (const gap of gaps.slice(0, groups - maxMarkers)) {
    isVictim.fill(1, gap.start, gap.end);
    added += gap.end - gap.start;
  }
  return added;
}
