import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { startHttpServer, type RunningHttpServer } from '../../src/interfaces/http/server.js';
import { BACKEND_HARNESSES } from '../contract/harnesses.js';
import type { BackendHarness } from '../contract/storage-contract.js';

/**
 * Property tests of the HTTP API through real HTTP on loopback, on every backend: random and adversarial bodies
 * never get a 5xx, a refused append stores nothing, and an accepted one stores exactly what was sent.
 */

const KINDS = ['user', 'assistant', 'system', 'tool_call', 'tool_result', 'decision', 'note', 'task_state', 'marker', 'USER', ''];
/** Strings with the characters that broke things before: lone surrogates, NUL, emoji, combining marks, quotes. */
const nasty = fc.oneof(
  fc.string({ maxLength: 60 }),
  fc.string({ unit: 'binary', maxLength: 60 }),
  fc.constantFrom('\ud800', 'a\udfffb', '\u0000', 'x\u0000y', '🦀'.repeat(20), 'e\u0301'.repeat(30), '\\'.repeat(50), '"\'`', ''),
);
const tsValue = fc.oneof(fc.integer(), fc.constantFrom(8640000000000001, -8640000000000001, Number.MAX_SAFE_INTEGER, 0, 1.5), fc.constantFrom('2025-01-02T03:04:05Z', 'yesterday', '', '+275760-09-13T00:00:00.000Z'));
const meta = fc.oneof(fc.jsonValue({ maxDepth: 4 }), fc.integer({ min: 1, max: 60 }).map((depth) => nest(depth)));
const event = fc.record(
  {
    kind: fc.constantFrom(...KINDS),
    content: nasty,
    ts: tsValue,
    key: nasty,
    tags: fc.array(nasty, { maxLength: 3 }),
    meta,
    toolName: nasty,
    supersedes: fc.constantFrom('evt_01jaaaaaaaaaaaaaaaaaaaaaaa', 'nope', ''),
    extra: fc.string(),
  },
  { requiredKeys: [] },
);
const appendBody = fc.oneof(
  fc.record({ sessionId: fc.oneof(fc.constantFrom('prop-a', 'prop-b'), nasty), events: fc.array(event, { maxLength: 5 }) }),
  fc.record({ sessionId: fc.constantFrom('prop-a'), events: fc.array(fc.record({ kind: fc.constantFrom('user', 'note'), content: nasty }), { minLength: 1, maxLength: 4 }) }),
  fc.jsonValue({ maxDepth: 3 }),
);

function nest(depth: number): unknown {
  let v: unknown = 'leaf';
  for (let i = 0; i < depth; i++) v = { n: v };
  return v;
}

describe.each(BACKEND_HARNESSES)('HTTP API under random input (%s)', (_backend, createHarness) => {
  let harness: BackendHarness;
  let mem: Engram;
  let server: RunningHttpServer;
  let token: string;

  beforeAll(async () => {
    harness = await createHarness();
    mem = await openEngram({ backend: harness.backend });
    token = (await mem.agents.add('prop', { role: 'programmer', project: 'prop' })).token;
    server = await startHttpServer(mem, { port: 0, version: '0.0.0-test', maxBodyBytes: 256 * 1024 });
  });

  afterAll(async () => {
    await server?.close();
    await mem?.close();
    await harness?.cleanup();
  });

  const post = async (path: string, body: string, contentType = 'application/json') => {
    const res = await fetch(`${server.url}${path}`, { method: 'POST', headers: { Authorization: `Bearer ${token}`, 'Content-Type': contentType }, body });
    const text = await res.text();
    return { status: res.status, body: text.length > 0 ? (JSON.parse(text) as any) : null };
  };

  it('appends all or nothing, never answering 5xx, storing accepted events byte-identical', async () => {
    await fc.assert(
      fc.asyncProperty(appendBody, async (body) => {
        const before = (await mem.stats()).events;
        const r = await post('/v1/events', JSON.stringify(body));
        const after = (await mem.stats()).events;
        expect(r.status).toBeLessThan(500);
        if (r.status !== 200) {
          expect(r.body.error.code).toMatch(/^[A-Z_]+$/);
          expect(after).toBe(before);
          return;
        }
        const sent = (body as { events: Array<{ content: string }> }).events;
        const fresh = (r.body.events as Array<{ id: string; isDuplicate: boolean }>).filter((e) => !e.isDuplicate);
        expect(after).toBe(before + fresh.length);
        for (const [i, e] of (r.body.events as Array<{ id: string; isDuplicate: boolean }>).entries()) {
          if (e.isDuplicate) continue;
          const stored = await mem.getEvent(e.id);
          if (!stored.artifact) expect(stored.content).toBe(sent[i]!.content);
        }
      }),
      { numRuns: 150 },
    );
  });

  it('answers every raw body and content type with a coded 4xx or a 200, never a 5xx', async () => {
    const raw = fc.oneof(fc.string({ maxLength: 200 }), fc.string({ unit: 'binary', maxLength: 200 }), fc.constantFrom('[[[[[[[[', '{"a":' + '['.repeat(5000), '{"sessionId":"x","events":[{"kind":"user","content":"\\ud800"}]}'));
    const type = fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json; charset=latin1', '');
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('/v1/events', '/v1/recall', '/v1/expand', '/v1/pointer/deref', '/v1/engram', '/v1/messages/validate'), raw, type, async (path, body, contentType) => {
        const before = (await mem.stats()).events;
        const r = await post(path, body, contentType);
        expect(r.status).toBeLessThan(500);
        if (r.status >= 400) expect(r.body.error.code).toMatch(/^[A-Z_]+$/);
        if (path === '/v1/events' && r.status !== 200) expect((await mem.stats()).events).toBe(before);
      }),
      { numRuns: 200 },
    );
  });

  it('answers random recall, expand, deref and message requests without a 5xx', async () => {
    const request = fc.oneof(
      fc.record({ path: fc.constant('/v1/recall'), body: fc.record({ query: fc.oneof(nasty, fc.array(nasty, { maxLength: 12 })), k: fc.integer({ min: -5, max: 2000 }), budgetTokens: fc.integer({ min: -5, max: 100_000 }) }, { requiredKeys: ['query'] }) }),
      fc.record({ path: fc.constant('/v1/expand'), body: fc.record({ id: fc.oneof(nasty, fc.constantFrom('evt_', 'evt_01', 'art_0000', 'evt_01jaaaaaaaaaaaaaaaaaaaaaaa')), maxTokens: fc.integer({ min: -1, max: 10 }) }) }),
      fc.record({ path: fc.constant('/v1/pointer/deref'), body: fc.record({ pointer: fc.oneof(nasty, fc.constantFrom('sam:event:evt_01jaaaaaaaaaaaaaaaaaaaaaaa', 'repo:../../etc/passwd@abcdef1', 'artifact:x#sec=a@deadbeef')) }) }),
      fc.record({ path: fc.constant('/v1/messages/validate'), body: fc.record({ message: nasty }) }),
    );
    await fc.assert(
      fc.asyncProperty(request, async ({ path, body }) => {
        const r = await post(path, JSON.stringify(body));
        expect(r.status).toBeLessThan(500);
      }),
      { numRuns: 200 },
    );
  });
});
