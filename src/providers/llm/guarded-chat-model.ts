import { EngramError } from '../../errors.js';
import type { ChatModel, ChatRequest, ChatResult, LlmCallRecord } from './chat-model.js';

/** Limits on what a model may spend within a sliding window; a call past either is refused before it is sent. */
export interface SpendLimits {
  /** Calls per window. Default 600. */
  maxCalls?: number;
  /** Input plus output tokens per window, as the provider counted them. Default 2,000,000. */
  maxTokens?: number;
  /** The window. Default 3,600,000 ms (one hour). */
  windowMs?: number;
}

export interface CircuitBreakerOptions {
  /** Consecutive failed calls (each after its own retries) that open the circuit. Default 3. */
  failureThreshold?: number;
  /** How long an open circuit refuses calls before one trial call is let through. Default 60,000 ms. */
  cooldownMs?: number;
}

export interface GuardedChatModelOptions {
  spend?: SpendLimits;
  breaker?: CircuitBreakerOptions;
  /** Receives one record per call, refused and failed ones included. Errors it throws are ignored. */
  onCall?: (record: LlmCallRecord) => void;
  /** Injected for tests; default Date.now. */
  now?: () => number;
}

export const DEFAULT_SPEND_MAX_CALLS = 600;
export const DEFAULT_SPEND_MAX_TOKENS = 2_000_000;
export const DEFAULT_SPEND_WINDOW_MS = 3_600_000;
export const DEFAULT_BREAKER_FAILURES = 3;
export const DEFAULT_BREAKER_COOLDOWN_MS = 60_000;

/** What the guard knows now: for stats and tests. */
export interface GuardState {
  circuit: 'closed' | 'open' | 'half-open';
  consecutiveFailures: number;
  callsInWindow: number;
  tokensInWindow: number;
}

export interface GuardedChatModel extends ChatModel {
  state(): GuardState;
}

/**
 * Wraps a model with a spend guard (calls and tokens per sliding window), a circuit breaker and a call log.
 * A refused call throws PROVIDER_ERROR with `data.reason` `spend_limit` or `circuit_open` (and `retryable: true`,
 * `retryAfterMs`) without reaching the server, so a worker can fall back to its deterministic level and try the
 * model later. Only failures that say the provider is unwell count toward the breaker (timeouts, connection
 * errors, 429 and 5xx after retries, a rejected key); an answer the caller could not use does not.
 */
export function createGuardedChatModel(inner: ChatModel, options: GuardedChatModelOptions = {}): GuardedChatModel {
  const now = options.now ?? Date.now;
  const maxCalls = options.spend?.maxCalls ?? DEFAULT_SPEND_MAX_CALLS;
  const maxTokens = options.spend?.maxTokens ?? DEFAULT_SPEND_MAX_TOKENS;
  const windowMs = options.spend?.windowMs ?? DEFAULT_SPEND_WINDOW_MS;
  const failureThreshold = Math.max(1, options.breaker?.failureThreshold ?? DEFAULT_BREAKER_FAILURES);
  const cooldownMs = options.breaker?.cooldownMs ?? DEFAULT_BREAKER_COOLDOWN_MS;
  /** Calls started within the window and the tokens they used (0 until they finish). */
  const spent: Array<{ atMs: number; tokens: number }> = [];
  let consecutiveFailures = 0;
  let openedAtMs: number | undefined;
  let trialInFlight = false;

  const prune = (t: number): void => {
    while (spent.length > 0 && spent[0]!.atMs <= t - windowMs) spent.shift();
  };
  const circuit = (t: number): GuardState['circuit'] => (openedAtMs === undefined ? 'closed' : t - openedAtMs >= cooldownMs ? 'half-open' : 'open');
  const log = (record: LlmCallRecord): void => {
    try {
      options.onCall?.(record);
    } catch {
      // a telemetry sink must not fail the call it reports
    }
  };
  const refuse = (startedAtMs: number, request: ChatRequest, reason: string, message: string, retryAfterMs: number): never => {
    const error = new EngramError('PROVIDER_ERROR', `${inner.name}: ${message}`, { retryable: true, reason, retryAfterMs });
    log({ startedAtMs, model: inner.name, ...purposeOf(request), outcome: 'refused', inputTokens: 0, outputTokens: 0, latencyMs: 0, attempts: 0, error: { code: error.code, message: error.message } });
    throw error;
  };

  return {
    name: inner.name,
    state() {
      const t = now();
      prune(t);
      return { circuit: circuit(t), consecutiveFailures, callsInWindow: spent.length, tokensInWindow: spent.reduce((s, x) => s + x.tokens, 0) };
    },
    async complete(request: ChatRequest): Promise<ChatResult> {
      const startedAtMs = now();
      prune(startedAtMs);
      const state = circuit(startedAtMs);
      if (state === 'open' || (state === 'half-open' && trialInFlight)) {
        const wait = Math.max(0, (openedAtMs ?? startedAtMs) + cooldownMs - startedAtMs);
        refuse(startedAtMs, request, 'circuit_open', `the circuit is open after ${consecutiveFailures} failed calls; no call for ${Math.ceil(wait / 1000)} s`, wait);
      }
      const oldest = spent[0]?.atMs ?? startedAtMs;
      if (spent.length >= maxCalls) {
        refuse(startedAtMs, request, 'spend_limit', `spend limit: ${maxCalls} calls per ${windowMs} ms reached`, oldest + windowMs - startedAtMs);
      }
      const tokensInWindow = spent.reduce((s, x) => s + x.tokens, 0);
      if (tokensInWindow >= maxTokens) {
        refuse(startedAtMs, request, 'spend_limit', `spend limit: ${tokensInWindow} of ${maxTokens} tokens per ${windowMs} ms used`, oldest + windowMs - startedAtMs);
      }
      const isTrial = state === 'half-open';
      if (isTrial) trialInFlight = true;
      const slot = { atMs: startedAtMs, tokens: 0 };
      spent.push(slot);
      try {
        const result = await inner.complete(request);
        slot.tokens = result.usage.inputTokens + result.usage.outputTokens;
        consecutiveFailures = 0;
        openedAtMs = undefined;
        log({
          startedAtMs,
          model: inner.name,
          ...purposeOf(request),
          outcome: 'ok',
          inputTokens: result.usage.inputTokens,
          outputTokens: result.usage.outputTokens,
          latencyMs: now() - startedAtMs,
          attempts: result.attempts,
        });
        return result;
      } catch (err) {
        const data = (err as EngramError).data ?? {};
        const isProviderFault = !(err instanceof EngramError) || data.retryable === true || data.reason === 'auth';
        if (isProviderFault) {
          consecutiveFailures++;
          if (isTrial || consecutiveFailures >= failureThreshold) openedAtMs = now();
        }
        const attempts = typeof data.attempts === 'number' ? data.attempts : 1;
        const code = err instanceof EngramError ? err.code : 'INTERNAL';
        log({ startedAtMs, model: inner.name, ...purposeOf(request), outcome: 'error', inputTokens: 0, outputTokens: 0, latencyMs: now() - startedAtMs, attempts, error: { code, message: (err as Error).message } });
        throw err;
      } finally {
        if (isTrial) trialInFlight = false;
      }
    },
  };
}

function purposeOf(request: ChatRequest): { purpose?: string } {
  return request.purpose !== undefined ? { purpose: request.purpose } : {};
}
