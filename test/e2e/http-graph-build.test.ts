import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { startHttpServer, type RunningHttpServer } from '../../src/interfaces/http/server.js';
import { agentPrincipal } from '../../src/model/access.js';
import { httpAs, connectMcpAs } from '../fixtures/http-agents.js';

// Building the knowledge graph over HTTP (POST /v1/graph/build) and MCP (graph_build) on loopback: an agent builds over
// the sessions it may read only, an admin over every session; the build is incremental.
let dir: string;
let mem: Engram;
let server: RunningHttpServer;
let shop: string;
let blue: string;
let admin: string;
const clients: Client[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-http-graph-build-'));
  mem = await openEngram({ db: join(dir, 'engram.db') });
  shop = (await mem.agents.add('shop-coder', { role: 'programmer', project: 'shop' })).token;
  blue = (await mem.agents.add('blue-coder', { role: 'programmer', project: 'blue' })).token;
  admin = (await mem.agents.add('root', { role: 'programmer', isAdmin: true })).token;
  await mem.append('pay', [
    { kind: 'user', content: 'The payment bug: ERR_CARD_DECLINED shows up in the checkout service.' },
    { kind: 'assistant', content: 'The checkout service depends on the ledger service.' },
  ], { project: 'shop' });
  await mem.append('stock', { kind: 'user', content: 'The warehouse service depends on the inventory service.' }, { project: 'blue' });
  await mem.append('ops', { kind: 'user', content: 'The billing service calls the tax service.' }, { project: 'ops' });
  server = await startHttpServer(mem, { port: 0, version: '0.0.0-test' });
});

afterAll(async () => {
  for (const c of clients.splice(0)) await c.close();
  await server?.close();
  await mem?.close();
  rmSync(dir, { recursive: true, force: true });
});

const http = (token: string, method: string, path: string, body?: unknown) => httpAs(server.url, token, method, path, body);

const services = async () => (await mem.knowledge.list({ kinds: ['service'] })).map((e) => e.name).sort();

it('builds over the sessions the agent may read only, incrementally; admins build every session', async () => {
  // A session of another project, named: 404 as for any read of it, and nothing is built.
  const refused = await http(shop, 'POST', '/v1/graph/build', { sessionIds: ['pay', 'stock'] });
  expect(refused.status).toBe(404);
  expect(await services()).toEqual([]);
  expect((await http(shop, 'POST', '/v1/graph/build', { sessionIds: [] })).json.error.data.field).toBe('sessionIds');
  expect((await http(shop, 'POST', '/v1/graph/build', { project: 'x' })).status).toBe(400);

  const built = await http(shop, 'POST', '/v1/graph/build', {});
  expect(built.status).toBe(200);
  expect(built.json).toMatchObject({ sessions: 1, events: 2, isComplete: true });
  expect(built.json.written.entities).toBeGreaterThan(0);
  expect(await services()).toEqual(['checkout', 'ledger']);
  // What it built is its own to read.
  const impact = await http(shop, 'POST', '/v1/graph/impact', { entity: 'service:ledger' });
  expect(impact.json.groups[0].entities.map((e: { name: string }) => e.name)).toEqual(['checkout']);
  expect((await http(blue, 'POST', '/v1/graph/impact', { entity: 'service:ledger' })).status).toBe(404);
  // Incremental: nothing new to read.
  expect((await http(shop, 'POST', '/v1/graph/build', {})).json).toMatchObject({ sessions: 0, events: 0 });
  await mem.append('pay', { kind: 'assistant', content: 'ERR_CARD_DECLINED was fixed by src/retry.ts.' }, { project: 'shop' });
  expect((await http(shop, 'POST', '/v1/graph/build', { sessionIds: ['pay'] })).json).toMatchObject({ sessions: 1, events: 1 });

  expect((await http(blue, 'POST', '/v1/graph/build', {})).json).toMatchObject({ sessions: 1, events: 1 });
  expect(await services()).toEqual(['checkout', 'inventory', 'ledger', 'warehouse']);
  const all = await http(admin, 'POST', '/v1/graph/build', {});
  expect(all.json).toMatchObject({ sessions: 1, events: 1 });
  expect(await services()).toEqual(['billing', 'checkout', 'inventory', 'ledger', 'tax', 'warehouse']);

  const openapi = (await http(shop, 'GET', '/v1/openapi.json')).json as { paths: Record<string, Record<string, { operationId: string }>> };
  expect(openapi.paths['/v1/graph/build']?.post?.operationId).toBe('graphBuild');
});

it('answers the MCP tool graph_build within the agent project', async () => {
  await mem.append('stock', { kind: 'assistant', content: 'The inventory service calls the pricing service.' }, { project: 'blue' });
  await mem.append('pay', { kind: 'assistant', content: 'The checkout service calls the fraud service.' }, { project: 'shop' });
  const client = await connectMcpAs(server.url, blue, 'stock', 'engram-graph-build-e2e');
  clients.push(client);
  const call = async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

  const hidden = await call('graph_build', { sessionIds: ['pay'] });
  expect(hidden.isError).toBe(true);
  const built = await call('graph_build', {});
  expect(built.isError).toBeFalsy();
  expect(text(built)).toMatch(/^1 new events of 1 sessions read; \d+ entities/);
  expect(built.structuredContent).toMatchObject({ sessions: 1, events: 1 });
  expect(await services()).toContain('pricing');
  // The shop session's new event was not read by blue's build.
  expect(await services()).not.toContain('fraud');
  const impact = await call('impact', { entity: 'service:pricing' });
  expect(text(impact)).toContain('service:inventory');
});

it('bounds the events one request reads; the next request goes on from the cursors', async () => {
  const agent = await mem.agents.add('late-coder', { role: 'programmer', project: 'late' });
  const view = mem.viewAs(agentPrincipal(agent.agent));
  await mem.append('late-a', Array.from({ length: 5 }, (_, i) => ({ kind: 'user' as const, content: `Step ${i}: the audit service calls the vault service.` })), { project: 'late' });
  await mem.append('late-b', { kind: 'user', content: 'The vault service depends on the kms service.' }, { project: 'late' });
  const steps = [];
  for (let i = 0; i < 5; i++) {
    const r = await view.buildGraph({ maxEvents: 2 });
    steps.push([r.events, r.isComplete]);
    if (r.isComplete) break;
  }
  // 6 events, 2 at a time; the third call reads the last of late-a and late-b's one, then nothing is left.
  expect(steps).toEqual([[2, false], [2, false], [2, true]]);
  expect((await view.buildGraph({ maxEvents: 2 })).events).toBe(0);
  expect((await view.knowledge.list({ kinds: ['service'] })).map((e) => e.name).sort()).toEqual(['audit', 'kms', 'vault']);
});
