import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isEngramError } from '../../errors.js';
import { startScriptedLlmServer, type ScriptedLlmServer } from '../../providers/llm/test-support.js';
import { EXIT, exitCodeFor } from './exit-codes.js';
import { openLlm } from './llm-option.js';
import { main } from './main.js';
import type { Io } from './output.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-llm-option-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function captureIo(): Io & { text: () => string } {
  const lines: string[] = [];
  return { out: (t) => lines.push(t), err: (t) => lines.push(t), isErrTty: false, text: () => lines.join('\n') };
}

describe('--llm', () => {
  it('is a global option that takes a spec, and engram --help documents it', async () => {
    expect(await main(['--db', join(dir, 'a.db'), '--llm', 'anthropic:claude-haiku-4-5', 'init'], captureIo())).toBe(EXIT.OK);
    // Commander knows the option and its value: without one it says so (an unknown option would read differently).
    const missing = captureIo();
    expect(await main(['--db', join(dir, 'b.db'), 'init', '--llm'], missing)).toBe(EXIT.INVALID_INPUT);
    expect(missing.text()).toContain("option '--llm <spec>' argument missing");
    const help = captureIo();
    await main(['--help'], help);
    expect(help.text()).toMatch(/--llm <spec>\s+model for consolidation/);
  });
});

describe('openLlm', () => {
  let server: ScriptedLlmServer | undefined;
  afterEach(async () => {
    await server?.close();
  });

  it('opens the model --llm names, with the URL and key from the environment, before $ENGRAM_LLM', async () => {
    server = await startScriptedLlmServer();
    server.script.push({ text: 'pong' });
    const env = { ENGRAM_LLM: 'anthropic:other', ENGRAM_LLM_URL: server.baseUrl, ENGRAM_LLM_API_KEY: 'sk-local' };
    const llm = await openLlm({ llm: 'openai:qwen2.5:0.5b' }, {}, env);
    expect(llm!.name).toBe('openai:qwen2.5:0.5b');
    expect((await llm!.complete({ messages: [{ role: 'user', content: 'ping' }] })).text).toBe('pong');
    expect(server.requests[0]).toMatchObject({ path: '/v1/chat/completions', headers: { authorization: 'Bearer sk-local' }, body: { model: 'qwen2.5:0.5b' } });
  });

  it('applies the hourly call limit of $ENGRAM_LLM_MAX_CALLS_PER_HOUR', async () => {
    server = await startScriptedLlmServer();
    server.fallback = () => ({ text: 'ok' });
    const llm = await openLlm({ llm: 'openai:m' }, {}, { ENGRAM_LLM_URL: server.baseUrl, ENGRAM_LLM_MAX_CALLS_PER_HOUR: '2' });
    await llm!.complete({ messages: [{ role: 'user', content: 'a' }] });
    await llm!.complete({ messages: [{ role: 'user', content: 'b' }] });
    const err = await llm!.complete({ messages: [{ role: 'user', content: 'c' }] }).catch((e: unknown) => e);
    expect(isEngramError(err, 'PROVIDER_ERROR') && err.data.reason).toBe('spend_limit');
    expect(server.requests).toHaveLength(2);
  });

  it('is null without --llm, $ENGRAM_LLM or $ENGRAM_LLM_URL: consolidation is deterministic', async () => {
    expect(await openLlm({}, {}, {})).toBeNull();
    expect(await openLlm({ llm: 'none' }, {}, { ENGRAM_LLM_URL: 'http://127.0.0.1:1/v1' })).toBeNull();
  });

  it('rejects a bad spec as invalid input naming llm (exit 2)', async () => {
    const err = await openLlm({ llm: 'gemini:pro' }, {}, {}).catch((e: unknown) => e);
    expect(isEngramError(err, 'INVALID_INPUT')).toBe(true);
    expect((err as { data: { field: string } }).data.field).toBe('llm');
    expect(exitCodeFor('INVALID_INPUT')).toBe(EXIT.INVALID_INPUT);
  });
});
