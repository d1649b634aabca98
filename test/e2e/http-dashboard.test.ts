import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTempRepo, numberedLines, type TempRepo } from '../../src/bus/resolvers/test-support.js';
import { openEngram, type Engram } from '../../src/engine.js';
import { startHttpServer, type RunningHttpServer } from '../../src/interfaces/http/server.js';
import { riskEngram } from '../fixtures/engrams.js';

/**
 * The dashboard's endpoints (issue #18) over real HTTP on loopback, with a real git repository for repo
 * pointers: each answers through the trust model (an agent sees its project, an admin everything), and the
 * live stream delivers what agents do while a client reads it.
 */
let repo: TempRepo;
let sha: string;
beforeAll(() => {
  repo = createTempRepo();
  sha = repo.commit({ 'services/ledger/reservation.py': numberedLines(220, 'ledger') });
});
afterAll(() => repo.remove());

let dir: string;
let mem: Engram;
let server: RunningHttpServer;
const tokens: Record<string, string> = {};

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-http-dashboard-'));
  mem = await openEngram({ db: join(dir, 'engram.db'), indexing: { background: false }, bus: { repoRoot: repo.dir } });
  const add = async (name: string, options: Parameters<Engram['agents']['add']>[1]) => {
    tokens[name] = (await mem.agents.add(name, options)).token;
  };
  await add('root', { role: 'admin', isAdmin: true });
  await add('lead', { role: 'manager', project: 'shop' });
  await add('alice', { role: 'programmer', parent: 'lead', project: 'shop' });
  await add('bob', { role: 'tester', parent: 'lead', project: 'shop' });
  await add('eve', { role: 'programmer', project: 'bank' });
  server = await startHttpServer(mem, { port: 0, version: '0.0.0-test' });
});

afterEach(async () => {
  await server.close();
  await mem.close();
  rmSync(dir, { recursive: true, force: true });
});

async function api(path: string, as: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${server.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { Authorization: `Bearer ${tokens[as]}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: await res.json() };
}

const span = (a: number, b: number) => `repo:services/ledger/reservation.py#L${a}-L${b}@${sha}`;

describe('dashboard endpoints', () => {
  it('the brief panel shows each parent its children\'s engrams, and the feed filters by kind, role and author', async () => {
    expect((await api('/v1/engram', 'alice', riskEngram('Reservation is not idempotent on retry.', [span(1, 10)]))).status).toBe(201);
    expect((await api('/v1/engram', 'bob', { ...riskEngram('Retry test covers the ledger path.', [span(20, 30)]), kind: 'test' })).status).toBe(201);
    expect((await api('/v1/engram', 'eve', riskEngram('Bank ledger rounding drifts.', [span(40, 45)]))).status).toBe(201);

    const briefs = await api('/v1/dashboard/briefs', 'root');
    expect(briefs.status).toBe(200);
    expect(briefs.body.briefs.map((b: any) => b.parent.name)).toEqual(['lead']);
    expect(briefs.body.briefs[0].brief.lines.join('\n')).toContain('Reservation is not idempotent');
    expect(briefs.body.briefs[0].brief.lines.join('\n')).not.toContain('Bank ledger');

    const mine = await api('/v1/dashboard/engrams', 'alice');
    expect(mine.body.items.map((i: any) => i.engram.claim).sort()).toEqual(['Reservation is not idempotent on retry.', 'Retry test covers the ledger path.']);
    // A page reads only the rows up to it: past the page the total is not counted, only that more follow.
    expect((await api('/v1/dashboard/engrams?limit=1', 'alice')).body).toMatchObject({ total: null, hasMore: true, items: [{ author: { name: 'bob' } }] });
    expect((await api('/v1/dashboard/engrams?limit=1&offset=1', 'alice')).body).toMatchObject({ total: 2, hasMore: false, items: [{ author: { name: 'alice' } }] });
    expect((await api('/v1/dashboard/engrams?kind=test', 'alice')).body.items.map((i: any) => i.author.name)).toEqual(['bob']);
    expect((await api('/v1/dashboard/engrams?role=programmer', 'alice')).body.items.map((i: any) => i.author.name)).toEqual(['alice']);
    expect((await api('/v1/dashboard/engrams?agent=bob', 'alice')).body.total).toBe(1);
    // eve (project bank) never sees shop's engrams, and cannot ask for them by project.
    expect((await api('/v1/dashboard/engrams', 'eve')).body.items.map((i: any) => i.engram.claim)).toEqual(['Bank ledger rounding drifts.']);
    expect((await api('/v1/dashboard/engrams?project=shop', 'eve')).status).toBe(404);
    // The admin sees every project, and filters by one.
    expect((await api('/v1/dashboard/engrams', 'root')).body.total).toBe(3);
    expect((await api('/v1/dashboard/engrams?project=bank', 'root')).body.total).toBe(1);
    const paged = await api('/v1/dashboard/engrams?limit=1&offset=1', 'root');
    expect([paged.body.items.length, paged.body.total]).toEqual([1, 3]);
    expect((await api('/v1/dashboard/engrams?kind=nope', 'root')).body.error.data.field).toBe('kind');
  });

  it('the budget meter counts derefs this turn, what remains, grants, and the rejections with their reasons', async () => {
    for (const [a, b] of [[1, 5], [6, 10], [11, 15]]) expect((await api('/v1/pointer/deref', 'alice', { pointer: span(a!, b!) })).status).toBe(200);
    expect((await api('/v1/pointer/deref', 'alice', { pointer: span(16, 20) })).status).toBe(403);
    expect((await api('/v1/grants', 'lead', { child: 'alice', pointer: span(16, 20), cap_tokens: 200 })).status).toBe(201);
    const code = 'ROLE: tester\nTASK_STATUS: done\nOUTPUT:\n  summary: |\n    ```python\n    def reserve(amount):\n        return ledger.debit(amount)\n    ```\n  next: review\n';
    expect((await api('/v1/messages/validate', 'bob', { message: code, direction: 'child-to-parent' })).status).toBe(422);

    const meters = (await api('/v1/dashboard/agents', 'lead')).body.agents as any[];
    expect(meters.map((m) => m.agent.name).sort()).toEqual(['alice', 'bob', 'lead']);
    const alice = meters.find((m) => m.agent.name === 'alice');
    expect(alice.usage.counts.repo).toBe(3);
    expect(alice.remaining.repo).toBe(0);
    expect(alice.derefsByTurn).toMatchObject([{ turn: 0, derefs: 3, refused: 1, tokens: alice.usage.tokens }]);
    expect(alice.rejections[0]).toMatchObject({ type: 'deref', pointer: span(16, 20) });
    expect(alice.rejections[0].reasons[0]).toContain('budget');
    expect(alice.grants.received).toMatchObject([{ parent: 'lead', child: 'alice', pointer: span(16, 20), capTokens: 200, isUsed: false }]);
    const bob = meters.find((m) => m.agent.name === 'bob');
    expect(bob.rejections[0].type).toBe('message');
    expect(bob.rejections[0].reasons.join(' ')).toContain('maxInlineCodeChars');
    expect(bob.inlineByTurn).toHaveLength(1);
    // eve sees only herself; the admin everyone.
    expect((await api('/v1/dashboard/agents', 'eve')).body.agents.map((m: any) => m.agent.name)).toEqual(['eve']);
    expect((await api('/v1/dashboard/agents', 'root')).body.agents).toHaveLength(5);
  });

  it('pointer click-through: the admin reads the exact span with its digest and the lines around it, unbudgeted; an agent spends its budget', async () => {
    const admin = await api('/v1/dashboard/pointer', 'root', { pointer: span(50, 52) });
    expect(admin.status).toBe(200);
    expect(admin.body.excerpt).toBe('ledger 50\nledger 51\nledger 52');
    expect(admin.body.lines).toEqual({ start: 50, end: 52 });
    expect(admin.body.contentDigest).toMatch(/^[0-9a-f]{64}$/);
    expect(admin.body.context).toMatchObject({ start: 45 });
    expect(admin.body.context.excerpt.split('\n')[0]).toBe('ledger 45');
    expect(admin.body.context.excerpt).toContain('ledger 57');
    expect(admin.body.isBudgeted).toBe(false);
    expect((await api('/v1/bus/usage', 'root')).body.usage.counts.repo).toBe(0);

    const agent = await api('/v1/dashboard/pointer', 'alice', { pointer: span(50, 52) });
    expect(agent.body).toMatchObject({ excerpt: admin.body.excerpt, contentDigest: admin.body.contentDigest, isBudgeted: true });
    expect(agent.body.context).toBeUndefined();
    expect((await api('/v1/bus/usage', 'alice')).body.usage.counts.repo).toBe(1);
    expect((await api('/v1/dashboard/pointer', 'root', { pointer: 'repo:a.py#L1-L2' })).body.error.code).toBe('POINTER_INVALID');
  });

  it('pointer click-through opens an artifact section and a sam: event, and never another project\'s', async () => {
    const doc = `# Guide\n\nIntro.\n\n## Install\n\nRun the installer with --retries 3.\n\n## Usage\n\n${'More text. '.repeat(600)}\n`;
    const out = await api('/v1/events', 'eve', { sessionId: 's-bank', events: [{ kind: 'tool_result', toolName: 'Read', content: doc }, { kind: 'decision', content: 'Round refunds half-even.' }] });
    const [artifactEvent, decision] = out.body.events;
    expect(artifactEvent.artifactId).toMatch(/^art_/);
    const section = await api('/v1/dashboard/pointer', 'root', { pointer: `artifact:${artifactEvent.artifactId}#sec=Install` });
    expect(section.status).toBe(200);
    expect(section.body.excerpt).toContain('Run the installer with --retries 3.');
    expect(section.body.excerpt).not.toContain('More text.');
    const event = await api('/v1/dashboard/pointer', 'root', { pointer: `sam:event:${decision.id}` });
    expect(event.body.excerpt).toContain('Round refunds half-even.');
    // alice (project shop) may not read project bank's session: its event and artifact do not exist for her.
    expect((await api('/v1/dashboard/pointer', 'alice', { pointer: `sam:event:${decision.id}` })).status).toBe(404);
    expect((await api('/v1/dashboard/pointer', 'alice', { pointer: `artifact:${artifactEvent.artifactId}#sec=Install` })).status).toBe(404);
    expect((await api('/v1/dashboard/pointer', 'eve', { pointer: `sam:event:${decision.id}` })).body.excerpt).toContain('Round refunds half-even.');
  });

  it("sessions and timelines: an agent never sees another project's sessions; the timeline shows kinds, task states and recalls", async () => {
    expect((await api('/v1/events', 'alice', { sessionId: 's-shop', events: [{ kind: 'user', content: 'fix the ledger retry' }, { kind: 'assistant', content: 'looking at reservation.py' }] })).status).toBe(200);
    expect((await api('/v1/events', 'eve', { sessionId: 's-bank', events: [{ kind: 'user', content: 'rounding' }] })).status).toBe(200);
    const put = await fetch(`${server.url}/v1/sessions/s-shop/task-state`, {
      method: 'PUT',
      headers: { Authorization: `Bearer ${tokens.alice}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ update: { goals: ['fix retry'], phase: 'debugging' } }),
    });
    expect(put.status).toBe(200);
    expect((await api('/v1/recall', 'alice', { query: 'ledger retry', sessionIds: ['s-shop'] })).status).toBe(200);

    expect((await api('/v1/dashboard/sessions', 'alice')).body.sessions.map((s: any) => s.id)).toEqual(['s-shop']);
    expect((await api('/v1/dashboard/sessions', 'root')).body.total).toBe(2);
    expect((await api('/v1/dashboard/sessions/s-bank/timeline', 'alice')).status).toBe(404);

    const t = (await api('/v1/dashboard/sessions/s-shop/timeline', 'alice')).body;
    expect(t.kinds).toEqual({ user: 1, assistant: 1, task_state: 1 });
    expect(t.taskStates).toMatchObject([{ version: 1, goals: ['fix retry'], phase: 'debugging' }]);
    expect(t.recalls).toHaveLength(1);
    expect(t.recalls[0].query).toBe('ledger retry');
    expect(t.embeddingQueue).toBeUndefined();
    expect((await api('/v1/dashboard/sessions/s-shop/timeline', 'root')).body.embeddingQueue).toBeDefined();

    const overview = (await api('/v1/dashboard/overview', 'alice')).body;
    expect(overview.projects).toEqual([{ project: 'shop', sessions: 1, events: 3 }]);
    expect(overview.store).toBeUndefined();
    // Events by the day they happened, within what the caller may read: alice sees her project's 3, root all 4.
    const total = (days: Array<{ day: string; events: number; artifacts: number }>) => {
      expect(days.every((d) => /^\d{4}-\d{2}-\d{2}$/.test(d.day) && d.artifacts === 0)).toBe(true);
      return days.reduce((n, d) => n + d.events, 0);
    };
    expect(total(overview.eventsByDay)).toBe(3);
    const rootOverview = (await api('/v1/dashboard/overview', 'root')).body;
    expect(rootOverview.store.events).toBe(4);
    expect(total(rootOverview.eventsByDay)).toBe(4);
  });

  it("the session list and page show a session's host, first request (private spans hidden), summary and files", async () => {
    const events = [
      { kind: 'user', content: 'rotate the <private>prod-key-123</private> key in deploy.sh', key: 'cc:u1:0', meta: { cwd: '/repo' } },
      { kind: 'tool_call', content: JSON.stringify({ file_path: '/repo/deploy.sh', old_string: 'a', new_string: 'b' }), toolName: 'Edit', toolCallId: 't1', key: 'cc:a1:0', meta: { cwd: '/repo' } },
      { kind: 'tool_result', content: 'The file /repo/deploy.sh has been updated.', toolName: 'Edit', toolCallId: 't1', key: 'cc:u2:0', meta: { cwd: '/repo' } },
      { kind: 'assistant', content: 'Rotated.', key: 'cc:a2:0', meta: { cwd: '/repo' } },
    ];
    expect((await api('/v1/events', 'alice', { sessionId: 'cc-shop', events })).status).toBe(200);
    await mem.consolidator().consolidateSession('cc-shop', { backfill: true });

    const [listed] = (await api('/v1/dashboard/sessions?project=shop', 'alice')).body.sessions;
    expect(listed).toMatchObject({ id: 'cc-shop', project: 'shop', host: 'claude-code', firstRequest: 'rotate the [private] key in deploy.sh' });
    expect(listed.summaryLine).toMatch(/^Files edited: deploy\.sh \[evt_[0-9a-z]{26}\]$/);
    expect(listed.summaryId).toMatch(/^sum_/);
    const t = (await api('/v1/dashboard/sessions/cc-shop/timeline', 'alice')).body;
    expect(t.session).toMatchObject({ host: 'claude-code', firstRequest: 'rotate the [private] key in deploy.sh' });
    expect(t.summaries).toHaveLength(1);
    expect(t.summaries[0].text).not.toContain('prod-key-123');
    expect(t.work.files).toEqual([{ path: 'deploy.sh', action: 'edited', writes: 1, eventId: expect.stringMatching(/^evt_/), isFailed: false }]);
    expect((await api('/v1/dashboard/sessions?project=shop', 'eve')).body.sessions).toEqual([]);
    expect((await api('/v1/dashboard/sessions/cc-shop/timeline', 'eve')).status).toBe(404);
  });

  it('the live stream delivers a child\'s engram put to its project and not to another project', async () => {
    // Each read ends when `until` holds or `stop` resolves (generous, for a loaded machine; no timing is asserted).
    const read = async (as: string, until: (text: string) => boolean, stop: Promise<unknown> = new Promise((r) => setTimeout(r, 15_000))) => {
      const ac = new AbortController();
      const res = await fetch(`${server.url}/v1/dashboard/stream`, { headers: { Authorization: `Bearer ${tokens[as]}` }, signal: ac.signal });
      expect(res.headers.get('content-type')).toContain('text/event-stream');
      const reader = res.body!.getReader();
      let text = '';
      const stopped = stop.then(() => null);
      try {
        while (!until(text)) {
          const chunk = await Promise.race([reader.read(), stopped]);
          if (chunk === null || chunk.done) break;
          text += new TextDecoder().decode(chunk.value);
        }
      } finally {
        ac.abort();
      }
      return text;
    };
    const lead = read('lead', (t) => t.includes('less.engram.put') && t.includes('event: sessions'));
    // eve listens until two polls after lead has seen everything.
    const eve = read('eve', () => false, lead.then(() => new Promise((r) => setTimeout(r, 2000))));
    await new Promise((r) => setTimeout(r, 300));
    expect((await api('/v1/engram', 'alice', riskEngram('Streamed claim.', [span(1, 2)]))).status).toBe(201);
    expect((await api('/v1/events', 'alice', { sessionId: 's-live', events: [{ kind: 'user', content: 'new activity' }] })).status).toBe(200);
    const [leadText, eveText] = await Promise.all([lead, eve]);
    expect(leadText).toContain('event: ready');
    expect(leadText).toMatch(/event: bus\ndata: .*less\.engram\.put.*\nid: \d+/);
    expect(eveText).toContain('event: ready');
    expect(leadText).toContain('event: sessions');
    expect(eveText).not.toContain('less.engram.put');
    expect(eveText).not.toContain('event: sessions');
    expect((await fetch(`${server.url}/v1/dashboard/stream`)).status).toBe(401);
    // Revoking the token ends its open stream.
    const res = await fetch(`${server.url}/v1/dashboard/stream`, { headers: { Authorization: `Bearer ${tokens.eve}` } });
    const reader = res.body!.getReader();
    await reader.read();
    await mem.agents.revoke('eve');
    const ended = await Promise.race([
      (async () => {
        for (;;) if ((await reader.read()).done) return true;
      })(),
      new Promise<boolean>((r) => setTimeout(() => r(false), 15_000)),
    ]);
    expect(ended).toBe(true);
  });

  it('serves the UI at / without a token, with a content security policy, and nothing outside its folder', async () => {
    const res = await fetch(`${server.url}/`);
    expect(res.headers.get('content-type')).toContain('text/html');
    expect((await fetch(`${server.url}/assets/..%2Fpackage.json`)).status).toBe(404);
    expect((await fetch(`${server.url}/v1/dashboard/overview`)).status).toBe(401);
    const doc = (await api('/v1/openapi.json', 'alice')).body;
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/v1/dashboard/overview', '/v1/dashboard/engrams', '/v1/dashboard/stream', '/v1/dashboard/pointer']));
  });
});
