import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../engine.js';
import { createGptTokenizer } from '../providers/gpt-tokenizer.js';
import { createGuardedChatModel } from '../providers/llm/guarded-chat-model.js';
import { createOpenAiChatModel } from '../providers/llm/openai-chat.js';
import { startScriptedLlmServer, type ScriptedLlmServer } from '../providers/llm/test-support.js';
import { summarizeWithEscalation } from './bounded-summary.js';
import { ESCALATION_EVENT, LLM_CALL_EVENT, logEscalationsTo, logLlmCallsTo } from './telemetry.js';

let dir: string;
let mem: Engram;
let server: ScriptedLlmServer;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-llm-telemetry-'));
  mem = await openEngram({ db: join(dir, 'engram.db') });
  server = await startScriptedLlmServer();
});

afterEach(async () => {
  await server.close();
  await mem.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('consolidation telemetry in the store', () => {
  it('stores one llm.call event per model call and one escalation event per summary, readable after reopening', async () => {
    server.script.push({ text: 'word '.repeat(300), usage: { inputTokens: 200, outputTokens: 300 } }, { text: '- short', usage: { inputTokens: 210, outputTokens: 3 } });
    const llm = createGuardedChatModel(createOpenAiChatModel({ baseUrl: server.baseUrl, model: 'small' }), { onCall: logLlmCallsTo(mem.bus) });
    const out = await summarizeWithEscalation(
      { items: [{ id: 'evt_1', kind: 'user', text: 'Move the cache to Redis 7 behind REDIS_URL.' }], budgetTokens: 40, instructions: 'Summarize.', purpose: 'summary:session' },
      { llm, tokenizer: createGptTokenizer(), telemetry: logEscalationsTo(mem.bus, 'summary:session') },
    );
    expect(out.level).toBe('aggressive');
    await mem.close();
    mem = await openEngram({ db: join(dir, 'engram.db') });

    const calls = await mem.bus.events({ types: [LLM_CALL_EVENT] });
    expect(calls.map((e) => e.data)).toMatchObject([
      { model: 'openai:small', purpose: 'summary:session:normal', outcome: 'ok', inputTokens: 200, outputTokens: 300, attempts: 1 },
      { model: 'openai:small', purpose: 'summary:session:aggressive', outcome: 'ok', inputTokens: 210, outputTokens: 3, attempts: 1 },
    ]);
    expect(calls.every((e) => typeof e.data.latencyMs === 'number')).toBe(true);
    const escalations = await mem.bus.events({ types: [ESCALATION_EVENT] });
    expect(escalations.map((e) => e.data)).toEqual([
      {
        purpose: 'summary:session',
        level: 'aggressive',
        escalations: 1,
        attempts: [
          { level: 'normal', outcome: 'over_budget', reason: expect.stringMatching(/tokens for a budget of 40$/) as unknown },
          { level: 'aggressive', outcome: 'ok' },
        ],
      },
    ]);
  });
});
