/**
 * The smallest client of an OpenAI-compatible Chat Completions endpoint (OpenAI, Ollama, vLLM, LM Studio, a
 * hosted gateway): one `POST {baseUrl}/chat/completions` per step, with the tools the agent offers. Configured
 * by the same variables as `engram bench needle`: `ENGRAM_LLM_URL`, `ENGRAM_LLM_MODEL`, `ENGRAM_LLM_API_KEY`.
 */
import { EngramError } from '../../src/index.js';
import type { OpenAiMessage, OpenAiToolCall } from '../../src/index.js';

/** A function the model may call, as Chat Completions declares it (`parameters` is a JSON Schema). */
export interface ChatTool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** What the model answered: text, tool calls, or both. */
export interface ChatReply {
  content: string | null;
  toolCalls: OpenAiToolCall[];
}

export interface ChatModel {
  /** `model@url`, for logs. */
  readonly name: string;
  complete(messages: readonly OpenAiMessage[], tools: readonly ChatTool[]): Promise<ChatReply>;
}

export interface ChatModelOptions {
  /** e.g. `http://localhost:11434/v1` (Ollama) or `https://api.openai.com/v1`; `/chat/completions` is appended. */
  baseUrl: string;
  model: string;
  apiKey?: string;
  /** Per request. Default 120 s (a local model on a CPU is slow). */
  timeoutMs?: number;
}

/** The model `$ENGRAM_LLM_URL` names (`$ENGRAM_LLM_MODEL`, default `gpt-4o-mini`; `$ENGRAM_LLM_API_KEY`). */
export function chatModelFromEnv(env: NodeJS.ProcessEnv = process.env): ChatModel {
  const baseUrl = env.ENGRAM_LLM_URL?.trim();
  if (!baseUrl) {
    throw new EngramError('INVALID_INPUT', 'ENGRAM_LLM_URL: set it to an OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 for Ollama', {
      field: 'ENGRAM_LLM_URL',
    });
  }
  return createChatModel({
    baseUrl,
    model: env.ENGRAM_LLM_MODEL?.trim() || 'gpt-4o-mini',
    ...(env.ENGRAM_LLM_API_KEY ? { apiKey: env.ENGRAM_LLM_API_KEY } : {}),
  });
}

export function createChatModel(options: ChatModelOptions): ChatModel {
  const base = options.baseUrl.replace(/\/+$/, '');
  const url = base.endsWith('/chat/completions') ? base : `${base}/chat/completions`;
  return {
    name: `${options.model}@${base}`,
    async complete(messages, tools) {
      let response: Response;
      try {
        response = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}) },
          body: JSON.stringify({ model: options.model, temperature: 0, messages, ...(tools.length > 0 ? { tools } : {}) }),
          signal: AbortSignal.timeout(options.timeoutMs ?? 120_000),
        });
      } catch (err) {
        throw new EngramError('PROVIDER_ERROR', `chat model ${url}: ${err instanceof Error ? err.message : String(err)}`, { retryable: true }, { cause: err });
      }
      if (!response.ok) {
        throw new EngramError('PROVIDER_ERROR', `chat model ${url}: HTTP ${response.status} ${(await response.text()).slice(0, 300)}`, {
          status: response.status,
          retryable: response.status === 429 || response.status >= 500,
        });
      }
      const body = (await response.json()) as { choices?: Array<{ message?: { content?: unknown; tool_calls?: unknown } }> };
      const message = body.choices?.[0]?.message;
      if (!message) throw new EngramError('PROVIDER_ERROR', `chat model ${url}: the answer has no choices[0].message`, { retryable: false });
      return {
        content: typeof message.content === 'string' && message.content !== '' ? message.content : null,
        toolCalls: Array.isArray(message.tool_calls) ? message.tool_calls.map(toolCall) : [],
      };
    },
  };
}

let nextCallId = 0;

/**
 * A tool call as the agent stores it. Some OpenAI-compatible servers send `arguments` as an object rather than a
 * JSON string, or leave out the call's `id`; the stored call and its result are paired by that id.
 */
function toolCall(raw: unknown): OpenAiToolCall {
  const call = (raw ?? {}) as { id?: unknown; function?: { name?: unknown; arguments?: unknown } };
  const args = call.function?.arguments;
  return {
    id: typeof call.id === 'string' && call.id !== '' ? call.id : `call_${Date.now().toString(36)}_${++nextCallId}`,
    type: 'function',
    function: {
      name: typeof call.function?.name === 'string' && call.function.name !== '' ? call.function.name : 'unknown_tool',
      arguments: typeof args === 'string' ? args : JSON.stringify(args ?? {}),
    },
  };
}
