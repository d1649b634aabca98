import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { startHttpServer, type RunningHttpServer } from '../../src/interfaces/http/server.js';

let dir: string;
let mem: Engram;
let server: RunningHttpServer;
let token: string;
const clients: Client[] = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-mcp-http-'));
  mem = await openEngram({ db: join(dir, 'engram.db') });
  token = (await mem.agents.add('coder-1', { role: 'programmer' })).token;
  server = await startHttpServer(mem, { port: 0, version: '0.0.0-test' });
});

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  await server.close();
  await mem.close();
  rmSync(dir, { recursive: true, force: true });
});

async function connect(headers: Record<string, string>, path = '/mcp'): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${server.url}${path}`), { requestInit: { headers } });
  const client = new Client({ name: 'engram-http-e2e', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

function text(result: CallToolResult): string {
  return result.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
}

describe('MCP over Streamable HTTP (real SDK client)', () => {
  it('lists the core tools by default, every tool with X-Engram-Tools: all, and stores and recalls in the session named by the header', async () => {
    const core = await connect({ Authorization: `Bearer ${token}`, 'X-Engram-Session': 'fix-staging' });
    expect((await core.listTools()).tools.map((t) => t.name).sort()).toEqual(['append_events', 'expand', 'get_task_state', 'recall', 'update_task_state']);
    const client = await connect({ Authorization: `Bearer ${token}`, 'X-Engram-Session': 'fix-staging', 'X-Engram-Tools': 'all' });
    const { tools } = await client.listTools();
    // The bus tools act as the authenticated agent; less_issue_grant only for parents (mcp-bus.test.ts).
    expect(tools.map((t) => t.name).sort()).toEqual([
      'append_events',
      'delegate',
      'entities',
      'expand',
      'get_task_state',
      'graph_build',
      'hierarchy_recall',
      'hierarchy_tree',
      'impact',
      'less_deref_pointer',
      'less_put_engram',
      'less_query_engrams',
      'less_request_deref',
      'recall',
      'received_reports',
      'report',
      'update_task_state',
    ]);

    const appended = await call(client, 'append_events', {
      events: [
        { kind: 'tool_result', toolName: 'Bash', content: 'psql: error: connect ECONNREFUSED 10.0.4.12:5433', key: 'k1' },
        { kind: 'decision', content: 'Move staging to port 6543.', key: 'k2' },
      ],
    });
    expect(appended.isError).toBeFalsy();
    const stored = appended.structuredContent as { sessionId: string; events: Array<{ id: string; turn: number }> };
    expect(stored.sessionId).toBe('fix-staging');
    expect((await mem.getSession('fix-staging')).eventCount).toBe(2);

    const r = await call(client, 'recall', { query: 'ECONNREFUSED 10.0.4.12:5433', sessionOnly: true });
    expect(r.isError).toBeFalsy();
    expect(text(r)).toContain('ECONNREFUSED 10.0.4.12:5433');
    const hits = (r.structuredContent as { results: Array<{ hits: Array<{ eventId: string }> }> }).results[0]!.hits;
    expect(hits[0]!.eventId).toBe(stored.events[0]!.id);

    const invalid = await call(client, 'append_events', { events: [{ kind: 'shout', content: 'x' }] });
    expect(invalid.isError).toBe(true);
    expect(text(invalid)).toContain('events[0].kind');
    expect((await mem.getSession('fix-staging')).eventCount).toBe(2);
  });

  it("works for the agent's own session by default, or the one named by ?session=", async () => {
    const byDefault = await connect({ Authorization: `Bearer ${token}` });
    const a = await call(byDefault, 'append_events', { events: [{ kind: 'note', content: 'default session' }] });
    expect((a.structuredContent as { sessionId: string }).sessionId).toBe('coder-1');
    const byQuery = await connect({ Authorization: `Bearer ${token}` }, '/mcp?session=from-query');
    const b = await call(byQuery, 'get_task_state', {});
    expect((b.structuredContent as { sessionId: string }).sessionId).toBe('from-query');
  });

  it('refuses to connect without a valid token', async () => {
    await expect(connect({})).rejects.toMatchObject({ code: 401, message: expect.stringContaining('UNAUTHENTICATED') });
    await expect(connect({ Authorization: 'Bearer eng_wrong' })).rejects.toMatchObject({ code: 401 });
    await mem.agents.revoke('coder-1');
    await expect(connect({ Authorization: `Bearer ${token}` })).rejects.toMatchObject({ code: 401, message: expect.stringContaining('revoked') });
  });

  it('answers GET with 405 (no server-initiated stream) and a bad session name with 400', async () => {
    const get = await fetch(`${server.url}/mcp`, { headers: { Authorization: `Bearer ${token}`, Accept: 'text/event-stream' } });
    expect(get.status).toBe(405);
    await expect(connect({ Authorization: `Bearer ${token}`, 'X-Engram-Session': '../x' })).rejects.toMatchObject({
      code: 400,
      message: expect.stringContaining('"field":"session"'),
    });
  });
});
