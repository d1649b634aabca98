/**
 * The LLM seam. Core code (src/consolidate/) depends on these types only; the providers beside this file speak
 * OpenAI-compatible Chat Completions and the Anthropic Messages API with plain `fetch`, and
 * {@link createGuardedChatModel} wraps either with a spend guard, a circuit breaker and a call log.
 */

/** One message of a conversation with the model. A `system` message is sent the way the provider expects it. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface ChatRequest {
  messages: readonly ChatMessage[];
  /** Cap on the answer, in the provider's tokens. Default: the provider's default (Anthropic needs one: 1,024). */
  maxTokens?: number;
  /** Default 0: derived objects should not change from one run to the next. */
  temperature?: number;
  /** Ask for a JSON object (OpenAI `response_format: json_object`; Anthropic has no switch, the prompt says it). */
  json?: boolean;
  /** What the call is for, copied into its {@link LlmCallRecord} (e.g. `summary:normal`). */
  purpose?: string;
}

/** Tokens as the provider counted them (0 when the server did not say). */
export interface LlmUsage {
  inputTokens: number;
  outputTokens: number;
}

export interface ChatResult {
  text: string;
  usage: LlmUsage;
  /** The model that answered, as the server named it. */
  model: string;
  /** `stop`, `length` (cut at maxTokens), or the provider's own word. */
  finishReason: string;
  /** HTTP attempts the call took (1 without retries). */
  attempts: number;
}

/** A chat model: `complete` sends one request (retried inside on 429, 5xx and timeouts) and returns its answer. */
export interface ChatModel {
  /** `openai:<model>` or `anthropic:<model>`, for logs and for the objects a model made. */
  readonly name: string;
  complete(request: ChatRequest): Promise<ChatResult>;
}

/**
 * One model call as logged: what it cost and how long it took. Every call the guarded model sees is logged
 * once, failures and calls the guard refused included (`outcome`).
 */
export interface LlmCallRecord {
  /** Epoch ms when the call started. */
  startedAtMs: number;
  model: string;
  purpose?: string;
  outcome: 'ok' | 'error' | 'refused';
  inputTokens: number;
  outputTokens: number;
  latencyMs: number;
  attempts: number;
  /** The error code and message of a failed or refused call. */
  error?: { code: string; message: string };
}
