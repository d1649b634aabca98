import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTempRepo, numberedLines, type TempRepo } from '../../src/bus/resolvers/test-support.js';
import { openEngram, type Engram } from '../../src/engine.js';
import { startHttpServer, type RunningHttpServer } from '../../src/interfaces/http/server.js';
import { createBuiltinEmbedder } from '../../src/providers/builtin-embedder.js';
import type { Embedder } from '../../src/providers/embedder.js';
import { riskEngram } from '../fixtures/engrams.js';

/**
 * The Engram Bus over HTTP: a real server on loopback, real fetch, a real git repository for repo pointers and
 * the built-in embedder for embedding queries. The caller is always the authenticated agent.
 */
let repo: TempRepo;
let sha: string;
let embedder: Embedder;
beforeAll(async () => {
  repo = createTempRepo();
  sha = repo.commit({ 'services/gateway/routes.py': numberedLines(300, 'routes'), 'services/ledger/reservation.py': numberedLines(220, 'ledger'), 'README.md': '# Demo\n' });
  embedder = await createBuiltinEmbedder({ ...(process.env.ENGRAM_TEST_CACHE_DIR ? { cacheDir: process.env.ENGRAM_TEST_CACHE_DIR } : {}) });
}, 120_000);
afterAll(() => repo.remove());

const span = (path: string, a: number, b: number) => `repo:${path}#L${a}-L${b}@${sha}`;

let dir: string;
let mem: Engram;
let server: RunningHttpServer;
const tokens: Record<'boss' | 'manager' | 'coder' | 'peer' | 'outsider', string> = { boss: '', manager: '', coder: '', peer: '', outsider: '' };
const ids: Record<string, string> = {};

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-http-bus-'));
  mem = await openEngram({
    db: join(dir, 'engram.db'),
    embedder,
    indexing: { background: false },
    bus: { repoRoot: repo.dir, limits: { maxEngramsPerAgentPerMinute: 20 } },
  });
  const add = async (name: keyof typeof tokens, options: Parameters<Engram['agents']['add']>[1]) => {
    const { agent, token } = await mem.agents.add(name, options);
    tokens[name] = token;
    ids[name] = agent.id;
  };
  await add('boss', { role: 'architect', isAdmin: true, project: 'shop' });
  await add('manager', { role: 'manager', parent: 'boss', project: 'shop' });
  await add('coder', { role: 'programmer', parent: 'manager', project: 'shop' });
  await add('peer', { role: 'programmer', parent: 'manager', project: 'shop' });
  await add('outsider', { role: 'programmer', project: 'bank' });
  server = await startHttpServer(mem, { port: 0, version: '0.0.0-test' });
});

afterEach(async () => {
  await server.close();
  await mem.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Call {
  method?: string;
  body?: unknown;
  /** Sent as is, with `contentType` (default application/json). */
  raw?: string;
  contentType?: string;
  as?: keyof typeof tokens | null;
  headers?: Record<string, string>;
}

async function api(path: string, call: Call = {}): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = { ...(call.headers ?? {}) };
  const who = call.as === undefined ? 'coder' : call.as;
  if (who !== null) headers.Authorization = `Bearer ${tokens[who]}`;
  const hasBody = call.body !== undefined || call.raw !== undefined;
  if (hasBody) headers['Content-Type'] = call.contentType ?? 'application/json';
  const res = await fetch(`${server.url}${path}`, {
    method: call.method ?? (hasBody ? 'POST' : 'GET'),
    headers,
    ...(hasBody ? { body: call.raw ?? JSON.stringify(call.body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}


const storedEngrams = async (): Promise<number> => (await mem.store.bus.listEngrams({ project: 'shop', runId: 'default', nowMs: Date.now(), limit: 1000 })).length;

describe('HTTP bus: authentication', () => {
  it('refuses every bus endpoint without a valid token with 401, storing nothing', async () => {
    const calls: Array<[string, Call]> = [
      ['/v1/engram', { body: riskEngram('unauthenticated claim', [span('README.md', 1, 1)]) }],
      ['/v1/engram/query?keys=service:gateway', {}],
      ['/v1/engram/query_by_embedding?text=gateway', {}],
      ['/v1/engram/eng_x', {}],
      ['/v1/engram/eng_x', { method: 'DELETE' }],
      ['/v1/engram/eng_x/promote', { body: { scope: 'project' } }],
      ['/v1/pointer/deref', { body: { pointer: span('README.md', 1, 1) } }],
      ['/v1/grants', { body: { child: 'coder', pointer: span('README.md', 1, 1), cap_tokens: 100 } }],
      ['/v1/messages/validate', { raw: 'ROLE: programmer', contentType: 'text/plain' }],
      ['/v1/bus/brief', {}],
      ['/v1/bus/contradictions', {}],
      ['/v1/bus/metrics', {}],
      ['/v1/bus/usage', {}],
    ];
    for (const [path, call] of calls) {
      for (const headers of [{}, { Authorization: 'Bearer eng_not-a-token' }] as Array<Record<string, string>>) {
        const r = await api(path, { ...call, as: null, headers });
        expect(r.status, path).toBe(401);
        expect(r.body.error.code).toBe('UNAUTHENTICATED');
      }
    }
    expect(await storedEngrams()).toBe(0);
    expect(await mem.bus.events({ limit: 10 })).toEqual([]);
  });
});

describe('HTTP bus: engrams', () => {
  it('stores an engram as the authenticated agent (201), a near-duplicate once (200), and finds it by id, keys and text', async () => {
    const put = await api('/v1/engram', { body: riskEngram('Reservation in the ledger is not atomic under retries.', [span('services/ledger/reservation.py', 1, 40)], { tags: ['service:ledger'] }) });
    expect(put.status).toBe(201);
    expect(put.body.status).toBe('stored');
    const stored = put.body.engram;
    expect(stored.id).toMatch(/^eng_/);
    expect(stored.provenance).toMatchObject({ created_by: ids.coder, source: 'agent' });

    const again = await api('/v1/engram', { as: 'peer', body: riskEngram('reservation in the Ledger is not atomic under retries!', [span('services/ledger/reservation.py', 1, 40)]) });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ status: 'duplicate', engram: { id: stored.id } });

    const one = await api(`/v1/engram/${stored.id}`, { as: 'manager' });
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ engram: { id: stored.id }, project: 'shop', run: 'default', is_contradiction: false });

    const byKeys = await api('/v1/engram/query?keys=service:ledger,service:nothing&k=5', { as: 'peer' });
    expect(byKeys.status).toBe(200);
    expect(byKeys.body.engrams.map((e: { engram: { id: string } }) => e.engram.id)).toEqual([stored.id]);
    expect(byKeys.body.engrams[0].matched_keys).toBeGreaterThanOrEqual(1);
    const byText = await api(`/v1/engram/query?text=${encodeURIComponent('is the ledger reservation atomic?')}&kinds=risk,fact`, { as: 'manager' });
    expect(byText.body.engrams[0].engram.id).toBe(stored.id);
    expect((await api('/v1/engram/query?text=ledger&kinds=decision')).body.engrams).toEqual([]);

    // Another project sees nothing of it.
    expect((await api('/v1/engram/query?keys=service:ledger', { as: 'outsider' })).body.engrams).toEqual([]);
    expect((await api(`/v1/engram/${stored.id}`, { as: 'outsider' })).status).toBe(404);
  });

  it('never lets a body name another writer, and refuses bad engrams with 400 naming the field, storing nothing', async () => {
    const impostor = await api('/v1/engram', { body: riskEngram('I am the manager.', [span('README.md', 1, 1)], { provenance: { created_by: ids.manager } }) });
    expect(impostor.status).toBe(403);
    expect(impostor.body.error).toMatchObject({ code: 'SCOPE_DENIED', data: { field: 'provenance.created_by' } });
    const agentField = await api('/v1/engram', { body: riskEngram('As the boss.', [span('README.md', 1, 1)], { agent: 'boss' }) });
    expect(agentField.status).toBe(400);
    expect(agentField.body.error.data.field).toBe('agent');

    const noPointers = await api('/v1/engram', { body: riskEngram('Unanchored.', []) });
    expect(noPointers.status).toBe(400);
    expect(noPointers.body.error).toMatchObject({ code: 'INVALID_INPUT', data: { field: 'pointers' } });
    const noSha = await api('/v1/engram', { body: riskEngram('Pointer rot.', ['repo:README.md#L1-L1']) });
    expect(noSha.status).toBe(400);
    expect(noSha.body.error.code).toBe('POINTER_INVALID');
    const tooLong = await api('/v1/engram', { body: riskEngram('x'.repeat(501), [span('README.md', 1, 1)]) });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error.data.field).toBe('claim');
    const orgScope = await api('/v1/engram', { body: riskEngram('Org wide.', [span('README.md', 1, 1)], { scope: 'org' }) });
    expect(orgScope.status).toBe(403);
    expect(orgScope.body.error.code).toBe('SCOPE_DENIED');

    const malformed = await api('/v1/engram', { raw: '{"kind": "risk", "claim": "half' });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error).toMatchObject({ code: 'INVALID_INPUT', data: { field: 'body' } });
    const array = await api('/v1/engram', { body: [riskEngram('In an array.', [span('README.md', 1, 1)])] });
    expect(array.status).toBe(400);
    expect(await storedEngrams()).toBe(0);
  });

  it('keeps run-scoped engrams in the run named by X-Engram-Run or ?run=, and refuses a malformed run', async () => {
    const put = await api('/v1/engram', { headers: { 'X-Engram-Run': 'run-a' }, body: riskEngram('Run-local scratch finding.', [span('README.md', 1, 1)], { scope: 'run', kind: 'fact' }) });
    expect(put.status).toBe(201);
    expect((await api('/v1/engram/query?text=scratch%20finding&run=run-a', { as: 'peer' })).body.engrams).toHaveLength(1);
    expect((await api('/v1/engram/query?text=scratch%20finding', { as: 'peer', headers: { 'X-Engram-Run': 'run-a' } })).body.engrams).toHaveLength(1);
    expect((await api('/v1/engram/query?text=scratch%20finding&run=run-b', { as: 'peer' })).body.engrams).toHaveLength(0);
    expect((await api('/v1/engram/query?text=scratch%20finding', { as: 'peer' })).body.engrams).toHaveLength(0);
    const bad = await api('/v1/engram/query?text=x', { headers: { 'X-Engram-Run': '../etc' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.data.field).toBe('run');
  });

  it('lets only admins delete (403 otherwise); a deleted engram is gone from every query', async () => {
    const { engram: e } = (await api('/v1/engram', { body: riskEngram('To be removed.', [span('README.md', 1, 1)]) })).body;
    const denied = await api(`/v1/engram/${e.id}`, { method: 'DELETE', as: 'manager' });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('FORBIDDEN');
    expect((await api(`/v1/engram/${e.id}`)).status).toBe(200);
    const removed = await api(`/v1/engram/${e.id}`, { method: 'DELETE', as: 'boss' });
    expect(removed).toEqual({ status: 200, body: { id: e.id, removed: true } });
    expect((await api(`/v1/engram/${e.id}`)).status).toBe(404);
    expect((await api('/v1/engram/query?text=removed')).body.engrams).toEqual([]);
    expect((await api(`/v1/engram/${e.id}`, { method: 'DELETE', as: 'boss' })).status).toBe(404);
  });

  it('promotes only as a parent of the writer', async () => {
    const { engram: e } = (await api('/v1/engram', { body: riskEngram('Ledger is the source of truth.', [span('README.md', 1, 1)], { scope: 'run', kind: 'decision' }) })).body;
    const sibling = await api(`/v1/engram/${e.id}/promote`, { as: 'peer', body: { scope: 'project' } });
    expect(sibling.status).toBe(403);
    expect(sibling.body.error.code).toBe('SCOPE_DENIED');
    const bad = await api(`/v1/engram/${e.id}/promote`, { as: 'manager', body: { scope: 'galaxy' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.data.field).toBe('scope');
    const promoted = await api(`/v1/engram/${e.id}/promote`, { as: 'manager', body: { scope: 'project' } });
    expect(promoted.status).toBe(200);
    expect(promoted.body.engram).toMatchObject({ id: e.id, scope: 'project' });
    expect((await api('/v1/engram/query?text=source%20of%20truth&run=another', { as: 'peer' })).body.engrams).toHaveLength(1);
  });

  it('queries by embedding, by engram id or by text', async () => {
    const a = (await api('/v1/engram', { body: riskEngram('The payment gateway retries failed card charges three times.', [span('services/gateway/routes.py', 1, 9)], { kind: 'fact' }) })).body.engram;
    await api('/v1/engram', { as: 'peer', body: riskEngram('Card charges that fail are retried by the gateway.', [span('services/gateway/routes.py', 20, 29)], { kind: 'fact' }) });
    await api('/v1/engram', { as: 'peer', body: riskEngram('The README has a title only.', [span('README.md', 1, 1)], { kind: 'fact' }) });
    const byRef = await api(`/v1/engram/query_by_embedding?embedding_ref=${a.id}&k=1`);
    expect(byRef.status).toBe(200);
    expect(byRef.body.engrams).toHaveLength(1);
    expect(byRef.body.engrams[0].engram.claim).toContain('retried by the gateway');
    const byText = await api(`/v1/engram/query_by_embedding?text=${encodeURIComponent('gateway retries for card charges')}`);
    expect(byText.body.engrams.length).toBe(3);
    expect(byText.body.engrams[2].engram.claim).toContain('README');
    expect((await api('/v1/engram/query_by_embedding?k=3')).status).toBe(400);
    const missing = await api('/v1/engram/query_by_embedding?embedding_ref=eng_nothing');
    expect(missing.status).toBe(404);
    expect(missing.body.error.data.field).toBe('embedding_ref');
  });
});

describe('HTTP bus: derefs, grants and messages', () => {
  it('serves 3 repo derefs a turn, refuses the 4th with 403 DEREF_DENIED, and pays it with a grant from the parent only', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await api('/v1/pointer/deref', { body: { pointer: span('services/gateway/routes.py', i * 10 + 1, i * 10 + 5), max_tokens: 100 } });
      expect(r.status).toBe(200);
      expect(r.body.excerpt).toContain(`routes ${i * 10 + 1}`);
      expect(r.body.content_digest).toMatch(/^[0-9a-f]{64}$/);
      expect(r.body.span_digest).toMatch(/^[0-9a-f]{64}$/);
      expect(r.body.pointer.ref).toBe(span('services/gateway/routes.py', i * 10 + 1, i * 10 + 5));
      expect(r.body).toMatchObject({ is_truncated: false, turn: 0, lines: { start: i * 10 + 1, end: i * 10 + 5 } });
      expect(r.body.usage.counts.repo).toBe(i + 1);
    }
    const target = span('services/ledger/reservation.py', 1, 20);
    const fourth = await api('/v1/pointer/deref', { body: { pointer: { type: 'repo', ref: target } } });
    expect(fourth.status).toBe(403);
    expect(fourth.body.error).toMatchObject({ code: 'DEREF_DENIED', data: { reason: 'count', kind: 'repo', usage: { counts: { repo: 3 } } } });
    expect((await api('/v1/bus/usage')).body).toMatchObject({ turn: 0, usage: { counts: { repo: 3 } }, limits: { repo: 3, artifact: 2, sam: 2, tokens: 1200 } });

    const notParent = await api('/v1/grants', { as: 'peer', body: { child: 'coder', pointer: target, cap_tokens: 500 } });
    expect(notParent.status).toBe(403);
    expect(notParent.body.error.code).toBe('FORBIDDEN');
    const grandParent = await api('/v1/grants', { as: 'boss', body: { child: 'coder', pointer: target, cap_tokens: 500 } });
    expect(grandParent.status).toBe(403);
    const noChild = await api('/v1/grants', { as: 'manager', body: { child: 'nobody', pointer: target, cap_tokens: 500 } });
    expect(noChild.status).toBe(404);
    expect(noChild.body.error.data.field).toBe('child');
    const badCap = await api('/v1/grants', { as: 'manager', body: { child: 'coder', pointer: target, cap_tokens: 0 } });
    expect(badCap.status).toBe(400);
    expect(badCap.body.error.data.field).toBe('cap_tokens');

    const grant = await api('/v1/grants', { as: 'manager', body: { child: 'coder', pointer: target, cap_tokens: 500, ttl_seconds: 600 } });
    expect(grant.status).toBe(201);
    expect(grant.body.budget_token).toMatch(/^grt_/);
    expect(grant.body.grant).toMatchObject({ parent_id: ids.manager, child_id: ids.coder, pointer: target, cap_tokens: 500 });
    expect(Date.parse(grant.body.grant.expires_at) - Date.parse(grant.body.grant.issued_at)).toBe(600_000);

    const wrongChild = await api('/v1/pointer/deref', { as: 'peer', body: { pointer: target, budget_token: grant.body.budget_token } });
    expect(wrongChild.status).toBe(403);
    expect(wrongChild.body.error.data.reason).toBe('wrong-child');
    const paid = await api('/v1/pointer/deref', { body: { pointer: target, budget_token: grant.body.budget_token } });
    expect(paid.status).toBe(200);
    expect(paid.body.excerpt).toContain('ledger 1');
    expect(paid.body.grant_id).toBe(grant.body.grant.id);
    const replay = await api('/v1/pointer/deref', { body: { pointer: target, budget_token: grant.body.budget_token } });
    expect(replay.status).toBe(403);
    expect(replay.body.error).toMatchObject({ code: 'DEREF_DENIED', data: { reason: 'used' } });
  });

  it('refuses bad deref input with 400 and a missing file with 404, charging nothing', async () => {
    const noSha = await api('/v1/pointer/deref', { body: { pointer: 'repo:README.md#L1-L1' } });
    expect(noSha.status).toBe(400);
    expect(noSha.body.error.code).toBe('POINTER_INVALID');
    const traversal = await api('/v1/pointer/deref', { body: { pointer: span('../../etc/passwd', 1, 2) } });
    expect(traversal.status).toBe(400);
    const missing = await api('/v1/pointer/deref', { body: { pointer: span('services/nope.py', 1, 2) } });
    expect(missing.status).toBe(404);
    const tooMany = await api('/v1/pointer/deref', { body: { pointer: span('README.md', 1, 1), max_tokens: 0 } });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error.data.field).toBe('max_tokens');
    const extra = await api('/v1/pointer/deref', { body: { pointer: span('README.md', 1, 1), agent: 'boss' } });
    expect(extra.status).toBe(400);
    expect((await api('/v1/bus/usage')).body.usage.counts.repo).toBe(0);
  });

  it('rejects an oversized message with 422 and machine-readable violations, accepts the compliant resend, and starts a new turn', async () => {
    for (let i = 0; i < 3; i++) await api('/v1/pointer/deref', { body: { pointer: span('README.md', 1, 1), max_tokens: 50 } });
    const bloated = `ROLE: programmer\nTASK_STATUS: done\nOUTPUT:\n  summary: "${'the gateway reservation flow calls the ledger twice; '.repeat(120)}"\n  next: review\n`;
    const rejected = await api('/v1/messages/validate', { raw: bloated, contentType: 'text/plain' });
    expect(rejected.status).toBe(422);
    expect(rejected.body.error.code).toBe('BUDGET_EXCEEDED');
    const data = rejected.body.error.data;
    expect(data.turn).toBe(1);
    expect(data.violations[0]).toMatchObject({ limit: 'maxInlineTokens', seedName: 'MAX_INLINE_TOKENS', field: '(message)', allowed: 800, unit: 'tokens' });
    expect(data.violations[0].measured).toBeGreaterThan(800);
    expect(typeof data.violations[0].instruction).toBe('string');
    expect(data.resend).toMatchObject({ format: 'engrams-and-pointers', direction: 'child-to-parent', maxInlineTokens: 800 });
    expect(data.usage.inlineTokens).toBe(data.violations[0].measured);

    const resend = {
      ROLE: 'programmer',
      TASK_STATUS: 'done',
      ENGRAMS: [riskEngram('The gateway reservation flow calls the ledger twice.', [span('services/gateway/routes.py', 10, 40)])],
      OUTPUT: { summary: 'One risk, see engram.', next: 'Await review.' },
    };
    const ok = await api('/v1/messages/validate', { body: { message: resend, direction: 'child-to-parent' } });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ ok: true, turn: 2, direction: 'child-to-parent', usage: { engrams: 1 } });
    expect(ok.body.usage.inlineTokens).toBeLessThanOrEqual(800);
    // Each message starts a turn: the deref budget is fresh.
    expect((await api('/v1/bus/usage')).body).toMatchObject({ turn: 2, usage: { counts: { repo: 0 } } });
    expect((await api('/v1/pointer/deref', { body: { pointer: span('README.md', 1, 1) } })).status).toBe(200);

    const code = 'ROLE: programmer\nTASK_STATUS: done\nOUTPUT:\n  summary: |\n    ```python\n    def reserve(amount):\n        ledger.lock()\n        return ledger.debit(amount)\n    ```\n  next: review\n';
    const pasted = await api('/v1/messages/validate?direction=child-to-parent', { raw: code, contentType: 'application/yaml' });
    expect(pasted.status).toBe(422);
    expect(pasted.body.error.data.violations.map((v: { limit: string }) => v.limit)).toContain('maxInlineCodeChars');
    const unparsable = await api('/v1/messages/validate', { raw: 'ROLE: [unclosed', contentType: 'text/plain' });
    expect(unparsable.status).toBe(400);

    const metrics = await api('/v1/bus/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.body.rejectionRate).toBeCloseTo(2 / 3, 2);
    expect(metrics.body.resendSuccessRate).toBe(0.5);
    expect(metrics.body.byType['less.deref.request']).toBe(4);
  });

  it("gives a parent the SharedBriefMicro of its children, and anyone in the project the contradictions", async () => {
    await api('/v1/engram', { body: riskEngram('Gateway timeouts are 30 s.', [span('services/gateway/routes.py', 1, 2)], { kind: 'fact' }) });
    await api('/v1/engram', {
      as: 'peer',
      body: riskEngram('SPEC says reservations are atomic; the ledger code locks twice.', ['artifact:SPEC.md#sec=Budget@0123456789abcdef', span('services/ledger/reservation.py', 1, 40)]),
    });
    const brief = await api(`/v1/bus/brief?lead=${encodeURIComponent('Goal: fix the reservation flow.\nNo inline code.')}`, { as: 'manager' });
    expect(brief.status).toBe(200);
    expect(brief.body.run).toBe('default');
    expect(brief.body.lines.slice(0, 2)).toEqual(['Goal: fix the reservation flow.', 'No inline code.']);
    expect(brief.body.lines[2]).toContain('CONTRADICTION');
    expect(brief.body.lines.join('\n')).toContain('Gateway timeouts are 30 s.');
    expect(brief.body.contradictions).toBe(1);
    expect(brief.body.included).toHaveLength(2);
    // The coder has no children: its brief is empty.
    expect((await api('/v1/bus/brief')).body.lines).toEqual([]);

    const contradictions = await api('/v1/bus/contradictions', { as: 'boss' });
    expect(contradictions.status).toBe(200);
    expect(contradictions.body.engrams.map((e: { engram: { claim: string } }) => e.engram.claim)).toEqual(['SPEC says reservations are atomic; the ledger code locks twice.']);
    expect(contradictions.body.engrams[0].is_contradiction).toBe(true);
    expect((await api('/v1/bus/contradictions', { as: 'outsider' })).body.engrams).toEqual([]);
  });

  it('documents every bus endpoint in the OpenAPI document', async () => {
    const doc = (await api('/v1/openapi.json')).body as { paths: Record<string, Record<string, any>> };
    for (const [path, method] of [
      ['/v1/engram', 'post'],
      ['/v1/engram/query', 'get'],
      ['/v1/engram/query_by_embedding', 'get'],
      ['/v1/engram/{id}', 'get'],
      ['/v1/engram/{id}', 'delete'],
      ['/v1/engram/{id}/promote', 'post'],
      ['/v1/pointer/deref', 'post'],
      ['/v1/grants', 'post'],
      ['/v1/messages/validate', 'post'],
      ['/v1/bus/brief', 'get'],
      ['/v1/bus/contradictions', 'get'],
      ['/v1/bus/metrics', 'get'],
      ['/v1/bus/usage', 'get'],
    ] as const) {
      expect(doc.paths[path]?.[method], `${method} ${path}`).toBeDefined();
    }
    const put = doc.paths['/v1/engram']!.post;
    expect(put.parameters.map((p: { in: string; name: string }) => `${p.in}:${p.name}`)).toEqual(['query:run', 'header:X-Engram-Run']);
    const engramSchema = put.requestBody.content['application/json'].schema;
    expect(engramSchema.properties.kind.enum).toContain('risk');
    expect(engramSchema.required).toEqual(['kind', 'claim', 'pointers', 'confidence', 'ttl', 'scope']);
    expect(Object.keys(doc.paths['/v1/messages/validate']!.post.requestBody.content).sort()).toEqual(['application/json', 'text/plain']);
    expect(doc.paths['/v1/pointer/deref']!.post.responses['403']).toBeDefined();
    expect(doc.paths['/v1/messages/validate']!.post.responses['422']).toBeDefined();
  });
});
