import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { startHttpServer, type RunningHttpServer } from '../../src/interfaces/http/server.js';
import type { EventInput } from '../../src/model/event.js';
import { BACKEND_HARNESSES } from '../contract/harnesses.js';
import type { BackendHarness } from '../contract/storage-contract.js';

/**
 * The trust model end to end (model/access.ts), on every backend, through real HTTP on loopback and the real
 * MCP SDK client: agents of project `shop` (alice, bob), of project `other` (eve), one without a project
 * (dora: the default project) and an admin. Every session route and MCP tool is called by each of them on a
 * session of their own project, of another project, and on one shared read-only with `other`.
 */

type Actor = 'alice' | 'bob' | 'eve' | 'dora' | 'admin';
const ACTORS: Actor[] = ['alice', 'bob', 'eve', 'dora', 'admin'];
/** Words that only occur in one session each, so recall answers say whose content was reached. */
const SHOP_WORD = 'zebracornium';
const SHARED_WORD = 'pelicanthrope';
const OTHER_WORD = 'quokkafishery';
const LEGACY_WORD = 'narwhalbatross';
const BIG_LOG = Array.from({ length: 400 }, (_, i) => `[build] step ${i} ${SHOP_WORD} compiling module ${i} ... ok`).join('\n');

/** What each actor may do to a session of project shop (own for alice and bob), shared with other, or of other. */
const READERS: Record<'shop-main' | 'shop-shared' | 'other-main' | 'legacy', Actor[]> = {
  'shop-main': ['alice', 'bob', 'admin'],
  'shop-shared': ['alice', 'bob', 'eve', 'admin'],
  'other-main': ['eve', 'admin'],
  legacy: ['dora', 'admin'],
};
const WRITERS: Record<keyof typeof READERS, Actor[]> = {
  'shop-main': ['alice', 'bob', 'admin'],
  'shop-shared': ['alice', 'bob', 'admin'],
  'other-main': ['eve', 'admin'],
  legacy: ['dora', 'admin'],
};
const SESSIONS = Object.keys(READERS) as Array<keyof typeof READERS>;

describe.each(BACKEND_HARNESSES)('access matrix (%s)', (_backend, createHarness) => {
  let harness: BackendHarness;
  let mem: Engram;
  let server: RunningHttpServer;
  const tokens = {} as Record<Actor, string>;
  /** Per session: an event id (a decision), the artifact id of a large tool output, and the task-card version. */
  const seeded = {} as Record<keyof typeof READERS, { decisionId: string; artifactId: string }>;
  const clients: Client[] = [];

  async function api(actor: Actor, path: string, init: { method?: string; body?: unknown } = {}): Promise<{ status: number; body: any }> {
    const hasBody = init.body !== undefined;
    const res = await fetch(`${server.url}${path}`, {
      method: init.method ?? (hasBody ? 'POST' : 'GET'),
      headers: { Authorization: `Bearer ${tokens[actor]}`, ...(hasBody ? { 'Content-Type': 'application/json' } : {}) },
      ...(hasBody ? { body: JSON.stringify(init.body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  }

  async function mcp(actor: Actor, sessionId: string): Promise<Client> {
    const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${tokens[actor]}`, 'X-Engram-Session': sessionId, 'X-Engram-Tools': 'all' } },
    });
    const client = new Client({ name: 'access-matrix', version: '1.0.0' });
    await client.connect(transport);
    clients.push(client);
    return client;
  }

  const call = async (client: Client, name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as CallToolResult;
  const textOf = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

  beforeAll(async () => {
    harness = await createHarness();
    // Generous deref budgets: this file tests who may read, not how much.
    mem = await openEngram({
      backend: harness.backend,
      bus: { limits: { maxSamItemsPerTurn: 1000, maxArtifactSectionsPerTurn: 1000, maxDerefTokensPerTurn: 1_000_000 } },
    });
    tokens.admin = (await mem.agents.add('admin', { role: 'architect', isAdmin: true })).token;
    tokens.alice = (await mem.agents.add('alice', { role: 'manager', project: 'shop' })).token;
    tokens.bob = (await mem.agents.add('bob', { role: 'programmer', project: 'shop', parent: 'alice' })).token;
    tokens.eve = (await mem.agents.add('eve', { role: 'programmer', project: 'other' })).token;
    tokens.dora = (await mem.agents.add('dora', { role: 'programmer' })).token;
    server = await startHttpServer(mem, { port: 0, version: '0.0.0-test' });

    // Sessions come into being in their writer's project. `legacy` is written by the local (full-trust) engine,
    // as a store from before ownership would be: it belongs to the default project.
    const seed = async (actor: Actor | 'local', sessionId: keyof typeof READERS, word: string) => {
      const events: EventInput[] = [
        { kind: 'user', content: `please look at the ${word} failure`, key: 'u1' },
        { kind: 'decision', content: `Decision: the ${word} service moves to port 6543.`, key: 'd1' },
        { kind: 'tool_result', toolName: 'Bash', content: BIG_LOG.replaceAll(SHOP_WORD, word), key: 'log' },
      ];
      let out: Array<{ id: string; artifactId?: string }>;
      if (actor === 'local') {
        out = (await mem.append(sessionId, events)).map((o) => ({ id: o.record.id, ...(o.record.artifact ? { artifactId: o.record.artifact.id } : {}) }));
        await mem.taskStates.update(sessionId, { goals: [`fix ${word}`] });
      } else {
        const r = await api(actor, '/v1/events', { body: { sessionId, events } });
        expect(r.status).toBe(200);
        out = r.body.events;
        expect((await api(actor, `/v1/sessions/${sessionId}/task-state`, { method: 'PUT', body: { update: { goals: [`fix ${word}`] } } })).status).toBe(200);
      }
      seeded[sessionId] = { decisionId: out[1]!.id, artifactId: out[2]!.artifactId! };
    };
    await seed('alice', 'shop-main', SHOP_WORD);
    await seed('bob', 'shop-shared', SHARED_WORD);
    await seed('eve', 'other-main', OTHER_WORD);
    await seed('local', 'legacy', LEGACY_WORD);
    const shared = await api('alice', '/v1/sessions/shop-shared/shares', { body: { project: 'other' } });
    expect(shared.status).toBe(200);
    expect(shared.body).toMatchObject({ id: 'shop-shared', project: 'shop', sharedWith: ['other'] });
  });

  afterAll(async () => {
    for (const c of clients.splice(0)) await c.close();
    await server?.close();
    await mem?.close();
    await harness?.cleanup();
  });

  it('puts each session in its writer\'s project (the local CLI\'s in the default one)', async () => {
    const owners = Object.fromEntries(await Promise.all(SESSIONS.map(async (s) => [s, (await mem.getSession(s)).project])));
    expect(owners).toEqual({ 'shop-main': 'shop', 'shop-shared': 'shop', 'other-main': 'other', legacy: 'default' });
  });

  it('lists to each agent exactly the sessions it may read', async () => {
    for (const actor of ACTORS) {
      const r = await api(actor, '/v1/sessions');
      expect(r.status).toBe(200);
      const listed = (r.body.sessions as Array<{ id: string }>).map((s) => s.id).sort();
      const expected = SESSIONS.filter((s) => READERS[s].includes(actor)).sort();
      expect({ actor, listed }).toEqual({ actor, listed: expected });
      // The dashboard's paged list is the same list.
      const paged = await api(actor, '/v1/dashboard/sessions?limit=500');
      expect({ actor, listed: (paged.body.sessions as Array<{ id: string }>).map((s) => s.id).sort(), total: paged.body.total }).toEqual({ actor, listed: expected, total: expected.length });
    }
  });

  // Every read route: allowed readers get 200 and the content; everyone else the answer for no session: 404, or,
  // where an absent session has an answer (an empty card, no hits), that answer (test/e2e/access-oracle.test.ts).
  const readRoutes: Array<[string, (s: keyof typeof READERS) => { path: string; body?: unknown }]> = [
    ['GET /v1/sessions/{id}', (s) => ({ path: `/v1/sessions/${s}` })],
    ['GET /v1/sessions/{id}/events', (s) => ({ path: `/v1/sessions/${s}/events` })],
    ['POST /v1/expand (event)', (s) => ({ path: '/v1/expand', body: { id: seeded[s].decisionId } })],
    ['POST /v1/expand (artifact)', (s) => ({ path: '/v1/expand', body: { id: seeded[s].artifactId } })],
    ['POST /v1/pointer/deref (sam:event)', (s) => ({ path: '/v1/pointer/deref', body: { pointer: `sam:event:${seeded[s].decisionId}` } })],
    ['POST /v1/pointer/deref (sam:decision)', (s) => ({ path: '/v1/pointer/deref', body: { pointer: `sam:decision:${seeded[s].decisionId}` } })],
    ['POST /v1/pointer/deref (sam:task)', (s) => ({ path: '/v1/pointer/deref', body: { pointer: `sam:task:${s}@1` } })],
    ['POST /v1/pointer/deref (artifact:)', (s) => ({ path: '/v1/pointer/deref', body: { pointer: `artifact:${seeded[s].artifactId}` } })],
    ['GET /v1/dashboard/sessions/{id}/timeline', (s) => ({ path: `/v1/dashboard/sessions/${s}/timeline` })],
    ['POST /v1/dashboard/pointer (sam:event)', (s) => ({ path: '/v1/dashboard/pointer', body: { pointer: `sam:event:${seeded[s].decisionId}` } })],
    ['POST /v1/dashboard/pointer (artifact:)', (s) => ({ path: '/v1/dashboard/pointer', body: { pointer: `artifact:${seeded[s].artifactId}` } })],
  ];
  it('answers the task card and recall of a session the agent may not read as for a session that does not exist', async () => {
    for (const session of SESSIONS) {
      for (const actor of ACTORS) {
        const card = await api(actor, `/v1/sessions/${session}/task-state`);
        const recall = await api(actor, '/v1/recall', { body: { query: 'port 6543', sessionIds: [session] } });
        const hits = (recall.body.results as Array<{ hits: unknown[] }>).flatMap((r) => r.hits).length;
        const isReader = READERS[session].includes(actor);
        expect({ actor, session, card: card.status, version: card.body.version > 0, sessionId: card.body.sessionId, recall: recall.status, hasHits: hits > 0 }).toEqual({
          actor,
          session,
          card: 200,
          version: isReader,
          sessionId: session,
          recall: 200,
          hasHits: isReader,
        });
      }
    }
  });

  it.each(readRoutes)('%s: readers 200, everyone else 404', async (_name, request) => {
    for (const session of SESSIONS) {
      for (const actor of ACTORS) {
        const { path, body } = request(session);
        const r = await api(actor, path, body !== undefined ? { body } : {});
        const expected = READERS[session].includes(actor) ? 200 : 404;
        expect({ actor, session, status: r.status, code: r.body?.error?.code }).toEqual({
          actor,
          session,
          status: expected,
          code: expected === 200 ? undefined : 'NOT_FOUND',
        });
      }
    }
  });

  it('resolves id prefixes among readable ids only, never listing another project\'s', async () => {
    // Ids of one append differ in their last characters (monotonic ULIDs): this prefix matches several shop events.
    const prefix = seeded['shop-main'].decisionId.slice(0, -2);
    const alice = await api('alice', '/v1/expand', { body: { id: prefix } });
    expect(alice.body.error.code).toBe('AMBIGUOUS_ID');
    expect(alice.body.error.data.matches).toContain(seeded['shop-main'].decisionId);
    const eve = await api('eve', '/v1/expand', { body: { id: prefix } });
    expect(eve.status).toBe(404);
    expect(JSON.stringify(eve.body)).not.toContain(seeded['shop-main'].decisionId);
  });

  it('recalls across the store only what each agent may read', async () => {
    for (const actor of ACTORS) {
      const r = await api(actor, '/v1/recall', { body: { query: [SHOP_WORD, SHARED_WORD, OTHER_WORD, LEGACY_WORD], k: 5, budgetTokens: 4000 } });
      expect(r.status).toBe(200);
      const sessions = new Set((r.body.results as Array<{ hits: Array<{ sessionId: string }> }>).flatMap((x) => x.hits.map((h) => h.sessionId)));
      expect({ actor, sessions: [...sessions].sort() }).toEqual({ actor, sessions: SESSIONS.filter((s) => READERS[s].includes(actor)).sort() });
    }
  });

  it('lets only owners and admins append: 403 SCOPE_DENIED for a shared session; another project\'s id is the writer\'s own new session', async () => {
    for (const session of SESSIONS) {
      for (const actor of ACTORS) {
        const before = (await mem.getSession(session)).eventCount;
        const r = await api(actor, '/v1/events', { body: { sessionId: session, events: [{ kind: 'note', content: `${actor} was here` }] } });
        const after = (await mem.getSession(session)).eventCount;
        if (WRITERS[session].includes(actor)) {
          expect({ actor, session, status: r.status }).toEqual({ actor, session, status: 200 });
          expect(after).toBe(before + 1);
        } else if (READERS[session].includes(actor)) {
          expect({ actor, session, status: r.status, code: r.body.error.code }).toEqual({ actor, session, status: 403, code: 'SCOPE_DENIED' });
          expect(after).toBe(before);
        } else {
          // Stored in the writer's own session of that name (model/session-names.ts), shown under the name it gave.
          expect({ actor, session, status: r.status, sessionId: r.body.sessionId }).toEqual({ actor, session, status: 200, sessionId: session });
          expect(after).toBe(before);
        }
      }
    }
  });

  it('answers a retried append of another project\'s keys as a first append to the caller\'s own session, never with the stored records', async () => {
    const r = await api('eve', '/v1/events', { body: { sessionId: 'shop-main', events: [{ kind: 'decision', content: `Decision: the ${SHOP_WORD} service moves to port 6543.`, key: 'd1' }] } });
    expect(r.status).toBe(200);
    expect(r.body.events[0].id).not.toBe(seeded['shop-main'].decisionId);
    expect(r.body.events[0].isDuplicate).toBe(false);
  });

  it('lets only owners and admins change task cards, build context packs and share; another project\'s id is the caller\'s own', async () => {
    for (const session of SESSIONS) {
      for (const actor of ACTORS) {
        // Readers that may not write (a share) are refused; others act on their own project's session of that name.
        const expected = READERS[session].includes(actor) && !WRITERS[session].includes(actor) ? 403 : 200;
        const before = await mem.taskStates.get(session);
        const put = await api(actor, `/v1/sessions/${session}/task-state`, { method: 'PUT', body: { update: { phase: 'implementing' } } });
        const pack = await api(actor, `/v1/sessions/${session}/context?window=8000`);
        const share = await api(actor, `/v1/sessions/${session}/shares`, { body: { project: 'audit' } });
        expect({ actor, session, put: put.status, pack: pack.status, share: share.status }).toEqual({ actor, session, put: expected, pack: expected, share: expected });
        if (!READERS[session].includes(actor)) expect((await mem.taskStates.get(session))?.version).toBe(before?.version);
      }
    }
  });

  it('creates a new session in the writer\'s project; another project asking for the same id later gets its own', async () => {
    expect((await api('eve', '/v1/events', { body: { sessionId: 'fresh', events: [{ kind: 'note', content: 'mine' }] } })).status).toBe(200);
    expect((await mem.getSession('fresh')).project).toBe('other');
    const second = await api('alice', '/v1/events', { body: { sessionId: 'fresh', events: [{ kind: 'note', content: 'also mine' }] } });
    expect(second.status).toBe(200);
    expect(second.body.sessionId).toBe('fresh');
    expect(await api('alice', '/v1/sessions/fresh')).toMatchObject({ status: 200, body: { id: 'fresh', project: 'shop', eventCount: 1 } });
    expect(await api('eve', '/v1/sessions/fresh')).toMatchObject({ status: 200, body: { id: 'fresh', project: 'other', eventCount: 1 } });
    expect((await mem.getSession('shop~fresh')).project).toBe('shop');
  });

  it('reports bus metrics of the caller\'s project to agents, of everyone to admins', async () => {
    // alice dereferenced pointers in the read matrix above; eve did too (of her own and the shared session).
    const of = async (actor: Actor) => (await api(actor, '/v1/bus/metrics')).body.derefsPerTurnByRole as Record<string, { derefs: number }>;
    const [shop, other, all] = [await of('alice'), await of('eve'), await of('admin')];
    expect(Object.keys(shop).sort()).toEqual(['manager', 'programmer']); // alice and bob
    expect(Object.keys(other)).toEqual(['programmer']); // eve only
    expect(other.programmer!.derefs).toBeLessThan(all.programmer!.derefs);
  });

  describe('MCP over HTTP', () => {
    it('serves every session tool on the agent\'s own session', async () => {
      const client = await mcp('bob', 'shop-main');
      expect(textOf(await call(client, 'get_task_state', {}))).toContain(SHOP_WORD);
      expect((await call(client, 'recall', { query: 'port 6543', sessionOnly: true })).isError).toBeFalsy();
      expect(textOf(await call(client, 'expand', { id: seeded['shop-main'].decisionId }))).toContain(SHOP_WORD);
      expect((await call(client, 'append_events', { events: [{ kind: 'note', content: 'bob over mcp' }] })).isError).toBeFalsy();
      expect((await call(client, 'update_task_state', { update: { phase: 'testing' } })).isError).toBeFalsy();
      expect(textOf(await call(client, 'less_deref_pointer', { pointer: `sam:event:${seeded['shop-main'].decisionId}` }))).toContain(SHOP_WORD);
    });

    it('treats another project\'s session as the agent\'s own empty one on every tool and resource, leaking nothing', async () => {
      const client = await mcp('eve', 'shop-main');
      const before = (await mem.getSession('shop-main')).eventCount;
      // Eve's own card of that name (an earlier test wrote one), never shop's.
      const card = await call(client, 'get_task_state', {});
      expect(card.isError).toBeFalsy();
      expect(card.structuredContent).toMatchObject({ sessionId: 'shop-main', state: { phase: 'implementing' } });
      expect(textOf(card)).not.toContain(SHOP_WORD);
      const shopIds = new Set((await mem.listEvents({ sessionId: 'shop-main' as never, limit: 1000 })).map((e) => e.id as string));
      const hitIds = (r: CallToolResult) => (r.structuredContent as { results: Array<{ hits: Array<{ eventId: string }> }> }).results[0]!.hits.map((h) => h.eventId);
      const own = await call(client, 'recall', { query: SHOP_WORD, sessionOnly: true });
      expect(hitIds(own).filter((id) => shopIds.has(id))).toEqual([]);
      const refused = {
        expand_event: await call(client, 'expand', { id: seeded['shop-main'].decisionId }),
        expand_artifact: await call(client, 'expand', { id: seeded['shop-main'].artifactId }),
        less_deref_pointer: await call(client, 'less_deref_pointer', { pointer: `sam:decision:${seeded['shop-main'].decisionId}` }),
      };
      for (const [tool, r] of Object.entries(refused)) {
        expect({ tool, isError: r.isError }).toEqual({ tool, isError: true });
        expect(textOf(r)).not.toContain(SHOP_WORD);
        expect(textOf(r)).not.toContain('port 6543');
      }
      const resource = await client.readResource({ uri: 'engram://session/shop-main/task-state' });
      expect((resource.contents[0] as { text: string }).text).not.toContain(SHOP_WORD);
      expect(JSON.parse((resource.contents[0] as { text: string }).text)).toMatchObject({ sessionId: 'shop-main', state: { phase: 'implementing' } });
      // Writes go to eve's own session of that name.
      expect((await call(client, 'append_events', { events: [{ kind: 'note', content: 'eve was here' }] })).isError).toBeFalsy();
      expect((await call(client, 'update_task_state', { update: { phase: 'testing' } })).isError).toBeFalsy();
      // Recall across everything (no sessionOnly) finds nothing of shop's (eve's own notes may quote its words).
      const wide = await call(client, 'recall', { query: SHOP_WORD });
      expect(hitIds(wide).filter((id) => shopIds.has(id))).toEqual([]);
      expect((await mem.getSession('shop-main')).eventCount).toBe(before);
    });

    it('reads a session shared with the agent\'s project but does not write to it', async () => {
      const client = await mcp('eve', 'shop-shared');
      expect(textOf(await call(client, 'get_task_state', {}))).toContain(SHARED_WORD);
      expect(textOf(await call(client, 'recall', { query: SHARED_WORD, sessionOnly: true }))).toContain(SHARED_WORD);
      const append = await call(client, 'append_events', { events: [{ kind: 'note', content: 'eve was here' }] });
      expect(append.isError).toBe(true);
      expect(textOf(append)).toContain('SCOPE_DENIED');
    });
  });
});
