import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isEngramError, type EngramError } from '../../errors.js';
import type { LlmCallRecord } from './chat-model.js';
import { createGuardedChatModel } from './guarded-chat-model.js';
import { createOpenAiChatModel } from './openai-chat.js';
import { startScriptedLlmServer, type ScriptedLlmServer } from './test-support.js';

let server: ScriptedLlmServer;
let clock: number;
let calls: LlmCallRecord[];

beforeEach(async () => {
  server = await startScriptedLlmServer();
  clock = 1_000_000;
  calls = [];
});

afterEach(async () => {
  await server.close();
});

const ask = { messages: [{ role: 'user' as const, content: 'hi' }], purpose: 'test' };

function guarded(options: Parameters<typeof createGuardedChatModel>[1] = {}) {
  const inner = createOpenAiChatModel({ baseUrl: server.baseUrl, model: 'm', maxAttempts: 2, initialBackoffMs: 1 });
  return createGuardedChatModel(inner, { now: () => clock, onCall: (r) => calls.push(r), ...options });
}

async function failure(p: Promise<unknown>): Promise<EngramError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isEngramError(err)) throw new Error(`expected an EngramError, got ${String(err)}`);
  return err;
}

describe('guarded chat model', () => {
  it('logs every call with its tokens, latency, attempts and purpose', async () => {
    server.script.push({ status: 500 }, { text: 'ok', usage: { inputTokens: 120, outputTokens: 7 } });
    const model = guarded();
    await model.complete(ask);
    expect(calls).toEqual([
      { startedAtMs: 1_000_000, model: 'openai:m', purpose: 'test', outcome: 'ok', inputTokens: 120, outputTokens: 7, latencyMs: 0, attempts: 2 },
    ]);
    expect(model.state()).toMatchObject({ callsInWindow: 1, tokensInWindow: 127, circuit: 'closed' });
  });

  it('opens the circuit after consecutive failing calls, refuses without contacting the server, and closes after a good trial', async () => {
    server.fallback = () => ({ status: 500, raw: '{"error":{"message":"boom"}}' });
    const model = guarded({ breaker: { failureThreshold: 2, cooldownMs: 30_000 } });
    for (let i = 0; i < 2; i++) expect((await failure(model.complete(ask))).data.reason).toBe('server');
    expect(server.requests).toHaveLength(4); // two calls of two attempts each
    expect(model.state().circuit).toBe('open');

    const refused = await failure(model.complete(ask));
    expect(refused.data).toMatchObject({ reason: 'circuit_open', retryable: true, retryAfterMs: 30_000 });
    expect(server.requests).toHaveLength(4);
    expect(calls.at(-1)).toMatchObject({ outcome: 'refused', attempts: 0, error: { code: 'PROVIDER_ERROR' } });

    clock += 30_000;
    expect(model.state().circuit).toBe('half-open');
    server.script.push({ text: 'recovered' });
    expect((await model.complete(ask)).text).toBe('recovered');
    expect(model.state()).toMatchObject({ circuit: 'closed', consecutiveFailures: 0 });
  });

  it('re-opens the circuit when the trial call fails', async () => {
    server.fallback = () => ({ status: 502 });
    const model = guarded({ breaker: { failureThreshold: 1, cooldownMs: 1_000 } });
    await failure(model.complete(ask));
    clock += 1_000;
    await failure(model.complete(ask));
    expect(model.state().circuit).toBe('open');
    expect((await failure(model.complete(ask))).data.reason).toBe('circuit_open');
  });

  it('does not count an unusable answer (400) toward the breaker', async () => {
    server.fallback = () => ({ status: 400, raw: '{"error":{"message":"bad"}}' });
    const model = guarded({ breaker: { failureThreshold: 1 } });
    await failure(model.complete(ask));
    await failure(model.complete(ask));
    expect(model.state()).toMatchObject({ circuit: 'closed', consecutiveFailures: 0 });
  });

  it('refuses calls past the call limit of the window, and allows them again when the window moves on', async () => {
    server.fallback = () => ({ text: 'ok' });
    const model = guarded({ spend: { maxCalls: 2, windowMs: 60_000 } });
    await model.complete(ask);
    clock += 10_000;
    await model.complete(ask);
    const refused = await failure(model.complete(ask));
    expect(refused.data).toMatchObject({ reason: 'spend_limit', retryAfterMs: 50_000 });
    expect(server.requests).toHaveLength(2);
    clock += 50_000;
    await model.complete(ask);
    expect(server.requests).toHaveLength(3);
  });

  it('refuses calls once the window holds the token limit', async () => {
    server.fallback = () => ({ text: 'ok', usage: { inputTokens: 600, outputTokens: 400 } });
    const model = guarded({ spend: { maxTokens: 1_500 } });
    await model.complete(ask);
    await model.complete(ask); // 1,000 used before it: allowed, and it brings the window to 2,000
    const refused = await failure(model.complete(ask));
    expect(refused.message).toContain('2000 of 1500 tokens');
    expect(calls.map((c) => c.outcome)).toEqual(['ok', 'ok', 'refused']);
  });
});
