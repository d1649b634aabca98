import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import type { BusAgent } from '../../src/bus/bus-agent.js';
import { createTempRepo, type TempRepo } from '../../src/bus/resolvers/test-support.js';
import { runStorageContract } from './harnesses.js';
import type { BackendHarness } from './storage-contract.js';
import { riskEngram } from '../fixtures/engrams.js';

/**
 * The Engram Bus end to end on every backend, through the engine with a real git repository: the PAS Bus
 * test matrix (§11), its failure modes (§8) and the security cases of the bus issue (traversal, forged grant,
 * cross-project read, replay).
 */
let repo: TempRepo;
let sha: string;
let sha2: string;
beforeAll(() => {
  repo = createTempRepo();
  const lines = (n: number, label: string) => Array.from({ length: n }, (_, i) => `${label} line ${i + 1}`).join('\n') + '\n';
  sha = repo.commit({ 'services/gateway/routes.py': lines(300, 'routes'), 'services/ledger/reservation.py': lines(220, 'ledger'), 'README.md': '# Demo\n' });
  sha2 = repo.commit({ 'services/gateway/routes.py': lines(310, 'routes v2') });
});
afterAll(() => repo.remove());

const span = (path: string, a: number, b: number, commit = sha) => `repo:${path}#L${a}-L${b}@${commit}`;


runStorageContract('engram bus', ({ createHarness }) => {
  let harness: BackendHarness;
  let mem: Engram;
  let architect: BusAgent;
  let manager: BusAgent;
  let programmer: BusAgent;
  let sibling: BusAgent;
  let outsider: BusAgent;
  let admin: BusAgent;

  beforeEach(async () => {
    harness = await createHarness();
    mem = await openEngram({ backend: harness.backend, bus: { repoRoot: repo.dir, policy: { allowOrgGlobal: true } } });
    await mem.agents.add('architect', { role: 'architect', project: 'shop' });
    await mem.agents.add('manager', { role: 'manager', parent: 'architect', project: 'shop' });
    await mem.agents.add('programmer', { role: 'programmer', parent: 'manager', project: 'shop' });
    await mem.agents.add('sibling', { role: 'programmer', parent: 'manager', project: 'shop' });
    await mem.agents.add('outsider', { role: 'programmer', project: 'bank' });
    await mem.agents.add('root', { role: 'admin', isAdmin: true, project: 'shop' });
    architect = await mem.busAgent('architect');
    manager = await mem.busAgent('manager');
    programmer = await mem.busAgent('programmer');
    sibling = await mem.busAgent('sibling');
    outsider = await mem.busAgent('outsider');
    admin = await mem.busAgent('root');
  });
  afterEach(async () => {
    await mem.close();
    await harness.cleanup();
  });

  describe('engram quality (§11.3, §8.2)', () => {
    it('stores a valid engram and finds it by key, text and pointer', async () => {
      const { status, engram } = await mem.bus.engrams.put(
        programmer,
        riskEngram('Reservation in the ledger is not atomic under retries.', [span('services/ledger/reservation.py', 1, 40)], { tags: ['service:ledger'] }),
        'r1',
      );
      expect(status).toBe('stored');
      expect(engram.id).toMatch(/^eng_/);
      expect(engram.provenance).toMatchObject({ created_by: programmer.id, source: 'agent' });
      expect(engram.hash_keys).toContain('c:service:ledger');
      const byKey = await mem.bus.engrams.query(manager, { keys: ['service:ledger'] }, 'r1');
      expect(byKey.engrams.map((e) => e.engram.id)).toEqual([engram.id]);
      const byText = await mem.bus.engrams.query(manager, { text: 'is the ledger reservation atomic?' }, 'r1');
      expect(byText.engrams[0]?.engram.id).toBe(engram.id);
      const byPointer = await mem.bus.engrams.query(sibling, { pointers: [{ type: 'repo', ref: span('services/ledger/reservation.py', 100, 120) }] }, 'r1');
      expect(byPointer.engrams[0]?.engram.id).toBe(engram.id);
    });

    it('rejects an engram without pointers, over length, with a pointer missing its commit, or with extra fields', async () => {
      await expect(mem.bus.engrams.put(programmer, riskEngram('x', []), 'r1')).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'pointers' } });
      await expect(mem.bus.engrams.put(programmer, riskEngram('y'.repeat(501), [span('README.md', 1, 1)]), 'r1')).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        data: { field: 'claim' },
      });
      await expect(mem.bus.engrams.put(programmer, riskEngram('no sha', ['repo:README.md#L1-L1']), 'r1')).rejects.toMatchObject({ code: 'POINTER_INVALID' });
      await expect(mem.bus.engrams.put(programmer, riskEngram('extra', [span('README.md', 1, 1)], { note: 'x' }), 'r1')).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        data: { field: 'note' },
      });
      await expect(mem.bus.engrams.put(programmer, riskEngram('impostor', [span('README.md', 1, 1)], { provenance: { created_by: manager.id } }), 'r1')).rejects.toMatchObject({
        code: 'SCOPE_DENIED',
      });
      expect((await mem.bus.engrams.query(manager, { text: 'sha extra impostor' }, 'r1')).engrams).toEqual([]);
    });

    it('excludes an engram once its TTL has passed, and keeps it stored', async () => {
      let now = Date.UTC(2026, 10, 21, 12);
      const timed = await openEngram({ backend: harness.backend, bus: { repoRoot: repo.dir, now: () => now } });
      const { engram } = await timed.bus.engrams.put(programmer, riskEngram('Short-lived cache note.', [span('README.md', 1, 1)], { ttl: 'PT1H', kind: 'fact' }), 'r1');
      expect((await timed.bus.engrams.query(manager, { text: 'cache note' }, 'r1')).engrams).toHaveLength(1);
      now += 2 * 3600_000;
      expect((await timed.bus.engrams.query(manager, { text: 'cache note' }, 'r1')).engrams).toHaveLength(0);
      expect(await harness.backend.bus.getEngram(engram.id)).not.toBeNull();
    });

    it('stores a near-identical claim on the same pointers once', async () => {
      const a = await mem.bus.engrams.put(programmer, riskEngram('The gateway retries 3 times.', [span('services/gateway/routes.py', 1, 9)]), 'r1');
      const b = await mem.bus.engrams.put(sibling, riskEngram('the Gateway retries 3 times!', [span('services/gateway/routes.py', 1, 9)]), 'r1');
      expect(b).toMatchObject({ status: 'duplicate', engram: { id: a.engram.id } });
      const c = await mem.bus.engrams.put(sibling, riskEngram('the Gateway retries 3 times!', [span('services/gateway/routes.py', 1, 10)]), 'r1');
      expect(c.status).toBe('stored');
    });

    it('rate-limits engrams per agent per minute', async () => {
      const limited = await openEngram({ backend: harness.backend, bus: { repoRoot: repo.dir, limits: { maxEngramsPerAgentPerMinute: 2 } } });
      await limited.bus.engrams.put(programmer, riskEngram('one', [span('README.md', 1, 1)]), 'r1');
      await limited.bus.engrams.put(programmer, riskEngram('two', [span('README.md', 1, 1)]), 'r1');
      await expect(limited.bus.engrams.put(programmer, riskEngram('three', [span('README.md', 1, 1)]), 'r1')).rejects.toMatchObject({
        code: 'BUDGET_EXCEEDED',
        data: { limit: 'maxEngramsPerAgentPerMinute' },
      });
      // Another agent has its own allowance.
      expect((await limited.bus.engrams.put(sibling, riskEngram('three', [span('README.md', 1, 1)]), 'r1')).status).toBe('stored');
    });
  });

  describe('scopes (LESS §4.3, §13.3)', () => {
    it("never shows a project's engrams to another project", async () => {
      await mem.bus.engrams.put(programmer, riskEngram('Shop secret: pricing rule in routes.', [span('services/gateway/routes.py', 10, 20)], { tags: ['service:gateway'] }), 'r1');
      expect((await mem.bus.engrams.query(outsider, { keys: ['service:gateway'], text: 'pricing rule routes' }, 'r1')).engrams).toEqual([]);
      const mine = await mem.bus.engrams.query(sibling, { keys: ['service:gateway'] }, 'r1');
      expect(mine.engrams).toHaveLength(1);
      await expect(mem.bus.engrams.get(outsider, mine.engrams[0]!.engram.id, 'r1')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    });

    it('shows run-scoped engrams only within their run', async () => {
      await mem.bus.engrams.put(programmer, riskEngram('Run-local scratch finding.', [span('README.md', 1, 1)], { scope: 'run', kind: 'fact' }), 'run-a');
      expect((await mem.bus.engrams.query(sibling, { text: 'scratch finding' }, 'run-a')).engrams).toHaveLength(1);
      expect((await mem.bus.engrams.query(sibling, { text: 'scratch finding' }, 'run-b')).engrams).toHaveLength(0);
    });

    it('lets children write run/project only; a parent promotes; org/global need a root or admin', async () => {
      await expect(mem.bus.engrams.put(programmer, riskEngram('org wide', [span('README.md', 1, 1)], { scope: 'org' }), 'r1')).rejects.toMatchObject({
        code: 'SCOPE_DENIED',
      });
      const { engram } = await mem.bus.engrams.put(programmer, riskEngram('Promote me: ledger is the source of truth.', [span('README.md', 1, 1)], { scope: 'run', kind: 'decision' }), 'r1');
      await expect(mem.bus.promote(sibling, engram.id, 'project')).rejects.toMatchObject({ code: 'SCOPE_DENIED' });
      expect((await mem.bus.promote(manager, engram.id, 'project')).scope).toBe('project');
      expect((await mem.bus.engrams.query(sibling, { text: 'ledger source of truth' }, 'other-run')).engrams).toHaveLength(1);
      // The architect is the grand-parent and a root: it may promote to org, then the other project sees it.
      expect((await mem.bus.promote(architect, engram.id, 'org')).scope).toBe('org');
      expect((await mem.bus.engrams.query(outsider, { text: 'ledger source of truth' }, 'x')).engrams).toHaveLength(1);
    });

    it('refuses org/global everywhere unless the store enables them', async () => {
      const strict = await openEngram({ backend: harness.backend, bus: { repoRoot: repo.dir } });
      await expect(strict.bus.engrams.put(admin, riskEngram('global', [span('README.md', 1, 1)], { scope: 'global' }), 'r1')).rejects.toMatchObject({
        code: 'SCOPE_DENIED',
        data: { field: 'scope' },
      });
    });

    it('lets only an admin remove an engram, which stays stored', async () => {
      const { engram } = await mem.bus.engrams.put(programmer, riskEngram('to be removed', [span('README.md', 1, 1)]), 'r1');
      await expect(mem.bus.engrams.remove(manager, engram.id)).rejects.toMatchObject({ code: 'FORBIDDEN' });
      await mem.bus.engrams.remove(admin, engram.id);
      expect((await mem.bus.engrams.query(manager, { text: 'to be removed' }, 'r1')).engrams).toEqual([]);
      expect((await harness.backend.bus.getEngram(engram.id))?.removedBy).toBe(admin.id);
      await expect(mem.bus.engrams.remove(admin, engram.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    });
  });

  describe('deref budgets and grants (§3.2, §6.3, §11.1, §11.2)', () => {
    it('allows 3 repo derefs per turn, refuses the 4th without a grant, and a new turn resets the count', async () => {
      for (let i = 0; i < 3; i++) {
        const r = await mem.bus.enforcer.deref(programmer, { pointer: span('services/gateway/routes.py', i * 10 + 1, i * 10 + 5), maxTokens: 100 });
        expect(r.excerpt).toContain(`routes line ${i * 10 + 1}`);
        expect(r.contentDigest).toMatch(/^[0-9a-f]{64}$/);
      }
      await expect(mem.bus.enforcer.deref(programmer, { pointer: span('services/gateway/routes.py', 50, 55), maxTokens: 100 })).rejects.toMatchObject({
        code: 'DEREF_DENIED',
        data: { reason: 'count', kind: 'repo' },
      });
      await mem.bus.enforcer.submitMessage(programmer, 'ROLE: programmer\nTASK_STATUS: working\nOUTPUT:\n  summary: next turn\n  next: continue\n');
      expect((await mem.bus.enforcer.deref(programmer, { pointer: span('services/gateway/routes.py', 50, 55), maxTokens: 100 })).turn).toBe(1);
    });

    it('pays a 4th deref with a grant from the parent, once; refuses forged, altered, replayed and wrong-child grants', async () => {
      for (let i = 0; i < 3; i++) await mem.bus.enforcer.deref(programmer, { pointer: span('README.md', 1, 1), maxTokens: 50 });
      const target = span('services/ledger/reservation.py', 1, 20);
      await expect(mem.bus.enforcer.issueGrant(architect, programmer, { pointer: target, capTokens: 500 })).rejects.toMatchObject({ code: 'FORBIDDEN' });
      const { token } = await mem.bus.enforcer.issueGrant(manager, programmer, { pointer: target, capTokens: 500 });
      await expect(mem.bus.enforcer.deref(sibling, { pointer: target, grant: token })).rejects.toMatchObject({ code: 'DEREF_DENIED', data: { reason: 'wrong-child' } });
      const [body, sig] = token.slice(4).split('.');
      const forged = `grt_${body}.${sig!.slice(0, -2)}xx`;
      await expect(mem.bus.enforcer.deref(programmer, { pointer: target, grant: forged })).rejects.toMatchObject({ code: 'DEREF_DENIED', data: { reason: 'forged' } });
      const payload = JSON.parse(Buffer.from(body!, 'base64url').toString());
      const altered = `grt_${Buffer.from(JSON.stringify({ ...payload, t: 5000 })).toString('base64url')}.${sig}`;
      await expect(mem.bus.enforcer.deref(programmer, { pointer: target, grant: altered })).rejects.toMatchObject({ code: 'DEREF_DENIED', data: { reason: 'forged' } });
      await expect(mem.bus.enforcer.deref(programmer, { pointer: span('README.md', 1, 1), grant: token })).rejects.toMatchObject({
        code: 'DEREF_DENIED',
        data: { reason: 'wrong-pointer' },
      });
      const paid = await mem.bus.enforcer.deref(programmer, { pointer: target, grant: token });
      expect(paid.excerpt).toContain('ledger line 1');
      expect(paid.grantId).toBeDefined();
      await expect(mem.bus.enforcer.deref(programmer, { pointer: target, grant: token })).rejects.toMatchObject({ code: 'DEREF_DENIED', data: { reason: 'used' } });
    });

    it('refuses an expired grant', async () => {
      const target = span('README.md', 1, 1);
      let now = Date.now();
      const timed = await openEngram({ backend: harness.backend, bus: { repoRoot: repo.dir, now: () => now } });
      const { token } = await timed.bus.enforcer.issueGrant(manager, programmer, { pointer: target, capTokens: 100, ttlMs: 60_000 });
      now += 120_000;
      await expect(timed.bus.enforcer.deref(programmer, { pointer: target, grant: token })).rejects.toMatchObject({ code: 'DEREF_DENIED', data: { reason: 'expired' } });
      await timed.close();
    });

    it('caps deref tokens per turn and gives back what an excerpt did not use', async () => {
      const tight = await openEngram({ backend: harness.backend, bus: { repoRoot: repo.dir, limits: { maxDerefTokensPerTurn: 60, maxRepoSpansPerTurn: 10 } } });
      const first = await tight.bus.enforcer.deref(programmer, { pointer: span('README.md', 1, 1), maxTokens: 50 });
      expect(first.usage.tokens).toBe(first.tokens);
      const second = await tight.bus.enforcer.deref(programmer, { pointer: span('services/gateway/routes.py', 1, 100), maxTokens: 400 });
      expect(second.isTruncated).toBe(true);
      expect(second.usage.tokens).toBeLessThanOrEqual(60);
      // Spend what is left until the turn refuses: usage never passes the cap.
      let denied: unknown;
      for (let i = 0; i < 8 && !denied; i++) {
        try {
          const r = await tight.bus.enforcer.deref(programmer, { pointer: span('services/gateway/routes.py', 200 + i, 210), maxTokens: 400 });
          expect(r.usage.tokens).toBeLessThanOrEqual(60);
        } catch (err) {
          denied = err;
        }
      }
      expect(denied).toMatchObject({ code: 'DEREF_DENIED', data: { reason: 'tokens' } });
      expect((await tight.bus.enforcer.usage(programmer)).usage.tokens).toBeGreaterThan(60 - 16);
      await tight.close();
    });

    it('fails clearly for a missing file, a span past the end, traversal and a pointer without commit; failed derefs cost nothing', async () => {
      await expect(mem.bus.enforcer.deref(programmer, { pointer: span('services/nope.py', 1, 2) })).rejects.toMatchObject({ code: 'NOT_FOUND' });
      await expect(mem.bus.enforcer.deref(programmer, { pointer: span('README.md', 5, 9) })).rejects.toMatchObject({ code: expect.stringMatching(/NOT_FOUND|POINTER_INVALID/) });
      await expect(mem.bus.enforcer.deref(programmer, { pointer: span('../../etc/passwd', 1, 2) })).rejects.toMatchObject({ code: 'POINTER_INVALID' });
      await expect(mem.bus.enforcer.deref(programmer, { pointer: 'repo:README.md#L1-L1' })).rejects.toMatchObject({ code: 'POINTER_INVALID' });
      expect((await mem.bus.enforcer.usage(programmer)).usage.counts.repo).toBe(0);
    });

    it('resolves the same pointer to the same digest, and another commit to other content', async () => {
      const a = await mem.bus.enforcer.deref(programmer, { pointer: span('services/gateway/routes.py', 1, 3) });
      const b = await mem.bus.enforcer.deref(sibling, { pointer: span('services/gateway/routes.py', 1, 3) });
      const c = await mem.bus.enforcer.deref(manager, { pointer: span('services/gateway/routes.py', 1, 3, sha2) });
      expect(a.contentDigest).toBe(b.contentDigest);
      expect(c.excerpt).toContain('routes v2');
      expect(c.contentDigest).not.toBe(a.contentDigest);
    });

    it('resolves test: pointers to the newest stored result of that test', async () => {
      // The CI session belongs to the agents' project (model/access.ts): derefs read only what the agent may.
      await mem.append('ci', { kind: 'tool_result', toolName: 'pytest', content: 'test_reserve_twice PASSED', meta: { testId: 'test_reserve_twice', status: 'passed' } }, { project: 'shop' });
      await mem.append('ci', { kind: 'tool_result', toolName: 'pytest', content: 'test_reserve_twice FAILED: charged twice', meta: { testId: 'test_reserve_twice', status: 'failed' } });
      const r = await mem.bus.enforcer.deref(programmer, { pointer: 'test:test_reserve_twice' });
      expect(r.excerpt).toContain('charged twice');
      await expect(mem.bus.enforcer.deref(programmer, { pointer: 'test:test_unknown' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
      // Another project's agent finds no result of shop's CI.
      await expect(mem.bus.enforcer.deref(await mem.busAgent('outsider'), { pointer: 'test:test_reserve_twice' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    });

    it('resolves sam: pointers from the event store', async () => {
      const [ev] = await mem.append('s1', { kind: 'decision', content: 'Use PostgreSQL for the ledger.' }, { project: 'shop' });
      const r = await mem.bus.enforcer.deref(programmer, { pointer: `sam:event:${ev!.record.id}` });
      expect(r.excerpt).toContain('PostgreSQL for the ledger');
      expect(r.usage.counts.sam).toBe(1);
      // Not to another project's agent, whose refused deref costs it nothing.
      const outsider = await mem.busAgent('outsider');
      await expect(mem.bus.enforcer.deref(outsider, { pointer: `sam:event:${ev!.record.id}` })).rejects.toMatchObject({ code: 'NOT_FOUND' });
      expect((await mem.bus.enforcer.usage(outsider)).usage.counts.sam).toBe(0);
    });
  });

  describe('messages, brief, contradictions, telemetry', () => {
    it('rejects a message over the inline budget and accepts the compliant resend (§11.1, §10.2)', async () => {
      const bloated = `ROLE: programmer\nTASK_STATUS: done\nOUTPUT:\n  summary: "${'the gateway reservation flow calls the ledger twice; '.repeat(120)}"\n  next: review\n`;
      const rejected = await mem.bus.enforcer.submitMessage(programmer, bloated);
      expect(rejected.verdict.ok).toBe(false);
      if (!rejected.verdict.ok) expect(rejected.verdict.violations.map((v) => v.seedName)).toContain('MAX_INLINE_TOKENS');
      await expect(mem.bus.enforcer.requireMessage(programmer, bloated)).rejects.toMatchObject({ code: 'BUDGET_EXCEEDED' });
      const resend = [
        'ROLE: programmer',
        'TASK_STATUS: done',
        'ENGRAMS:',
        '  - kind: risk',
        '    claim: "The gateway reservation flow calls the ledger twice."',
        '    confidence: 0.7',
        '    ttl: "P7D"',
        '    scope: "project"',
        '    pointers:',
        `      - { type: "repo", ref: "${span('services/gateway/routes.py', 10, 40)}" }`,
        'OUTPUT:',
        '  summary: "One risk, see engram."',
        '  next: "Await review."',
      ].join('\n');
      expect((await mem.bus.enforcer.submitMessage(programmer, resend)).verdict.ok).toBe(true);
      const metrics = await mem.bus.metrics();
      expect(metrics.rejectionRate).toBeCloseTo(2 / 3, 2);
      expect(metrics.resendSuccessRate).toBe(0.5);
    });

    it('rejects inline code without a grant', async () => {
      const code = 'ROLE: programmer\nTASK_STATUS: done\nOUTPUT:\n  summary: |\n    ```python\n    def reserve(amount):\n        ledger.lock()\n        return ledger.debit(amount)\n    ```\n  next: review\n';
      const r = await mem.bus.enforcer.submitMessage(programmer, code);
      expect(r.verdict.ok).toBe(false);
      if (!r.verdict.ok) expect(r.verdict.violations.map((v) => v.limit)).toContain('maxInlineCodeChars');
    });

    it("builds the parent's SharedBriefMicro from its children's engrams, contradictions first, within 30 lines", async () => {
      for (let i = 0; i < 40; i++) {
        await mem.bus.engrams.put(i % 2 ? programmer : sibling, riskEngram(`Finding number ${i} about the gateway.`, [span('services/gateway/routes.py', i + 1, i + 2)], { kind: 'fact' }), 'r1');
      }
      await mem.bus.engrams.put(
        programmer,
        riskEngram('SPEC says reservations are atomic; the ledger code locks twice.', ['artifact:SPEC.md#sec=Budget@0123456789abcdef', span('services/ledger/reservation.py', 1, 40)]),
        'r1',
      );
      const brief = await mem.bus.brief(manager, { runId: 'r1', lead: ['Goal: fix the reservation flow.'] });
      expect(brief.lines.length).toBeLessThanOrEqual(30);
      expect(brief.lines[0]).toBe('Goal: fix the reservation flow.');
      expect(brief.lines[1]).toContain('CONTRADICTION');
      expect(brief.contradictions).toBe(1);
      const contradictions = await mem.bus.engrams.contradictions(architect, 'r1');
      expect(contradictions.map((c) => c.engram.claim)).toEqual(['SPEC says reservations are atomic; the ledger code locks twice.']);
      const metrics = await mem.bus.metrics();
      expect(metrics.topEngramKinds[0]).toEqual({ kind: 'fact', count: 40 });
      expect(metrics.contradictionRate).toBeCloseTo(1 / 41, 3);
    });
  });
});
