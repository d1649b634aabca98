import { EngramError } from '../../errors.js';

/** Timeouts, retries and backoff shared by the chat providers. */
export interface HttpRetryOptions {
  /** Per HTTP attempt. Default 120,000 ms (a local model on a CPU is slow). */
  timeoutMs?: number;
  /** Attempts per call on 429, 5xx, timeouts and connection errors. Default 4. */
  maxAttempts?: number;
  /** First backoff; doubles per attempt, with jitter, capped at {@link MAX_BACKOFF_MS}. A Retry-After header wins. Default 500 ms. */
  initialBackoffMs?: number;
  /** Injected for tests; defaults to the global fetch. */
  fetch?: typeof fetch;
  /** The variable a user sets the key with, named when the server rejects it. Default `ENGRAM_LLM_API_KEY`. */
  apiKeyVariable?: string;
}

export const DEFAULT_LLM_TIMEOUT_MS = 120_000;
export const DEFAULT_LLM_MAX_ATTEMPTS = 4;
export const DEFAULT_LLM_INITIAL_BACKOFF_MS = 500;
export const MAX_BACKOFF_MS = 20_000;
/** Retry-After beyond this is not waited for (a hostile or confused header must not stall a worker for hours). */
export const MAX_RETRY_AFTER_MS = 60_000;

/** What a provider reads from a successful response. */
export interface HttpJsonResponse {
  body: unknown;
  attempts: number;
}

type Attempt =
  | { ok: true; body: unknown }
  | { ok: false; retryable: boolean; status?: number; message: string; retryAfterMs?: number; reason: string };

/**
 * POSTs a JSON body and returns the JSON answer, retrying 429, 5xx, timeouts and connection errors with
 * exponential backoff (a Retry-After header, in seconds or as a date, replaces the computed wait). Throws
 * PROVIDER_ERROR with `data.status`, `data.retryable`, `data.attempts` and `data.reason` (`auth`, `rate_limit`,
 * `server`, `timeout`, `connection`, `bad_request`, `bad_response`); a rejected API key says which variable sets it.
 */
export async function postJsonWithRetries(
  label: string,
  url: string,
  headers: Record<string, string>,
  body: unknown,
  options: HttpRetryOptions,
): Promise<HttpJsonResponse> {
  const maxAttempts = Math.max(1, options.maxAttempts ?? DEFAULT_LLM_MAX_ATTEMPTS);
  let backoff = options.initialBackoffMs ?? DEFAULT_LLM_INITIAL_BACKOFF_MS;
  for (let attempt = 1; ; attempt++) {
    const outcome = await postOnce(url, headers, body, options);
    if (outcome.ok) return { body: outcome.body, attempts: attempt };
    if (!outcome.retryable || attempt >= maxAttempts) {
      const hint = outcome.reason === 'auth' ? `: the API key was rejected; set ${options.apiKeyVariable ?? 'ENGRAM_LLM_API_KEY'} to a valid key` : '';
      throw new EngramError(
        'PROVIDER_ERROR',
        `${label} (${url}): ${outcome.message}${hint}${attempt > 1 ? ` after ${attempt} attempts` : ''}`,
        { ...(outcome.status !== undefined ? { status: outcome.status } : {}), retryable: outcome.retryable, attempts: attempt, reason: outcome.reason },
      );
    }
    const wait = outcome.retryAfterMs ?? Math.min(MAX_BACKOFF_MS, backoff) * (0.5 + Math.random() / 2);
    await new Promise((r) => setTimeout(r, wait));
    backoff *= 2;
  }
}

async function postOnce(url: string, headers: Record<string, string>, body: unknown, options: HttpRetryOptions): Promise<Attempt> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_LLM_TIMEOUT_MS;
  let res: Response;
  try {
    res = await (options.fetch ?? fetch)(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    const name = (err as { name?: string }).name;
    if (name === 'TimeoutError' || name === 'AbortError') return { ok: false, retryable: true, reason: 'timeout', message: `no answer within ${timeoutMs} ms` };
    return { ok: false, retryable: true, reason: 'connection', message: `cannot connect (${(err as Error).message})` };
  }
  let text: string;
  try {
    text = await res.text();
  } catch (err) {
    // The headers came but the body did not finish within the timeout (a model that stalls mid-answer).
    const name = (err as { name?: string }).name;
    const timedOut = name === 'TimeoutError' || name === 'AbortError';
    return { ok: false, retryable: true, reason: timedOut ? 'timeout' : 'connection', message: timedOut ? `no complete answer within ${timeoutMs} ms` : `the answer broke off (${(err as Error).message})` };
  }
  if (!res.ok) {
    const status = res.status;
    const detail = errorDetail(text);
    const retryAfterMs = parseRetryAfter(res.headers.get('retry-after'));
    const reason = status === 401 || status === 403 ? 'auth' : status === 429 ? 'rate_limit' : status >= 500 ? 'server' : 'bad_request';
    return {
      ok: false,
      retryable: status === 429 || status >= 500,
      status,
      reason,
      message: `HTTP ${status}${detail ? `: ${detail}` : ''}`,
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    };
  }
  try {
    return { ok: true, body: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, retryable: false, status: res.status, reason: 'bad_response', message: `the response is not JSON: ${text.slice(0, 120)}` };
  }
}

/** The provider's own error message when the body has one (`{error: {message}}` on both protocols), else the start of the body. */
function errorDetail(text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown } | string };
    const message = typeof parsed.error === 'string' ? parsed.error : parsed.error?.message;
    if (typeof message === 'string') return message.slice(0, 300);
  } catch {
    // not JSON: fall through
  }
  return text.slice(0, 300);
}

/** Retry-After in seconds or as an HTTP date, in ms; capped at {@link MAX_RETRY_AFTER_MS}. */
export function parseRetryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(value) - Date.now();
  return Number.isFinite(ms) ? Math.min(MAX_RETRY_AFTER_MS, Math.max(0, ms)) : undefined;
}
