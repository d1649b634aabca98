import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createGptTokenizer } from '../providers/gpt-tokenizer.js';
import { createAnthropicChatModel } from '../providers/llm/anthropic-chat.js';
import type { LlmCallRecord } from '../providers/llm/chat-model.js';
import { createGuardedChatModel } from '../providers/llm/guarded-chat-model.js';
import { createOpenAiChatModel } from '../providers/llm/openai-chat.js';
import { startScriptedLlmServer, type ScriptedLlmServer } from '../providers/llm/test-support.js';
import { summarizeWithEscalation } from './bounded-summary.js';
import { createEscalationCounter } from './escalation.js';
import type { SourceItem } from './extractive-summary.js';

const tokenizer = createGptTokenizer();
let server: ScriptedLlmServer;

beforeEach(async () => {
  server = await startScriptedLlmServer();
});
afterEach(async () => {
  await server.close();
});

const items: SourceItem[] = [
  { id: 'evt_1', kind: 'user', text: 'CI fails on main: test/auth.test.ts times out after 5000 ms since commit 3f9a2c1.' },
  { id: 'evt_2', kind: 'assistant', text: 'The token refresh in src/auth/refresh.ts now awaits a network call that the test never mocks.' },
  { id: 'evt_3', kind: 'decision', text: 'We decided to inject the clock and the HTTP client into RefreshService instead of mocking fetch globally.' },
  { id: 'evt_4', kind: 'tool_result', text: 'PASS test/auth.test.ts (12 tests) in 840 ms' },
];
const instructions = 'Summarize this coding session. Preserve operational detail, commands, error messages and specific decisions.';
const wordy = (words: number): string => Array.from({ length: words }, (_, i) => `detail${i}`).join(' ');
const openai = () => createOpenAiChatModel({ baseUrl: server.baseUrl, model: 'small', maxAttempts: 1 });

describe('summarizeWithEscalation', () => {
  it('keeps a normal answer within the budget, with confidence 0.7, the model name and its usage', async () => {
    server.script.push({ text: 'RefreshService gets an injected clock and HTTP client; test/auth.test.ts passes again.', usage: { inputTokens: 300, outputTokens: 20 } });
    const out = await summarizeWithEscalation({ items, budgetTokens: 60, instructions }, { llm: openai(), tokenizer });
    expect(out).toMatchObject({
      text: 'RefreshService gets an injected clock and HTTP client; test/auth.test.ts passes again.',
      level: 'normal',
      confidence: 0.7,
      model: 'openai:small',
      chunks: 1,
      sourceIds: ['evt_1', 'evt_2', 'evt_3', 'evt_4'],
      usage: { inputTokens: 300, outputTokens: 20 },
    });
    const sent = server.requests[0]!.body as { max_tokens: number; messages: Array<{ role: string; content: string }> };
    expect(sent.max_tokens).toBe(75);
    expect(sent.messages[0]!.content).toContain('at most 60 tokens');
    expect(sent.messages[1]!.content).toContain('[decision evt_3] We decided to inject the clock');
  });

  it('escalates a model that overruns the budget to aggressive, then to deterministic, and stays within the budget', async () => {
    const counter = createEscalationCounter();
    server.fallback = () => ({ text: wordy(200) });
    const out = await summarizeWithEscalation({ items, budgetTokens: 60, instructions }, { llm: openai(), tokenizer, telemetry: counter });
    expect(out.level).toBe('deterministic');
    expect(out.confidence).toBe(0.3);
    expect(out.attempts.map((a) => [a.level, a.outcome])).toEqual([
      ['normal', 'over_budget'],
      ['aggressive', 'over_budget'],
      ['deterministic', 'ok'],
    ]);
    expect(out.tokens).toBe(tokenizer.count(out.text));
    expect(out.tokens).toBeLessThanOrEqual(60);
    expect(out.text).toContain('We decided to inject the clock');
    expect(out.model).toBeUndefined();
    // The aggressive call asks for half the budget with the stricter prompt.
    const aggressive = server.requests[1]!.body as { max_tokens: number; messages: Array<{ content: string }> };
    expect(aggressive.max_tokens).toBe(38);
    expect(aggressive.messages[0]!.content).toMatch(/terse bullet points only, at most 30 tokens/);
    expect(counter.stats()).toEqual({ results: { normal: 0, aggressive: 0, deterministic: 1 }, escalations: { over_budget: 2, invalid: 0, failed: 0, no_model: 0 } });
  });

  it('takes the aggressive answer when it fits half the budget (confidence 0.5)', async () => {
    server.script.push({ text: wordy(120) }, { text: '- inject clock + HTTP client into RefreshService' });
    const out = await summarizeWithEscalation({ items, budgetTokens: 60, instructions }, { llm: openai(), tokenizer });
    expect(out).toMatchObject({ level: 'aggressive', confidence: 0.5, text: '- inject clock + HTTP client into RefreshService', model: 'openai:small' });
  });

  it('treats an answer cut at max_tokens as over the budget', async () => {
    server.script.push({ text: 'RefreshService gets an injected', finish: 'length' }, { text: '- injected clock' });
    const out = await summarizeWithEscalation({ items, budgetTokens: 60, instructions }, { llm: openai(), tokenizer });
    expect(out.attempts[0]).toEqual({ level: 'normal', outcome: 'over_budget', reason: 'the answer was cut at max_tokens' });
    expect(out.level).toBe('aggressive');
  });

  it('falls back to the deterministic level when the provider fails, and the breaker stops further calls', async () => {
    server.fallback = () => ({ status: 500, raw: '{"error":{"message":"down"}}' });
    const calls: LlmCallRecord[] = [];
    const llm = createGuardedChatModel(openai(), { breaker: { failureThreshold: 2 }, onCall: (r) => calls.push(r) });
    const first = await summarizeWithEscalation({ items, budgetTokens: 60, instructions }, { llm, tokenizer });
    expect(first.attempts.map((a) => a.outcome)).toEqual(['failed', 'failed', 'ok']);
    const second = await summarizeWithEscalation({ items, budgetTokens: 60, instructions }, { llm, tokenizer });
    expect(second.level).toBe('deterministic');
    expect(second.attempts[0]!.reason).toMatch(/circuit is open/);
    expect(server.requests).toHaveLength(2);
    expect(calls.map((c) => `${c.purpose}:${c.outcome}`)).toEqual(['summary:normal:error', 'summary:aggressive:error', 'summary:normal:refused', 'summary:aggressive:refused']);
  });

  it('uses the deterministic level at once without a model', async () => {
    const out = await summarizeWithEscalation({ items, budgetTokens: 40, instructions }, { llm: null, tokenizer });
    expect(out).toMatchObject({ level: 'deterministic', confidence: 0.3, chunks: 0, usage: { inputTokens: 0, outputTokens: 0 } });
    expect(out.attempts).toEqual([
      { level: 'normal', outcome: 'no_model' },
      { level: 'deterministic', outcome: 'ok' },
    ]);
    expect(out.tokens).toBeLessThanOrEqual(40);
    expect(server.requests).toHaveLength(0);
  });

  it('summarizes sources larger than one call in chunks, then condenses the chunk summaries', async () => {
    const many: SourceItem[] = Array.from({ length: 12 }, (_, i) => ({ id: `evt_${i}`, kind: 'assistant', text: `Step ${i}: ${wordy(60)}` }));
    let n = 0;
    server.fallback = () => ({ text: `part ${++n} done` });
    const out = await summarizeWithEscalation({ items: many, budgetTokens: 50, instructions, maxChunkInputTokens: 400 }, { llm: openai(), tokenizer });
    // Each source costs its tokens plus 8 for its label; as many as fit 400 tokens make a chunk, then one call condenses.
    const perChunk = Math.floor(400 / (tokenizer.count(many[0]!.text) + 8));
    const chunkCalls = Math.ceil(12 / perChunk);
    expect(chunkCalls).toBeGreaterThan(1);
    expect(out.chunks).toBe(chunkCalls + 1);
    expect(server.requests).toHaveLength(chunkCalls + 1);
    const last = server.requests[chunkCalls]!.body as { messages: Array<{ content: string }> };
    expect(last.messages[1]!.content).toContain(`[summary chunk-1:evt_0..evt_${perChunk - 1}] part 1 done`);
    expect(last.messages[1]!.content).toContain(`part ${chunkCalls} done`);
    expect(out).toMatchObject({ text: `part ${chunkCalls + 1} done`, level: 'normal' });
    expect(out.sourceIds).toHaveLength(12);
  });

  it('speaks to an Anthropic model the same way', async () => {
    server.script.push({ text: wordy(150) }, { text: '- clock injected' });
    const llm = createAnthropicChatModel({ baseUrl: server.baseUrl, model: 'claude-test' });
    const out = await summarizeWithEscalation({ items, budgetTokens: 60, instructions }, { llm, tokenizer });
    expect(out).toMatchObject({ level: 'aggressive', model: 'anthropic:claude-test' });
    expect(server.requests[0]!.path).toBe('/v1/messages');
    expect(server.requests[0]!.body.system).toContain('Preserve operational detail');
  });
});
