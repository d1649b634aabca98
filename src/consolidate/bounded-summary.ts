/**
 * A summary of sources that is always within its token budget: the model writes it at the normal level, or at
 * the aggressive level (half the budget, a stricter prompt) when the normal answer runs over or fails, or the
 * deterministic level selects sentences when both fail or no model is configured (see escalation.ts). Sources
 * longer than one model call's input are summarized in chunks whose summaries are condensed in turn.
 */
import type { ChatModel, ChatResult } from '../providers/llm/chat-model.js';
import type { Tokenizer } from '../providers/tokenizer.js';
import { escalate, LEVEL_CONFIDENCE, type EscalationLevel, type EscalationTelemetry, type LevelAttempt, type LlmLevel } from './escalation.js';
import { extractiveSummary, type SourceItem } from './extractive-summary.js';

export interface BoundedSummaryRequest {
  items: readonly SourceItem[];
  /** Hard cap of the summary, in tokens of the project's tokenizer. */
  budgetTokens: number;
  /**
   * What the summary is for and what it keeps: the depth-aware part of the prompt (e.g. "Preserve operational
   * detail, commands, error messages and specific decisions."). The budget and the rules on identifiers are added.
   */
  instructions: string;
  /** Per-chunk cap: most source tokens in one model call. Default 6,000; raised to 4x the budget if lower. */
  maxChunkInputTokens?: number;
  /** Most tokens of one source in a model's input (a long tool result is cut). Default 1,000. */
  maxItemTokens?: number;
  /** Copied into each call's log record as `<purpose>:<level>`. Default `summary`. */
  purpose?: string;
}

export interface BoundedSummaryDeps {
  /** The model, or null: then the deterministic level runs at once. */
  llm: ChatModel | null;
  tokenizer: Tokenizer;
  telemetry?: EscalationTelemetry;
}

export interface BoundedSummary {
  text: string;
  /** Count of `text` by the tokenizer; at most the budget. */
  tokens: number;
  /** The most escalated level any part of the summary was made at. */
  level: EscalationLevel;
  /** The confidence of `level` (0.7 / 0.5 / 0.3). */
  confidence: number;
  /** Every level tried, over all chunks and condensing rounds, in order. */
  attempts: LevelAttempt[];
  /** Model calls made for chunks (0 or 1 for a single chunk; more when sources were summarized in chunks first). */
  chunks: number;
  /** Ids of the sources, in order. */
  sourceIds: string[];
  /** The model that wrote some of it; absent at the deterministic level. */
  model?: string;
  /** Tokens the model used over all calls, as the provider counted them. */
  usage: { inputTokens: number; outputTokens: number };
}

export const DEFAULT_MAX_CHUNK_INPUT_TOKENS = 6_000;
export const DEFAULT_MAX_ITEM_TOKENS = 1_000;
/**
 * Room the model gets past a level's budget, in its own tokens: tokenizers of other model families count a few
 * percent differently, and a model cut at exactly the budget would end mid-sentence; our count decides.
 */
const MAX_TOKENS_SLACK = 1.25;

const LEVEL_ORDER: Record<EscalationLevel, number> = { normal: 0, aggressive: 1, deterministic: 2 };

/** The prompt of a level; the budget is the level's (half the request's at the aggressive level). */
export function summaryPrompt(instructions: string, level: LlmLevel, budgetTokens: number): string {
  const rules =
    level === 'normal'
      ? `Write plain text of at most ${budgetTokens} tokens (about ${Math.floor(budgetTokens * 0.7)} words).`
      : `Be much shorter than usual: terse bullet points only, at most ${budgetTokens} tokens (about ${Math.floor(budgetTokens * 0.7)} words). Keep only decisions, constraints, outcomes and the identifiers they name; drop transient errors, retries, conversational filler and command-level detail.`;
  return `${instructions.trim()}\n${rules}\nKeep identifiers exactly as written: file paths, commands, error codes, ids, names and numbers. State only what the sources say.`;
}

/**
 * Summarizes `items` within `budgetTokens` through the three levels. Never fails because of the model: a failed
 * or unusable answer escalates, and the deterministic level always converges.
 */
export async function summarizeWithEscalation(request: BoundedSummaryRequest, deps: BoundedSummaryDeps): Promise<BoundedSummary> {
  const budget = Math.max(1, Math.floor(request.budgetTokens));
  const state: RunState = { attempts: [], level: 'normal', usage: { inputTokens: 0, outputTokens: 0 }, chunks: 0, modelUsed: false };
  const text = await summarizeLevel(request.items, budget, request, deps, state);
  const tokens = deps.tokenizer.count(text);
  return {
    text,
    tokens,
    level: state.level,
    confidence: LEVEL_CONFIDENCE[state.level],
    attempts: state.attempts,
    chunks: state.chunks,
    sourceIds: request.items.map((i) => i.id),
    ...(state.modelUsed && deps.llm ? { model: deps.llm.name } : {}),
    usage: state.usage,
  };
}

interface RunState {
  attempts: LevelAttempt[];
  level: EscalationLevel;
  usage: { inputTokens: number; outputTokens: number };
  chunks: number;
  modelUsed: boolean;
}

async function summarizeLevel(
  items: readonly SourceItem[],
  budget: number,
  request: BoundedSummaryRequest,
  deps: BoundedSummaryDeps,
  state: RunState,
): Promise<string> {
  const { tokenizer, llm } = deps;
  const maxItemTokens = request.maxItemTokens ?? DEFAULT_MAX_ITEM_TOKENS;
  // Each round must shrink the input: a chunk's summary (<= budget) is at most a quarter of a chunk.
  const maxChunk = Math.max(request.maxChunkInputTokens ?? DEFAULT_MAX_CHUNK_INPUT_TOKENS, 4 * budget);
  if (!llm) return one(items, budget, request, deps, state);
  const chunks = chunkItems(items, maxChunk, maxItemTokens, tokenizer);
  if (chunks.length <= 1) return one(items, budget, request, deps, state);
  const partials: SourceItem[] = [];
  for (const [i, chunk] of chunks.entries()) {
    const text = await one(chunk, budget, request, deps, state);
    partials.push({ id: `chunk-${i + 1}:${chunk[0]!.id}..${chunk.at(-1)!.id}`, kind: 'summary', text });
  }
  return summarizeLevel(partials, budget, request, deps, state);
}

/** One escalation over sources that fit one call. */
async function one(items: readonly SourceItem[], budget: number, request: BoundedSummaryRequest, deps: BoundedSummaryDeps, state: RunState): Promise<string> {
  const { tokenizer, llm } = deps;
  const maxItemTokens = request.maxItemTokens ?? DEFAULT_MAX_ITEM_TOKENS;
  const levelBudget = (level: EscalationLevel): number => (level === 'aggressive' ? Math.max(1, Math.floor(budget / 2)) : budget);
  if (llm) state.chunks++;
  const result = await escalate<{ text: string; finishReason: string }>(
    {
      ...(llm
        ? {
            llm: async (level: LlmLevel) => {
              const limit = levelBudget(level);
              const answer: ChatResult = await llm.complete({
                messages: [
                  { role: 'system', content: summaryPrompt(request.instructions, level, limit) },
                  { role: 'user', content: renderItems(items, maxItemTokens, tokenizer) },
                ],
                maxTokens: Math.ceil(limit * MAX_TOKENS_SLACK),
                purpose: `${request.purpose ?? 'summary'}:${level}`,
              });
              state.usage.inputTokens += answer.usage.inputTokens;
              state.usage.outputTokens += answer.usage.outputTokens;
              return { text: answer.text.trim(), finishReason: answer.finishReason };
            },
          }
        : {}),
      check: (value, level) => {
        if (value.text.length === 0 && level !== 'deterministic') return { ok: false, outcome: 'invalid', reason: 'empty answer' };
        if (value.finishReason === 'length') return { ok: false, outcome: 'over_budget', reason: 'the answer was cut at max_tokens' };
        const tokens = tokenizer.count(value.text);
        const limit = levelBudget(level);
        return tokens <= limit ? { ok: true } : { ok: false, outcome: 'over_budget', reason: `${tokens} tokens for a budget of ${limit}` };
      },
      deterministic: () => ({ text: extractiveSummary(items, tokenizer, { budgetTokens: budget }), finishReason: 'stop' }),
    },
    deps.telemetry,
  );
  state.attempts.push(...result.attempts);
  if (LEVEL_ORDER[result.level] > LEVEL_ORDER[state.level]) state.level = result.level;
  if (result.level !== 'deterministic') state.modelUsed = true;
  return result.value.text;
}

/** Sources as the model reads them: `[kind id] text`, each cut to `maxItemTokens`. */
function renderItems(items: readonly SourceItem[], maxItemTokens: number, tokenizer: Tokenizer): string {
  return items.map((item) => `[${item.kind} ${item.id}] ${tokenizer.truncate(item.text, maxItemTokens)}`).join('\n\n');
}

/** Consecutive runs of sources whose rendered tokens (each cut to `maxItemTokens`) stay within `maxChunk`. */
function chunkItems(items: readonly SourceItem[], maxChunk: number, maxItemTokens: number, tokenizer: Tokenizer): SourceItem[][] {
  const chunks: SourceItem[][] = [];
  let current: SourceItem[] = [];
  let used = 0;
  for (const item of items) {
    const cost = Math.min(maxItemTokens, tokenizer.count(item.text)) + 8;
    if (current.length > 0 && used + cost > maxChunk) {
      chunks.push(current);
      current = [];
      used = 0;
    }
    current.push(item);
    used += cost;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}
