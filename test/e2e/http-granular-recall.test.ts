import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { startHttpServer, type RunningHttpServer } from '../../src/interfaces/http/server.js';
import type { EventInput } from '../../src/model/event.js';
import { connectMcpAs } from '../fixtures/http-agents.js';

// Multi-granularity recall over HTTP (POST /v1/recall with `granularity`) and MCP (`recall` with `granularity`) on
// loopback, as agents of two projects: the choice is reported, drill-down ids expand, another project's summaries
// and entities never come back.
let dir: string;
let mem: Engram;
let server: RunningHttpServer;
let shop: string;
let blue: string;
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
  dir = mkdtempSync(join(tmpdir(), 'engram-http-granular-'));
  mem = await openEngram({ db: join(dir, 'engram.db') });
  shop = (await mem.agents.add('shop-coder', { role: 'programmer', project: 'shop' })).token;
  blue = (await mem.agents.add('blue-coder', { role: 'programmer', project: 'blue' })).token;
  await mem.append(
    's1',
    [
      ...work('storage', T0),
      { kind: 'decision', ts: T0 + 600_000, content: 'Decision: the storage layer stays on SQLite; PostgreSQL only for teams.' },
      { kind: 'assistant', ts: T0 + 700_000, content: 'The checkout service depends on the ledger service. ERR_CARD_DECLINED was fixed in src/pay/charge.ts.' },
    ],
    { project: 'shop' },
  );
  await mem.append('b1', work('warehouse', T0), { project: 'blue' });
  const c = mem.consolidator({ llm: null });
  await c.consolidateSession('s1');
  await c.consolidateSession('b1');
  await mem.graphBuilder().buildFromSessions();
  server = await startHttpServer(mem, { port: 0, version: '0.0.0-test' });
});

afterAll(async () => {
  for (const c of clients.splice(0)) await c.close();
  await server?.close();
  await mem?.close();
  rmSync(dir, { recursive: true, force: true });
});

const http = async (token: string, body: unknown) => {
  const res = await fetch(`${server.url}/v1/recall`, { method: 'POST', headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, json: (await res.json()) as Record<string, any> };
};

it('POST /v1/recall with granularity reports the choice per query, with the derived layers and ids to expand', async () => {
  const r = await http(shop, { query: ['what did we decide about storage?', 'job failed with ERR_STORAGE_2', 'ERR_CARD_DECLINED'], granularity: 'auto' });
  expect(r.status).toBe(200);
  expect(r.json.results).toHaveLength(3);
  const [broad, exact, entity] = r.json.granular as Array<Record<string, any>>;
  expect(broad).toMatchObject({ query: 'what did we decide about storage?', granularity: 'summaries', requested: 'auto' });
  expect(broad!.summaries[0]).toMatchObject({ kind: 'summary', sessionIds: ['s1'] });
  expect(broad!.drillDown[0]).toBe(broad!.summaries[0].id);
  expect(exact).toMatchObject({ granularity: 'events', summaries: [], entities: [] });
  expect(entity).toMatchObject({ granularity: 'entities', entities: [{ entityKind: 'error', name: 'ERR_CARD_DECLINED' }] });
  // Drill down: the summary id and the entity id expand.
  const expand = await fetch(`${server.url}/v1/expand`, { method: 'POST', headers: { Authorization: `Bearer ${shop}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ id: broad!.drillDown[0] }) });
  expect(expand.status).toBe(200);
  const entityExpand = await fetch(`${server.url}/v1/memory/expand`, { method: 'POST', headers: { Authorization: `Bearer ${shop}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ entity: entity!.drillDown[0] }) });
  expect(entityExpand.status).toBe(200);

  // Without the field, the answer is as before; a bad value is a 400 naming the field.
  expect((await http(shop, { query: 'storage' })).json).not.toHaveProperty('granular');
  const bad = await http(shop, { query: 'storage', granularity: 'coarse' });
  expect(bad.status).toBe(400);
  expect(JSON.stringify(bad.json)).toContain('granularity');

  // Another project: no summary or entity of shop's session.
  const other = await http(blue, { query: ['what did we decide about storage?', 'ERR_CARD_DECLINED'], granularity: 'entities' });
  expect(other.json.granular[0].entities).toEqual([]);
  expect(other.json.granular[1].entities).toEqual([]);
  const otherBroad = await http(blue, { query: 'what did we decide about storage?', granularity: 'summaries' });
  expect(otherBroad.json.granular[0].summaries.every((s: any) => s.sessionIds.every((id: string) => id === 'b1'))).toBe(true);
});

it('MCP recall with granularity puts the derived layers first and reports the choice', async () => {
  const client = await connectMcpAs(server.url, shop, 's1', 'engram-granular-e2e');
  clients.push(client);
  const call = async (args: Record<string, unknown>) => (await client.callTool({ name: 'recall', arguments: args })) as CallToolResult;

  const broad = await call({ query: 'what have we learned about the storage job and the checkout service?', granularity: 'auto' });
  expect(broad.isError).toBeFalsy();
  const texts = (broad.content as Array<{ text: string }>).map((c) => c.text);
  expect(texts[0]!.split('\n')[0]).toBe('Granularity: summaries (auto: a broad question: summaries and entities first, raw evidence below)');
  expect(texts[0]).toContain('service:checkout ent_');
  expect(texts[0]).toMatch(/\[summary sum_\w+, session; expand sum_/);
  const g = (broad.structuredContent as { granular: Array<Record<string, any>> }).granular[0]!;
  expect(g.entities.map((e: any) => e.name)).toContain('checkout');

  const exact = await call({ query: '"stays on SQLite"', granularity: 'auto' });
  expect((exact.structuredContent as { granular: Array<Record<string, any>> }).granular[0]).toMatchObject({ granularity: 'events' });
  expect((await call({ query: 'storage' })).structuredContent).not.toHaveProperty('granular');

  const blueClient = await connectMcpAs(server.url, blue, 'b1', 'engram-granular-e2e-blue');
  clients.push(blueClient);
  const denied = (await blueClient.callTool({ name: 'recall', arguments: { query: 'ERR_CARD_DECLINED', granularity: 'auto' } })) as CallToolResult;
  expect((denied.structuredContent as { granular: Array<Record<string, any>> }).granular[0]).toMatchObject({ granularity: 'events', entities: [] });
});
