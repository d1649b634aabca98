import { EngramError } from '../../errors.js';
import type { Tokenizer } from '../../providers/tokenizer.js';

/**
 * The kinds of block a context pack is made of, from least to most volatile (Deep Memory §1 "the cache
 * protocol", ENGRAM §4.5):
 * - `identity`: the system prompt / persona; changes when a person edits it.
 * - `codex`: static knowledge inlined whole (CAG), or an index of documents served by recall (RAG).
 * - `karma`: verified facts a person promoted; changes when one is promoted.
 * - `markers`: time-range markers left where history was evicted; changes only at compaction.
 * - `history`: the recent tail of events; grows by appending every turn.
 * - `task_state`: the current task card; changes on roughly half the turns (ENGRAM §4.3: 40-60 %).
 * - `query`: the new user message; different every turn.
 */
export const BLOCK_KINDS = ['identity', 'codex', 'karma', 'markers', 'history', 'task_state', 'query'] as const;
/** One of `BLOCK_KINDS`. */
export type BlockKind = (typeof BLOCK_KINDS)[number];

/**
 * The default block order: the issue's order, which is also the order that maximises prefix reuse.
 *
 * A prefix cache (vLLM automatic prefix caching, OpenAI's implicit caching, Anthropic's breakpoints) reuses
 * everything up to the first changed byte, so each turn re-processes every block from the first one that
 * changed. Per turn that is:
 * - with `history` then `task_state` (this order): the new history items, the task state (~500-800 tokens,
 *   ENGRAM §4.3) and the query, whether or not the task state changed;
 * - with `task_state` before `history` (ENGRAM Annex A.2's order): on every turn where the task state changed
 *   (40-60 % of turns), the whole history tail as well (up to its budget, 30 % of the window by default).
 * History only ever appends between compactions, so placing it before the task state keeps it a byte-identical
 * prefix; the price is at most one task-state block per turn, which is small by construction (a hard cap).
 * Keeping the task card next to the query also puts the current objectives where the model attends best.
 * `markers` precede `history` because they change only at compaction, which rewrites the start of the
 * history anyway. `karma` precedes `markers` because a promotion is rarer than a compaction.
 * `prefixReuse` and `prefixReuseTokens` measure this so a benchmark can compare orders.
 */
export const DEFAULT_BLOCK_ORDER: readonly BlockKind[] = BLOCK_KINDS;

/**
 * Checks a block order: every kind exactly once, and `query` last (every chat API ends with the user's
 * message, and nothing after the most volatile block could be cached anyway).
 * @throws EngramError `INVALID_INPUT` with `field: 'order'` otherwise.
 */
export function validateBlockOrder(order: readonly BlockKind[]): readonly BlockKind[] {
  const seen = new Set<string>();
  for (const [i, kind] of order.entries()) {
    if (!(BLOCK_KINDS as readonly string[]).includes(kind)) {
      throw new EngramError('INVALID_INPUT', `order[${i}]: unknown block kind ${JSON.stringify(kind)}`, {
        field: `order[${i}]`,
        allowed: [...BLOCK_KINDS],
      });
    }
    if (seen.has(kind)) {
      throw new EngramError('INVALID_INPUT', `order[${i}]: block kind ${kind} appears twice`, { field: `order[${i}]` });
    }
    seen.add(kind);
  }
  const missing = BLOCK_KINDS.filter((k) => !seen.has(k));
  if (missing.length > 0) {
    throw new EngramError('INVALID_INPUT', `order: missing block kinds ${missing.join(', ')}`, { field: 'order', missing });
  }
  if (order[order.length - 1] !== 'query') {
    throw new EngramError('INVALID_INPUT', 'order: query must be the last block', { field: 'order' });
  }
  return order;
}

/**
 * Hard token budgets of a pack, one per block kind, plus the headroom reserved for the model's output and
 * tool calls (recall results arrive as tool responses inside it, ENGRAM §9.1). All values in tokens of the
 * pack's tokenizer. Invariant (ENGRAM §9.1, the context pack bound): the sum of all of them <= the window.
 */
export type PackBudgets = { readonly [K in BlockKind]: number } & {
  /** Tokens kept free for the model's output, tool calls and tool results. */
  readonly headroomTokens: number;
};

/** The fields of `PackBudgets`, in the order they are reported. */
export const BUDGET_FIELDS = [...BLOCK_KINDS, 'headroomTokens'] as const;
/** A key of `PackBudgets`: a block kind or `headroomTokens`. */
export type BudgetField = (typeof BUDGET_FIELDS)[number];

/** Data of the `BUDGET_EXCEEDED` error thrown by `validateBudgets`. */
export interface BudgetInvariantData {
  [key: string]: unknown;
  field: 'budgets';
  /** Every budget, by field, in tokens. */
  budgets: Record<BudgetField, number>;
  windowTokens: number;
  /** Sum of every budget including headroom, in tokens. */
  totalTokens: number;
  /** `totalTokens - windowTokens`. */
  overByTokens: number;
}

/**
 * Enforces ENGRAM §9.1: every budget is a non-negative integer and
 * `identity + codex + karma + markers + history + task_state + query + headroomTokens <= windowTokens`.
 * @param windowTokens the model's context window, in tokens (a positive integer).
 * @throws EngramError `INVALID_INPUT` naming the field (`budgets.codex`, `windowTokens`) for a malformed number;
 *   `BUDGET_EXCEEDED` with `BudgetInvariantData` (every budget and the window) when the sum is over the window.
 */
export function validateBudgets(budgets: PackBudgets, windowTokens: number): void {
  assertTokenCount(windowTokens, 'windowTokens', 1);
  for (const field of BUDGET_FIELDS) assertTokenCount(budgets[field], `budgets.${field}`, 0);
  const totalTokens = BUDGET_FIELDS.reduce((sum, f) => sum + budgets[f], 0);
  if (totalTokens > windowTokens) {
    const listed = BUDGET_FIELDS.map((f) => `${f} ${budgets[f]}`).join(' + ');
    const data: BudgetInvariantData = {
      field: 'budgets',
      budgets: Object.fromEntries(BUDGET_FIELDS.map((f) => [f, budgets[f]])) as Record<BudgetField, number>,
      windowTokens,
      totalTokens,
      overByTokens: totalTokens - windowTokens,
    };
    throw new EngramError(
      'BUDGET_EXCEEDED',
      `pack budgets exceed the window: ${listed} = ${totalTokens} tokens > windowTokens ${windowTokens} (over by ${data.overByTokens})`,
      data,
    );
  }
}

/** Fractions of the window used by `defaultBudgets`, one per budget field. */
export type BudgetFractions = { readonly [K in BudgetField]: number };

/**
 * Default share of the window per budget (sum 1.0). At a 128K window: identity 6.4K, codex 44.8K, karma 6.4K,
 * markers 3.8K, history 38.4K, task_state 2.6K, query 6.4K, headroom 19.2K tokens. Why these numbers:
 * - `history` 0.30 and `codex` 0.35 are the two large consumers. ENGRAM §10.6 sizes the hot tail at 8-15K of a
 *   200K window; we give it more (60K there) because the tail is what the model reads verbatim, and markers +
 *   recall cover the rest. Deep Memory's CAG threshold (0.7 of the window) assumes the codex is the only large
 *   block; here it shares the window with history, so the budget, not the threshold, is what usually decides
 *   CAG vs RAG. Raise `codex` (and lower `history`) for document-analysis agents.
 * - `headroom` 0.15: the model's answer plus recall results (ENGRAM §9.1 puts pull results inside headroom;
 *   §10.6: ~4K tokens per recall call), and slack for tokenizers that count a few percent more than o200k.
 * - `task_state` 0.02: ENGRAM §4.3 expects 500-800 tokens; 0.02 gives 655 at 32K and 2.6K at 128K.
 * - `markers` 0.03: a marker is <= 60 tokens (ENGRAM §4.3), so ~64 markers at 128K before merging must run.
 * - `identity`, `karma`, `query` 0.05 each: a long system prompt, a few dozen verified facts, a long message.
 * With these defaults the context engine gives what identity, codex and karma leave unused to the history
 * (`lendUnusedBudget`): for those three the shares are caps, not reservations.
 */
export const DEFAULT_BUDGET_FRACTIONS: BudgetFractions = {
  identity: 0.05,
  codex: 0.35,
  karma: 0.05,
  markers: 0.03,
  history: 0.3,
  task_state: 0.02,
  query: 0.05,
  headroomTokens: 0.15,
};

/**
 * Budgets for a window: each block gets `floor(fraction * windowTokens)` tokens and the headroom gets the rest
 * (at least its own fraction), so the pack bound holds with equality when the fractions sum to 1.
 * @param windowTokens the model's context window, in tokens.
 * @param fractions overrides of `DEFAULT_BUDGET_FRACTIONS` (shares of the window, 0..1).
 * @throws EngramError `INVALID_INPUT` for a bad window or fraction; `BUDGET_EXCEEDED` when fractions sum over 1.
 */
export function defaultBudgets(windowTokens: number, fractions: Partial<BudgetFractions> = {}): PackBudgets {
  assertTokenCount(windowTokens, 'windowTokens', 1);
  const f: BudgetFractions = { ...DEFAULT_BUDGET_FRACTIONS, ...fractions };
  for (const field of BUDGET_FIELDS) {
    const v = f[field];
    if (!Number.isFinite(v) || v < 0 || v > 1) {
      throw new EngramError('INVALID_INPUT', `fractions.${field}: must be a number from 0 to 1, got ${String(v)}`, {
        field: `fractions.${field}`,
      });
    }
  }
  const blocks = Object.fromEntries(BLOCK_KINDS.map((k) => [k, Math.floor(f[k] * windowTokens)])) as Record<BlockKind, number>;
  const assigned = BLOCK_KINDS.reduce((sum, k) => sum + blocks[k], 0);
  const budgets: PackBudgets = {
    ...blocks,
    headroomTokens: Math.max(Math.floor(f.headroomTokens * windowTokens), windowTokens - assigned),
  };
  validateBudgets(budgets, windowTokens);
  return budgets;
}

/** The blocks before the history whose size is known before a pack is assembled and changes rarely. */
export const STABLE_BLOCKS = ['identity', 'codex', 'karma'] as const;
/** One of `STABLE_BLOCKS`. */
export type StableBlock = (typeof STABLE_BLOCKS)[number];

/**
 * Budgets in which the stable blocks (identity, codex, karma) keep only the tokens they use and the rest goes to
 * the history: with the default shares, a session without a codex or karma would otherwise leave 40 % of the
 * window unused while its history compacts at 30 %. Only stable blocks lend, because their size is known before
 * compaction and changes rarely (a new system prompt, a codex, a karma promotion): the high-water mark moves
 * only then. The task card and the query change every turn and keep their budgets, so a long query never
 * triggers a compaction. The sum of the budgets is unchanged, so the pack bound still holds.
 * @param used tokens each stable block will take (an upper bound is fine; values over a budget lend nothing).
 * @throws EngramError `INVALID_INPUT` naming the field (`used.codex`) for a count that is not an integer >= 0.
 */
export function lendUnusedBudget(budgets: PackBudgets, used: Readonly<Record<StableBlock, number>>): PackBudgets {
  let lent = 0;
  const out: Record<BudgetField, number> = { ...budgets };
  for (const kind of STABLE_BLOCKS) {
    assertTokenCount(used[kind], `used.${kind}`, 0);
    const spare = Math.max(0, budgets[kind] - used[kind]);
    out[kind] = budgets[kind] - spare;
    lent += spare;
  }
  out.history = budgets.history + lent;
  return out;
}

/** How much of the current rendering repeats the previous one from its first character. */
export interface PrefixReuse {
  /** Length of the longest common prefix, in UTF-16 code units (never splitting a surrogate pair). */
  sharedPrefixChars: number;
  /** `sharedPrefixChars / currentRendered.length`, 0..1; 0 when `currentRendered` is empty. */
  ratio: number;
}

/**
 * The byte-identical prefix a prompt cache could reuse between two consecutive renderings of a pack
 * (e.g. `formatText` of turn N-1 and turn N). Pure; O(length of the shared prefix).
 */
export function prefixReuse(previousRendered: string, currentRendered: string): PrefixReuse {
  const sharedPrefixChars = commonPrefixLength(previousRendered, currentRendered);
  return {
    sharedPrefixChars,
    ratio: currentRendered.length === 0 ? 0 : sharedPrefixChars / currentRendered.length,
  };
}

/** Prefix reuse counted in tokens: what an inference engine's prefix cache actually skips. */
export interface PrefixReuseTokens {
  /** Leading tokens of the current rendering identical (as a token sequence) to the previous rendering's. */
  sharedPrefixTokens: number;
  /** Tokens of the whole current rendering. */
  currentTokens: number;
  /** `sharedPrefixTokens / currentTokens`, 0..1; 0 when the current rendering is empty. */
  ratio: number;
}

/**
 * Characters past the divergence point kept when tokenizing the shared region: a BPE pre-token chunk that
 * straddles the divergence can only change the last token(s) before it, and o200k chunks are words, number
 * groups and whitespace runs, far shorter than this.
 */
const TOKEN_BOUNDARY_MARGIN_CHARS = 256;

/**
 * Like `prefixReuse`, in tokens: the largest n such that the first n tokens of both renderings decode to the
 * same text lying inside their common character prefix. Costs O(log n) tokenizations of the shared region, so
 * it belongs in benchmarks, not on the per-turn path.
 */
export function prefixReuseTokens(previousRendered: string, currentRendered: string, tokenizer: Tokenizer): PrefixReuseTokens {
  const currentTokens = tokenizer.count(currentRendered);
  const sharedChars = commonPrefixLength(previousRendered, currentRendered);
  if (sharedChars === currentRendered.length && sharedChars === previousRendered.length) {
    return { sharedPrefixTokens: currentTokens, currentTokens, ratio: currentTokens === 0 ? 0 : 1 };
  }
  const cur = currentRendered.slice(0, sharedChars + TOKEN_BOUNDARY_MARGIN_CHARS);
  const prev = previousRendered.slice(0, sharedChars + TOKEN_BOUNDARY_MARGIN_CHARS);
  const sameLeadingTokens = (n: number): boolean => {
    const a = tokenizer.truncate(cur, n);
    return a.length <= sharedChars && a === tokenizer.truncate(prev, n);
  };
  // Largest n with sameLeadingTokens(n); the predicate holds for 0 and is monotone in n.
  let lo = 0;
  let hi = Math.min(tokenizer.count(cur), tokenizer.count(prev));
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (sameLeadingTokens(mid)) lo = mid;
    else hi = mid - 1;
  }
  return { sharedPrefixTokens: lo, currentTokens, ratio: currentTokens === 0 ? 0 : lo / currentTokens };
}

function commonPrefixLength(a: string, b: string): number {
  const max = Math.min(a.length, b.length);
  let i = 0;
  while (i < max && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  // Do not count half of a surrogate pair whose other half differs.
  if (i > 0 && i < max) {
    const c = a.charCodeAt(i - 1);
    if (c >= 0xd800 && c <= 0xdbff) i--;
  }
  return i;
}

function assertTokenCount(value: number, field: string, min: number): void {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new EngramError('INVALID_INPUT', `${field}: must be an integer >= ${min}, got ${String(value)}`, { field });
  }
}
