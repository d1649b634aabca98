import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EngramError, isEngramError } from '../../errors.js';
import { createAnthropicChatModel } from './anthropic-chat.js';
import type { ChatModel } from './chat-model.js';
import { parseRetryAfter } from './http-transport.js';
import { createOpenAiChatModel } from './openai-chat.js';
import { startScriptedLlmServer, type ScriptedLlmServer } from './test-support.js';

let server: ScriptedLlmServer;

beforeEach(async () => {
  server = await startScriptedLlmServer();
});

afterEach(async () => {
  await server.close();
});

async function failure(p: Promise<unknown>): Promise<EngramError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isEngramError(err)) throw new Error(`expected an EngramError, got ${String(err)}`);
  return err;
}

const providers: Array<[string, (o: { apiKey?: string; timeoutMs?: number; maxAttempts?: number }) => ChatModel]> = [
  ['OpenAI-compatible', (o) => createOpenAiChatModel({ baseUrl: server.baseUrl, model: 'small-local', initialBackoffMs: 5, ...o })],
  ['Anthropic', (o) => createAnthropicChatModel({ baseUrl: server.baseUrl, model: 'claude-test', initialBackoffMs: 5, ...o })],
];

describe.each(providers)('%s chat model', (_label, make) => {
  it('returns the text, the usage the server counted and the finish reason', async () => {
    server.script.push({ text: 'hello there', usage: { inputTokens: 42, outputTokens: 3 }, finish: 'length' });
    const result = await make({ apiKey: 'k1' }).complete({ messages: [{ role: 'user', content: 'hi' }], maxTokens: 3 });
    expect(result).toMatchObject({ text: 'hello there', usage: { inputTokens: 42, outputTokens: 3 }, finishReason: 'length', attempts: 1 });
  });

  it('retries a 429 after the Retry-After it names, then answers', async () => {
    server.script.push({ status: 429, headers: { 'retry-after': '0.2' }, raw: '{"error":{"message":"slow down"}}' }, { text: 'ok' });
    const started = Date.now();
    const result = await make({}).complete({ messages: [{ role: 'user', content: 'hi' }] });
    expect(result.text).toBe('ok');
    expect(result.attempts).toBe(2);
    expect(server.requests).toHaveLength(2);
    // The computed backoff is 5 ms; only the header explains a wait of 200 ms.
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
  });

  it('retries 500s and gives up after maxAttempts with the status and attempts in the error', async () => {
    server.fallback = () => ({ status: 503, raw: '{"error":{"message":"overloaded"}}' });
    const err = await failure(make({ maxAttempts: 3 }).complete({ messages: [{ role: 'user', content: 'hi' }] }));
    expect(err.code).toBe('PROVIDER_ERROR');
    expect(err.data).toMatchObject({ status: 503, retryable: true, attempts: 3, reason: 'server' });
    expect(err.message).toContain('overloaded');
    expect(server.requests).toHaveLength(3);
  });

  it('times out a server that does not answer in time', async () => {
    server.script.push({ text: 'late', delayMs: 2_000 }, { text: 'late', delayMs: 2_000 });
    const err = await failure(make({ timeoutMs: 150, maxAttempts: 2 }).complete({ messages: [{ role: 'user', content: 'hi' }] }));
    expect(err.data).toMatchObject({ reason: 'timeout', retryable: true, attempts: 2 });
    expect(err.message).toContain('no answer within 150 ms');
  });

  it('reports a rejected API key at once, naming the variable that sets it', async () => {
    server.requiredKey = 'right-key';
    const err = await failure(make({ apiKey: 'wrong-key' }).complete({ messages: [{ role: 'user', content: 'hi' }] }));
    expect(err.data).toMatchObject({ status: 401, retryable: false, attempts: 1, reason: 'auth' });
    expect(err.message).toMatch(/API key was rejected; set ENGRAM_LLM_API_KEY/);
    expect(server.requests).toHaveLength(1);
  });

  it('does not retry a 400 and reports the server message', async () => {
    server.script.push({ status: 400, raw: '{"error":{"message":"model small-local not found"}}' });
    const err = await failure(make({}).complete({ messages: [{ role: 'user', content: 'hi' }] }));
    expect(err.data).toMatchObject({ status: 400, retryable: false, reason: 'bad_request' });
    expect(err.message).toContain('model small-local not found');
  });

  it('rejects a 200 whose body is not JSON', async () => {
    server.script.push({ raw: '<html>gateway</html>' });
    const err = await failure(make({}).complete({ messages: [{ role: 'user', content: 'hi' }] }));
    expect(err.data).toMatchObject({ reason: 'bad_response', retryable: false });
  });
});

describe('protocol details', () => {
  it('OpenAI: sends the key as a bearer token, system messages in messages, and json_object when JSON is asked', async () => {
    server.script.push({ text: '{}' });
    const model = createOpenAiChatModel({ baseUrl: `${server.baseUrl}/`, model: 'llama3', apiKey: 'sk-1' });
    await model.complete({ messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hi' }], maxTokens: 64, json: true });
    const [req] = server.requests;
    expect(req!.path).toBe('/v1/chat/completions');
    expect(req!.headers.authorization).toBe('Bearer sk-1');
    expect(req!.body).toMatchObject({
      model: 'llama3',
      max_tokens: 64,
      temperature: 0,
      response_format: { type: 'json_object' },
      messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hi' }],
    });
  });

  it('OpenAI: drops a leading <think> block of a local reasoning model from the answer', async () => {
    server.script.push({ text: '<think>\nThe user wants a summary. Let me see...\n</think>\n\nThe cache moved to Redis.' });
    const result = await createOpenAiChatModel({ baseUrl: server.baseUrl, model: 'qwen3:4b' }).complete({ messages: [{ role: 'user', content: 'x' }] });
    expect(result.text).toBe('The cache moved to Redis.');
  });

  it('OpenAI: names the answer cap max_completion_tokens for api.openai.com only', async () => {
    let sent: Record<string, unknown> | undefined;
    const fetchSpy: typeof fetch = async (_url, init) => {
      sent = JSON.parse(String(init?.body)) as Record<string, unknown>;
      return new Response(JSON.stringify({ choices: [{ message: { content: 'ok' } }] }), { status: 200 });
    };
    await createOpenAiChatModel({ baseUrl: 'https://api.openai.com/v1', model: 'gpt-5-mini', fetch: fetchSpy }).complete({ messages: [{ role: 'user', content: 'x' }], maxTokens: 99 });
    expect(sent).toMatchObject({ max_completion_tokens: 99 });
    expect(sent).not.toHaveProperty('max_tokens');
    server.script.push({ text: 'ok' });
    await createOpenAiChatModel({ baseUrl: server.baseUrl, model: 'm' }).complete({ messages: [{ role: 'user', content: 'x' }], maxTokens: 99 });
    expect(server.requests[0]!.body).toMatchObject({ max_tokens: 99 });
  });

  it('OpenAI: leaves out response_format for servers without JSON mode', async () => {
    server.script.push({ text: '{}' });
    await createOpenAiChatModel({ baseUrl: server.baseUrl, model: 'm', supportsJsonMode: false }).complete({ messages: [{ role: 'user', content: 'x' }], json: true });
    expect(server.requests[0]!.body).not.toHaveProperty('response_format');
  });

  it('Anthropic: sends x-api-key and the version, system on top, alternating roles and a max_tokens', async () => {
    server.script.push({ text: 'fine' });
    const model = createAnthropicChatModel({ baseUrl: server.baseUrl, model: 'claude-test', apiKey: 'ak-1' });
    await model.complete({
      messages: [
        { role: 'system', content: 'rule one' },
        { role: 'user', content: 'part 1' },
        { role: 'user', content: 'part 2' },
      ],
    });
    const [req] = server.requests;
    expect(req!.path).toBe('/v1/messages');
    expect(req!.headers['x-api-key']).toBe('ak-1');
    expect(req!.headers['anthropic-version']).toBe('2023-06-01');
    expect(req!.body).toMatchObject({ system: 'rule one', max_tokens: 1024, messages: [{ role: 'user', content: 'part 1\n\npart 2' }] });
  });

  it('parses Retry-After in seconds and as a date, and caps it', () => {
    expect(parseRetryAfter('2')).toBe(2000);
    expect(parseRetryAfter('100000')).toBe(60_000);
    const inTen = parseRetryAfter(new Date(Date.now() + 10_000).toUTCString())!;
    expect(inTen).toBeGreaterThan(8_000);
    expect(inTen).toBeLessThanOrEqual(10_000);
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter(null)).toBeUndefined();
  });
});
