import { EngramError } from '../../errors.js';
import { DEFAULT_ANTHROPIC_URL } from './anthropic-chat.js';
import { createGuardedChatModel, type GuardedChatModel, type GuardedChatModelOptions } from './guarded-chat-model.js';
import type { HttpRetryOptions } from './http-transport.js';

/**
 * Which LLM derives summaries and records, as one string (CLI `--llm`, `$ENGRAM_LLM`, library option):
 * - `none` (default without `$ENGRAM_LLM_URL`): no model; consolidation runs at its deterministic level;
 * - `openai:<model>`: any OpenAI-compatible Chat Completions server (OpenAI, Ollama, vLLM, llama.cpp, LM Studio,
 *   OpenRouter); its root comes from `$ENGRAM_LLM_URL` (default `https://api.openai.com/v1`);
 * - `anthropic:<model>`: the Anthropic Messages API; root from `$ENGRAM_LLM_URL` (default `https://api.anthropic.com/v1`).
 *
 * The key comes from `$ENGRAM_LLM_API_KEY`, else `$OPENAI_API_KEY` / `$ANTHROPIC_API_KEY` (local servers need none).
 * `openai:` or `anthropic:` with no model takes `$ENGRAM_LLM_MODEL`. With neither `--llm` nor `$ENGRAM_LLM` but
 * `$ENGRAM_LLM_URL` set, the model is `openai:$ENGRAM_LLM_MODEL` (default `gpt-4o-mini`), as `engram bench needle` reads it.
 */
export type LlmSpec = { provider: 'none' } | { provider: 'openai' | 'anthropic'; model: string; baseUrl: string; apiKey?: string };

export const DEFAULT_LLM_OPENAI_URL = 'https://api.openai.com/v1';
/** The model `$ENGRAM_LLM_URL` alone selects, as the needle bench has always read it. */
export const DEFAULT_LLM_MODEL = 'gpt-4o-mini';

type Env = Record<string, string | undefined>;

/** Parses an `--llm` string (see {@link LlmSpec}). Throws INVALID_INPUT with `field: 'llm'` naming what is wrong. */
export function parseLlmSpec(spec: string, env: Env = process.env): LlmSpec {
  const s = spec.trim();
  if (s === 'none' || s === 'off') return { provider: 'none' };
  const colon = s.indexOf(':');
  const provider = colon >= 0 ? s.slice(0, colon).trim() : s;
  if (provider !== 'openai' && provider !== 'anthropic') {
    throw new EngramError('INVALID_INPUT', `llm: unknown "${spec}"; expected none, openai:<model> or anthropic:<model>`, { field: 'llm' });
  }
  const model = (colon >= 0 ? s.slice(colon + 1).trim() : '') || env.ENGRAM_LLM_MODEL?.trim() || '';
  if (model === '') {
    throw new EngramError('INVALID_INPUT', `llm: "${spec}" names no model; write ${provider}:<model> or set ENGRAM_LLM_MODEL`, { field: 'llm' });
  }
  const baseUrl = env.ENGRAM_LLM_URL?.trim() || (provider === 'openai' ? DEFAULT_LLM_OPENAI_URL : DEFAULT_ANTHROPIC_URL);
  if (!/^https?:\/\//.test(baseUrl)) {
    throw new EngramError('INVALID_INPUT', `ENGRAM_LLM_URL: "${baseUrl}" is not an http(s) URL`, { field: 'ENGRAM_LLM_URL' });
  }
  const apiKey = env.ENGRAM_LLM_API_KEY || (provider === 'openai' ? env.OPENAI_API_KEY : env.ANTHROPIC_API_KEY);
  return { provider, model, baseUrl, ...(apiKey ? { apiKey } : {}) };
}

/** The spec a command runs with: `--llm`, else `$ENGRAM_LLM`, else `openai:` at `$ENGRAM_LLM_URL` when set, else `none`. */
export function resolveLlmSpec(flag: string | undefined, env: Env = process.env): LlmSpec {
  const given = flag?.trim() || env.ENGRAM_LLM?.trim();
  if (given) return parseLlmSpec(given, env);
  if (env.ENGRAM_LLM_URL?.trim()) return parseLlmSpec(`openai:${env.ENGRAM_LLM_MODEL?.trim() || DEFAULT_LLM_MODEL}`, env);
  return { provider: 'none' };
}

/** The guarded model a spec names (spend guard, breaker, call log: see {@link createGuardedChatModel}); null for `none`. */
export async function createChatModelFromSpec(
  spec: LlmSpec,
  options: GuardedChatModelOptions & { http?: HttpRetryOptions } = {},
): Promise<GuardedChatModel | null> {
  if (spec.provider === 'none') return null;
  const { http, ...guard } = options;
  const key = spec.apiKey ? { apiKey: spec.apiKey } : {};
  if (spec.provider === 'openai') {
    const { createOpenAiChatModel } = await import('./openai-chat.js');
    return createGuardedChatModel(createOpenAiChatModel({ ...http, baseUrl: spec.baseUrl, model: spec.model, ...key }), guard);
  }
  const { createAnthropicChatModel } = await import('./anthropic-chat.js');
  return createGuardedChatModel(createAnthropicChatModel({ ...http, baseUrl: spec.baseUrl, model: spec.model, ...key }), guard);
}

/**
 * Limits a user sets in the environment, for {@link createChatModelFromSpec}: `$ENGRAM_LLM_MAX_CALLS_PER_HOUR`
 * (default 600), `$ENGRAM_LLM_MAX_TOKENS_PER_HOUR` (default 2,000,000; input plus output) and
 * `$ENGRAM_LLM_TIMEOUT_MS` (per attempt, default 120,000). Each is a positive integer; anything else is
 * INVALID_INPUT naming the variable.
 */
export function llmLimitsFromEnv(env: Env = process.env): GuardedChatModelOptions & { http?: HttpRetryOptions } {
  const read = (name: string): number | undefined => {
    const raw = env[name]?.trim();
    if (!raw) return undefined;
    const value = Number(raw);
    if (!Number.isInteger(value) || value <= 0) {
      throw new EngramError('INVALID_INPUT', `${name}: "${raw}" is not a positive whole number`, { field: name });
    }
    return value;
  };
  const maxCalls = read('ENGRAM_LLM_MAX_CALLS_PER_HOUR');
  const maxTokens = read('ENGRAM_LLM_MAX_TOKENS_PER_HOUR');
  const timeoutMs = read('ENGRAM_LLM_TIMEOUT_MS');
  return {
    ...(maxCalls !== undefined || maxTokens !== undefined
      ? { spend: { windowMs: 3_600_000, ...(maxCalls !== undefined ? { maxCalls } : {}), ...(maxTokens !== undefined ? { maxTokens } : {}) } }
      : {}),
    ...(timeoutMs !== undefined ? { http: { timeoutMs } } : {}),
  };
}
