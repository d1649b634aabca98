import type { Tokenizer } from '../../providers/tokenizer.js';
import type { BlockKind, PackBudgets } from './blocks.js';
import type { CodexDecision } from './cag-rag.js';

/**
 * The context pack and what it is built from: the input and output types of the assembler (`assembler.ts`),
 * read by the formatters and the context engine.
 */

/** A static document for the codex block (a manual, a source file, an injected artifact). */
export interface CodexDocument {
  /** Stable id (an artifact id, a path); shown to the model so it can recall or cite the document. */
  readonly id: string;
  readonly title: string;
  readonly text: string;
}

/** A verified fact a person promoted into the prefix (Deep Memory §3, "karma"). */
export interface KarmaItem {
  readonly id: string;
  readonly text: string;
  /** When it was verified: epoch milliseconds or ISO-8601. Orders the karma block (oldest first). */
  readonly verifiedAt: string | number;
}

/** Who produced a history item; tool calls are `assistant` items with a `toolCallId`. */
export const HISTORY_ROLES = ['user', 'assistant', 'tool', 'system'] as const;
/** One of `HISTORY_ROLES`. */
export type HistoryRole = (typeof HISTORY_ROLES)[number];

/**
 * One event of the recent tail. An `assistant` item with a `toolCallId` is a tool call whose `text` is the
 * call's arguments (JSON); a `tool` item with a `toolCallId` is that call's result.
 */
export interface HistoryItem {
  readonly id: string;
  readonly role: HistoryRole;
  readonly text: string;
  readonly toolName?: string;
  readonly toolCallId?: string;
  /** Per-session turn number; items must be given in non-decreasing turn order (oldest first). */
  readonly turn: number;
  /** When it happened: epoch milliseconds or ISO-8601. Not rendered (it would cost tokens every turn). */
  readonly ts: string | number;
  /** Pinned or verified: the governor never prunes it (`governHistory`). The token fit is by recency only. */
  readonly isPinned?: boolean;
  /**
   * The last item of the cache's stable head (`context/cache-head.ts`): the prompt up to here stays the same across
   * compactions, so `formatAnthropic` puts its `markers` breakpoint here instead of after the markers block.
   */
  readonly isCacheHeadEnd?: boolean;
}

/** A history item as placed in a pack: `text` may end with a `[…truncated N tokens…]` notice. */
export interface PackHistoryItem extends HistoryItem {
  /** Tokens cut from the end of `text` (only ever the newest item, and only when it alone exceeds the budget). */
  readonly truncatedTokens?: number;
}

/** The task state card: pre-rendered text, or a plain object rendered by `renderTaskState`. */
export type TaskStateInput = string | Readonly<Record<string, unknown>>;

/** Everything a pack is built from. Optional parts default to empty. */
export interface PackInput {
  readonly identity: string;
  /** Documents in the order they should appear; keep it stable across turns (it is the cached prefix). */
  readonly codex?: readonly CodexDocument[];
  /** Any order: the block sorts by `verifiedAt`, then `id`. */
  readonly karma?: readonly KarmaItem[];
  /** Rendered time-range markers, oldest first (each <= 60 tokens, ENGRAM §4.3). */
  readonly markers?: readonly string[];
  /** The tail, oldest first. */
  readonly history?: readonly HistoryItem[];
  readonly taskState?: TaskStateInput;
  /** The new user message. */
  readonly query: string;
}

/** Options of `assemblePack`. */
export interface AssembleOptions {
  /** Counts and cuts tokens; the budgets are in its tokens. */
  readonly tokenizer: Tokenizer;
  /** The model's context window, in tokens. */
  readonly windowTokens: number;
  /** Per-block budgets and headroom, in tokens. Default `defaultBudgets(windowTokens)`. */
  readonly budgets?: PackBudgets;
  /** Block order. Default `DEFAULT_BLOCK_ORDER`; must list every kind once with `query` last. */
  readonly order?: readonly BlockKind[];
  /** CAG threshold as a share of the window. Default `DEFAULT_CAG_MAX_FRACTION` (0.7). */
  readonly maxCodexFraction?: number;
}

/** One block of a pack, as fitted. */
export interface PackBlock {
  readonly kind: BlockKind;
  /** The block's body (no section header); '' when the block is empty. Formatters frame it. */
  readonly text: string;
  /** `tokenizer.count(text)`; always <= `budget`. */
  readonly tokens: number;
  readonly budget: number;
  /**
   * Items placed: documents (inlined, or listed in the RAG index), karma facts, markers, history events;
   * 1 for a non-empty identity, task state or query.
   */
  readonly items: number;
  /** Items left out to fit the budget (they stay in the store; nothing is deleted). */
  readonly droppedItems: number;
}

/** What the assembler decided and why, for reports and the dashboard. */
export interface PackDecisions {
  readonly order: readonly BlockKind[];
  readonly budgets: PackBudgets;
  readonly codex: CodexDecision;
  /** Set when the newest history item alone exceeded the history budget and was cut. */
  readonly truncatedNewest: { readonly id: string; readonly droppedTokens: number } | null;
  /** Ids of pinned history items that did not fit the history budget (oldest first). */
  readonly droppedPinnedHistoryIds: readonly string[];
}

/** A bounded, ordered context pack (ENGRAM §4.5, Annex A.2): the input of every formatter. */
export interface ContextPack {
  /** Every kind, in `decisions.order`; empty blocks have `text === ''`. */
  readonly blocks: readonly PackBlock[];
  /** The history items placed in the `history` block, oldest first, for message-based formatters. */
  readonly history: readonly PackHistoryItem[];
  /** Sum of the blocks' tokens. `totalTokens + headroomTokens <= windowTokens` always holds. */
  readonly totalTokens: number;
  readonly windowTokens: number;
  readonly headroomTokens: number;
  /** `Tokenizer.name` of the tokenizer the counts are in. */
  readonly tokenizer: string;
  readonly decisions: PackDecisions;
}
