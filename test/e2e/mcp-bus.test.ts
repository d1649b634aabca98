import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTempRepo, numberedLines, type TempRepo } from '../../src/bus/resolvers/test-support.js';
import { openEngram, type Engram } from '../../src/engine.js';
import { startHttpServer, type RunningHttpServer } from '../../src/interfaces/http/server.js';
import { riskEngram } from '../fixtures/engrams.js';

/**
 * The LESS tools (less_put_engram, less_query_engrams, less_request_deref, less_deref_pointer, less_issue_grant)
 * through the real MCP SDK client: over Streamable HTTP, where the agent is the one the bearer token belongs to,
 * and over stdio, where `engram mcp --agent NAME` names it.
 */
const BIN = resolve('bin/engram.js');
const HIERARCHY_TOOLS = ['delegate', 'hierarchy_recall', 'hierarchy_tree', 'received_reports', 'report'];
const BASE_TOOLS = ['append_events', 'entities', 'expand', 'get_task_state', 'graph_build', 'impact', 'recall', 'update_task_state', ...HIERARCHY_TOOLS];
const LESS_TOOLS = ['less_deref_pointer', 'less_put_engram', 'less_query_engrams', 'less_request_deref'];

let repo: TempRepo;
let sha: string;
beforeAll(() => {
  repo = createTempRepo();
  sha = repo.commit({ 'services/gateway/routes.py': numberedLines(300, 'routes'), 'services/ledger/reservation.py': numberedLines(220, 'ledger') });
});
afterAll(() => repo.remove());
const span = (path: string, a: number, b: number) => `repo:${path}#L${a}-L${b}@${sha}`;

let dir: string;
let mem: Engram;
const tokens: Record<string, string> = {};
const ids: Record<string, string> = {};
const clients: Client[] = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-mcp-bus-'));
  mem = await openEngram({ db: join(dir, 'engram.db'), bus: { repoRoot: repo.dir, limits: { maxEngramsPerAgentPerMinute: 4 } } });
  for (const [name, options] of [
    ['boss', { role: 'architect', project: 'shop' }],
    ['manager', { role: 'manager', parent: 'boss', project: 'shop' }],
    ['coder', { role: 'programmer', parent: 'manager', project: 'shop' }],
    ['peer', { role: 'programmer', parent: 'manager', project: 'shop' }],
  ] as const) {
    const { agent, token } = await mem.agents.add(name, options);
    tokens[name] = token;
    ids[name] = agent.id;
  }
});

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  await mem.close();
  rmSync(dir, { recursive: true, force: true });
});

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  try {
    return (await client.callTool({ name, arguments: args })) as CallToolResult;
  } catch (err) {
    // An unknown tool is a protocol error in some SDK versions and an error result in others.
    return { isError: true, content: [{ type: 'text', text: String(err) }] };
  }
}

function text(result: CallToolResult): string {
  return result.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
}


describe('LESS tools over Streamable HTTP', () => {
  let server: RunningHttpServer;
  beforeEach(async () => {
    server = await startHttpServer(mem, { port: 0, version: '0.0.0-test' });
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.close();
    await server.close();
  });

  async function connect(agent: string, headers: Record<string, string> = {}): Promise<Client> {
    const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${tokens[agent]}`, 'X-Engram-Tools': 'all', ...headers } },
    });
    const client = new Client({ name: `engram-bus-e2e-${agent}`, version: '1.0.0' });
    await client.connect(transport);
    clients.push(client);
    return client;
  }

  it('lists less_issue_grant only to agents with children, and the engram tool with the v0.1 schema', async () => {
    const coder = await connect('coder');
    const coderTools = (await coder.listTools()).tools;
    expect(coderTools.map((t) => t.name).sort()).toEqual([...BASE_TOOLS, ...LESS_TOOLS].sort());
    const put = coderTools.find((t) => t.name === 'less_put_engram')!;
    expect(put.inputSchema.required).toEqual(['kind', 'claim', 'pointers', 'confidence', 'ttl', 'scope']);
    expect((put.inputSchema.properties as Record<string, { enum?: string[] }>).kind!.enum).toContain('risk');
    expect(put.description).toContain('Pointer-first');
    expect(coderTools.find((t) => t.name === 'less_deref_pointer')!.description).toContain('less_request_deref');
    const manager = await connect('manager');
    expect((await manager.listTools()).tools.map((t) => t.name)).toContain('less_issue_grant');
    const refused = await call(coder, 'less_issue_grant', { child: 'peer', pointer: span('services/ledger/reservation.py', 1, 5), cap_tokens: 100 });
    expect(refused.isError).toBe(true);
  });

  it('shares engrams as the authenticated agent and finds them from another agent, quoted', async () => {
    const coder = await connect('coder');
    const put = await call(coder, 'less_put_engram', riskEngram('Reservation in the ledger is not atomic under retries.', [span('services/ledger/reservation.py', 1, 40)], { tags: ['service:ledger'] }));
    expect(put.isError).toBeFalsy();
    const stored = (put.structuredContent as { status: string; engram: { id: string; provenance: { created_by: string } } }).engram;
    expect(stored.provenance.created_by).toBe(ids.coder);
    expect(text(put)).toContain(stored.id);

    const impostor = await call(coder, 'less_put_engram', riskEngram('As the manager.', [span('README.md', 1, 1)], { provenance: { created_by: ids.manager } }));
    expect(impostor.isError).toBe(true);
    expect(text(impostor)).toMatch(/^SCOPE_DENIED: /);
    expect(text(impostor)).toContain('Leave provenance out');

    const peer = await connect('peer');
    const found = await call(peer, 'less_query_engrams', { text: 'is the ledger reservation atomic?', keys: ['service:ledger'], pointers: [span('services/ledger/reservation.py', 10, 20)] });
    expect(found.isError).toBeFalsy();
    expect(text(found)).toContain(`${stored.id} (risk, project, confidence 0.8; by ${ids.coder})`);
    expect(text(found)).toContain('> Reservation in the ledger is not atomic under retries.');
    expect((found.structuredContent as { engrams: unknown[] }).engrams).toHaveLength(1);
    const badKind = await call(peer, 'less_query_engrams', { text: 'ledger', kinds: ['rumour'] });
    expect(badKind.isError).toBe(true);
    expect(text(badKind)).toContain('Fix the argument `kinds`');

    const wide = await call(coder, 'less_put_engram', riskEngram('Org-wide claim.', [span('services/gateway/routes.py', 1, 2)], { scope: 'org' }));
    expect(text(wide)).toMatch(/^SCOPE_DENIED: /);
    expect(text(wide)).toContain('scope project or run');
  });

  it('keeps run-scoped engrams in the run named by X-Engram-Run', async () => {
    const inRun = await connect('coder', { 'X-Engram-Run': 'sprint-7' });
    expect((await call(inRun, 'less_put_engram', riskEngram('Scratch note for this run.', [span('services/gateway/routes.py', 5, 6)], { scope: 'run', kind: 'fact' }))).isError).toBeFalsy();
    const sameRun = await connect('peer', { 'X-Engram-Run': 'sprint-7' });
    expect((await call(sameRun, 'less_query_engrams', { text: 'scratch note' })).structuredContent).toMatchObject({ engrams: [{ run: 'sprint-7' }] });
    const otherRun = await connect('peer');
    expect((await call(otherRun, 'less_query_engrams', { text: 'scratch note' })).structuredContent).toMatchObject({ engrams: [] });
  });

  it('tells the writer to slow down past the engram rate limit', async () => {
    const coder = await connect('coder');
    for (let i = 0; i < 4; i++) expect((await call(coder, 'less_put_engram', riskEngram(`Finding ${i} about routes.`, [span('services/gateway/routes.py', i + 1, i + 2)]))).isError).toBeFalsy();
    const fifth = await call(coder, 'less_put_engram', riskEngram('One too many.', [span('services/gateway/routes.py', 50, 51)]));
    expect(fifth.isError).toBe(true);
    expect(text(fifth)).toMatch(/^BUDGET_EXCEEDED: /);
    expect(text(fifth)).toContain('wait a minute');
  });

  it('derefs within the budget, says how to ask for a grant after DEREF_DENIED, and a grant from the parent pays the next one', async () => {
    const coder = await connect('coder');
    const first = await call(coder, 'less_deref_pointer', { pointer: span('services/gateway/routes.py', 1, 3), max_tokens: 100 });
    expect(first.isError).toBeFalsy();
    const firstOut = first.structuredContent as { content_digest: string; excerpt: string; usage: { counts: { repo: number } } };
    expect(firstOut.content_digest).toMatch(/^[0-9a-f]{64}$/);
    expect(text(first)).toContain(`content_digest ${firstOut.content_digest}`);
    expect(text(first)).toContain('Budget of turn 0: repo 1/3');
    expect(text(first)).toContain('> routes 1\n> routes 2\n> routes 3');

    const target = span('services/ledger/reservation.py', 1, 20);
    const early = await call(coder, 'less_request_deref', { pointer: target, reason: 'Need to confirm reservation atomicity.' });
    expect(text(early)).toContain('No grant needed: you have 2 more repo deref(s)');

    for (const [a, b] of [[10, 12], [20, 22]]) expect((await call(coder, 'less_deref_pointer', { pointer: { type: 'repo', ref: span('services/gateway/routes.py', a!, b!) } })).isError).toBeFalsy();
    const denied = await call(coder, 'less_deref_pointer', { pointer: target });
    expect(denied.isError).toBe(true);
    expect(text(denied)).toMatch(/^DEREF_DENIED: /);
    expect(text(denied)).toContain('less_request_deref');
    expect(denied.structuredContent).toMatchObject({ error: { code: 'DEREF_DENIED', data: { reason: 'count' } } });

    const asked = await call(coder, 'less_request_deref', { pointer: target, reason: 'Need to confirm reservation atomicity.' });
    expect(asked.isError).toBeFalsy();
    expect(text(asked)).toContain('Your parent manager (manager) grants derefs');
    expect(text(asked)).toContain(`DEREF_REQUESTS:\n  - pointer: { type: "repo", ref: "${target}" }\n    reason: "Need to confirm reservation atomicity."`);
    const requests = await mem.bus.events({ types: ['less.deref.grant_request'] });
    expect(requests.map((e) => e.data)).toMatchObject([
      { pointer: target, remaining: 2, parentId: ids.manager },
      { pointer: target, remaining: 0, parentId: ids.manager, reason: 'Need to confirm reservation atomicity.' },
    ]);

    const boss = await connect('boss');
    const rootAsks = await call(boss, 'less_request_deref', { pointer: target, reason: 'Curious.' });
    expect(text(rootAsks)).toMatch(/^FORBIDDEN: boss has no parent agent/);
    const notParent = await call(boss, 'less_issue_grant', { child: 'coder', pointer: target, cap_tokens: 300 });
    expect(text(notParent)).toMatch(/^FORBIDDEN: /);
    const manager = await connect('manager');
    const granted = await call(manager, 'less_issue_grant', { child: 'coder', pointer: target, cap_tokens: 300 });
    expect(granted.isError).toBeFalsy();
    const token = (granted.structuredContent as { budget_token: string }).budget_token;
    expect(text(granted)).toContain(`GRANTS:\n  - budget_token: "${token}"`);

    const paid = await call(coder, 'less_deref_pointer', { pointer: target, budget_token: token });
    expect(paid.isError).toBeFalsy();
    expect(text(paid)).toContain('paid by grant');
    expect(text(paid)).toContain('> ledger 1');
    const replay = await call(coder, 'less_deref_pointer', { pointer: target, budget_token: token });
    expect(text(replay)).toMatch(/^DEREF_DENIED: /);
    expect(text(replay)).toContain('single-use');
  });

  it("serves the parent's SharedBriefMicro as a resource", async () => {
    const coder = await connect('coder');
    await call(coder, 'less_put_engram', riskEngram('Gateway timeouts are 30 s.', [span('services/gateway/routes.py', 1, 2)], { kind: 'fact' }));
    const manager = await connect('manager');
    expect((await manager.listResources()).resources.map((r) => r.uri)).toContain('engram://bus/brief');
    const read = await manager.readResource({ uri: 'engram://bus/brief' });
    const brief = JSON.parse((read.contents[0] as { text: string }).text) as { run: string; lines: string[] };
    expect(brief.run).toBe('default');
    expect(brief.lines.join('\n')).toContain('Gateway timeouts are 30 s.');
  });
});

describe('LESS tools over stdio (engram mcp --agent)', () => {
  function serverEnv(): Record<string, string> {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
    return { ...env, ENGRAM_DB: '', ENGRAM_PG_URL: '', ENGRAM_SESSION: '', ENGRAM_AGENT: '', ENGRAM_RUN: '', ENGRAM_REPO: '' };
  }

  async function stdio(extra: string[]): Promise<Client> {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, 'mcp', '--db', join(dir, 'engram.db'), '--session', 's1', '--repo', repo.dir, '--tools', 'all', ...extra],
      env: serverEnv(),
      cwd: dir,
      stderr: 'pipe',
    });
    const client = new Client({ name: 'engram-bus-stdio-e2e', version: '1.0.0' });
    await client.connect(transport);
    clients.push(client);
    return client;
  }

  it('acts as the --agent it was started with', async () => {
    const coder = await stdio(['--agent', 'coder']);
    expect((await coder.listTools()).tools.map((t) => t.name).sort()).toEqual([...BASE_TOOLS, ...LESS_TOOLS].sort());
    const put = await call(coder, 'less_put_engram', riskEngram('Gateway retries three times.', [span('services/gateway/routes.py', 7, 9)], { kind: 'fact' }));
    expect(put.isError).toBeFalsy();
    const id = (put.structuredContent as { engram: { id: string } }).engram.id;
    expect((await mem.bus.engrams.get(await mem.busAgent('manager'), id, 'default')).engram.provenance.created_by).toBe(ids.coder);
    const deref = await call(coder, 'less_deref_pointer', { pointer: span('services/gateway/routes.py', 7, 9) });
    expect(deref.isError).toBeFalsy();
    expect(text(deref)).toContain('> routes 7');
    expect((await mem.bus.enforcer.usage(await mem.busAgent('coder'))).usage.counts.repo).toBe(1);

    const manager = await stdio(['--agent', 'manager']);
    expect((await manager.listTools()).tools.map((t) => t.name)).toContain('less_issue_grant');
  });

  it('does not list the less_* tools without --agent (they act as an agent), and the other tools work', async () => {
    const anonymous = await stdio([]);
    expect((await anonymous.listTools()).tools.map((t) => t.name).sort()).toEqual([...BASE_TOOLS].sort());
    expect((await call(anonymous, 'get_task_state', {})).isError).toBeFalsy();
  });
});
