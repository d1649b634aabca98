import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runConsolidation } from '../../src/consolidate/consolidation-run.js';
import { openEngram, type Engram } from '../../src/engine.js';
import { startHttpServer, type RunningHttpServer } from '../../src/interfaces/http/server.js';
import type { EventInput } from '../../src/model/event.js';
import { httpAs, connectMcpAs } from '../fixtures/http-agents.js';

// The summary DAG over HTTP (GET /v1/summaries, POST /v1/expand with a summary id, GET /v1/summaries/stats) and MCP
// (recall with summaries, expand on a summary id) on loopback, as agents of two projects: each sees its own only.
let dir: string;
let mem: Engram;
let server: RunningHttpServer;
let shop: string;
let blue: string;
let admin: string;
const clients: Client[] = [];
const T0 = Date.UTC(2026, 2, 3, 9);

function work(topic: string, startMs: number): EventInput[] {
  const out: EventInput[] = [];
  for (let i = 0; i < 6; i++) {
    out.push({ kind: 'user', ts: startMs + i * 60_000, content: `Step ${i}: check why the ${topic} job fails and fix it, please.` });
    out.push({ kind: 'assistant', ts: startMs + i * 60_000 + 30_000, content: `The ${topic} job failed with ERR_${topic.toUpperCase()}_${i}; I fixed src/${topic}/job${i}.ts and the tests pass.` });
  }
  return out;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-http-summaries-'));
  mem = await openEngram({ db: join(dir, 'engram.db') });
  shop = (await mem.agents.add('shop-coder', { role: 'programmer', project: 'shop' })).token;
  blue = (await mem.agents.add('blue-coder', { role: 'programmer', project: 'blue' })).token;
  admin = (await mem.agents.add('root', { role: 'programmer', isAdmin: true })).token;
  await mem.append('s1', [...work('storage', T0), { kind: 'decision', ts: T0 + 600_000, content: 'Decision: the storage layer stays on SQLite; PostgreSQL only for teams.' }], { project: 'shop' });
  await mem.append('s2', work('billing', T0 + 86_400_000), { project: 'shop' });
  await mem.append('b1', work('warehouse', T0), { project: 'blue' });
  await runConsolidation(mem.store, mem.consolidator({ llm: null, sessionsPerArc: 2 }));
  server = await startHttpServer(mem, { port: 0, version: '0.0.0-test' });
});

afterAll(async () => {
  for (const c of clients.splice(0)) await c.close();
  await server?.close();
  await mem?.close();
  rmSync(dir, { recursive: true, force: true });
});

const http = (token: string, method: string, path: string, body?: unknown) => httpAs(server.url, token, method, path, body);

it('lists, searches and expands summaries over HTTP within the caller project', async () => {
  const listed = await http(shop, 'GET', '/v1/summaries');
  expect(listed.status).toBe(200);
  const byDepth = (d: number) => listed.json.summaries.filter((s: any) => s.depth === d);
  expect(byDepth(0).map((s: any) => s.sessionId).sort()).toEqual(['s1', 's2']);
  expect(byDepth(1)).toHaveLength(1);
  const arc = byDepth(1)[0];
  expect(arc.sessionIds).toEqual(['s1', 's2']);
  expect(listed.json.summaries.every((s: any) => s.project === 'shop')).toBe(true);
  expect((await http(blue, 'GET', '/v1/summaries')).json.summaries.map((s: any) => s.sessionId)).toEqual(['b1']);

  const arcs = await http(shop, 'GET', '/v1/summaries?depth=1');
  expect(arcs.json.summaries.map((s: any) => s.id)).toEqual([arc.id]);
  const found = await http(shop, 'GET', `/v1/summaries?q=${encodeURIComponent('what did we decide about storage in March?')}&depth=0`);
  expect(found.json.summaries[0]).toMatchObject({ sessionId: 's1', score: expect.any(Number) });
  expect(found.json.summaries[0].text).toContain('Decision: the storage layer stays on SQLite');
  expect((await http(blue, 'GET', '/v1/summaries?q=storage')).json.summaries).toEqual([]);

  const expanded = await http(shop, 'POST', '/v1/expand', { id: arc.id });
  expect(expanded.status).toBe(200);
  expect(expanded.json.details).toMatchObject({ kind: 'summary', id: arc.id, depth: 1, childIds: arc.childIds, isCold: false });
  expect(expanded.json.text).toContain('Children (expand an id to drill down):');
  const session = await http(shop, 'POST', '/v1/expand', { id: arc.childIds[0] });
  expect(session.json.details.sourceEventIds.length).toBeGreaterThan(10);
  expect(session.json.text).toContain(`- ${session.json.details.sourceEventIds[0]}  turn 1  user`);
  // Another project's summary is not found, by expand or by id; a malformed depth is a 400 naming the field.
  expect((await http(blue, 'POST', '/v1/expand', { id: arc.id })).status).toBe(404);
  expect((await http(blue, 'GET', `/v1/summaries/${arc.id}`)).status).toBe(404);
  expect((await http(shop, 'GET', `/v1/summaries/${arc.id}`)).json.id).toBe(arc.id);
  const bad = await http(shop, 'GET', '/v1/summaries?depth=7');
  expect(bad.status).toBe(400);
  expect(JSON.stringify(bad.json)).toContain('depth');
  // Store-wide counts: admins only.
  expect((await http(shop, 'GET', '/v1/summaries/stats')).status).toBe(403);
  expect((await http(admin, 'GET', '/v1/summaries/stats')).json).toMatchObject({ byDepth: { 0: 3, 1: 1, 2: 0 }, cold: 0, skipped: 0 });
  // POST /v1/recall with summaries: the evidence and the matching summaries, marked, with drill-down ids.
  const recalled = await http(shop, 'POST', '/v1/recall', { query: 'storage SQLite', summaries: true, summaryDepth: 0 });
  expect(recalled.status).toBe(200);
  expect(recalled.json.results[0].hits.length).toBeGreaterThan(0);
  expect(recalled.json.summaries[0]).toMatchObject({ kind: 'summary', depth: 0, sessionIds: ['s1'], sourceEventIds: expect.any(Array) });
  // The summary's decision line repeats a recalled event: it is collapsed into that event (named in collapsedInto).
  const decisionHit = recalled.json.results[0].hits.find((h: any) => h.kind === 'decision');
  expect(decisionHit).toBeDefined();
  expect(recalled.json.summaries[0].collapsedInto).toContain(decisionHit.eventId);
  expect(recalled.json.summaries[0].text).not.toContain('Decision: the storage layer stays on SQLite');
  expect(recalled.json.summaries[0].text).toContain(`quoted in the recalled events ${decisionHit.eventId}`);
  expect((await http(shop, 'POST', '/v1/recall', { query: 'storage' })).json).not.toHaveProperty('summaries');
  expect((await http(blue, 'POST', '/v1/recall', { query: 'storage', summaries: true })).json.summaries).toEqual([]);
  // Decision records: listed with kind=decision (not among summaries), searchable, and expand to their event.
  const decisions = await http(shop, 'GET', '/v1/summaries?kind=decision');
  expect(decisions.json.summaries).toHaveLength(1);
  expect(decisions.json.summaries[0]).toMatchObject({ kind: 'decision', sessionId: 's1', subject: null, coldAt: null });
  expect(decisions.json.summaries[0].text).toMatch(/^Decision \(session s1, turn 13, 3 March 2026\): the storage layer stays on SQLite; PostgreSQL only for teams\. \[evt_\w+\]$/);
  expect(listed.json.summaries.some((s: any) => s.kind === 'decision')).toBe(false);
  const decisionFound = await http(shop, 'GET', `/v1/summaries?kind=decision&q=${encodeURIComponent('PostgreSQL teams')}`);
  expect(decisionFound.json.summaries.map((s: any) => s.id)).toEqual([decisions.json.summaries[0].id]);
  const decisionExpanded = await http(shop, 'POST', '/v1/expand', { id: decisions.json.summaries[0].id });
  expect(decisionExpanded.json.details.sourceEventIds).toEqual(decisions.json.summaries[0].sourceEventIds);
  expect((await http(blue, 'GET', '/v1/summaries?kind=decision')).json.summaries).toEqual([]);
  expect((await http(shop, 'GET', '/v1/summaries?subject=storage')).status).toBe(400);
  // The OpenAPI document lists the routes.
  const doc = (await http(shop, 'GET', '/v1/openapi.json')).json as { paths: Record<string, unknown> };
  expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/v1/summaries', '/v1/summaries/{summaryId}', '/v1/summaries/stats']));
});

it('MCP recall returns summaries marked as such with drill-down ids, and expand takes a summary id', async () => {
  const client = await connectMcpAs(server.url, shop, 's2', 'engram-summaries-e2e');
  clients.push(client);
  const call = async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as CallToolResult;

  const plain = await call('recall', { query: 'storage SQLite' });
  expect(plain.structuredContent).not.toHaveProperty('summaries');
  const withSummaries = await call('recall', { query: 'storage SQLite', summaries: true });
  expect(withSummaries.isError).toBeFalsy();
  const hits = (withSummaries.structuredContent as { summaries: Array<Record<string, any>> }).summaries;
  expect(hits.length).toBeGreaterThan(0);
  expect(hits.every((h) => (h.kind === 'summary' || h.kind === 'decision') && h.project === 'shop')).toBe(true);
  const text = (withSummaries.content as Array<{ text: string }>).map((c) => c.text).join('\n');
  expect(text).toMatch(/\[summary sum_\w+, (session|arc) \(depth [01]\); derived, not verbatim: expand/);
  const arcOnly = await call('recall', { query: 'storage', summaries: true, summaryDepth: 1 });
  const arcHit = (arcOnly.structuredContent as { summaries: Array<Record<string, any>> }).summaries[0]!;
  expect(arcHit.depth).toBe(1);
  const drilled = await call('expand', { id: arcHit.id });
  expect(drilled.structuredContent).toMatchObject({ kind: 'summary', id: arcHit.id, childIds: arcHit.childIds });
  // Decision records in force come after the summaries; here the decision event is in s1, which a recall of this session (s2) does not return.
  const decided = await call('recall', { query: 'PostgreSQL teams', summaries: true, sessionOnly: true });
  const decisionHit = (decided.structuredContent as { summaries: Array<Record<string, any>> }).summaries.find((h) => h.kind === 'decision')!;
  expect(decisionHit).toMatchObject({ kind: 'decision', depthName: 'decision', sessionIds: ['s1'], subject: null });
  expect((decided.content as Array<{ text: string }>).map((c) => c.text).join('\n')).toContain(`[decision record ${decisionHit.id}, in force; expand ${decisionHit.id} or its event ${decisionHit.sourceEventIds[0]}]`);
  const decisionDrilled = await call('expand', { id: decisionHit.id });
  expect(decisionDrilled.isError).toBeFalsy();
  expect(JSON.stringify(decisionDrilled.content)).toContain(decisionHit.sourceEventIds[0]);

  const blueClient = await connectMcpAs(server.url, blue, 'b1', 'engram-summaries-e2e-blue');
  clients.push(blueClient);
  const denied = (await blueClient.callTool({ name: 'expand', arguments: { id: arcHit.id } })) as CallToolResult;
  expect(denied.isError).toBe(true);
  expect(JSON.stringify(denied.content)).toContain('NOT_FOUND');
  const blueRecall = (await blueClient.callTool({ name: 'recall', arguments: { query: 'storage', summaries: true } })) as CallToolResult;
  expect((blueRecall.structuredContent as { summaries: unknown[] }).summaries).toEqual([]);
});
