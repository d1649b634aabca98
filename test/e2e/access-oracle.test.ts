import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runConsolidation } from '../../src/consolidate/consolidation-run.js';
import { openEngram, type Engram } from '../../src/engine.js';
import { startHttpServer, type RunningHttpServer } from '../../src/interfaces/http/server.js';
import type { EventInput } from '../../src/model/event.js';
import { BACKEND_HARNESSES } from '../contract/harnesses.js';
import type { BackendHarness } from '../contract/storage-contract.js';

/**
 * Issue 31 item 4, end to end on every backend through real HTTP and the real MCP SDK client: no ids of what the
 * caller may not read (summaries), no existence oracle (every route of the OpenAPI document and every MCP tool
 * answers another project's session exactly as a session nobody holds), no squatting (another project cannot
 * take an agent's default session or a delegated child's id), and a shared session's recall log shows each
 * project only its own queries. Agents: alice and bob (project shop), eve (project other), an admin.
 */

type Actor = 'alice' | 'bob' | 'eve' | 'admin';
const T0 = Date.UTC(2026, 2, 3, 9);

function work(topic: string, startMs: number): EventInput[] {
  const out: EventInput[] = [];
  for (let i = 0; i < 6; i++) {
    out.push({ kind: 'user', ts: startMs + i * 60_000, content: `Step ${i}: check why the ${topic} job fails and fix it, please.` });
    out.push({ kind: 'assistant', ts: startMs + i * 60_000 + 30_000, content: `The ${topic} job failed with ERR_${topic.toUpperCase()}_${i}; I fixed src/${topic}/job${i}.ts.` });
  }
  return out;
}

const PACKET = { subtask_id: 't1', objective: 'Find why reserve() retries twice.', acceptance_criteria: ['The cause is cited'] };

/** A request of one operation on session `s` (the routes of the OpenAPI document that name a session). */
type Probe = (s: string) => { method: string; path: string; body?: unknown };
const PROBES: Record<string, Probe> = {
  appendEvents: (s) => ({ method: 'POST', path: '/v1/events', body: { sessionId: s, events: [{ kind: 'note', content: 'probe note' }] } }),
  getSession: (s) => ({ method: 'GET', path: `/v1/sessions/${s}` }),
  listEvents: (s) => ({ method: 'GET', path: `/v1/sessions/${s}/events` }),
  getContextPack: (s) => ({ method: 'GET', path: `/v1/sessions/${s}/context?window=8000` }),
  getTaskState: (s) => ({ method: 'GET', path: `/v1/sessions/${s}/task-state` }),
  updateTaskState: (s) => ({ method: 'PUT', path: `/v1/sessions/${s}/task-state`, body: { update: { phase: 'testing' } } }),
  recall: (s) => ({ method: 'POST', path: '/v1/recall', body: { query: 'probe ledger', sessionIds: [s] } }),
  shareSession: (s) => ({ method: 'POST', path: `/v1/sessions/${s}/shares`, body: { project: 'audit' } }),
  unshareSession: (s) => ({ method: 'DELETE', path: `/v1/sessions/${s}/shares/audit` }),
  purge: (s) => ({ method: 'POST', path: '/v1/admin/purge', body: { sessionId: s, dryRun: true } }),
  dashboardTimeline: (s) => ({ method: 'GET', path: `/v1/dashboard/sessions/${s}/timeline` }),
  delegate: (s) => ({ method: 'POST', path: `/v1/sessions/${s}/delegations`, body: { packet: PACKET } }),
  report: (s) => ({ method: 'POST', path: `/v1/sessions/${s}/reports`, body: { status: 'done', summary: 'probe' } }),
  receivedReports: (s) => ({ method: 'GET', path: `/v1/sessions/${s}/received-reports` }),
  recordReportValidations: (s) => ({ method: 'POST', path: `/v1/sessions/${s}/received-reports/validations`, body: {} }),
  hierarchyTree: (s) => ({ method: 'GET', path: `/v1/sessions/${s}/tree` }),
  hierarchyRecall: (s) => ({ method: 'POST', path: `/v1/sessions/${s}/hierarchy-recall`, body: { query: 'probe ledger' } }),
  graphBuild: (s) => ({ method: 'POST', path: '/v1/graph/build', body: { sessionIds: [s] } }),
  listSummaries: (s) => ({ method: 'GET', path: `/v1/summaries?sessionId=${s}` }),
};
/** Operations naming a session that the MCP part below covers instead. */
const COVERED_BY_MCP = new Set(['mcp']);

/** Arguments of each MCP tool that acts on the connection's session (others get `{}`: both sessions alike). */
const TOOL_ARGS: Record<string, Record<string, unknown>> = {
  recall: { query: 'probe ledger', sessionOnly: true },
  get_task_state: {},
  update_task_state: { update: { phase: 'testing' } },
  append_events: { events: [{ kind: 'note', content: 'probe note' }] },
  delegate: { packet: PACKET },
  report: { report: { status: 'done', summary: 'probe' } },
  received_reports: {},
  hierarchy_tree: {},
  hierarchy_recall: { query: 'probe ledger' },
  expand: { id: 'evt_00000000000000000000000000' },
};

/** What may be compared between two answers about two different sessions: status, error code, the shape. */
function shape(status: number, body: any, name: string): unknown {
  if (body === null || typeof body !== 'object') return { status, body };
  const text = JSON.stringify(body);
  return {
    status,
    code: body.error?.code ?? null,
    field: body.error?.data?.field ?? null,
    keys: Object.keys(body).sort(),
    // Whether the answer names the session as asked (a displayed id), and never another name for it.
    namesAsked: text.includes(`"${name}"`),
    qualified: /~/.test(text),
  };
}

describe.each(BACKEND_HARNESSES)('no ids, no oracle, no squatting (%s)', (_backend, createHarness) => {
  let harness: BackendHarness;
  let mem: Engram;
  let server: RunningHttpServer;
  const tokens = {} as Record<Actor, string>;
  const clients: Client[] = [];

  async function api(actor: Actor, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { Authorization: `Bearer ${tokens[actor]}`, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  }

  async function mcp(actor: Actor, sessionId?: string): Promise<Client> {
    const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
      // Every tool of every profile: the oracle must hold on each (interfaces/mcp/tool-profiles.ts).
      requestInit: { headers: { Authorization: `Bearer ${tokens[actor]}`, 'X-Engram-Tools': 'all', ...(sessionId !== undefined ? { 'X-Engram-Session': sessionId } : {}) } },
    });
    const client = new Client({ name: 'access-oracle', version: '1.0.0' });
    await client.connect(transport);
    clients.push(client);
    return client;
  }
  const call = async (client: Client, name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as CallToolResult;

  beforeAll(async () => {
    harness = await createHarness();
    mem = await openEngram({ backend: harness.backend });
    tokens.admin = (await mem.agents.add('root', { role: 'architect', isAdmin: true })).token;
    tokens.alice = (await mem.agents.add('alice', { role: 'manager', project: 'shop' })).token;
    tokens.bob = (await mem.agents.add('bob', { role: 'programmer', project: 'shop', parent: 'alice' })).token;
    tokens.eve = (await mem.agents.add('eve', { role: 'programmer', project: 'other' })).token;
    server = await startHttpServer(mem, { port: 0, version: '0.0.0-test' });
    // Two sessions of shop summarized into an arc; the second is shared with other. A private one for the oracle.
    await mem.append('s1', work('storage', T0), { project: 'shop' });
    await mem.append('s2', work('billing', T0 + 86_400_000), { project: 'shop' });
    await mem.append('shop-private', [{ kind: 'note', content: 'the ledger of shop, private' }], { project: 'shop' });
    await mem.append('shop-private-2', [{ kind: 'note', content: 'the ledger of shop, private' }], { project: 'shop' });
    await mem.store.shareSession({ sessionId: 's2' as never, project: 'other', sharedBy: 'alice', tsMs: Date.now() });
    await runConsolidation(mem.store, mem.consolidator({ llm: null, sessionsPerArc: 2 }));
  });

  afterAll(async () => {
    for (const c of clients.splice(0)) await c.close();
    await server?.close();
    await mem?.close();
    await harness?.cleanup();
  });

  describe('summaries name nothing the reader may not read', () => {
    it('leaves out the predecessor session and the arc of a shared session\'s summary in the list, by id, in search and in expand', async () => {
      const own = (await api('alice', 'GET', '/v1/summaries?depth=0')).body.summaries as Array<any>;
      const s2 = own.find((s) => s.sessionId === 's2');
      expect(s2).toMatchObject({ predecessorSessionId: 's1', parentId: expect.stringMatching(/^sum_/) });
      const arcId = s2.parentId as string;

      const listed = (await api('eve', 'GET', '/v1/summaries')).body.summaries as Array<any>;
      expect(listed.map((s) => s.sessionId)).toEqual(['s2']);
      expect(listed[0]).toMatchObject({ id: s2.id, predecessorSessionId: null, parentId: null });
      const byId = await api('eve', 'GET', `/v1/summaries/${s2.id}`);
      expect(byId.body).toMatchObject({ id: s2.id, predecessorSessionId: null, parentId: null });
      const searched = await api('eve', 'GET', `/v1/summaries?q=${encodeURIComponent('billing job')}`);
      expect(searched.body.summaries[0]).toMatchObject({ id: s2.id, predecessorSessionId: null, parentId: null });
      const expanded = await api('eve', 'POST', '/v1/expand', { id: s2.id });
      expect(expanded.body.details).toMatchObject({ id: s2.id, parentId: null });
      for (const answer of [listed, byId.body, searched.body, expanded.body]) {
        const text = JSON.stringify(answer);
        expect(text).not.toContain(arcId);
        expect(text).not.toContain('"s1"');
      }
      // The arc itself stays NOT_FOUND to eve, as before.
      expect((await api('eve', 'GET', `/v1/summaries/${arcId}`)).status).toBe(404);
    });
  });

  describe('no existence oracle', () => {
    it('answers every session route of the OpenAPI document alike for another project\'s session and for one nobody holds', async () => {
      const doc = (await api('eve', 'GET', '/v1/openapi.json')).body as { paths: Record<string, Record<string, { operationId: string; parameters?: Array<{ name: string }>; requestBody?: any }>> };
      const namingSession: string[] = [];
      for (const [path, ops] of Object.entries(doc.paths)) {
        for (const op of Object.values(ops)) {
          const props = Object.keys(op.requestBody?.content?.['application/json']?.schema?.properties ?? {});
          const params = (op.parameters ?? []).map((p) => p.name);
          if (path.includes('{sessionId}') || [...props, ...params].some((n) => /session/i.test(n))) namingSession.push(op.operationId);
        }
      }
      // A new route that names a session must get a probe here.
      expect(namingSession.filter((id) => !(id in PROBES) && !COVERED_BY_MCP.has(id))).toEqual([]);
      expect(namingSession.length).toBeGreaterThanOrEqual(19);

      // The same sequence on both names: writes create the asker's own session in both cases.
      for (const actor of ['eve', 'bob'] as const) {
        const held = actor === 'eve' ? 'shop-private' : 'held-by-other';
        if (actor === 'bob') expect((await api('eve', 'POST', '/v1/events', { sessionId: held, events: [{ kind: 'note', content: 'eve owns this' }] })).status).toBe(200);
        const unknown = `nobody-holds-${actor}`;
        for (const operationId of namingSession.filter((id) => id in PROBES)) {
          const [a, b] = [PROBES[operationId]!(held), PROBES[operationId]!(unknown)];
          const ra = await api(actor, a.method, a.path, a.body);
          const rb = await api(actor, b.method, b.path, b.body);
          expect({ actor, operationId, answer: shape(ra.status, ra.body, held) }).toEqual({ actor, operationId, answer: shape(rb.status, rb.body, unknown) });
        }
      }
      // Nothing was written into the held sessions.
      expect((await mem.getSession('shop-private')).eventCount).toBe(1);
      expect((await mem.getSession('held-by-other')).eventCount).toBe(1);
    });

    it('answers every MCP tool and the task-state resource alike for another project\'s session and for one nobody holds', async () => {
      const held = await mcp('eve', 'shop-private-2');
      const unknown = await mcp('eve', 'nobody-holds-mcp');
      const tools = (await held.listTools()).tools.map((t) => t.name);
      expect(tools.length).toBeGreaterThanOrEqual(17);
      for (const tool of tools) {
        const args = TOOL_ARGS[tool] ?? {};
        const [ra, rb] = [await call(held, tool, args), await call(unknown, tool, args)];
        const norm = (r: CallToolResult, name: string) => ({
          isError: r.isError ?? false,
          code: (r.structuredContent as { error?: { code?: string } } | undefined)?.error?.code ?? null,
          keys: Object.keys(r.structuredContent ?? {}).sort(),
          text: r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n').replaceAll(name, '<S>').replace(/evt_[0-9a-z]{26}/g, 'evt_').replace(/\d+/g, 'N'),
        });
        expect({ tool, answer: norm(ra, 'shop-private-2') }).toEqual({ tool, answer: norm(rb, 'nobody-holds-mcp') });
      }
      const ca = await held.readResource({ uri: 'engram://session/shop-private-2/task-state' });
      const cb = await unknown.readResource({ uri: 'engram://session/nobody-holds-mcp/task-state' });
      const card = (text: unknown, name: string) => String(text).replaceAll(name, '<S>').replace(/evt_[0-9a-z]{26}/g, 'evt_').replace(/"ts": "[^"]*"/g, '"ts"');
      expect(card((ca.contents[0] as { text: string }).text, 'shop-private-2')).toBe(card((cb.contents[0] as { text: string }).text, 'nobody-holds-mcp'));
      expect((await mem.getSession('shop-private-2')).eventCount).toBe(1);
      expect(await mem.taskStates.get('shop-private-2')).toBeNull();
    });

    it('answers a malformed resource read with -32602, not -32603', async () => {
      const client = await mcp('eve', 'eve-own');
      await expect(client.readResource({ uri: 'engram://session/bad%20id/task-state' })).rejects.toMatchObject({ code: -32602 });
    });
  });

  describe('no squatting', () => {
    it('keeps an agent\'s default session and a delegated child\'s id from being taken by another project', async () => {
      // eve writes first under alice's name (alice's MCP default session) and under shop-main's future child id.
      expect((await api('eve', 'POST', '/v1/events', { sessionId: 'alice', events: [{ kind: 'note', content: 'squatted' }] })).status).toBe(200);
      expect((await api('eve', 'POST', '/v1/events', { sessionId: 'shop-main.t1', events: [{ kind: 'note', content: 'squatted child' }] })).status).toBe(200);
      expect((await api('eve', 'GET', '/v1/sessions/alice')).body).toMatchObject({ id: 'alice', project: 'other' });

      // alice, on her default session (no X-Engram-Session), is not locked out, and reads only her own.
      const client = await mcp('alice');
      const appended = await call(client, 'append_events', { events: [{ kind: 'note', content: 'alice works here' }] });
      expect(appended.isError).toBeFalsy();
      expect(appended.structuredContent).toMatchObject({ sessionId: 'alice' });
      expect((await call(client, 'update_task_state', { update: { phase: 'implementing' } })).isError).toBeFalsy();
      expect(await mem.getSession('alice')).toMatchObject({ project: 'shop' });
      const events = (await api('alice', 'GET', '/v1/sessions/alice/events')).body.events as Array<{ content: string }>;
      expect(events.map((e) => e.content)).toContain('alice works here');
      expect(events.map((e) => e.content)).not.toContain('squatted');

      // shop-main delegates t1: the child id eve wrote first is shop's own child.
      expect((await api('alice', 'POST', '/v1/events', { sessionId: 'shop-main', events: [{ kind: 'note', content: 'plan' }] })).status).toBe(200);
      const d = await api('alice', 'POST', '/v1/sessions/shop-main/delegations', { packet: PACKET, executor: 'bob' });
      expect(d.status).toBe(201);
      expect(d.body.child).toMatchObject({ sessionId: 'shop-main.t1', parentSessionId: 'shop-main' });
      expect((await api('bob', 'POST', '/v1/events', { sessionId: 'shop-main.t1', events: [{ kind: 'note', content: 'bob on t1' }] })).status).toBe(200);
      expect((await api('bob', 'GET', '/v1/sessions/shop-main.t1')).body).toMatchObject({ id: 'shop-main.t1', project: 'shop' });
      expect((await api('eve', 'GET', '/v1/sessions/shop-main.t1')).body).toMatchObject({ id: 'shop-main.t1', project: 'other', eventCount: 1 });
    });

    it('does not let a share take the name of an agent added later', async () => {
      expect((await api('eve', 'POST', '/v1/events', { sessionId: 'carol', events: [{ kind: 'note', content: 'shared bait' }] })).status).toBe(200);
      expect((await api('eve', 'POST', '/v1/sessions/carol/shares', { project: 'shop' })).status).toBe(200);
      const carol = (await mem.agents.add('carol', { role: 'programmer', project: 'shop' })).token;
      const res = await fetch(`${server.url}/v1/events`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${carol}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ sessionId: 'carol', events: [{ kind: 'note', content: 'carol works' }] }),
      });
      expect(res.status).toBe(200);
      expect((await mem.getSession('carol')).eventCount).toBe(1);
      expect((await mem.getSession('shop~carol')).eventCount).toBe(1);
    });
  });

  describe('a shared session\'s recall log', () => {
    it('shows each project only the queries of its own agents', async () => {
      expect((await api('alice', 'POST', '/v1/recall', { query: 'alice asks about billing', sessionIds: ['s2'] })).status).toBe(200);
      expect((await api('eve', 'POST', '/v1/recall', { query: 'eve asks about billing', sessionIds: ['s2'] })).status).toBe(200);
      const queries = async (actor: Actor) => ((await api(actor, 'GET', '/v1/dashboard/sessions/s2/timeline')).body.recalls as Array<{ query: string }>).map((r) => r.query);
      expect(await queries('alice')).toEqual(['alice asks about billing']);
      expect(await queries('eve')).toEqual(['eve asks about billing']);
      expect((await queries('admin')).sort()).toEqual(['alice asks about billing', 'eve asks about billing']);
    });
  });
});
