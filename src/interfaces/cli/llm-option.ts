import type { GuardedChatModel, GuardedChatModelOptions } from '../../providers/llm/guarded-chat-model.js';
import type { GlobalOptions } from './cli-context.js';

/** Help text of the global `--llm <spec>` option (see providers/llm/llm-spec.ts). */
export const LLM_OPTION_DESCRIPTION =
  'model for consolidation (summaries) and graph build (entities): none (deterministic, no model), openai:<model> (OpenAI-compatible server at $ENGRAM_LLM_URL: OpenAI, Ollama, vLLM, llama.cpp, LM Studio, OpenRouter), anthropic:<model>; key in $ENGRAM_LLM_API_KEY (default: $ENGRAM_LLM, else openai:$ENGRAM_LLM_MODEL when $ENGRAM_LLM_URL is set, else none)';

/**
 * The model a command that derives objects runs with: `--llm`, else the environment (see `resolveLlmSpec`);
 * null when none is configured, and the command then works at the deterministic level. The hourly limits and
 * the timeout come from `$ENGRAM_LLM_MAX_CALLS_PER_HOUR`, `$ENGRAM_LLM_MAX_TOKENS_PER_HOUR` and
 * `$ENGRAM_LLM_TIMEOUT_MS` (`llmLimitsFromEnv`), `options` win. A bad spec is INVALID_INPUT naming `llm` (exit 2).
 */
export async function openLlm(
  args: Pick<GlobalOptions, 'llm'>,
  options: GuardedChatModelOptions = {},
  env: Record<string, string | undefined> = process.env,
): Promise<GuardedChatModel | null> {
  // Loaded here, not by main.ts: every engram command parses --llm's help, few open a model.
  const { createChatModelFromSpec, llmLimitsFromEnv, resolveLlmSpec } = await import('../../providers/llm/llm-spec.js');
  const spec = resolveLlmSpec(args.llm, env);
  if (spec.provider === 'none') return null;
  const limits = llmLimitsFromEnv(env);
  return createChatModelFromSpec(spec, { ...limits, ...options, spend: { ...limits.spend, ...options.spend } });
}
