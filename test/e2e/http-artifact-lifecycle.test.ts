import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { startHttpServer, type RunningHttpServer } from '../../src/interfaces/http/server.js';
import { runArtifactLifecycle } from '../../src/memory/artifact-lifecycle.js';
import { sha256Hex } from '../../src/memory/artifact-codec.js';
import { httpAs, connectMcpAs } from '../fixtures/http-agents.js';

// Cold artifacts over HTTP (POST /v1/expand, POST /v1/pointer/deref, GET /v1/artifacts/stats) and MCP (expand) on
// loopback: every read path rehydrates them, byte-identical, within the trust model.
let dir: string;
let mem: Engram;
let server: RunningHttpServer;
let shop: string;
let blue: string;
let admin: string;
let artifactId: string;
const clients: Client[] = [];
const REPORT = JSON.stringify({ orders: Array.from({ length: 150 }, (_, i) => ({ id: `ord_${i}`, total: i * 3, state: i % 9 === 0 ? 'refunded' : 'paid' })) });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-http-artifacts-'));
  mem = await openEngram({ db: join(dir, 'engram.db') });
  shop = (await mem.agents.add('shop-coder', { role: 'programmer', project: 'shop' })).token;
  blue = (await mem.agents.add('blue-coder', { role: 'programmer', project: 'blue' })).token;
  admin = (await mem.agents.add('root', { role: 'programmer', isAdmin: true })).token;
  const out = await mem.append('s1', [{ kind: 'tool_result', toolName: 'Orders', content: REPORT }], { project: 'shop' });
  artifactId = out[0]!.record.artifact!.id;
  expect((await runArtifactLifecycle(mem.store, { olderThanMs: 0, nowMs: Date.now() + 1000 })).moved).toBe(1);
  server = await startHttpServer(mem, { port: 0, version: '0.0.0-test' });
});

afterAll(async () => {
  for (const c of clients.splice(0)) await c.close();
  await server?.close();
  await mem?.close();
  rmSync(dir, { recursive: true, force: true });
});

const http = (token: string, method: string, path: string, body?: unknown) => httpAs(server.url, token, method, path, body);

it('serves a cold artifact over HTTP to a reader of its session, and counts the tiers for admins', async () => {
  const expanded = await http(shop, 'POST', '/v1/expand', { id: artifactId, maxTokens: 20_000 });
  expect(expanded.status).toBe(200);
  expect(expanded.json.text).toContain(REPORT);
  expect((await http(blue, 'POST', '/v1/expand', { id: artifactId })).status).toBe(404);

  const deref = await http(shop, 'POST', '/v1/pointer/deref', { pointer: `artifact:${artifactId}`, max_tokens: 16_000 });
  expect(deref.status).toBe(200);
  expect(deref.json.span_digest).toBe(sha256Hex(REPORT));
  expect(REPORT.startsWith(deref.json.excerpt.slice(0, 1000))).toBe(true);

  expect((await http(shop, 'GET', '/v1/artifacts/stats')).status).toBe(403);
  const stats = await http(admin, 'GET', '/v1/artifacts/stats');
  expect(stats.status).toBe(200);
  expect(stats.json).toMatchObject({ hot: 0, cold: 1, coldStoredBytes: expect.any(Number), coldBytesBefore: expect.any(Number) });
  expect(stats.json.coldStoredBytes).toBeLessThan(stats.json.coldBytesBefore);
  const doc = (await http(shop, 'GET', '/v1/openapi.json')).json as { paths: Record<string, unknown> };
  expect(Object.keys(doc.paths)).toContain('/v1/artifacts/stats');
});

it('MCP expand rehydrates a cold artifact', async () => {
  const client = await connectMcpAs(server.url, shop, 's1', 'engram-artifacts-e2e');
  clients.push(client);
  const r = (await client.callTool({ name: 'expand', arguments: { id: artifactId, maxTokens: 20_000 } })) as CallToolResult;
  expect(r.isError).toBeFalsy();
  expect((r.content as Array<{ text: string }>).map((c) => c.text).join('\n')).toContain(REPORT);
});
