import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { startHttpServer, type RunningHttpServer } from '../../src/interfaces/http/server.js';
import { commitFiles } from '../fixtures/git-repo.js';
import { httpAs, connectMcpAs } from '../fixtures/http-agents.js';

// The knowledge graph over HTTP (GET /v1/entities, POST /v1/memory/expand, POST /v1/graph/impact) and MCP (expand on
// an entity, impact, entities) on loopback, as two agents of two projects: each sees only its project's graph.
let dir: string;
let mem: Engram;
let server: RunningHttpServer;
let shop: string;
let blue: string;
let commit: string;
const clients: Client[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-http-knowledge-'));
  commit = commitFiles(join(dir, 'repo'), {
    'src/c.ts': 'export const leaf = 1;\n',
    'src/b.ts': "import { leaf } from './c.js';\nexport const mid = leaf + 1;\n",
    'src/a.ts': "import { mid } from './b.js';\nexport const top = mid;\n",
  });
  mem = await openEngram({ db: join(dir, 'engram.db') });
  shop = (await mem.agents.add('shop-coder', { role: 'programmer', project: 'shop' })).token;
  blue = (await mem.agents.add('blue-coder', { role: 'programmer', project: 'blue' })).token;
  await mem.append('pay', [
    { kind: 'user', content: 'The payment bug: ERR_CARD_DECLINED shows up in the checkout service and the ledger service.' },
    { kind: 'assistant', content: 'The checkout service depends on the ledger service. ERR_CARD_DECLINED was fixed in src/b.ts.' },
  ], { project: 'shop' });
  await mem.append('other', { kind: 'user', content: 'The warehouse service depends on the ledger service.' }, { project: 'blue' });
  await mem.graphBuilder().buildFromSessions();
  await mem.graphBuilder().buildFromRepository({ repository: join(dir, 'repo'), commit, project: 'shop' });
  server = await startHttpServer(mem, { port: 0, version: '0.0.0-test' });
});

afterAll(async () => {
  for (const c of clients.splice(0)) await c.close();
  await server?.close();
  await mem?.close();
  rmSync(dir, { recursive: true, force: true });
});

const http = (token: string, method: string, path: string, body?: unknown) => httpAs(server.url, token, method, path, body);

it('lists entities, expands one and walks impact over HTTP, within the caller project', async () => {
  const listed = await http(shop, 'GET', '/v1/entities?kinds=service,file&limit=50');
  expect(listed.status).toBe(200);
  const names = listed.json.entities.map((e: { kind: string; name: string }) => `${e.kind}:${e.name}`);
  expect(names).toEqual(expect.arrayContaining(['service:checkout', 'service:ledger', 'file:src/a.ts', 'file:src/b.ts', 'file:src/c.ts']));
  expect(names).not.toContain('service:warehouse');
  expect((await http(blue, 'GET', '/v1/entities?kinds=service')).json.entities.map((e: { name: string }) => e.name).sort()).toEqual(['ledger', 'warehouse']);
  expect((await http(shop, 'GET', '/v1/entities?kinds=gadget')).status).toBe(400);

  const expanded = await http(shop, 'POST', '/v1/memory/expand', { entity: 'error:ERR_CARD_DECLINED', question: 'which services did the payment bug touch?', maxTokens: 400 });
  expect(expanded.status).toBe(200);
  expect(expanded.json.text).toMatch(/## mentions\n(- .*\n)*- service:checkout \(0\.50\) \[evt_/);
  expect(expanded.json.text).toContain('service:ledger');
  expect(expanded.json.tokens).toBeLessThanOrEqual(400);
  expect((await http(blue, 'POST', '/v1/memory/expand', { entity: 'error:ERR_CARD_DECLINED' })).status).toBe(404);
  expect((await http(shop, 'POST', '/v1/memory/expand', {})).json.error.data.field).toBe('entity');
  const eventId = (await mem.listEvents({ sessionId: 'pay' as never, limit: 1 }))[0]!.id;
  expect((await http(shop, 'POST', '/v1/memory/expand', { id: eventId })).json.text).toContain('ERR_CARD_DECLINED');

  const impact = await http(shop, 'POST', '/v1/graph/impact', { entity: 'file:src/c.ts', commit });
  expect(impact.status).toBe(200);
  expect(impact.json.groups.map((g: { label: string; entities: { name: string }[] }) => [g.label, g.entities.map((e) => e.name)])).toEqual([
    ['will break', ['src/b.ts']],
    ['likely affected', ['src/a.ts']],
  ]);
  expect(impact.json.groups[0].entities[0].cites[0]).toBe(`repo:src/b.ts#L1-L1@${commit}`);
  const learned = await http(shop, 'POST', '/v1/graph/impact', { entity: 'service:ledger' });
  expect(learned.json.groups[0].entities.map((e: { name: string }) => e.name)).toEqual(['checkout']);
  expect((await http(blue, 'POST', '/v1/graph/impact', { entity: 'file:src/c.ts' })).status).toBe(404);
  expect((await http(shop, 'POST', '/v1/graph/impact', { entity: 'file:src/c.ts', maxDepth: 9 })).json.error.data.field).toBe('maxDepth');

  const openapi = (await http(shop, 'GET', '/v1/openapi.json')).json as { paths: Record<string, unknown> };
  expect(Object.keys(openapi.paths)).toEqual(expect.arrayContaining(['/v1/entities', '/v1/memory/expand', '/v1/graph/impact']));
});

it('answers the MCP tools expand (entities too), impact and entities', async () => {
  const client = await connectMcpAs(server.url, shop, 'pay', 'engram-knowledge-e2e');
  clients.push(client);
  const call = async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

  const expanded = await call('expand', { id: 'service:ledger', aspect: 'depended on by' });
  expect(expanded.isError).toBeFalsy();
  expect(text(expanded)).toMatch(/## depended on by\n- service:checkout \(0\.80\) \[evt_/);
  const impact = await call('impact', { entity: 'file:src/c.ts', maxDepth: 1 });
  expect(text(impact)).toContain('## depth 1: will break (1)\n- file:src/b.ts (1.00, imports) [repo:src/b.ts#L1-L1@');
  const listed = await call('entities', { kinds: ['error'] });
  expect(text(listed)).toContain('error:ERR_CARD_DECLINED');
  const hidden = await call('impact', { entity: 'service:warehouse' });
  expect(hidden.isError).toBe(true);
});
