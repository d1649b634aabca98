// The "CTC governor" of Deep Memory §5: hard limits applied before inference (KV-cache memory, a character
// cap, a message-depth window). Nothing here deletes stored data; it only decides what stays out of this turn.
import { EngramError } from '../../errors.js';

/** Element types a KV cache may be stored in. */
export const KV_DTYPES = ['fp32', 'fp16', 'bf16', 'fp8', 'int8', 'q4'] as const;
/** One of `KV_DTYPES`. */
export type KvDtype = (typeof KV_DTYPES)[number];

/** Bytes per cached element: fp32 4, fp16/bf16 2, fp8/int8 1, q4 0.5 (block scales of quantized caches ignored). */
export const KV_BYTES_PER_ELEMENT: Readonly<Record<KvDtype, number>> = {
  fp32: 4,
  fp16: 2,
  bf16: 2,
  fp8: 1,
  int8: 1,
  q4: 0.5,
};

/** The attention shape that sizes a model's KV cache. */
export interface ModelProfile {
  /** Display name, e.g. `Llama 3.1 8B`. */
  readonly name: string;
  /** Transformer layers (`num_hidden_layers`). */
  readonly layers: number;
  /** Key/value heads per layer (`num_key_value_heads`; fewer than query heads under GQA). */
  readonly kvHeads: number;
  /** Dimension of one head (`head_dim`, else `hidden_size / num_attention_heads`). */
  readonly headDim: number;
  /** Longest context the model supports, in tokens. */
  readonly maxContextTokens: number;
  /** Caveats for the estimate (sliding-window layers, scaling). */
  readonly notes?: string;
}

/**
 * Published architectures of common open models (from each model's `config.json` on Hugging Face). All use
 * grouped-query attention, which is why their caches are 4-8x smaller than the head count alone suggests.
 */
export const MODEL_PROFILES = {
  'llama-3.1-8b': { name: 'Llama 3.1 8B', layers: 32, kvHeads: 8, headDim: 128, maxContextTokens: 131_072 },
  'llama-3.1-70b': { name: 'Llama 3.1 70B', layers: 80, kvHeads: 8, headDim: 128, maxContextTokens: 131_072 },
  'llama-3.2-3b': { name: 'Llama 3.2 3B', layers: 28, kvHeads: 8, headDim: 128, maxContextTokens: 131_072 },
  'mistral-7b-v0.3': { name: 'Mistral 7B v0.3', layers: 32, kvHeads: 8, headDim: 128, maxContextTokens: 32_768 },
  'qwen2.5-7b': {
    name: 'Qwen2.5 7B',
    layers: 28,
    kvHeads: 4,
    headDim: 128,
    maxContextTokens: 131_072,
    notes: 'The Instruct model ships with a 32,768-token native window; 131,072 needs YaRN rope scaling.',
  },
  'qwen2.5-14b': { name: 'Qwen2.5 14B', layers: 48, kvHeads: 8, headDim: 128, maxContextTokens: 131_072 },
  'gemma-2-9b': {
    name: 'Gemma 2 9B',
    layers: 42,
    kvHeads: 8,
    headDim: 256,
    maxContextTokens: 8_192,
    notes: 'Every other layer uses a 4,096-token sliding window; engines that exploit it cache less past 4K tokens, so this is an upper bound.',
  },
} as const satisfies Record<string, ModelProfile>;

/** A key of `MODEL_PROFILES`, e.g. `llama-3.1-8b`. */
export type ModelProfileId = keyof typeof MODEL_PROFILES;

/**
 * Bytes of KV cache per token: 2 (K and V) x layers x kvHeads x headDim x bytes per element.
 * Llama 3.1 8B in fp16: 2 x 32 x 8 x 128 x 2 = 131,072 bytes (128 KiB) per token.
 */
export function kvBytesPerToken(profile: ModelProfile, dtype: KvDtype = 'fp16'): number {
  const bytes = KV_BYTES_PER_ELEMENT[dtype];
  if (bytes === undefined) throw new EngramError('INVALID_INPUT', `dtype: unknown KV dtype ${JSON.stringify(dtype)}`, { field: 'dtype' });
  for (const field of ['layers', 'kvHeads', 'headDim'] as const) {
    if (!Number.isSafeInteger(profile[field]) || profile[field] <= 0) {
      throw new EngramError('INVALID_INPUT', `profile.${field}: must be a positive integer`, { field: `profile.${field}` });
    }
  }
  return 2 * profile.layers * profile.kvHeads * profile.headDim * bytes;
}

/**
 * Memory the KV cache of `tokens` tokens takes: `2 x layers x kvHeads x headDim x bytesPerElement x tokens`,
 * in bytes. Excludes the engine's paging overhead (vLLM rounds up to 16-token blocks) and the weights.
 * @param tokens tokens held in the cache (prompt plus generated), a non-negative integer.
 * @param dtype cache element type; default `fp16` (2 bytes).
 */
export function estimateKvCacheBytes(tokens: number, profile: ModelProfile, dtype: KvDtype = 'fp16'): number {
  if (!Number.isSafeInteger(tokens) || tokens < 0) {
    throw new EngramError('INVALID_INPUT', `tokens: must be a non-negative integer, got ${String(tokens)}`, { field: 'tokens' });
  }
  return kvBytesPerToken(profile, dtype) * tokens;
}

/** The part of a pack the KV check needs; a `ContextPack` satisfies it. */
export interface KvPlan {
  /** Prompt tokens. */
  readonly totalTokens: number;
  /** Tokens the model may generate (its output and tool calls), which the cache also holds. */
  readonly headroomTokens: number;
}

/**
 * Default share of `kvBudgetBytes` the plan may use before condensation triggers: token counts come from
 * o200k, and other models' tokenizers count a few percent more, so the 10 % margin keeps the real cache
 * under the budget.
 */
export const DEFAULT_KV_TRIGGER_FRACTION = 0.9;

/** Options of `checkKvBudget`. */
export interface KvBudgetOptions {
  readonly profile: ModelProfile;
  /** Default `fp16`. */
  readonly dtype?: KvDtype;
  /** Memory available to this request's KV cache, in bytes. */
  readonly kvBudgetBytes: number;
  /** Share of the budget usable before condensing, in (0, 1]. Default `DEFAULT_KV_TRIGGER_FRACTION` (0.9). */
  readonly triggerFraction?: number;
}

/** Whether a plan's KV cache fits, and how much to condense when it does not. */
export interface KvBudgetDecision {
  /** True when the plan would use more than `triggerFraction` of the budget: condense before inference. */
  mustCondense: boolean;
  /** Tokens to remove from the prompt so the plan fits under the trigger; 0 when it fits. */
  condenseTokens: number;
  /** Prompt plus headroom tokens the cache must hold. */
  plannedTokens: number;
  /** Largest `plannedTokens` that stays under the trigger. */
  maxTokens: number;
  bytesPerToken: number;
  estimatedBytes: number;
  /** `floor(kvBudgetBytes * triggerFraction)`. */
  triggerBytes: number;
  kvBudgetBytes: number;
}

/**
 * Deep Memory §5 "VRAM safety": estimates the cache of prompt + headroom and says whether condensation
 * (compaction, dropping old history) must run before inference, and by how many prompt tokens. It triggers at
 * `triggerFraction` of the budget so the estimate never reaches the budget itself.
 * @throws EngramError `INVALID_INPUT` naming the field for a negative budget or a fraction outside (0, 1].
 */
export function checkKvBudget(plan: KvPlan, options: KvBudgetOptions): KvBudgetDecision {
  const triggerFraction = options.triggerFraction ?? DEFAULT_KV_TRIGGER_FRACTION;
  if (!Number.isFinite(options.kvBudgetBytes) || options.kvBudgetBytes < 0) {
    throw new EngramError('INVALID_INPUT', 'kvBudgetBytes: must be a non-negative number of bytes', { field: 'kvBudgetBytes' });
  }
  if (!Number.isFinite(triggerFraction) || triggerFraction <= 0 || triggerFraction > 1) {
    throw new EngramError('INVALID_INPUT', `triggerFraction: must be in (0, 1], got ${String(triggerFraction)}`, { field: 'triggerFraction' });
  }
  const plannedTokens = plan.totalTokens + plan.headroomTokens;
  const bytesPerToken = kvBytesPerToken(options.profile, options.dtype ?? 'fp16');
  const triggerBytes = Math.floor(options.kvBudgetBytes * triggerFraction);
  const maxTokens = Math.floor(triggerBytes / bytesPerToken);
  const condenseTokens = Math.max(0, plannedTokens - maxTokens);
  return {
    mustCondense: condenseTokens > 0,
    condenseTokens,
    plannedTokens,
    maxTokens,
    bytesPerToken,
    estimatedBytes: estimateKvCacheBytes(plannedTokens, options.profile, options.dtype ?? 'fp16'),
    triggerBytes,
    kvBudgetBytes: options.kvBudgetBytes,
  };
}

/** What the history governor needs of an item; `HistoryItem` satisfies it. */
export interface GovernedItem {
  readonly text: string;
  /** Pinned or verified: never pruned. */
  readonly isPinned?: boolean;
}

/** Options of `governHistory`. Both limits are off by default: the token budgets are the primary bound. */
export interface GovernorOptions {
  /** Character cap for the whole prompt (history plus `fixedChars`), in UTF-16 code units. Default: no cap. */
  readonly maxTotalChars?: number;
  /** Rolling depth window: keep at most this many of the newest history items (plus older pinned ones). Default: no cap. */
  readonly maxHistoryMessages?: number;
  /** Characters of everything else in the prompt (identity, codex, ...), counted against `maxTotalChars`. Default 0. */
  readonly fixedChars?: number;
}

/** The governed history and what was pruned. */
export interface HistoryGovernance<T extends GovernedItem> {
  /** Items kept, in input order (oldest first). */
  kept: T[];
  /** Items pruned, in input order; they stay in the store. */
  dropped: T[];
  droppedByDepth: number;
  droppedByCharCap: number;
  /** `fixedChars` plus the kept items' text length. */
  totalChars: number;
  /**
   * False when only pinned items and the newest item remain and the total is still over `maxTotalChars`:
   * the governor never prunes those, so the caller must condense elsewhere (compaction, a smaller codex).
   */
  isWithinCharCap: boolean;
}

/**
 * Applies Deep Memory §5's message-depth window and character cap to history items (oldest first):
 * 1. depth: items older than the newest `maxHistoryMessages` are dropped, unless pinned;
 * 2. char cap: while over `maxTotalChars`, the oldest unpinned item is dropped, never the newest item.
 * Pinned/verified items are never dropped ("verbatim priority"). Pure and order-preserving.
 * @throws EngramError `INVALID_INPUT` naming the option for a negative or non-integer limit.
 */
export function governHistory<T extends GovernedItem>(items: readonly T[], options: GovernorOptions = {}): HistoryGovernance<T> {
  const maxChars = options.maxTotalChars ?? Infinity;
  const maxMessages = options.maxHistoryMessages ?? Infinity;
  const fixedChars = options.fixedChars ?? 0;
  for (const [field, value] of [
    ['maxTotalChars', maxChars],
    ['maxHistoryMessages', maxMessages],
    ['fixedChars', fixedChars],
  ] as const) {
    if (value !== Infinity && (!Number.isSafeInteger(value) || value < 0)) {
      throw new EngramError('INVALID_INPUT', `${field}: must be a non-negative integer, got ${String(value)}`, { field });
    }
  }

  const isKept = items.map(() => true);
  const depthStart = items.length - Math.min(items.length, maxMessages);
  let droppedByDepth = 0;
  for (let i = 0; i < depthStart; i++) {
    if (items[i]?.isPinned !== true) {
      isKept[i] = false;
      droppedByDepth++;
    }
  }

  let totalChars = fixedChars + items.reduce((sum, item, i) => sum + (isKept[i] ? item.text.length : 0), 0);
  let droppedByCharCap = 0;
  for (let i = 0; i < items.length - 1 && totalChars > maxChars; i++) {
    const item = items[i] as T;
    if (!isKept[i] || item.isPinned === true) continue;
    isKept[i] = false;
    totalChars -= item.text.length;
    droppedByCharCap++;
  }

  return {
    kept: items.filter((_, i) => isKept[i]),
    dropped: items.filter((_, i) => !isKept[i]),
    droppedByDepth,
    droppedByCharCap,
    totalChars,
    isWithinCharCap: totalChars <= maxChars,
  };
}
