import { EngramError } from '../errors.js';
import type { Embedder } from './embedder.js';
import { normalize } from './embedder.js';

export interface OpenAiEmbedderOptions {
  /** API root including the version, e.g. `https://api.openai.com/v1`, `http://localhost:11434/v1` (Ollama). */
  baseUrl: string;
  model: string;
  /** Sent as `Authorization: Bearer ...`; local servers usually need none. */
  apiKey?: string;
  /** Vector size. Asked of the server with one probe request when not given. */
  dimensions?: number;
  /** Ask the server to shorten vectors to `dimensions` (OpenAI v3 models); off for servers that reject it. */
  requestDimensions?: boolean;
  /** Inputs per request. Default 64 (OpenAI allows 2048; local servers often prefer small batches). */
  batchSize?: number;
  /** Per-request timeout. Default 30,000 ms. */
  timeoutMs?: number;
  /** Attempts per batch on 429, 5xx, timeouts and connection errors. Default 5. */
  maxAttempts?: number;
  /** First backoff; doubles per attempt, with jitter, capped at 20 s. A Retry-After header wins. Default 500 ms. */
  initialBackoffMs?: number;
  /** Injected for tests; defaults to the global fetch. */
  fetch?: typeof fetch;
}

const DEFAULT_BATCH_SIZE = 64;
const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_ATTEMPTS = 5;
const DEFAULT_INITIAL_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 20_000;

interface EmbeddingsResponse {
  data?: Array<{ embedding?: unknown; index?: unknown }>;
}

/**
 * Embeddings from any server speaking OpenAI's `POST /v1/embeddings` (OpenAI, Ollama, vLLM, llama.cpp,
 * TEI, LM Studio): batched, retried with exponential backoff on 429/5xx/timeouts, vectors normalised.
 */
export async function createOpenAiEmbedder(options: OpenAiEmbedderOptions): Promise<Embedder> {
  const client = new OpenAiEmbeddingsClient(options);
  const dimensions = options.dimensions ?? (await client.embedBatch(['dimension probe']))[0]!.length;
  if (!Number.isInteger(dimensions) || dimensions <= 0) {
    throw new EngramError('PROVIDER_ERROR', `${options.baseUrl}: the server returned an empty embedding`, { retryable: false });
  }
  return {
    name: `openai:${options.model}${options.requestDimensions && options.dimensions ? `@${options.dimensions}` : ''}`,
    dimensions,
    async embed(texts) {
      const out: Float32Array[] = [];
      const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
      for (let i = 0; i < texts.length; i += batchSize) {
        const vectors = await client.embedBatch(texts.slice(i, i + batchSize));
        for (const v of vectors) {
          if (v.length !== dimensions) {
            throw new EngramError('PROVIDER_ERROR', `${options.model}: expected ${dimensions} dimensions, the server returned ${v.length}`, {
              retryable: false,
            });
          }
          out.push(v);
        }
      }
      return out;
    },
  };
}

class OpenAiEmbeddingsClient {
  private readonly url: string;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly o: OpenAiEmbedderOptions) {
    this.url = `${o.baseUrl.replace(/\/+$/, '')}/embeddings`;
    this.fetchImpl = o.fetch ?? fetch;
  }

  async embedBatch(texts: string[]): Promise<Float32Array[]> {
    // Servers reject empty strings; an empty text embeds to the zero vector without asking.
    const asked = texts.map((t, i) => ({ t, i })).filter((x) => x.t.length > 0);
    const vectors: Array<Float32Array | undefined> = Array.from({ length: texts.length }, () => undefined);
    if (asked.length > 0) {
      const data = await this.requestWithRetries(asked.map((x) => x.t));
      data.forEach((v, j) => {
        vectors[asked[j]!.i] = v;
      });
    }
    const dims = vectors.find((v) => v)?.length ?? this.o.dimensions ?? 0;
    return vectors.map((v) => v ?? new Float32Array(dims));
  }

  private async requestWithRetries(input: string[]): Promise<Float32Array[]> {
    const maxAttempts = this.o.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    let backoff = this.o.initialBackoffMs ?? DEFAULT_INITIAL_BACKOFF_MS;
    for (let attempt = 1; ; attempt++) {
      const outcome = await this.requestOnce(input);
      if (outcome.ok) return outcome.vectors;
      if (!outcome.retryable || attempt >= maxAttempts) {
        throw new EngramError(
          'PROVIDER_ERROR',
          `${this.url} (model ${this.o.model}): ${outcome.message}${attempt > 1 ? ` after ${attempt} attempts` : ''}`,
          { status: outcome.status, retryable: outcome.retryable, attempts: attempt },
        );
      }
      const wait = outcome.retryAfterMs ?? Math.min(MAX_BACKOFF_MS, backoff) * (0.5 + Math.random() / 2);
      await new Promise((r) => setTimeout(r, wait));
      backoff *= 2;
    }
  }

  private async requestOnce(
    input: string[],
  ): Promise<{ ok: true; vectors: Float32Array[] } | { ok: false; retryable: boolean; status?: number; message: string; retryAfterMs?: number }> {
    const body: Record<string, unknown> = { model: this.o.model, input, encoding_format: 'float' };
    if (this.o.requestDimensions && this.o.dimensions) body.dimensions = this.o.dimensions;
    let res: Response;
    try {
      res = await this.fetchImpl(this.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(this.o.apiKey ? { authorization: `Bearer ${this.o.apiKey}` } : {}) },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.o.timeoutMs ?? DEFAULT_TIMEOUT_MS),
      });
    } catch (err) {
      const name = (err as { name?: string }).name;
      const message = name === 'TimeoutError' ? `no answer within ${this.o.timeoutMs ?? DEFAULT_TIMEOUT_MS} ms` : `cannot connect (${(err as Error).message})`;
      return { ok: false, retryable: true, message };
    }
    if (!res.ok) {
      const text = (await res.text().catch(() => '')).slice(0, 300);
      const retryable = res.status === 429 || res.status >= 500;
      const retryAfter = parseRetryAfter(res.headers.get('retry-after'));
      return {
        ok: false,
        retryable,
        status: res.status,
        message: `HTTP ${res.status}${text ? `: ${text}` : ''}`,
        ...(retryAfter !== undefined ? { retryAfterMs: retryAfter } : {}),
      };
    }
    let json: EmbeddingsResponse;
    try {
      json = (await res.json()) as EmbeddingsResponse;
    } catch {
      return { ok: false, retryable: false, status: res.status, message: 'the response is not JSON' };
    }
    if (!Array.isArray(json.data) || json.data.length !== input.length) {
      return { ok: false, retryable: false, status: res.status, message: `expected data[] with ${input.length} embeddings` };
    }
    const vectors: Float32Array[] = new Array(input.length);
    for (const [pos, item] of json.data.entries()) {
      const index = typeof item.index === 'number' ? item.index : pos;
      if (!Array.isArray(item.embedding) || !item.embedding.every((x) => typeof x === 'number') || index < 0 || index >= input.length) {
        return { ok: false, retryable: false, status: res.status, message: `data[${pos}] is not an embedding of numbers` };
      }
      vectors[index] = normalize(Float32Array.from(item.embedding as number[]));
    }
    return { ok: true, vectors };
  }
}

/** Retry-After in seconds or as an HTTP date; capped so a hostile header cannot stall ingestion. */
function parseRetryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(value) - Date.now();
  return Number.isFinite(ms) ? Math.min(MAX_BACKOFF_MS * 3, Math.max(0, ms)) : undefined;
}
