import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { openEngram, type Engram } from '../engine.js';
import type { EventInput } from '../model/event.js';
import type { SessionId } from '../model/ids.js';
import { createOpenAiChatModel } from '../providers/llm/openai-chat.js';
import { startScriptedLlmServer, type ScriptedLlmServer } from '../providers/llm/test-support.js';

// Decisions a model finds in a session's other events (decision-extraction.ts), recorded at its level's confidence
// beside the decision events (decision-records.ts): a scripted OpenAI-compatible server on loopback, a real SQLite store.
let server: ScriptedLlmServer;
let dir: string;
let mem: Engram;

beforeEach(async () => {
  server = await startScriptedLlmServer();
  dir = mkdtempSync(join(tmpdir(), 'engram-decision-extraction-'));
  mem = await openEngram({ db: join(dir, 'e.db') });
});
afterEach(async () => {
  await mem.close();
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

const T0 = Date.UTC(2026, 2, 2, 9);
const session: EventInput[] = [
  { kind: 'user', ts: T0, content: 'The importer keeps timing out on big files; what store should the queue use?' },
  { kind: 'decision', ts: T0 + 60_000, content: 'Decision: the default store is SQLite.', meta: { subject: 'storage backend' } },
  { kind: 'user', ts: T0 + 120_000, content: "Let's move the default store to PostgreSQL once the pilot ends." },
  { kind: 'assistant', ts: T0 + 180_000, content: 'Agreed. We keep the cache in memory and drop Redis, since it only held 40 keys.' },
];
const reply = (decisions: unknown[]) => ({ text: JSON.stringify({ decisions }) });

it('records the decisions a model finds, at its confidence; a guess never replaces a decision event, a decision event replaces a guess', async () => {
  const llm = createOpenAiChatModel({ baseUrl: server.baseUrl, model: 'small', maxAttempts: 1 });
  await mem.append('a', session, { project: 'shop' });
  const ids = (await mem.store.listEvents({ sessionId: 'a' as SessionId, limit: 10 })).map((e) => e.id);
  server.script.push({ text: 'The importer store was discussed; SQLite stays the default.' });
  server.script.push(
    reply([
      { decision: 'Move the default store to PostgreSQL once the pilot ends.', subject: 'Storage Backend', event: ids[2] },
      { decision: 'Keep the cache in memory and drop Redis (it held 40 keys).', subject: 'cache layer', event: ids[3] },
    ]),
  );
  const a = await mem.consolidator({ llm }).consolidateSession('a');
  const prompt = (server.requests[1]!.body as { messages: Array<{ content: string }> }).messages;
  expect(prompt[0]!.content).toContain('List the decisions made in it');
  expect(prompt[1]!.content).toContain(`[${ids[2]}] user: Let's move the default store`);
  expect(prompt[1]!.content).not.toContain(`[${ids[1]}]`); // decision events are recorded verbatim, not asked about
  expect(a.decisions!.map((d) => [d.sourceEventIds[0], d.subject, d.level, d.confidence, d.model, d.coldAt])).toEqual([
    [ids[1], 'storage backend', 'deterministic', 1, null, null],
    [ids[2], 'storage backend', 'normal', 0.7, 'openai:small', null],
    [ids[3], 'cache layer', 'normal', 0.7, 'openai:small', null],
  ]);
  expect(a.decisions![1]!.text).toBe(
    `Decision (session a, turn 3, 2 March 2026; subject storage backend; proposed by openai:small at confidence 0.7): Move the default store to PostgreSQL once the pilot ends. [${ids[2]}]`,
  );

  // A later decision event on the cache replaces the model's record of it.
  await mem.append('b', [{ kind: 'decision', ts: T0 + 86_400_000, content: 'Decision: the cache goes back to Redis for the shared servers.', meta: { subject: 'cache layer' } }], { project: 'shop' });
  server.script.push({ text: 'The cache goes back to Redis.' }, reply([]));
  const [redis] = (await mem.consolidator({ llm }).consolidateSession('b')).decisions!;
  const cache = await mem.summaries.list({ kind: 'decision', subject: 'cache layer', includeCold: true });
  expect(cache.map((d) => [d.sourceEventIds[0], d.coldSourceId])).toEqual([
    [redis!.sourceEventIds[0], null],
    [ids[3], redis!.id],
  ]);
});

it("refuses a decision that names an event outside its chunk, and records none when the model's answers never fit", async () => {
  const llm = createOpenAiChatModel({ baseUrl: server.baseUrl, model: 'small', maxAttempts: 1 });
  await mem.append('a', session, { project: 'shop' });
  server.script.push({ text: 'The importer store was discussed.' });
  server.script.push(reply([{ decision: 'Use PostgreSQL.', subject: 'storage backend', event: 'evt_00000000000000000000000000' }]), reply([{ decision: 'x', event: 'nope' }]));
  const a = await mem.consolidator({ llm }).consolidateSession('a');
  expect(a.decisions!.map((d) => d.level)).toEqual(['deterministic']);
  expect(server.requests).toHaveLength(3);
  // Without extraction (or without a model) only the decision event is recorded, and the model is not asked.
  await mem.append('c', session, { project: 'shop' });
  server.script.push({ text: 'Same discussion again.' });
  expect((await mem.consolidator({ llm, extractDecisions: false }).consolidateSession('c')).decisions!.map((d) => d.level)).toEqual(['deterministic']);
  expect(server.requests).toHaveLength(4);
});
