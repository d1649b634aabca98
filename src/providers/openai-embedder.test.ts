import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isEngramError } from '../errors.js';
import { createOpenAiEmbedder } from './openai-embedder.js';

/** A local server speaking OpenAI's embeddings protocol, with scripted failures. */
interface Script {
  /** Responses to send before behaving normally: a status code, 'hang' (never answer) or 'garbage'. */
  failures: Array<number | 'hang' | 'garbage'>;
  retryAfterSeconds?: number;
}

let server: Server;
let baseUrl: string;
let requests: Array<{ body: { model: string; input: string[]; dimensions?: number }; auth?: string }>;
let script: Script;

function vectorFor(text: string): number[] {
  // Deterministic 8-dimensional vector: letter counts folded into 8 buckets.
  const v = new Array(8).fill(0);
  for (const ch of text.toLowerCase()) v[ch.charCodeAt(0) % 8] += 1;
  return v;
}

beforeEach(async () => {
  requests = [];
  script = { failures: [] };
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => {
      const body = JSON.parse(raw) as { model: string; input: string[] };
      requests.push({ body, ...(req.headers.authorization ? { auth: req.headers.authorization } : {}) });
      const failure = script.failures.shift();
      if (failure === 'hang') return; // never answers: the client's timeout must fire
      if (failure === 'garbage') {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"data": [{"embedding": "nope"}]}');
        return;
      }
      if (typeof failure === 'number') {
        const headers: Record<string, string> = script.retryAfterSeconds !== undefined ? { 'retry-after': String(script.retryAfterSeconds) } : {};
        res.writeHead(failure, headers).end(JSON.stringify({ error: { message: `scripted ${failure}` } }));
        return;
      }
      // Answer out of order: clients must use `index`, not position.
      const data = body.input.map((text, index) => ({ object: 'embedding', index, embedding: vectorFor(text) })).reverse();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data, model: body.model }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

afterEach(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

describe('OpenAI-compatible embedder', () => {
  it('probes the dimensions, batches inputs and returns unit vectors in input order', async () => {
    const embedder = await createOpenAiEmbedder({ baseUrl, model: 'test-embed', apiKey: 'sk-test', batchSize: 50 });
    expect(embedder.dimensions).toBe(8);
    expect(embedder.name).toBe('openai:test-embed');
    const texts = Array.from({ length: 120 }, (_, i) => `text number ${i} ${'x'.repeat(i % 7)}`);
    const vectors = await embedder.embed(texts);
    // One probe, then 120 inputs in batches of 50.
    expect(requests.map((r) => r.body.input.length)).toEqual([1, 50, 50, 20]);
    expect(requests.every((r) => r.auth === 'Bearer sk-test' && r.body.model === 'test-embed')).toBe(true);
    const expected = vectorFor(texts[77]!);
    const norm = Math.hypot(...expected);
    expect(Array.from(vectors[77]!).map((x) => Math.round(x * 1e6))).toEqual(expected.map((x) => Math.round((x / norm) * 1e6)));
    for (const v of vectors) expect(Math.hypot(...v)).toBeCloseTo(1, 5);
  });

  it('embeds empty texts to zero vectors without sending them', async () => {
    const embedder = await createOpenAiEmbedder({ baseUrl, model: 'm', dimensions: 8 });
    const [a, b] = await embedder.embed(['', 'hello']);
    expect(Array.from(a!)).toEqual(new Array(8).fill(0));
    expect(requests.at(-1)!.body.input).toEqual(['hello']);
    expect(Math.hypot(...b!)).toBeCloseTo(1, 5);
  });

  it('retries 429 and 5xx with backoff and succeeds', async () => {
    const embedder = await createOpenAiEmbedder({ baseUrl, model: 'm', dimensions: 8, initialBackoffMs: 5 });
    script.failures = [429, 503, 500];
    const [v] = await embedder.embed(['retry me']);
    expect(v!.length).toBe(8);
    expect(requests).toHaveLength(4);
  });

  it('honours Retry-After', async () => {
    const embedder = await createOpenAiEmbedder({ baseUrl, model: 'm', dimensions: 8, initialBackoffMs: 1 });
    script = { failures: [429], retryAfterSeconds: 0.3 };
    const start = Date.now();
    await embedder.embed(['wait for me']);
    expect(Date.now() - start).toBeGreaterThanOrEqual(250);
  });

  it('gives up after maxAttempts with a retryable PROVIDER_ERROR naming the status', async () => {
    const embedder = await createOpenAiEmbedder({ baseUrl, model: 'm', dimensions: 8, initialBackoffMs: 1, maxAttempts: 3 });
    script.failures = [502, 502, 502, 502];
    const err = await embedder.embed(['x']).catch((e: unknown) => e);
    expect(isEngramError(err, 'PROVIDER_ERROR')).toBe(true);
    expect((err as { data: { status: number; retryable: boolean; attempts: number } }).data).toMatchObject({ status: 502, retryable: true, attempts: 3 });
    expect(requests).toHaveLength(3);
  });

  it('does not retry a 400 and reports the server message', async () => {
    const embedder = await createOpenAiEmbedder({ baseUrl, model: 'm', dimensions: 8, initialBackoffMs: 1 });
    script.failures = [400];
    const err = await embedder.embed(['x']).catch((e: unknown) => e);
    expect((err as Error).message).toContain('HTTP 400');
    expect((err as Error).message).toContain('scripted 400');
    expect(requests).toHaveLength(1);
  });

  it('times out a server that never answers, then retries', async () => {
    const embedder = await createOpenAiEmbedder({ baseUrl, model: 'm', dimensions: 8, timeoutMs: 200, initialBackoffMs: 1 });
    script.failures = ['hang'];
    const [v] = await embedder.embed(['slow']);
    expect(v!.length).toBe(8);
    expect(requests).toHaveLength(2);
  });

  it('rejects a malformed response without retrying', async () => {
    const embedder = await createOpenAiEmbedder({ baseUrl, model: 'm', dimensions: 8, initialBackoffMs: 1 });
    script.failures = ['garbage'];
    const err = await embedder.embed(['x']).catch((e: unknown) => e);
    expect(isEngramError(err, 'PROVIDER_ERROR')).toBe(true);
    expect((err as Error).message).toContain('not an embedding');
  });

  it('fails clearly when nothing listens', async () => {
    const err = await createOpenAiEmbedder({ baseUrl: 'http://127.0.0.1:9/v1', model: 'm', maxAttempts: 2, initialBackoffMs: 1 }).catch((e: unknown) => e);
    expect(isEngramError(err, 'PROVIDER_ERROR')).toBe(true);
    expect((err as Error).message).toContain('cannot connect');
  });
});
