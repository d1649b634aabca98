import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../engine.js';
import type { EventInput } from '../../model/event.js';
import { createAnthropicChatModel } from '../../providers/llm/anthropic-chat.js';
import { createOpenAiChatModel } from '../../providers/llm/openai-chat.js';
import { startScriptedLlmServer, type ScriptedLlmServer } from '../../providers/llm/test-support.js';
import { createEscalationCounter } from '../escalation.js';
import { GRAPH_EXTRACTION_EVENT, LlmEntityExtractor } from './llm-extractor.js';

// LLM entity extraction against a local server speaking the OpenAI / Anthropic protocols with scripted answers, into a
// real SQLite store through the graph builder: what the model adds is verified against the events and merged with the
// deterministic extractor's rows.
let server: ScriptedLlmServer;
let dir: string;
let mem: Engram;
beforeEach(async () => {
  server = await startScriptedLlmServer();
  dir = mkdtempSync(join(tmpdir(), 'engram-llm-extract-'));
  mem = await openEngram({ db: join(dir, 'engram.db') });
  await mem.append('s1', EVENTS);
});
afterEach(async () => {
  await mem.close();
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

const EVENTS: EventInput[] = [
  { kind: 'user', content: 'The checkout service times out when the ledger is slow; @dana thinks the retry loop is the cause.' },
  { kind: 'assistant', content: 'Fixed it: ERR_LEDGER_TIMEOUT came from reserveFunds in src/ledger/reserve.ts; the fix raises the pool size.' },
];
const LEDGER = { kind: 'service', name: 'ledger' };
const CHECKOUT = { kind: 'service', name: 'checkout' };
const GOOD = {
  entities: [
    { ...LEDGER, cites: [{ event: 'e1', quote: 'when the ledger is slow' }] },
    { ...CHECKOUT, cites: [{ event: 'e1', quote: 'The checkout service times out' }] },
  ],
  edges: [
    { type: 'depends_on', src: CHECKOUT, dst: LEDGER, cites: [{ event: 'e1', quote: 'The checkout service times out when the ledger is slow' }] },
    {
      type: 'fixed_by',
      src: { kind: 'error', name: 'ERR_LEDGER_TIMEOUT' },
      dst: { kind: 'file', name: 'src/ledger/reserve.ts' },
      cites: [{ event: 'e2', quote: 'ERR_LEDGER_TIMEOUT came from reserveFunds in src/ledger/reserve.ts' }],
    },
  ],
};
const openai = () => createOpenAiChatModel({ baseUrl: server.baseUrl, model: 'small', maxAttempts: 1 });
const ids = async () => (await mem.listEvents({ sessionId: 's1' as never })).map((e) => e.id);

it('adds the entities and edges a model finds, cited at the normal level, merged with the deterministic ones', async () => {
  server.script.push({ text: JSON.stringify(GOOD) });
  const telemetry = createEscalationCounter();
  const logged: Array<{ type: string; data: Record<string, unknown> }> = [];
  const extractor = new LlmEntityExtractor({ llm: openai(), telemetry, sink: { log: (e) => logged.push(e) } });
  const report = await mem.graphBuilder(extractor).buildFromSessions();
  expect(report.events).toBe(2);
  // One call for the chunk; the events are labelled e1, e2 (the model never sees or returns stored ids).
  expect(server.requests).toHaveLength(1);
  const sent = JSON.stringify(server.requests[0]!.body);
  expect(sent).toContain('[e1] (user)');
  expect(sent).toContain('[e2] (assistant)');
  const [e1, e2] = await ids();

  // `ledger` (a bare word the patterns do not read as a service) comes from the model, cited at 0.7 with its quote.
  const ledger = (await mem.knowledge.list({ kinds: ['service'], query: 'ledger' }))[0]!;
  expect(ledger.name).toBe('ledger');
  const cites = await mem.store.graph.citations({ targetIds: [ledger.id], limit: 10 });
  expect(cites).toEqual([expect.objectContaining({ eventId: e1, confidence: 0.7, quote: 'when the ledger is slow' })]);
  // `checkout` both found: one entity, the deterministic citation (1.0) kept.
  const checkout = await mem.knowledge.list({ kinds: ['service'], query: 'checkout' });
  expect(checkout).toHaveLength(1);
  expect((await mem.store.graph.citations({ targetIds: [checkout[0]!.id], limit: 10 })).map((c) => c.confidence)).toEqual([1]);
  // The edges carry the level's confidence and are walked by impact at its default threshold (0.7).
  const impact = await mem.knowledge.impact('service:ledger');
  expect(impact.groups[0]!.entities.map((e) => [e.name, e.confidence, e.cites])).toEqual([['checkout', 0.7, [e1]]]);
  const fixed = await mem.knowledge.expand('error:ERR_LEDGER_TIMEOUT', { aspect: 'fixed_by' });
  expect(fixed.text).toContain(`file:src/ledger/reserve.ts (0.70) [${e2}]`);

  expect(extractor.stats()).toMatchObject({ chunks: 1, events: 2, levels: { normal: 1, aggressive: 0, deterministic: 0 }, dropped: { unknownEvent: 0, misquoted: 0, nameNotInEvent: 0, uncitedItems: 0 } });
  expect(telemetry.stats().results).toEqual({ normal: 1, aggressive: 0, deterministic: 0 });
  expect(logged).toEqual([{ tsMs: expect.any(Number), type: GRAPH_EXTRACTION_EVENT, data: expect.objectContaining({ level: 'normal', events: 2, model: 'openai:small' }) }]);
  expect(extractor.name).toBe('llm:openai:small+deterministic');
});

it('repairs near-JSON from a small model (Anthropic protocol)', async () => {
  server.script.push({
    text: "Sure! Here it is:\n```json\n{entities: [{kind: 'service', name: 'Ledger', cites: [{event: 'e1', quote: 'the ledger is slow',},],},], edges: []}\n```",
  });
  const extractor = new LlmEntityExtractor({ llm: createAnthropicChatModel({ baseUrl: server.baseUrl, model: 'claude-test' }) });
  await mem.graphBuilder(extractor).buildFromSessions();
  expect(server.requests[0]!.path).toMatch(/\/messages$/);
  expect(extractor.stats().levels.normal).toBe(1);
  // Service names are written as the deterministic extractor writes them (lower case): one key.
  expect((await mem.knowledge.list({ kinds: ['service'] })).map((e) => e.name).sort()).toEqual(['checkout', 'ledger']);
});

it('drops what is uncited or hallucinated and counts the drops', async () => {
  server.script.push({
    text: JSON.stringify({
      entities: [
        // One good cite, one of an event that was not in the input.
        { ...LEDGER, cites: [{ event: 'e1', quote: 'the ledger is slow' }, { event: 'e7', quote: 'the ledger is slow' }] },
        // A quote that is not in the event.
        { kind: 'error', name: 'ERR_GHOST', cites: [{ event: 'e2', quote: 'ERR_GHOST failed twice' }] },
        // A real quote, but the event does not name the entity.
        { kind: 'service', name: 'payments', cites: [{ event: 'e1', quote: 'The checkout service times out' }] },
      ],
      edges: [{ type: 'depends_on', src: CHECKOUT, dst: { kind: 'service', name: 'payments' }, cites: [{ event: 'e1', quote: 'The checkout service times out' }] }],
    }),
  });
  const extractor = new LlmEntityExtractor({ llm: openai() });
  await mem.graphBuilder(extractor).buildFromSessions();
  expect(extractor.stats()).toMatchObject({ levels: { normal: 1 }, entities: 1, edges: 0, dropped: { unknownEvent: 1, misquoted: 1, nameNotInEvent: 2, uncitedItems: 3 } });
  const names = (await mem.knowledge.list({ limit: 100 })).map((e) => `${e.kind}:${e.name}`);
  expect(names).toContain('service:ledger');
  expect(names).not.toContain('service:payments');
  expect(names).not.toContain('error:ERR_GHOST');
  await expect(mem.knowledge.impact('service:payments')).rejects.toMatchObject({ code: 'NOT_FOUND' });
});

it('escalates an answer whose every cite is false, or over the caps, to the aggressive level (confidence 0.5)', async () => {
  server.script.push({ text: JSON.stringify({ entities: [{ kind: 'service', name: 'payments', cites: [{ event: 'e3', quote: 'payments are down' }] }], edges: [] }) });
  server.script.push({ text: JSON.stringify({ entities: [{ ...LEDGER, cites: [{ event: 'e1', quote: 'the ledger is slow' }] }], edges: [] }) });
  const telemetry = createEscalationCounter();
  const extractor = new LlmEntityExtractor({ llm: openai(), telemetry, caps: { entities: 4, edges: 4 } });
  await mem.graphBuilder(extractor).buildFromSessions();
  expect(telemetry.stats()).toEqual({ results: { normal: 0, aggressive: 1, deterministic: 0 }, escalations: { over_budget: 0, invalid: 1, failed: 0, no_model: 0 } });
  // The aggressive prompt is stricter and asks for half.
  expect(JSON.stringify(server.requests[1]!.body)).toContain('Be strict');
  expect(JSON.stringify(server.requests[1]!.body)).toContain('at most 2 entities and 2 edges');
  const ledger = (await mem.knowledge.list({ kinds: ['service'], query: 'ledger' }))[0]!;
  expect((await mem.store.graph.citations({ targetIds: [ledger.id], limit: 5 }))[0]!.confidence).toBe(0.5);

  // Over the normal level's caps: escalated as over_budget.
  await mem.append('s2', EVENTS);
  const many = { entities: Array.from({ length: 5 }, () => ({ ...CHECKOUT, cites: [{ event: 'e1', quote: 'The checkout service times out' }] })), edges: [] };
  server.script.push({ text: JSON.stringify(many) }, { text: JSON.stringify({ entities: [], edges: [] }) });
  await mem.graphBuilder(extractor).buildFromSessions({ sessionIds: ['s2'] });
  expect(telemetry.stats().escalations.over_budget).toBe(1);
  expect(extractor.stats().levels).toEqual({ normal: 0, aggressive: 2, deterministic: 0 });
});

it('falls back to the deterministic extraction when the model fails: the same graph as without a model', async () => {
  // The script is empty: every call answers 500.
  const telemetry = createEscalationCounter();
  const extractor = new LlmEntityExtractor({ llm: openai(), telemetry });
  const report = await mem.graphBuilder(extractor).buildFromSessions();
  expect(report.events).toBe(2);
  expect(telemetry.stats()).toEqual({ results: { normal: 0, aggressive: 0, deterministic: 1 }, escalations: { over_budget: 0, invalid: 0, failed: 2, no_model: 0 } });
  expect(extractor.stats().levels.deterministic).toBe(1);

  const plain = await openEngram({ db: join(dir, 'plain.db') });
  try {
    await plain.append('s1', EVENTS);
    await plain.graphBuilder().buildFromSessions();
    const rows = async (m: Engram) => (await m.knowledge.list({ limit: 100 })).map((e) => `${e.kind}:${e.name}:${e.citations}`).sort();
    expect(await rows(mem)).toEqual(await rows(plain));
    expect(await mem.store.graph.counts()).toEqual(await plain.store.graph.counts());
  } finally {
    await plain.close();
  }
});
