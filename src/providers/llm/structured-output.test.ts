import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isEngramError } from '../../errors.js';
import { createAnthropicChatModel } from './anthropic-chat.js';
import { createOpenAiChatModel } from './openai-chat.js';
import { completeStructured, extractJson } from './structured-output.js';
import { startScriptedLlmServer, type ScriptedLlmServer } from './test-support.js';

describe('extractJson', () => {
  it.each([
    ['strict JSON', '{"a": 1, "b": ["x"]}', false],
    ['a json code fence with prose around it', 'Here you go:\n```json\n{"a": 1, "b": ["x"]}\n```\nAnything else?', false],
    ['prose before and after the object', 'Sure! {"a": 1, "b": ["x"]} Hope this helps.', false],
    ['trailing commas', '{"a": 1, "b": ["x",],}', true],
    ['single quotes and a bare key', "{'a': 1, b: ['x']}", true],
    ['an answer cut off before its closers', '{"a": 1, "b": ["x"', true],
    ['a bracket in the prose before the object', 'Result [checked]: {"a": 1, "b": ["x"]}', false],
  ])('reads %s', (_label, text, repaired) => {
    expect(extractJson(text)).toEqual({ ok: true, value: { a: 1, b: ['x'] }, repaired });
  });

  it('says when there is no JSON at all', () => {
    expect(extractJson('I cannot help with that.')).toEqual({ ok: false, message: 'the answer holds no JSON object' });
  });
});

let server: ScriptedLlmServer;
beforeEach(async () => {
  server = await startScriptedLlmServer();
});
afterEach(async () => {
  await server.close();
});

const decision = z.object({ title: z.string().min(1), confidence: z.number().min(0).max(1) });

describe('completeStructured', () => {
  it('repairs near-JSON from a small local model and validates it', async () => {
    server.script.push({ text: "```json\n{'title': 'use postgres', confidence: 0.8,}\n```" });
    const model = createOpenAiChatModel({ baseUrl: server.baseUrl, model: 'qwen-0.5b' });
    const out = await completeStructured(model, { messages: [{ role: 'user', content: 'decide' }] }, decision);
    expect(out).toMatchObject({ value: { title: 'use postgres', confidence: 0.8 }, calls: 1, repaired: true });
    expect(server.requests[0]!.body.response_format).toEqual({ type: 'json_object' });
  });

  it('asks again with the problem when the schema rejects the answer, and adds up the usage', async () => {
    server.script.push(
      { text: '{"title": "", "confidence": 3}', usage: { inputTokens: 50, outputTokens: 10 } },
      { text: '{"title": "keep sqlite", "confidence": 0.6}', usage: { inputTokens: 80, outputTokens: 12 } },
    );
    const model = createAnthropicChatModel({ baseUrl: server.baseUrl, model: 'claude-test' });
    const out = await completeStructured(model, { messages: [{ role: 'user', content: 'decide' }] }, decision);
    expect(out).toMatchObject({ value: { title: 'keep sqlite', confidence: 0.6 }, calls: 2, usage: { inputTokens: 130, outputTokens: 22 } });
    const second = server.requests[1]!.body.messages as Array<{ role: string; content: string }>;
    expect(second.at(-1)!.content).toMatch(/^That answer is not valid \(title: /);
  });

  it('fails with invalid_output after maxAttempts answers that are not JSON', async () => {
    server.fallback = () => ({ text: 'I think the team chose Postgres.' });
    const model = createOpenAiChatModel({ baseUrl: server.baseUrl, model: 'm' });
    const err = await completeStructured(model, { messages: [{ role: 'user', content: 'decide' }] }, decision, { maxAttempts: 3 }).catch((e: unknown) => e);
    expect(isEngramError(err, 'PROVIDER_ERROR')).toBe(true);
    expect((err as { data: unknown }).data).toMatchObject({ reason: 'invalid_output', retryable: false, text: 'I think the team chose Postgres.' });
    expect(server.requests).toHaveLength(3);
  });
});
