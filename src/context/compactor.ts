/**
 * Pointer compaction (ENGRAM §6, Annex A.4) as one pure step over a session cache: plan a batch of
 * evictions, put a time-range marker where each evicted run was, merge markers past K_max. Nothing is
 * deleted: evicted events stay in the store (the caller's business; this module does no I/O), and the
 * markers keep the window's map of history complete.
 */
import { EngramError } from '../errors.js';
import type { EventRecord } from '../model/event.js';
import type { Tokenizer } from '../providers/tokenizer.js';
import { assertValidCache, cacheTokens } from './cache-item.js';
import type { CacheItem, Marker } from './cache-item.js';
import { planEviction, resolveCompactionOptions } from './eviction-policy.js';
import type { CompactionOptions, CompactionSkipped } from './eviction-policy.js';
import { mergeAdjacentMarkers } from './marker-merge.js';
import { buildMarker, toMarkerItem } from './markers.js';
import { computeTermStats } from './topic-terms.js';

/** What compaction may use besides the cache. */
export interface CompactionContext {
  /** Terms of the current task state; markers name those found in their span first. Default none. */
  readonly taskTerms?: readonly string[];
}

/** A compaction that happened. Token amounts are in the caller's tokenizer's tokens. */
export interface CompactionDone {
  readonly shouldCompact: true;
  /** The new cache: kept items in their original order, a marker where each evicted run was, then merged. */
  readonly items: CacheItem[];
  /** The evicted events, in cache order. They remain in the store; only the window lets go of them. */
  readonly evicted: EventRecord[];
  /** The level-0 markers built for the evicted runs, in cache order (some may since be merged into a parent in `items`). */
  readonly markers: Marker[];
  /** How many pairs of markers were merged. */
  readonly merged: number;
  readonly tokensBefore: number;
  readonly tokensAfter: number;
  /** Whether `tokensAfter <= lowWaterTokens`. False only when protected items alone keep the cache above it. */
  readonly isLowWaterReached: boolean;
  /** Markers in `items`. */
  readonly markerCount: number;
  /** More than `maxMarkers` markers remain, because kept items stand between every pair (see `mergeAdjacentMarkers`). */
  readonly isOverMaxMarkers: boolean;
  /** Leading items kept in place as the stable head (`keepHeadItems`), 0 when none was asked or it had to go. */
  readonly keptHeadItems: number;
}

/** The outcome of `compact`: either it happened, or an expected reason why not. */
export type CompactionResult = CompactionSkipped | CompactionDone;

/**
 * Compacts a session cache if it is over high water: `planEviction`, then `buildMarker` for each
 * contiguous run of evicted events (one marker per run, in the run's place), then `mergeAdjacentMarkers`.
 * Topics are scored against the whole cache's term statistics.
 *
 * Guarantees: every event of the input is either still in `items` or inside exactly one marker's
 * [fromTurn, toTurn]; marker ranges never overlap and never contain a kept event; kept items keep their
 * relative order; pinned, unindexed, tail and weight-0 events are never evicted; `tokensAfter <=
 * lowWaterTokens` whenever evicting can reach it; a cache at or below high water comes back untouched as
 * `{ shouldCompact: false, reason: 'below_high_water' }`, so the prompt prefix is stable between
 * compactions. Deterministic.
 * @throws EngramError `INVALID_INPUT` for invalid options or a malformed cache (see `assertValidCache`).
 */
export function compact(
  items: readonly CacheItem[],
  options: CompactionOptions,
  tokenizer: Tokenizer,
  context: CompactionContext = {},
): CompactionResult {
  let opts = resolveCompactionOptions(options);
  assertValidCache(items);
  let plan = planEviction(items, opts);
  if (opts.keepHeadItems > 0 && (!plan.shouldCompact ? plan.reason === 'nothing_evictable' : !plan.isLowWaterReached)) {
    // The stable head costs one prompt-cache read per compaction; a cache that cannot come down without it
    // costs more. Evict as if there were none.
    opts = { ...opts, keepHeadItems: 0 };
    plan = planEviction(items, opts);
  }
  if (!plan.shouldCompact) return plan;

  const background = computeTermStats(eventsOf(items));
  const markerContext = { background, taskTerms: context.taskTerms };
  const victims = new Set(plan.victimIndexes);
  const next: CacheItem[] = [];
  const evicted: EventRecord[] = [];
  const markers: Marker[] = [];
  let run: EventRecord[] = [];
  const closeRun = (): void => {
    if (run.length === 0) return;
    const marker = buildMarker(run, markerContext, tokenizer);
    markers.push(marker);
    next.push(toMarkerItem(marker, tokenizer));
    run = [];
  };
  items.forEach((item, i) => {
    if (!victims.has(i)) {
      closeRun();
      next.push(item);
      return;
    }
    if (item.type !== 'event') throw new EngramError('INTERNAL', `eviction plan chose a marker (items[${i}])`);
    run.push(item.event);
    evicted.push(item.event);
  });
  closeRun();

  // Head items are never victims, so they keep their positions in `next`.
  const merge = mergeAdjacentMarkers(next, tokenizer, { maxMarkers: opts.maxMarkers, fromIndex: opts.keepHeadItems });
  const tokensAfter = cacheTokens(merge.items);
  return {
    shouldCompact: true,
    items: merge.items,
    evicted,
    markers,
    merged: merge.mergeCount,
    tokensBefore: plan.tokensBefore,
    tokensAfter,
    isLowWaterReached: tokensAfter <= opts.lowWaterTokens,
    markerCount: merge.markerCount,
    isOverMaxMarkers: merge.isOverMaxMarkers,
    keptHeadItems: opts.keepHeadItems,
  };
}

function* eventsOf(items: readonly CacheItem[]): Iterable<EventRecord> {
  for (const item of items) if (item.type === 'event') yield item.event;
}
