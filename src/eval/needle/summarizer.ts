/**
 * Summarizers for the narrative and summary-DAG baselines. With an OpenAI-compatible endpoint configured
 * (`ENGRAM_LLM_URL`, `ENGRAM_LLM_MODEL`, `ENGRAM_LLM_API_KEY`) a model writes the summary, as in the paper;
 * otherwise an extractive summarizer with the same token budget picks whole lines of the text. The
 * extractive one never invents anything, so it is kinder to the baselines than a model that paraphrases or
 * confabulates (ENGRAM §10A.3); every report labels its rows as a simulation.
 */
import { createAnthropicChatModel } from '../../providers/llm/anthropic-chat.js';
import type { ChatModel } from '../../providers/llm/chat-model.js';
import { resolveLlmSpec } from '../../providers/llm/llm-spec.js';
import { createOpenAiChatModel } from '../../providers/llm/openai-chat.js';
import type { Tokenizer } from '../../providers/tokenizer.js';

export interface SummaryRequest {
  /** The items being compacted, oldest first, as the model saw them (earlier summaries included). */
  items: readonly string[];
  /** Hard cap of the summary, in tokens of the harness's tokenizer. */
  budgetTokens: number;
  /** 0 for a summary of raw items, 1+ for a summary of summaries (the DAG's condensed nodes). */
  depth: number;
}

export interface Summarizer {
  /** `extractive` or `llm:<model>`. */
  readonly name: string;
  /** True when no model wrote the summaries: the rows using it are a simulation. */
  readonly isSimulation: boolean;
  summarize(request: SummaryRequest): Promise<string>;
}

/** Weight of a line by the kind of item it comes from: what an agent's summary keeps first. */
const KIND_WEIGHT: Record<string, number> = { decision: 2, user: 1.6, summary: 1.5, assistant: 1.4, tool_call: 0.6, tool_result: 0.8 };
/** Longest line an extractive summary keeps: a summary states findings, it does not paste logs. */
const MAX_LINE_CHARS = 200;
const MIN_WORD_CHARS = 3;

/**
 * Extractive summarization: every line of the items is a candidate; its score is the weight of its item's
 * kind (decisions and dialogue before tool output, as a model's summary would) times 0.5 + its salience (the
 * mean log chunk frequency of its words, the classic centroid heuristic, in 0..1); lines are taken best first
 * while they fit the budget and printed in their original order. Deterministic.
 */
export function createExtractiveSummarizer(tokenizer: Tokenizer): Summarizer {
  return {
    name: 'extractive',
    isSimulation: true,
    async summarize({ items, budgetTokens, depth }) {
      const lines: Array<{ text: string; weight: number; order: number; words: string[] }> = [];
      const df = new Map<string, number>();
      for (const item of items) {
        const kind = /^\[(\w+)/.exec(item)?.[1] ?? 'assistant';
        const weight = KIND_WEIGHT[kind] ?? 1;
        for (const [i, raw] of item.split('\n').entries()) {
          // The item's kind label ("[tool_result Bash] ") opens its first line only.
          const text = (i === 0 ? raw.replace(/^\[\w+[^\]]*\]\s*/, '') : raw).trim();
          if (text.length === 0 || /^<\/?summary/.test(text) || /^Summary of /.test(text)) continue;
          const words = text.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((w) => w.length >= MIN_WORD_CHARS);
          for (const w of new Set(words)) df.set(w, (df.get(w) ?? 0) + 1);
          lines.push({ text: text.length > MAX_LINE_CHARS ? `${text.slice(0, MAX_LINE_CHARS - 1)}…` : text, weight, order: lines.length, words });
        }
      }
      const norm = Math.log(1 + Math.max(1, lines.length));
      const salience = (l: (typeof lines)[number]): number =>
        l.words.reduce((sum, w) => sum + Math.log(1 + (df.get(w) ?? 0)), 0) / Math.max(1, l.words.length) / norm;
      const scored = lines.map((l) => ({ ...l, score: l.weight * (0.5 + salience(l)) }));
      scored.sort((a, b) => b.score - a.score || a.order - b.order);
      const header = `Summary of earlier conversation (extractive, level ${depth}):`;
      let used = tokenizer.count(header);
      const kept: typeof scored = [];
      const seen = new Set<string>();
      for (const l of scored) {
        if (seen.has(l.text)) continue;
        const cost = tokenizer.count(l.text) + 1;
        if (used + cost > budgetTokens) continue;
        kept.push(l);
        seen.add(l.text);
        used += cost;
      }
      kept.sort((a, b) => a.order - b.order);
      return [header, ...kept.map((l) => l.text)].join('\n');
    },
  };
}

export interface LlmSummarizerOptions {
  /** Base URL of an OpenAI-compatible API, e.g. `http://127.0.0.1:11434/v1` (`/chat/completions` is appended). */
  baseUrl: string;
  model: string;
  apiKey?: string;
  tokenizer: Tokenizer;
  /** Per request. Default 120 s. */
  timeoutMs?: number;
  /** `openai` (default) or `anthropic` (the Messages API at `baseUrl`). */
  provider?: 'openai' | 'anthropic';
}

/**
 * A summarizer that asks a chat model through the LLM seam (`src/providers/llm/`: retries with backoff on 429 and
 * 5xx); the answer is cut to the budget.
 */
export function createLlmSummarizer(options: LlmSummarizerOptions): Summarizer {
  const http = { baseUrl: options.baseUrl, model: options.model, ...(options.apiKey ? { apiKey: options.apiKey } : {}), timeoutMs: options.timeoutMs ?? 120_000 };
  const model: ChatModel = options.provider === 'anthropic' ? createAnthropicChatModel(http) : createOpenAiChatModel(http);
  return {
    name: `llm:${options.model}`,
    isSimulation: false,
    async summarize({ items, budgetTokens, depth }) {
      const system =
        depth === 0
          ? `You compact the history of an AI coding agent. Summarize the transcript below as a narrative the agent can continue from, in at most ${budgetTokens} tokens.`
          : `You condense earlier summaries of an AI coding agent's session into one narrative summary of at most ${budgetTokens} tokens.`;
      const answer = await model.complete({
        messages: [
          { role: 'system', content: system },
          { role: 'user', content: items.join('\n\n') },
        ],
        maxTokens: budgetTokens,
        purpose: `needle-summary:${depth}`,
      });
      return options.tokenizer.truncate(answer.text, budgetTokens);
    },
  };
}

/**
 * The summarizer the environment asks for (`resolveLlmSpec`: `$ENGRAM_LLM`, else an OpenAI-compatible model at
 * `$ENGRAM_LLM_URL`, `$ENGRAM_LLM_MODEL` default `gpt-4o-mini`, key `$ENGRAM_LLM_API_KEY`), else the extractive one.
 */
export function summarizerFromEnv(tokenizer: Tokenizer, env: NodeJS.ProcessEnv = process.env): Summarizer {
  const spec = resolveLlmSpec(undefined, env);
  if (spec.provider === 'none') return createExtractiveSummarizer(tokenizer);
  return createLlmSummarizer({
    provider: spec.provider,
    baseUrl: spec.baseUrl,
    model: spec.model,
    tokenizer,
    ...(spec.apiKey ? { apiKey: spec.apiKey } : {}),
  });
}
