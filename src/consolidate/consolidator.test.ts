import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { openEngram, type Engram } from '../engine.js';
import { createOpenAiChatModel } from '../providers/llm/openai-chat.js';
import { startScriptedLlmServer, type ScriptedLlmServer } from '../providers/llm/test-support.js';
import type { EventInput } from '../model/event.js';

// The consolidator with a model (a scripted OpenAI-compatible server on loopback) and a real SQLite store:
// depth-aware prompts, the level and model stored, usage counted, and escalation when the model fails.
let server: ScriptedLlmServer;
let dir: string;
let mem: Engram;

beforeEach(async () => {
  server = await startScriptedLlmServer();
  dir = mkdtempSync(join(tmpdir(), 'engram-consolidator-'));
  mem = await openEngram({ db: join(dir, 'e.db') });
});
afterEach(async () => {
  await mem.close();
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

const T0 = Date.UTC(2026, 2, 2, 9);
function work(topic: string, startMs: number): EventInput[] {
  return Array.from({ length: 6 }, (_, i) => [
    { kind: 'user' as const, ts: startMs + i * 60_000, content: `Step ${i}: the ${topic} import fails on large files, please fix it.` },
    { kind: 'assistant' as const, ts: startMs + i * 60_000 + 30_000, content: `Fixed step ${i} of the ${topic} import in src/${topic}/import${i}.ts; the tests pass.` },
  ]).flat();
}

it('summarizes sessions and arcs with the model, each depth with its own prompt, storing level, confidence, model and usage', async () => {
  const llm = createOpenAiChatModel({ baseUrl: server.baseUrl, model: 'small', maxAttempts: 1 });
  const c = mem.consolidator({ llm, sessionsPerArc: 2, extractDecisions: false });
  await mem.append('a', work('csv', T0));
  await mem.append('b', work('xml', T0 + 86_400_000));
  server.script.push({ text: 'The csv import was fixed step by step in src/csv/.', usage: { inputTokens: 500, outputTokens: 15 } });
  server.script.push({ text: 'The xml import was fixed in src/xml/.', usage: { inputTokens: 480, outputTokens: 12 } });
  server.script.push({ text: 'Both importers (csv, xml) were fixed; large files import now.', usage: { inputTokens: 200, outputTokens: 14 } });
  const a = await c.consolidateSession('a');
  expect(a.summaries[0]).toMatchObject({ level: 'normal', confidence: 0.7, model: 'openai:small' });
  expect(a.summaries[0]!.text).toBe('Session a, turns 1-12, 2 March 2026:\nThe csv import was fixed step by step in src/csv/.');
  expect(a.usage).toEqual({ inputTokens: 500, outputTokens: 15 });
  await c.consolidateSession('b');
  const up = await c.rollUp('default');
  expect(up.arcs).toHaveLength(1);
  expect(up.arcs[0]!.text).toMatch(/^Arc of project default: 2 sessions \(a to b\), 2 March 2026 to 3 March 2026:\nBoth importers/);
  expect(up.usage).toEqual({ inputTokens: 200, outputTokens: 14 });
  const prompts = server.requests.map((r) => (r.body as { messages: Array<{ content: string }> }).messages[0]!.content);
  expect(prompts[0]).toContain('Preserve operational detail');
  expect(prompts[2]).toContain('Keep the decisions and their outcomes');
});

it('falls back to the deterministic level when the model fails, and says so in the stored summary', async () => {
  const llm = createOpenAiChatModel({ baseUrl: server.baseUrl, model: 'small', maxAttempts: 1 });
  await mem.append('a', work('csv', T0));
  server.script.push({ status: 400, text: 'bad model' }, { status: 400, text: 'bad model' });
  const out = await mem.consolidator({ llm, extractDecisions: false }).consolidateSession('a');
  expect(out.summaries[0]).toMatchObject({ level: 'deterministic', confidence: 0.3 });
  expect(out.summaries[0]!.text).toContain('src/csv/import0.ts');
});

it("dates a session by its conversation, not by an undated record the importer stamped when it stored it", async () => {
  const c = mem.consolidator({ llm: null, gate: false, extractDecisions: false });
  // Claude Code's `summary` title lines carry no time: imported, such a note is dated at import (years later).
  await mem.append('t', [{ kind: 'note', ts: Date.UTC(2026, 11, 6), content: 'Countdown timer work', tags: ['summary'] }, ...work('csv', T0)]);
  const made = await c.consolidateSession('t');
  expect(made.summaries[0]!.text.split('\n')[0]).toBe('Session t, turns 1-13, 2 March 2026:');
});
