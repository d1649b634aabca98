import { EngramError } from '../../errors.js';
import type { ChatModel, ChatRequest, ChatResult } from './chat-model.js';
import { postJsonWithRetries, type HttpRetryOptions } from './http-transport.js';

export interface OpenAiChatOptions extends HttpRetryOptions {
  /** API root including the version, e.g. `https://api.openai.com/v1`, `http://localhost:11434/v1` (Ollama); `/chat/completions` is appended. */
  baseUrl: string;
  model: string;
  /** Sent as `Authorization: Bearer ...`; local servers usually need none. */
  apiKey?: string;
  /**
   * Send `response_format: {type: 'json_object'}` when a request asks for JSON. Default true; llama.cpp and
   * some gateways reject it, and the prompt asks for JSON anyway.
   */
  supportsJsonMode?: boolean;
  /**
   * The name of the answer cap in the request. Default `max_completion_tokens` for api.openai.com (its reasoning
   * models reject `max_tokens`), `max_tokens` elsewhere (what Ollama, vLLM, llama.cpp and LM Studio read).
   */
  maxTokensParameter?: 'max_tokens' | 'max_completion_tokens';
}

/**
 * A reasoning block some local models (Qwen3, DeepSeek-R1 through Ollama or llama.cpp) put before their answer in
 * `content`: it is not the answer, and it would count against a summary's budget.
 */
const LEADING_THINK_BLOCK = /^\s*<think>[\s\S]*?<\/think>\s*/;

interface CompletionBody {
  model?: unknown;
  choices?: Array<{ message?: { content?: unknown }; finish_reason?: unknown }>;
  usage?: { prompt_tokens?: unknown; completion_tokens?: unknown };
}

/**
 * Chat Completions (`POST {baseUrl}/chat/completions`) as OpenAI, Ollama, vLLM, llama.cpp, LM Studio and
 * OpenRouter speak it: system messages stay in `messages`, usage comes from `usage.prompt_tokens` and
 * `usage.completion_tokens`; a leading `<think>...</think>` block is not part of the answer.
 */
export function createOpenAiChatModel(options: OpenAiChatOptions): ChatModel {
  const base = options.baseUrl.replace(/\/+$/, '');
  const url = base.endsWith('/chat/completions') ? base : `${base}/chat/completions`;
  const name = `openai:${options.model}`;
  const maxTokensParameter = options.maxTokensParameter ?? (/^https:\/\/api\.openai\.com\//.test(url) ? 'max_completion_tokens' : 'max_tokens');
  return {
    name,
    async complete(request: ChatRequest): Promise<ChatResult> {
      const body: Record<string, unknown> = {
        model: options.model,
        messages: request.messages.map((m) => ({ role: m.role, content: m.content })),
        temperature: request.temperature ?? 0,
      };
      if (request.maxTokens !== undefined) body[maxTokensParameter] = request.maxTokens;
      if (request.json && options.supportsJsonMode !== false) body.response_format = { type: 'json_object' };
      const headers: Record<string, string> = options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {};
      const { body: raw, attempts } = await postJsonWithRetries(name, url, headers, body, options);
      const json = raw as CompletionBody;
      const choice = json.choices?.[0];
      const content = choice?.message?.content;
      if (typeof content !== 'string') {
        throw new EngramError('PROVIDER_ERROR', `${name} (${url}): the answer has no choices[0].message.content`, { retryable: false, reason: 'bad_response', attempts });
      }
      return {
        text: content.replace(LEADING_THINK_BLOCK, ''),
        usage: { inputTokens: count(json.usage?.prompt_tokens), outputTokens: count(json.usage?.completion_tokens) },
        model: typeof json.model === 'string' ? json.model : options.model,
        finishReason: typeof choice?.finish_reason === 'string' ? choice.finish_reason : 'stop',
        attempts,
      };
    },
  };
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0;
}
