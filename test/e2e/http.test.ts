import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { startHttpServer, type RunningHttpServer } from '../../src/interfaces/http/server.js';
import { ROUTES } from '../../src/interfaces/http/routes.js';

let dir: string;
let mem: Engram;
let server: RunningHttpServer;
let token: string;
let adminToken: string;

const MAX_BODY_BYTES = 64 * 1024;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-http-'));
  mem = await openEngram({ db: join(dir, 'engram.db') });
  adminToken = (await mem.agents.add('boss', { role: 'architect', isAdmin: true })).token;
  token = (await mem.agents.add('worker', { role: 'programmer', parent: 'boss' })).token;
  server = await startHttpServer(mem, { port: 0, version: '0.0.0-test', maxBodyBytes: MAX_BODY_BYTES });
});

afterEach(async () => {
  await server.close();
  await mem.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Call {
  method?: string;
  body?: unknown;
  /** Sent as is (not JSON-encoded). */
  raw?: string;
  token?: string | null;
  headers?: Record<string, string>;
}

async function api(path: string, call: Call = {}): Promise<{ status: number; body: any; headers: Headers }> {
  const headers: Record<string, string> = { ...(call.headers ?? {}) };
  const bearer = call.token === undefined ? token : call.token;
  if (bearer !== null) headers.Authorization = `Bearer ${bearer}`;
  const hasBody = call.body !== undefined || call.raw !== undefined;
  if (hasBody) headers['Content-Type'] = 'application/json';
  const res = await fetch(`${server.url}${path}`, {
    method: call.method ?? (hasBody ? 'POST' : 'GET'),
    headers,
    ...(hasBody ? { body: call.raw ?? JSON.stringify(call.body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
}

const storedEvents = async (): Promise<number> => (await mem.stats()).events;

const BUILD_LOG = [
  ...Array.from({ length: 150 }, (_, i) => `[build] compiling module ${i} of 300 ... ok`),
  "src/api/client.ts(88,7): error TS2345: Argument of type 'string' is not assignable to parameter of type 'Port'.",
  ...Array.from({ length: 150 }, (_, i) => `[build] compiling module ${i + 151} of 300 ... ok`),
].join('\n');

const DEMO = [
  { kind: 'user', content: 'the staging database refuses connections', key: 't1' },
  { kind: 'tool_result', toolName: 'Bash', content: 'psql: error: connect ECONNREFUSED 10.0.4.12:5433', key: 't2' },
  { kind: 'decision', content: 'We move the staging database to port 6543 after the incident.', key: 't3' },
  { kind: 'tool_result', toolName: 'Bash', content: BUILD_LOG, key: 't4' },
];

async function appendDemo(sessionId = 's1') {
  const r = await api('/v1/events', { body: { sessionId, events: DEMO } });
  expect(r.status).toBe(200);
  return r.body as { sessionId: string; events: Array<{ id: string; turn: number; isDuplicate: boolean; artifactId?: string }> };
}

describe('HTTP API: authentication', () => {
  it('answers /healthz without a token', async () => {
    const r = await api('/healthz', { token: null });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ ok: true, backend: 'sqlite' });
  });

  it('refuses a missing, malformed or unknown token with 401 and stores nothing', async () => {
    const attempts: Call[] = [
      { token: null },
      { token: null, headers: { Authorization: 'Basic d29ya2VyOnB3' } },
      { token: 'eng_not-a-real-token' },
      { token: `eng_${'x'.repeat(43)}` },
    ];
    for (const attempt of attempts) {
      const r = await api('/v1/events', { ...attempt, body: { sessionId: 's1', events: DEMO } });
      expect(r.status).toBe(401);
      expect(r.body.error.code).toBe('UNAUTHENTICATED');
      expect(r.headers.get('www-authenticate')).toBe('Bearer realm="engram"');
    }
    expect(await storedEvents()).toBe(0);
  });

  it('refuses the token of a revoked agent, and a rotated-out token', async () => {
    expect((await api('/v1/agents/me')).body.name).toBe('worker');
    await mem.agents.revoke('worker');
    const r = await api('/v1/events', { body: { sessionId: 's1', events: DEMO } });
    expect(r.status).toBe(401);
    expect(r.body.error.message).toContain('revoked');
    expect(await storedEvents()).toBe(0);

    const rotated = await mem.agents.rotateToken('boss');
    expect((await api('/v1/agents/me', { token: adminToken })).status).toBe(401);
    expect((await api('/v1/agents/me', { token: rotated.token })).body.name).toBe('boss');
  });

  it('lets only admins list and add agents; a new agent token works at once', async () => {
    const denied = await api('/v1/agents');
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('FORBIDDEN');
    expect((await api('/v1/agents', { body: { name: 'x', role: 'programmer' } })).status).toBe(403);

    const added = await api('/v1/agents', { token: adminToken, body: { name: 'prog-2', role: 'programmer', parent: 'boss', project: 'checkout' } });
    expect(added.status).toBe(201);
    expect(added.body.agent).toMatchObject({ name: 'prog-2', role: 'programmer', project: 'checkout', isAdmin: false });
    const me = await api('/v1/agents/me', { token: added.body.token });
    expect(me.body.id).toBe(added.body.agent.id);

    const dup = await api('/v1/agents', { token: adminToken, body: { name: 'PROG-2', role: 'manager' } });
    expect(dup.status).toBe(409);
    expect(dup.body.error).toMatchObject({ code: 'CONFLICT', data: { field: 'name' } });
    const list = await api('/v1/agents', { token: adminToken });
    expect(list.body.agents.map((a: { name: string }) => a.name)).toEqual(['boss', 'worker', 'prog-2']);
  });
});

describe('HTTP API: events', () => {
  it('appends a batch and answers a retried batch from the store, idempotently', async () => {
    const first = await appendDemo();
    expect(first.events.map((e) => e.turn)).toEqual([1, 2, 3, 4]);
    expect(first.events.every((e) => !e.isDuplicate)).toBe(true);
    expect(first.events[3]!.artifactId).toMatch(/^art_[0-9a-f]{64}$/);
    const again = await appendDemo();
    expect(again.events.map((e) => e.id)).toEqual(first.events.map((e) => e.id));
    expect(again.events.every((e) => e.isDuplicate)).toBe(true);
    expect(await storedEvents()).toBe(4);
  });

  it('refuses a key reused for other content with 409, storing none of the batch', async () => {
    await appendDemo();
    const r = await api('/v1/events', {
      body: { sessionId: 's1', events: [{ kind: 'note', content: 'new', key: 'n1' }, { kind: 'user', content: 'changed', key: 't1' }] },
    });
    expect(r.status).toBe(409);
    expect(r.body.error).toMatchObject({ code: 'IDEMPOTENCY_CONFLICT', data: { field: 'events[1].key' } });
    expect(await storedEvents()).toBe(4);
  });

  it('refuses malformed JSON, an empty body and an invalid event with 400 naming the field, storing nothing', async () => {
    const malformed = await api('/v1/events', { raw: '{"sessionId": "s1", "events": [' });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error).toMatchObject({ code: 'INVALID_INPUT', data: { field: 'body' } });
    expect(malformed.body.error.message).toContain('malformed JSON');

    expect((await api('/v1/events', { raw: '' })).body.error.data.field).toBe('body');

    const invalid = await api('/v1/events', { body: { sessionId: 's1', events: [{ kind: 'user', content: 'fine' }, { kind: 'shout', content: 'x' }] } });
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.data.field).toBe('events[1].kind');
    expect(invalid.body.error.message).toMatch(/^events\[1\]\.kind: /);

    const extra = await api('/v1/events', { body: { sessionId: 's1', events: [{ kind: 'user', content: 'x', colour: 'red' }] } });
    expect(extra.status).toBe(400);
    expect(extra.body.error.data.field).toBe('events[0]');

    const badSession = await api('/v1/events', { body: { sessionId: '../etc', events: [{ kind: 'user', content: 'x' }] } });
    expect(badSession.body.error.data.field).toBe('sessionId');
    expect(await storedEvents()).toBe(0);
    expect((await api('/v1/sessions')).body.sessions).toEqual([]);
  });

  it('refuses a body over the limit with 413, with or without Content-Length, storing nothing', async () => {
    const events = [{ kind: 'note', content: 'x'.repeat(MAX_BODY_BYTES) }];
    const sized = await api('/v1/events', { body: { sessionId: 's1', events } });
    expect(sized.status).toBe(413);
    expect(sized.body.error).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', data: { maxBytes: MAX_BODY_BYTES } });

    const bytes = new TextEncoder().encode(JSON.stringify({ sessionId: 's1', events }));
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 8192) controller.enqueue(bytes.subarray(i, i + 8192));
        controller.close();
      },
    });
    const chunked = await fetch(`${server.url}/v1/events`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(413);
    expect(((await chunked.json()) as { error: { code: string } }).error.code).toBe('PAYLOAD_TOO_LARGE');
    expect(await storedEvents()).toBe(0);
  });

  it('lists sessions and pages through events by turn and kind', async () => {
    await appendDemo('s1');
    await api('/v1/events', { body: { sessionId: 's2', events: [{ kind: 'note', content: 'other session' }] } });
    const sessions = await api('/v1/sessions');
    expect(sessions.body.sessions.map((s: { id: string }) => s.id).sort()).toEqual(['s1', 's2']);
    expect((await api('/v1/sessions/s1')).body).toMatchObject({ id: 's1', eventCount: 4, lastTurn: 4 });

    const page1 = await api('/v1/sessions/s1/events?limit=2');
    expect(page1.body.events.map((e: { turn: number }) => e.turn)).toEqual([1, 2]);
    expect(page1.body.nextAfterTurn).toBe(2);
    const page2 = await api(`/v1/sessions/s1/events?limit=2&afterTurn=${page1.body.nextAfterTurn}`);
    expect(page2.body.events.map((e: { turn: number }) => e.turn)).toEqual([3, 4]);
    const tools = await api('/v1/sessions/s1/events?kinds=tool_result');
    expect(tools.body.events.map((e: { turn: number }) => e.turn)).toEqual([2, 4]);
    expect(tools.body.nextAfterTurn).toBeUndefined();

    const badLimit = await api('/v1/sessions/s1/events?limit=0');
    expect(badLimit.status).toBe(400);
    expect(badLimit.body.error.data.field).toBe('limit');
    expect((await api('/v1/sessions/s1/events?kinds=shout')).body.error.data.field).toMatch(/^kinds/);
    const missing = await api('/v1/sessions/nope/events');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('NOT_FOUND');
  });
});

describe('HTTP API: recall, expand, context, task state', () => {
  it('recalls an appended event, alone and in a batch sharing one budget', async () => {
    const stored = await appendDemo();
    const one = await api('/v1/recall', { body: { query: 'ECONNREFUSED 10.0.4.12:5433' } });
    expect(one.status).toBe(200);
    expect(one.body.results[0].hits[0]).toMatchObject({ eventId: stored.events[1]!.id, isExactMatch: true, sessionId: 's1', turn: 2 });
    expect(one.body.results[0].text).toContain('ECONNREFUSED 10.0.4.12:5433');

    const batch = await api('/v1/recall', { body: { query: ['ECONNREFUSED', 'port 6543'], budgetTokens: 1000, sessionIds: ['s1'] } });
    expect(batch.body.results.map((r: { query: string }) => r.query)).toEqual(['ECONNREFUSED', 'port 6543']);
    expect(batch.body.results[1].hits[0].eventId).toBe(stored.events[2]!.id);

    const filtered = await api('/v1/recall', { body: { query: 'ECONNREFUSED', kinds: ['decision'] } });
    expect(filtered.body.results[0].hits).toEqual([]);
    // Nothing matching is an answer, not an error: 200, match none, and a text that says so.
    const none = await api('/v1/recall', { body: { query: 'xyzzyqwerty' } });
    expect(none.status).toBe(200);
    expect(none.body.results[0]).toMatchObject({ match: 'none', hits: [], text: 'No event in memory matches "xyzzyqwerty".' });
    expect(one.body.results[0]).toMatchObject({ match: 'exact' });
    expect(one.body.results[0].hits[0].coverage).toBe(1);
    const bad = await api('/v1/recall', { body: { query: 'x', k: 0 } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.data.field).toBe('k');
  });

  it('expands an event and an artifact like the MCP tool', async () => {
    const stored = await appendDemo();
    const event = await api('/v1/expand', { body: { id: stored.events[2]!.id } });
    expect(event.status).toBe(200);
    expect(event.body.text).toContain('We move the staging database to port 6543');
    expect(event.body.details).toMatchObject({ kind: 'event', turn: 3, isTruncated: false });
    const cut = await api('/v1/expand', { body: { id: stored.events[3]!.artifactId, maxTokens: 50 } });
    expect(cut.body.details).toMatchObject({ kind: 'artifact', isText: true, isTruncated: true });
    expect(cut.body.text).toContain('[truncated:');
    const missing = await api('/v1/expand', { body: { id: 'evt_01jzzzzzzzzzzzzzzzzzzzzzzz' } });
    expect(missing.status).toBe(404);
  });

  it('builds the context pack of a session', async () => {
    await appendDemo();
    const r = await api('/v1/sessions/s1/context?window=8000&query=what%20port%3F&format=anthropic');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ session: 's1', windowTokens: 8000, format: 'anthropic' });
    expect(r.body.blocks.map((b: { kind: string }) => b.kind)).toContain('history');
    expect(JSON.stringify(r.body.formatted)).toContain('port 6543');
    expect((await api('/v1/sessions/s1/context')).body.error.data.field).toBe('window');
    expect((await api('/v1/sessions/nope/context?window=8000')).status).toBe(404);
  });

  it('reads and versions the task card, naming a bad field as sent', async () => {
    await appendDemo();
    expect((await api('/v1/sessions/s1/task-state')).body).toEqual({ sessionId: 's1', version: 0, state: null });
    const bad = await api('/v1/sessions/s1/task-state', { method: 'PUT', body: { update: { phase: 'dreaming' } } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.data.field).toBe('update.phase');
    const unknownExtension = await api('/v1/sessions/s1/task-state', { method: 'PUT', body: { update: { extensions: { jira: { id: 1 } } } } });
    expect(unknownExtension.body.error.data.field).toBe('update.extensions.jira');

    const put = await api('/v1/sessions/s1/task-state', { method: 'PUT', body: { update: { phase: 'debugging', goals: ['fix staging'] } } });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ sessionId: 's1', version: 1, state: { phase: 'debugging', goals: ['fix staging'] } });
    const replaced = await api('/v1/sessions/s1/task-state', { method: 'PUT', body: { update: { goals: ['ship'] }, replace: true } });
    expect(replaced.body).toMatchObject({ version: 2, state: { phase: 'planning', goals: ['ship'] } });
    expect((await api('/v1/sessions/s1/task-state')).body.version).toBe(2);
  });
});

describe('HTTP API: document and shape', () => {
  it('serves an OpenAPI 3.1 document listing every route with its schemas', async () => {
    expect((await api('/v1/openapi.json', { token: null })).status).toBe(401);
    const r = await api('/v1/openapi.json');
    expect(r.status).toBe(200);
    const doc = r.body as { openapi: string; paths: Record<string, Record<string, any>>; components: any };
    expect(doc.openapi).toBe('3.1.0');
    const listed = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
    const expected = [...ROUTES.map((route) => `${route.method.toUpperCase()} ${route.path}`), 'GET /v1/openapi.json', 'GET /healthz', 'POST /mcp', 'GET /v1/dashboard/stream'];
    expect(listed.sort()).toEqual(expected.sort());
    const append = doc.paths['/v1/events']!.post;
    const eventSchema = append.requestBody.content['application/json'].schema.properties.events.items;
    expect(eventSchema.properties.kind.enum).toContain('tool_result');
    expect(eventSchema.required).toEqual(['kind', 'content']);
    expect(append.responses['413'].content['application/json'].schema.$ref).toBe('#/components/schemas/Error');
    const events = doc.paths['/v1/sessions/{sessionId}/events']!.get;
    expect(events.parameters.map((p: { name: string; in: string }) => `${p.in}:${p.name}`)).toEqual(['path:sessionId', 'query:afterTurn', 'query:limit', 'query:kinds']);
    expect(doc.paths['/healthz']!.get.security).toEqual([]);
    expect(doc.components.securitySchemes.bearerAuth.scheme).toBe('bearer');
  });

  it('answers unknown routes with the error shape and sends no CORS headers unless asked', async () => {
    const r = await api('/v1/nothing-here');
    expect(r.status).toBe(404);
    expect(r.body.error).toMatchObject({ code: 'NOT_FOUND', data: { field: 'path' } });
    const plain = await fetch(`${server.url}/healthz`, { headers: { Origin: 'https://evil.example' } });
    expect(plain.headers.get('access-control-allow-origin')).toBeNull();

    const withCors = await startHttpServer(mem, { port: 0, version: 't', corsOrigin: 'https://dash.example' });
    try {
      const pre = await fetch(`${withCors.url}/v1/sessions`, {
        method: 'OPTIONS',
        headers: { Origin: 'https://dash.example', 'Access-Control-Request-Method': 'GET', 'Access-Control-Request-Headers': 'authorization' },
      });
      expect(pre.status).toBe(204);
      expect(pre.headers.get('access-control-allow-origin')).toBe('https://dash.example');
    } finally {
      await withCors.close();
    }
  });

  it('finishes a request in flight when closing, then stops accepting', async () => {
    const body = new TextEncoder().encode(JSON.stringify({ sessionId: 'late', events: [{ kind: 'note', content: 'written during shutdown', key: 'k' }] }));
    let send!: () => void;
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(body.subarray(0, 10));
        send = () => {
          controller.enqueue(body.subarray(10));
          controller.close();
        };
      },
    });
    const pending = fetch(`${server.url}/v1/events`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    // Its headers have arrived; the rest of its body is sent only after close() was called.
    await waitFor(async () => server.activeRequests() > 0);
    const closed = server.close();
    send();
    const res = await pending;
    expect(res.status).toBe(200);
    await closed;
    expect((await mem.getSession('late')).eventCount).toBe(1);
    await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
  });
});

describe('HTTP API: kept-alive connections', () => {
  it('answers a second request on a connection left idle past Node\'s 5 s default, and shuts down without waiting for it', { timeout: 30_000 }, async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const get = (): Promise<{ status: number; socket: unknown }> =>
      new Promise((done, fail) => {
        const req = http.get(`${server.url}/healthz`, { agent }, (res) => {
          res.resume();
          res.on('end', () => done({ status: res.statusCode ?? 0, socket: req.socket }));
        });
        req.on('error', fail);
      });
    const first = await get();
    await new Promise((r) => setTimeout(r, 6000));
    const second = await get();
    expect(second.status).toBe(200);
    // The same connection: the server did not close it while it was idle.
    expect(second.socket).toBe(first.socket);
    // Shutdown closes the idle connection at once: waiting out the 65 s keep-alive would run past this test's timeout.
    await server.close();
    agent.destroy();
  });
});

async function waitFor(predicate: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const start = Date.now();
  while (!(await predicate())) {
    if (Date.now() - start > timeoutMs) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
}
