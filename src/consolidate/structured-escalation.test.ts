import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createOpenAiChatModel } from '../providers/llm/openai-chat.js';
import { startScriptedLlmServer, type ScriptedLlmServer } from '../providers/llm/test-support.js';
import type { BoundCheck, EscalationLevel } from './escalation.js';
import { deriveWithEscalation } from './structured-escalation.js';

let server: ScriptedLlmServer;
beforeEach(async () => {
  server = await startScriptedLlmServer();
});
afterEach(async () => {
  await server.close();
});

/** Decision records of one chunk, as item 4 will extract them: at most 5 per chunk at the normal level, 2 when aggressive. */
const decisions = z.object({ decisions: z.array(z.object({ title: z.string().min(1), because: z.string() })) });
type Decisions = z.output<typeof decisions>;
const CAP: Record<EscalationLevel, number> = { normal: 5, aggressive: 2, deterministic: 2 };
const check = (value: Decisions, level: EscalationLevel): BoundCheck =>
  value.decisions.length <= CAP[level] ? { ok: true } : { ok: false, outcome: 'over_budget', reason: `${value.decisions.length} decisions, cap ${CAP[level]}` };
const decisionEvents = ['Use PostgreSQL 16 for the shared store', 'Keep SQLite as the embedded default', 'Drop the Redis cache'];
const request = {
  schema: decisions,
  messages: (level: 'normal' | 'aggressive') => [
    { role: 'system' as const, content: level === 'normal' ? 'List the decisions, at most 5.' : 'List only lasting decisions, at most 2.' },
    { role: 'user' as const, content: 'transcript...' },
  ],
  check,
  deterministic: (): Decisions => ({ decisions: decisionEvents.slice(0, 2).map((title) => ({ title, because: '' })) }),
  purpose: 'decisions',
};
const many = (n: number): string => JSON.stringify({ decisions: Array.from({ length: n }, (_, i) => ({ title: `d${i}`, because: 'x' })) });

describe('deriveWithEscalation', () => {
  it('repairs a small model near-JSON and keeps it at the normal level', async () => {
    server.script.push({ text: "Here:\n```json\n{decisions: [{title: 'Use PostgreSQL 16', because: 'shared servers',},]}\n```" });
    const out = await deriveWithEscalation(request, { llm: createOpenAiChatModel({ baseUrl: server.baseUrl, model: 'tiny' }) });
    expect(out).toMatchObject({ level: 'normal', confidence: 0.7, model: 'openai:tiny', value: { decisions: [{ title: 'Use PostgreSQL 16', because: 'shared servers' }] } });
  });

  it('escalates past the per-chunk cap to the aggressive prompt', async () => {
    server.script.push({ text: many(9) }, { text: many(2) });
    const out = await deriveWithEscalation(request, { llm: createOpenAiChatModel({ baseUrl: server.baseUrl, model: 'tiny' }) });
    expect(out.level).toBe('aggressive');
    expect(out.confidence).toBe(0.5);
    expect(out.attempts[0]).toEqual({ level: 'normal', outcome: 'over_budget', reason: '9 decisions, cap 5' });
    const second = server.requests[1]!.body as { messages: Array<{ content: string }>; max_tokens: number; response_format: unknown };
    expect(second.messages[0]!.content).toBe('List only lasting decisions, at most 2.');
    expect(second.max_tokens).toBe(512);
    expect(second.response_format).toEqual({ type: 'json_object' });
  });

  it('counts answers that never become valid as invalid, then makes the object deterministically', async () => {
    server.fallback = () => ({ text: 'The team decided several things.' });
    const out = await deriveWithEscalation(request, { llm: createOpenAiChatModel({ baseUrl: server.baseUrl, model: 'tiny' }) });
    expect(out.attempts.map((a) => a.outcome)).toEqual(['invalid', 'invalid', 'ok']);
    expect(out).toMatchObject({ level: 'deterministic', confidence: 0.3, value: { decisions: [{ title: 'Use PostgreSQL 16 for the shared store' }, { title: 'Keep SQLite as the embedded default' }] } });
    expect(out.model).toBeUndefined();
    expect(server.requests).toHaveLength(4); // two calls per level: the answer and one re-ask
  });

  it('makes the object without a model when none is configured', async () => {
    const out = await deriveWithEscalation(request, { llm: null });
    expect(out.level).toBe('deterministic');
    expect(server.requests).toHaveLength(0);
  });
});
