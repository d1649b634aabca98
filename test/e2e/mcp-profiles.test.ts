import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openEngram } from '../../src/engine.js';
import { startHttpServer } from '../../src/interfaces/http/server.js';

/**
 * The MCP tool profiles (`engram mcp --tools`, `X-Engram-Tools` / `?tools=` on `/mcp`) through the real SDK client:
 * which tools each lists, and the size of the `tools/list` answer an agent host puts into every model call.
 */

const BIN = resolve('bin/engram.js');
const CORE = ['append_events', 'expand', 'get_task_state', 'recall', 'update_task_state'];
const HIERARCHY = ['delegate', 'hierarchy_recall', 'hierarchy_tree', 'received_reports', 'report'];
const LESS = ['less_deref_pointer', 'less_put_engram', 'less_query_engrams', 'less_request_deref'];
const GRAPH = ['entities', 'graph_build', 'impact'];
/** The ceiling for the default profile's `tools/list` result, as JSON. */
const MAX_CORE_LIST_BYTES = 8 * 1024;

let dir: string;
let db: string;
const clients: Client[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-mcp-profiles-'));
  db = join(dir, 'engram.db');
  const mem = await openEngram({ db });
  await mem.agents.add('coder', { role: 'programmer' });
  await mem.close();
});
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

function serverEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  return { ...env, ENGRAM_DB: '', ENGRAM_PG_URL: '', ENGRAM_SESSION: '', ENGRAM_AGENT: '', ENGRAM_MCP_TOOLS: '', ...extra };
}

async function stdio(args: string[], env: Record<string, string> = {}): Promise<Client> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, 'mcp', '--db', db, '--session', 's1', ...args], env: serverEnv(env), cwd: dir, stderr: 'pipe' });
  const client = new Client({ name: 'engram-profiles-e2e', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return client;
}

async function listed(client: Client): Promise<{ names: string[]; bytes: number }> {
  const result = await client.listTools();
  return { names: result.tools.map((t) => t.name).sort(), bytes: Buffer.byteLength(JSON.stringify(result)) };
}

describe('engram mcp --tools (stdio)', () => {
  it('lists the core profile by default, within 8 KB of JSON, and every core tool answers', async () => {
    const client = await stdio([]);
    const { names, bytes } = await listed(client);
    expect(names).toEqual(CORE);
    expect(bytes).toBeLessThanOrEqual(MAX_CORE_LIST_BYTES);
    const card = await client.callTool({ name: 'get_task_state', arguments: {} });
    expect(card.isError).toBeFalsy();
  });

  it('adds the hierarchy tools with team, and the less_* tools only with an agent', async () => {
    expect((await listed(await stdio(['--tools', 'team']))).names).toEqual([...CORE, ...HIERARCHY].sort());
    expect((await listed(await stdio(['--tools', 'team', '--agent', 'coder']))).names).toEqual([...CORE, ...HIERARCHY, ...LESS].sort());
  });

  it('adds the knowledge tools with graph; all and team,graph list everything', async () => {
    const graph = await listed(await stdio(['--tools', 'graph']));
    expect(graph.names).toEqual([...CORE, ...GRAPH].sort());
    const all = await listed(await stdio(['--tools', 'all', '--agent', 'coder']));
    expect(all.names).toEqual([...CORE, ...HIERARCHY, ...LESS, ...GRAPH].sort());
    expect((await listed(await stdio(['--tools', 'team,graph', '--agent', 'coder']))).names).toEqual(all.names);
    // Every profile beyond core costs more: the reason core is the default.
    const core = await listed(await stdio([]));
    expect(graph.bytes).toBeGreaterThan(core.bytes);
    expect(all.bytes).toBeGreaterThan(graph.bytes);
  });

  it('reads the profile from ENGRAM_MCP_TOOLS when --tools is not given', async () => {
    expect((await listed(await stdio([], { ENGRAM_MCP_TOOLS: 'graph' }))).names).toEqual([...CORE, ...GRAPH].sort());
  });

  it('refuses an unknown profile with exit 2, naming --tools and the profiles, with nothing on stdout', () => {
    const r = spawnSync(process.execPath, [BIN, 'mcp', '--db', db, '--session', 's1', '--tools', 'everything'], { env: serverEnv(), cwd: dir, encoding: 'utf8', input: '' });
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('tools: unknown tool profile "everything"; expected core, team, graph, all');
  });
});

describe('/mcp tool profiles (Streamable HTTP)', () => {
  it('lists the profile of ?tools= and refuses an unknown one with 400', async () => {
    const mem = await openEngram({ db: join(dir, 'http.db') });
    const token = (await mem.agents.add('planner', { role: 'planner' })).token;
    const server = await startHttpServer(mem, { port: 0, version: '0.0.0-test' });
    try {
      const connect = async (query: string) => {
        const client = new Client({ name: 'engram-profiles-http', version: '1.0.0' });
        await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp${query}`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
        clients.push(client);
        return client;
      };
      expect((await listed(await connect(''))).names).toEqual(CORE);
      // Over HTTP the token names the agent, so team lists the bus tools.
      expect((await listed(await connect('?tools=team'))).names).toEqual([...CORE, ...HIERARCHY, ...LESS].sort());
      const bad = await fetch(`${server.url}/mcp?tools=some`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(bad.status).toBe(400);
      expect(JSON.stringify(await bad.json())).toContain('unknown tool profile');
    } finally {
      for (const c of clients.splice(0)) await c.close();
      await server.close();
      await mem.close();
    }
  });
});
