import { afterEach, describe, expect, it } from 'vitest';
import { isEngramError } from '../../errors.js';
import type { LlmCallRecord } from './chat-model.js';
import { createChatModelFromSpec, llmLimitsFromEnv, parseLlmSpec, resolveLlmSpec } from './llm-spec.js';
import { startScriptedLlmServer, type ScriptedLlmServer } from './test-support.js';

function invalid(fn: () => unknown): { message: string; field: unknown } {
  try {
    fn();
  } catch (err) {
    if (isEngramError(err, 'INVALID_INPUT')) return { message: err.message, field: err.data.field };
    throw err;
  }
  throw new Error('expected INVALID_INPUT');
}

describe('parseLlmSpec', () => {
  it('reads none, openai:<model> and anthropic:<model> with the URL and key from the environment', () => {
    expect(parseLlmSpec('none', {})).toEqual({ provider: 'none' });
    expect(parseLlmSpec('openai:llama3.2', { ENGRAM_LLM_URL: 'http://127.0.0.1:11434/v1' })).toEqual({
      provider: 'openai',
      model: 'llama3.2',
      baseUrl: 'http://127.0.0.1:11434/v1',
    });
    expect(parseLlmSpec('openai:gpt-4o-mini', { OPENAI_API_KEY: 'sk-o' })).toEqual({
      provider: 'openai',
      model: 'gpt-4o-mini',
      baseUrl: 'https://api.openai.com/v1',
      apiKey: 'sk-o',
    });
    expect(parseLlmSpec('anthropic:claude-haiku-4-5', { ANTHROPIC_API_KEY: 'ak', ENGRAM_LLM_API_KEY: 'ek' })).toEqual({
      provider: 'anthropic',
      model: 'claude-haiku-4-5',
      baseUrl: 'https://api.anthropic.com/v1',
      apiKey: 'ek',
    });
  });

  it('keeps everything after the first colon as the model (OpenRouter and Ollama names have slashes and colons)', () => {
    expect(parseLlmSpec('openai:meta-llama/llama-3.1-8b:free', {})).toMatchObject({ model: 'meta-llama/llama-3.1-8b:free' });
    expect(parseLlmSpec('openai:qwen2.5:0.5b', {})).toMatchObject({ model: 'qwen2.5:0.5b' });
  });

  it('takes the model from ENGRAM_LLM_MODEL when the spec names none', () => {
    expect(parseLlmSpec('anthropic', { ENGRAM_LLM_MODEL: 'claude-x' })).toMatchObject({ provider: 'anthropic', model: 'claude-x' });
  });

  it('names the field in every error', () => {
    expect(invalid(() => parseLlmSpec('gemini:pro', {}))).toEqual({ message: 'llm: unknown "gemini:pro"; expected none, openai:<model> or anthropic:<model>', field: 'llm' });
    expect(invalid(() => parseLlmSpec('openai:', {})).field).toBe('llm');
    expect(invalid(() => parseLlmSpec('openai:m', { ENGRAM_LLM_URL: 'localhost:11434' })).field).toBe('ENGRAM_LLM_URL');
  });
});

describe('resolveLlmSpec', () => {
  it('prefers the flag, then ENGRAM_LLM, then an OpenAI-compatible model at ENGRAM_LLM_URL, else none', () => {
    const env = { ENGRAM_LLM: 'anthropic:a', ENGRAM_LLM_URL: 'http://127.0.0.1:8080/v1' };
    expect(resolveLlmSpec('openai:f', env)).toMatchObject({ provider: 'openai', model: 'f' });
    expect(resolveLlmSpec(undefined, env)).toMatchObject({ provider: 'anthropic', model: 'a', baseUrl: 'http://127.0.0.1:8080/v1' });
    expect(resolveLlmSpec(undefined, { ENGRAM_LLM_URL: 'http://127.0.0.1:8080/v1' })).toMatchObject({ provider: 'openai', model: 'gpt-4o-mini' });
    expect(resolveLlmSpec('', {})).toEqual({ provider: 'none' });
  });
});

describe('createChatModelFromSpec', () => {
  let server: ScriptedLlmServer | undefined;
  afterEach(async () => {
    await server?.close();
  });

  it('returns null for none and a guarded model that logs its calls otherwise', async () => {
    expect(await createChatModelFromSpec({ provider: 'none' })).toBeNull();
    server = await startScriptedLlmServer();
    server.script.push({ text: 'hi', usage: { inputTokens: 5, outputTokens: 1 } });
    const calls: LlmCallRecord[] = [];
    const spec = parseLlmSpec('anthropic:claude-test', { ENGRAM_LLM_URL: server.baseUrl, ENGRAM_LLM_API_KEY: 'k' });
    const model = await createChatModelFromSpec(spec, { onCall: (r) => calls.push(r) });
    expect(model!.name).toBe('anthropic:claude-test');
    expect((await model!.complete({ messages: [{ role: 'user', content: 'x' }] })).text).toBe('hi');
    expect(server.requests[0]!.headers['x-api-key']).toBe('k');
    expect(calls).toMatchObject([{ outcome: 'ok', inputTokens: 5, outputTokens: 1 }]);
  });
});

describe('llmLimitsFromEnv', () => {
  it('reads the hourly limits and the timeout, and nothing when they are unset', () => {
    expect(llmLimitsFromEnv({})).toEqual({});
    expect(llmLimitsFromEnv({ ENGRAM_LLM_MAX_CALLS_PER_HOUR: '50', ENGRAM_LLM_MAX_TOKENS_PER_HOUR: '100000', ENGRAM_LLM_TIMEOUT_MS: '30000' })).toEqual({
      spend: { windowMs: 3_600_000, maxCalls: 50, maxTokens: 100_000 },
      http: { timeoutMs: 30_000 },
    });
  });

  it('names the variable that is not a positive whole number', () => {
    expect(invalid(() => llmLimitsFromEnv({ ENGRAM_LLM_MAX_CALLS_PER_HOUR: '1e9x' }))).toEqual({
      message: 'ENGRAM_LLM_MAX_CALLS_PER_HOUR: "1e9x" is not a positive whole number',
      field: 'ENGRAM_LLM_MAX_CALLS_PER_HOUR',
    });
    expect(invalid(() => llmLimitsFromEnv({ ENGRAM_LLM_TIMEOUT_MS: '0' })).field).toBe('ENGRAM_LLM_TIMEOUT_MS');
  });

  it('limits a model made from a spec: a second call in the hour is refused', async () => {
    const server = await startScriptedLlmServer();
    try {
      server.fallback = () => ({ text: 'ok' });
      const model = await createChatModelFromSpec(parseLlmSpec('openai:m', { ENGRAM_LLM_URL: server.baseUrl }), llmLimitsFromEnv({ ENGRAM_LLM_MAX_CALLS_PER_HOUR: '1' }));
      await model!.complete({ messages: [{ role: 'user', content: 'x' }] });
      const err = await model!.complete({ messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
      expect((err as { data: { reason: string } }).data.reason).toBe('spend_limit');
      expect(server.requests).toHaveLength(1);
    } finally {
      await server.close();
    }
  });
});
