import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { startHttpServer, type RunningHttpServer } from '../../src/interfaces/http/server.js';

/**
 * Hierarchical sessions over HTTP (ENGRAM §7, Annex A.5): a real server on loopback and real fetch. A planner agent
 * delegates, its executor works and reports with a digest it got from a real deref, the planner validates.
 */
let dir: string;
let mem: Engram;
let server: RunningHttpServer;
const tokens: Record<string, string> = {};

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-http-hierarchy-'));
  mem = await openEngram({ db: join(dir, 'engram.db') });
  for (const [name, options] of [
    ['lead', { role: 'manager', project: 'shop' }],
    ['alice', { role: 'programmer', parent: 'lead', project: 'shop' }],
    ['eve', { role: 'programmer', project: 'bank' }],
  ] as const) {
    tokens[name] = (await mem.agents.add(name, options)).token;
  }
  server = await startHttpServer(mem, { port: 0, version: '0.0.0-test' });
});

afterEach(async () => {
  await server.close();
  await mem.close();
  rmSync(dir, { recursive: true, force: true });
});

async function api(path: string, as: string, body?: unknown, method?: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${server.url}${path}`, {
    method: method ?? (body !== undefined ? 'POST' : 'GET'),
    headers: { Authorization: `Bearer ${tokens[as]}`, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

const packet = {
  subtask_id: 'ledger',
  objective: 'Find why reserve() retries twice.',
  constraints: ['No API changes'],
  acceptance_criteria: ['The cause is cited with a pointer'],
};

it('delegates, enforces one writer, reports, validates by digest, and recalls across the tree', async () => {
  const seeded = await api('/v1/events', 'lead', { sessionId: 'plan', events: [{ kind: 'decision', content: 'Ship the okapi release on Friday.' }] });
  expect(seeded.status).toBe(200);

  const d = await api('/v1/sessions/plan/delegations', 'lead', { packet, executor: 'alice' });
  expect(d.status).toBe(201);
  expect(d.body.child).toMatchObject({ sessionId: 'plan.ledger', role: 'executor', writer: { name: 'alice' }, parentSessionId: 'plan' });
  expect((await api('/v1/sessions/plan/delegations', 'lead', { packet, executor: 'alice' })).body.isDuplicate).toBe(true);
  const bad = await api('/v1/sessions/plan/delegations', 'lead', { packet: { ...packet, acceptance_criteria: [] } });
  expect(bad.status).toBe(400);
  expect(bad.body.error.data.field).toContain('acceptance_criteria');
  expect((await api('/v1/sessions/plan/delegations', 'eve', { packet })).status).toBe(404);

  const card = await api('/v1/sessions/plan.ledger/task-state', 'alice');
  expect(card.body.state).toMatchObject({ goals: ['Find why reserve() retries twice.'] });

  const work = await api('/v1/events', 'alice', { sessionId: 'plan.ledger', events: [{ kind: 'tool_result', toolName: 'logs', content: 'reserve(): timeout after 30s, retrying' }] });
  expect(work.status).toBe(200);
  const intruder = await api('/v1/events', 'lead', { sessionId: 'plan.ledger', events: [{ kind: 'note', content: 'planner writes here' }] });
  expect(intruder.status).toBe(403);
  expect(intruder.body.error).toMatchObject({ code: 'SCOPE_DENIED', data: { holder: 'alice' } });

  const pointer = `sam:event:${work.body.events[0].id}`;
  const read = await api('/v1/pointer/deref', 'alice', { pointer });
  expect(read.status).toBe(200);
  const sent = await api('/v1/sessions/plan.ledger/reports', 'alice', {
    status: 'done',
    summary: 'reserve() retries after a 30 s timeout.',
    key_findings: [
      { claim: 'Timeout then retry', provenance: [{ pointer, content_digest: read.body.content_digest }] },
      { claim: 'Phantom', provenance: [{ pointer, content_digest: 'f'.repeat(64) }] },
    ],
  });
  expect(sent.status).toBe(201);
  expect((await api('/v1/sessions/plan.ledger/reports', 'lead', { status: 'done', summary: 'not mine' })).status).toBe(403);
  const badPointer = await api('/v1/sessions/plan.ledger/reports', 'alice', { status: 'done', summary: 's', key_findings: [{ claim: 'c', provenance: [{ pointer: 'nope', content_digest: 'f'.repeat(64) }] }] });
  expect(badPointer.status).toBe(400);
  expect(badPointer.body.error.code).toBe('POINTER_INVALID');

  const received = await api('/v1/sessions/plan/received-reports', 'lead');
  expect(received.status).toBe(200);
  expect(received.body.reports).toHaveLength(1);
  const v = received.body.reports[0].validation;
  expect(v).toMatchObject({ isVerified: false, verifiedPointers: 1, failedPointers: 1 });
  expect(v.findings[0].pointers[0].status).toBe('verified');
  expect(v.findings[1].pointers[0]).toMatchObject({ status: 'digest_mismatch', contentDigest: read.body.content_digest });
  const recorded = await api('/v1/sessions/plan/received-reports/validations', 'lead', {});
  expect(recorded.status).toBe(200);
  expect(recorded.body.reports[0].validationEventId).toMatch(/^evt_/);
  expect((await api('/v1/sessions/plan/received-reports', 'eve')).status).toBe(404);

  const tree = await api('/v1/sessions/plan.ledger/tree', 'lead');
  expect(tree.body.nodes.map((n: any) => [n.sessionId, n.role, n.writer, n.lastReportStatus ?? null])).toEqual([
    ['plan', 'planner', 'lead', null],
    ['plan.ledger', 'executor', 'alice', 'done'],
  ]);
  const down = await api('/v1/sessions/plan/hierarchy-recall', 'lead', { query: 'timeout retrying' });
  expect(down.body.sessionIds).toEqual(['plan', 'plan.ledger']);
  expect(down.body.results[0].hits.some((h: any) => h.sessionId === 'plan.ledger')).toBe(true);
  const up = await api('/v1/sessions/plan.ledger/hierarchy-recall', 'alice', { query: 'okapi release', scope: 'ancestors' });
  expect(up.body.results[0].hits[0].sessionId).toBe('plan');

  const doc = await api('/v1/openapi.json', 'lead');
  expect(Object.keys(doc.body.paths)).toEqual(expect.arrayContaining(['/v1/sessions/{sessionId}/delegations', '/v1/sessions/{sessionId}/tree']));
});
