import { EngramError } from '../../errors.js';
import type { ChatModel, ChatRequest, ChatResult } from './chat-model.js';
import { postJsonWithRetries, type HttpRetryOptions } from './http-transport.js';

export const DEFAULT_ANTHROPIC_URL = 'https://api.anthropic.com/v1';
/** The Messages API version header this client speaks. */
export const ANTHROPIC_VERSION = '2023-06-01';
/** The Messages API requires `max_tokens`; used when a request sets none. */
export const DEFAULT_ANTHROPIC_MAX_TOKENS = 1024;

export interface AnthropicChatOptions extends HttpRetryOptions {
  /** API root including the version; default {@link DEFAULT_ANTHROPIC_URL}; `/messages` is appended. */
  baseUrl?: string;
  model: string;
  /** Sent as `x-api-key`. */
  apiKey?: string;
}

interface MessagesBody {
  model?: unknown;
  content?: Array<{ type?: unknown; text?: unknown }>;
  stop_reason?: unknown;
  usage?: { input_tokens?: unknown; output_tokens?: unknown };
}

/**
 * The Anthropic Messages API (`POST {baseUrl}/messages`): system messages go in the top-level `system` field,
 * consecutive messages of one role are joined (the API wants user and assistant to alternate), the answer is
 * the concatenation of its text blocks; `stop_reason: max_tokens` is reported as `length`.
 */
export function createAnthropicChatModel(options: AnthropicChatOptions): ChatModel {
  const base = (options.baseUrl ?? DEFAULT_ANTHROPIC_URL).replace(/\/+$/, '');
  const url = base.endsWith('/messages') ? base : `${base}/messages`;
  const name = `anthropic:${options.model}`;
  return {
    name,
    async complete(request: ChatRequest): Promise<ChatResult> {
      const system = request.messages.filter((m) => m.role === 'system').map((m) => m.content);
      const turns: Array<{ role: 'user' | 'assistant'; content: string }> = [];
      for (const m of request.messages) {
        if (m.role === 'system') continue;
        const last = turns.at(-1);
        if (last && last.role === m.role) last.content += `\n\n${m.content}`;
        else turns.push({ role: m.role, content: m.content });
      }
      if (turns[0]?.role !== 'user') turns.unshift({ role: 'user', content: '(continue)' });
      const body: Record<string, unknown> = {
        model: options.model,
        max_tokens: request.maxTokens ?? DEFAULT_ANTHROPIC_MAX_TOKENS,
        temperature: request.temperature ?? 0,
        messages: turns,
      };
      if (system.length > 0) body.system = system.join('\n\n');
      const headers: Record<string, string> = { 'anthropic-version': ANTHROPIC_VERSION, ...(options.apiKey ? { 'x-api-key': options.apiKey } : {}) };
      const { body: raw, attempts } = await postJsonWithRetries(name, url, headers, body, options);
      const json = raw as MessagesBody;
      if (!Array.isArray(json.content)) {
        throw new EngramError('PROVIDER_ERROR', `${name} (${url}): the answer has no content[]`, { retryable: false, reason: 'bad_response', attempts });
      }
      const text = json.content.filter((b) => b.type === 'text' && typeof b.text === 'string').map((b) => b.text as string).join('');
      const stop = typeof json.stop_reason === 'string' ? json.stop_reason : 'end_turn';
      return {
        text,
        usage: { inputTokens: count(json.usage?.input_tokens), outputTokens: count(json.usage?.output_tokens) },
        model: typeof json.model === 'string' ? json.model : options.model,
        finishReason: stop === 'max_tokens' ? 'length' : stop === 'end_turn' || stop === 'stop_sequence' ? 'stop' : stop,
        attempts,
      };
    },
  };
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0;
}
