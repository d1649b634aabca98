/**
 * The stable head of a session cache: the oldest items of the window, kept byte for byte across compactions so
 * that a prompt cache can read the prompt up to their end even on a turn that compacted. Pure: no I/O.
 *
 * Why a head at all: a compaction replaces evicted events with markers, and a prompt cache (Anthropic's, or
 * OpenAI's automatic one) reads only the prefix before the first changed byte, and only when that prefix holds at
 * least a minimum number of tokens (1,024 for Anthropic's Sonnet and Opus models and for OpenAI). With a short
 * system prompt, a compaction that rewrites from the start of the history reads nothing. Keeping the first items
 * of the cache in place until the prompt up to them reaches that minimum makes every compacting turn read at
 * least that much, at the price of those items (a few hundred tokens, the start of the session: usually the
 * task as the person first stated it) staying in the window.
 */
import type { CacheItem } from './cache-item.js';

/**
 * Anthropic's minimum cacheable prefix for its Sonnet and Opus models, and OpenAI's for automatic prompt caching.
 * A prefix shorter than this is not cached at all.
 */
export const DEFAULT_MIN_CACHEABLE_TOKENS = 1024;

/**
 * The head may hold at most this share of the low-water mark: a compaction keeps the head and the newest
 * history, so beyond half of what it keeps the window would show more of the session's start than of its
 * recent past. Past the cap there is no head, and compaction works as it would without one.
 */
export const MAX_HEAD_SHARE_OF_LOW_WATER = 0.5;

export interface CacheHeadOptions {
  /** Tokens of the prompt before the cache (identity, codex, karma as packed). */
  readonly prefixTokens: number;
  /** The prompt up to the head's end must reach this many tokens. Default 1,024 (`DEFAULT_MIN_CACHEABLE_TOKENS`); 0 = no head. */
  readonly minCacheableTokens?: number;
  /** The head holds at most this many tokens of the cache; longer, and there is none. */
  readonly maxHeadTokens: number;
  /**
   * Tokens an item takes at least in any rendering of the prompt (its text alone, without the history labels and
   * separators its `tokens` charge): what counts toward the minimum, so the prefix a prompt cache sees reaches it.
   * Default `item.tokens`.
   */
  readonly cachedTokensOf?: (item: CacheItem) => number;
}

/**
 * How many leading items of `items` form the stable head, 0 for none. The head is the shortest run of items from
 * the start whose tokens (`cachedTokensOf`), added to `prefixTokens`, reach `minCacheableTokens`, extended so that it never ends
 * between a tool call and its result (the formatters pair them, and a result pulled out of the head would
 * change the head's rendering). None when the prefix alone reaches the minimum (it is already cacheable), when
 * the whole cache does not reach it, or when the head would exceed `maxHeadTokens`. Deterministic: the same
 * leading items give the same head, so it stays put until a compaction is forced to evict from it.
 */
export function cacheHeadLength(items: readonly CacheItem[], options: CacheHeadOptions): number {
  const minTokens = options.minCacheableTokens ?? DEFAULT_MIN_CACHEABLE_TOKENS;
  if (minTokens <= 0 || options.prefixTokens >= minTokens) return 0;
  const need = minTokens - options.prefixTokens;
  const open = new Set<string>();
  let tokens = 0;
  let cached = 0;
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    tokens += item.tokens;
    cached += options.cachedTokensOf ? options.cachedTokensOf(item) : item.tokens;
    if (tokens > options.maxHeadTokens) return 0;
    if (item.type === 'event' && item.event.toolCallId !== undefined) {
      if (item.event.kind === 'tool_call') open.add(item.event.toolCallId);
      else if (item.event.kind === 'tool_result') open.delete(item.event.toolCallId);
    }
    const next = items[i + 1];
    const nextIsResult = next?.type === 'event' && next.event.kind === 'tool_result';
    // Ending on an event: a marker at the end would be adjacent to the next compaction's first new marker.
    if (cached >= need && open.size === 0 && !nextIsResult && item.type === 'event') return i + 1;
  }
  return 0;
}
