import { expect, it } from 'vitest';
import { moveSummaryToCold } from '../../src/consolidate/cold-tier.js';
import { agentPrincipal } from '../../src/model/access.js';
import type { EventInput } from '../../src/model/event.js';
import type { SessionId } from '../../src/model/ids.js';
import { runStorageContract, useEngram } from './harnesses.js';

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 2, 2, 9); // 2 March 2026

/** A session of `turns` substantive user/assistant exchanges about `topic`, starting at `startMs`, a minute apart. */
function work(topic: string, startMs: number, turns = 6): EventInput[] {
  const out: EventInput[] = [];
  for (let i = 0; i < turns; i++) {
    out.push({ kind: 'user', ts: startMs + i * 120_000, content: `Turn ${i}: please look at the ${topic} code path and tell me what breaks in step ${i}.` });
    out.push({ kind: 'assistant', ts: startMs + i * 120_000 + 60_000, content: `In step ${i} the ${topic} module fails with ERR_${topic.toUpperCase()}_${i}; I changed src/${topic}/step${i}.ts and reran npm test.` });
  }
  return out;
}

runStorageContract('summary DAG', ({ createHarness }) => {
  const ctx = useEngram(createHarness);

  it('summarizes a session from its events at the deterministic level, bounded, saying what it covers; raw events untouched', async () => {
    await ctx.mem.append('s1', [...work('storage', T0), { kind: 'decision', ts: T0 + 900_000, content: 'Decision: keep SQLite as the default storage backend; PostgreSQL for teams.' }], { project: 'shop' });
    const before = await ctx.mem.store.listEvents({ sessionId: 's1' as SessionId, limit: 100 });
    const out = await ctx.mem.consolidator().consolidateSession('s1');
    expect(out.status).toBe('summarized');
    expect(out.summaries).toHaveLength(1);
    const [s] = out.summaries;
    expect(s).toMatchObject({ project: 'shop', depth: 0, sessionId: 's1', episode: 0, throughTurn: 13, level: 'deterministic', confidence: 0.3, model: null, parentId: null });
    expect(s!.sourceEventIds).toEqual(before.map((e) => e.id));
    expect(s!.tokens).toBeLessThanOrEqual(400);
    expect(s!.text).toMatch(/^Session s1, turns 1-13, 2 March 2026:/);
    expect(s!.text).toContain('SQLite as the default storage backend');
    // Stored, and the events are as they were.
    expect(await ctx.mem.summaries.list({ project: 'shop' })).toEqual([s]);
    expect(await ctx.mem.store.listEvents({ sessionId: 's1' as SessionId, limit: 100 })).toEqual(before);
    // Nothing new: nothing made again.
    expect((await ctx.mem.consolidator().consolidateSession('s1')).status).toBe('unchanged');
    const expanded = await ctx.mem.summaries.expand(s!.id);
    expect(expanded.events.map((e) => e.id)).toEqual(before.map((e) => e.id));
  });

  it('splits a long session into episodes by time gap and task', async () => {
    await ctx.mem.append('long', [...work('auth', T0, 5), ...work('billing', T0 + 3 * 3_600_000, 5)], { project: 'shop' });
    const out = await ctx.mem.consolidator().consolidateSession('long');
    expect(out.summaries.map((s) => [s.episode, s.sourceEventIds.length])).toEqual([
      [0, 10],
      [1, 10],
    ]);
    expect(out.summaries[1]!.text).toMatch(/^Session long \(episode 2 of 2\), turns 11-20/);
  });

  it('skips an insignificant session with a session_skipped record; a backfill summarizes it and marks the record', async () => {
    await ctx.mem.append('hi', [
      { kind: 'user', content: 'hi' },
      { kind: 'assistant', content: 'Hello!' },
    ]);
    const c = ctx.mem.consolidator();
    const skipped = await c.consolidateSession('hi');
    expect(skipped.status).toBe('skipped');
    expect(skipped.reasons!.join(' ')).toMatch(/substantive turn/);
    const [rec] = await ctx.mem.store.summaries.skipped({ limit: 10 });
    expect(rec).toMatchObject({ sessionId: 'hi', project: 'default', throughTurn: 2, backfilledAt: null, record: { type: 'session_skipped', sessionId: 'hi' } });
    expect((await ctx.mem.summaries.counts()).skipped).toBe(1);
    expect((await c.consolidateSession('hi')).status).toBe('unchanged');
    const back = await c.consolidateSession('hi', { backfill: true });
    expect(back.status).toBe('summarized');
    expect(await ctx.mem.store.summaries.skipped({ limit: 10 })).toEqual([]);
    expect((await ctx.mem.store.summaries.skipped({ limit: 10, includeBackfilled: true }))[0]!.backfilledAt).not.toBeNull();
  });

  it('moves a superseded summary to the cold tier (out of default lists and search, reachable by id and by includeCold)', async () => {
    await ctx.mem.append('g', work('cache', T0), { project: 'shop' });
    const first = (await ctx.mem.consolidator().consolidateSession('g')).summaries[0]!;
    await ctx.mem.append('g', work('eviction', T0 + 600_000, 3));
    const second = (await ctx.mem.consolidator().consolidateSession('g')).summaries[0]!;
    expect(second.throughTurn).toBe(18);
    expect((await ctx.mem.summaries.list()).map((s) => s.id)).toEqual([second.id]);
    const cold = await ctx.mem.summaries.get(first.id);
    expect(cold).toMatchObject({ coldSourceId: second.id, coldReason: expect.stringMatching(/superseded/) });
    expect(cold.coldAt).not.toBeNull();
    expect((await ctx.mem.summaries.list({ includeCold: true })).map((s) => s.id).sort()).toEqual([first.id, second.id].sort());
    expect((await ctx.mem.summaries.search('cache')).map((h) => h.summary.id)).toEqual([second.id]);
    expect((await ctx.mem.summaries.search('cache', { includeCold: true })).map((h) => h.summary.id).sort()).toEqual([first.id, second.id].sort());
    expect(await ctx.mem.summaries.counts()).toMatchObject({ byDepth: { 0: 1, 1: 0, 2: 0 }, cold: 1 });
    await expect(ctx.mem.store.summaries.write({ summaries: [{ ...second, id: 'sum_01JZZZZZZZZZZZZZZZZZZZZZZZ', sessionId: null }] })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });

  it('rolls sessions up into arcs every N sessions and arcs into epochs every M arcs, with parent and child links', async () => {
    const c = ctx.mem.consolidator({ llm: null, sessionsPerArc: 2, arcsPerEpoch: 2 });
    const topics = ['storage', 'queue', 'search', 'deploy', 'metrics'];
    for (const [i, t] of topics.entries()) {
      await ctx.mem.append(`w${i}`, work(t, T0 + i * 7 * DAY), { project: 'shop' });
      await c.consolidateSession(`w${i}`);
    }
    const out = await c.rollUp('shop');
    expect(out.arcs).toHaveLength(2);
    expect(out.epochs).toHaveLength(1);
    const [a1, a2] = out.arcs;
    expect(a1).toMatchObject({ depth: 1, sessionIds: ['w0', 'w1'], parentId: null, level: 'deterministic' });
    expect(a1!.text).toMatch(/^Arc of project shop: 2 sessions \(w0 to w1\), 2 March 2026 to 9 March 2026:/);
    expect(out.epochs[0]).toMatchObject({ depth: 2, childIds: [a1!.id, a2!.id], sessionIds: ['w0', 'w1', 'w2', 'w3'] });
    const sessions = await ctx.mem.summaries.list({ depth: 0, limit: 10 });
    const w1 = sessions.find((s) => s.sessionId === 'w1')!;
    expect(w1.parentId).toBe(a1!.id);
    expect(w1.predecessorSessionId).toBe('w0');
    expect(sessions.find((s) => s.sessionId === 'w4')!.parentId).toBeNull(); // the fifth waits for its arc
    expect((await ctx.mem.summaries.get(a1!.id)).parentId).toBe(out.epochs[0]!.id);
    const drill = await ctx.mem.summaries.expand(out.epochs[0]!.id);
    expect(drill.children.map((s) => s.id)).toEqual([a1!.id, a2!.id]);
    expect(drill.events).toEqual([]);
    // Nothing due: nothing made.
    expect(await c.rollUp('shop')).toMatchObject({ arcs: [], epochs: [] });
    // Search by a month name and a term, restricted by depth.
    const hits = await ctx.mem.summaries.search('what did we decide about storage in March?', { depth: 1 });
    expect(hits[0]!.summary.id).toBe(a1!.id);
  });

  it("shows an agent only summaries of sessions it may read (another project's are NOT_FOUND)", async () => {
    const c = ctx.mem.consolidator({ llm: null, sessionsPerArc: 2 });
    await ctx.mem.append('p1', work('ledger', T0), { project: 'pay' });
    await ctx.mem.append('p2', work('refund', T0 + DAY), { project: 'pay' });
    for (const id of ['p1', 'p2']) await c.consolidateSession(id);
    const [arc] = (await c.rollUp('pay')).arcs;
    const other = ctx.mem.viewAs(agentPrincipal((await ctx.mem.agents.add('bob', { role: 'programmer', project: 'shop' })).agent));
    const payAgent = ctx.mem.viewAs(agentPrincipal((await ctx.mem.agents.add('amy', { role: 'programmer', project: 'pay' })).agent));
    expect(await other.summaries.list()).toEqual([]);
    expect(await other.summaries.search('ledger')).toEqual([]);
    await expect(other.summaries.get(arc!.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect((await payAgent.summaries.list()).length).toBe(3);
    // One session shared with shop: its summary becomes visible, the arc (which covers p1 too) does not.
    await ctx.mem.store.shareSession({ sessionId: 'p2' as SessionId, project: 'shop', sharedBy: 'test', tsMs: 1 });
    expect((await other.summaries.list()).map((s) => s.sessionId)).toEqual(['p2']);
    await expect(other.summaries.expand(arc!.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(other.summaries.get('nope')).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'id' } });
  });

  it('links decisions: a session summary names each decision event and what it replaces; an arc marks the ones replaced since', async () => {
    const c = ctx.mem.consolidator({ llm: null, sessionsPerArc: 2 });
    await ctx.mem.append('d1', [...work('cache', T0), { kind: 'decision', ts: T0 + 900_000, content: 'Decision: cache sessions in Redis.' }], { project: 'shop' });
    const d1 = await ctx.mem.store.listEvents({ sessionId: 'd1' as SessionId, kinds: ['decision'], limit: 5 });
    const [s1] = (await c.consolidateSession('d1')).summaries;
    expect(s1!.text).toContain(`Decision: cache sessions in Redis. [${d1[0]!.id}]`);
    await ctx.mem.append('d2', [...work('cache2', T0 + DAY), { kind: 'decision', ts: T0 + DAY + 900_000, content: 'Decision: cache sessions in memory instead.', supersedes: d1[0]!.id }], { project: 'shop' });
    const d2 = await ctx.mem.store.listEvents({ sessionId: 'd2' as SessionId, kinds: ['decision'], limit: 5 });
    const [s2] = (await c.consolidateSession('d2')).summaries;
    expect(s2!.text).toContain(`Decision: cache sessions in memory instead. (replaces ${d1[0]!.id}) [${d2[0]!.id}]`);
    const [arc] = (await c.rollUp('shop')).arcs;
    expect(arc!.text).toContain(`Decision: cache sessions in Redis. (replaced by ${d2[0]!.id}) [${d1[0]!.id}]`);
    expect(arc!.text.indexOf('in Redis')).toBeLessThan(arc!.text.indexOf('in memory instead'));
  });

  it("feeds the gate's novelty check from stored vectors: a short session like a recent one is skipped, a new topic is kept", async () => {
    const model = { name: 'test-4d', dimensions: 4 };
    const unit = (...xs: number[]) => new Float32Array(xs);
    const vectorsFor = async (session: string, v: Float32Array) => {
      const events = await ctx.mem.store.listEvents({ sessionId: session as SessionId, limit: 100 });
      await ctx.mem.store.putVectors(model.name, events.map((e) => ({ eventId: e.id, vector: v })));
    };
    await ctx.mem.store.setVectorModel(model);
    await ctx.mem.append('n1', work('cache', T0), { project: 'shop' });
    await vectorsFor('n1', unit(1, 0, 0, 0));
    const c = ctx.mem.consolidator();
    expect((await c.consolidateSession('n1')).status).toBe('summarized');
    await ctx.mem.append('n2', work('cache', T0 + DAY, 2), { project: 'shop' });
    await vectorsFor('n2', unit(1, 0, 0, 0));
    const same = await c.consolidateSession('n2');
    expect(same.status).toBe('skipped');
    expect(same.reasons!.join(' ')).toMatch(/similar|novel/i);
    await ctx.mem.append('n3', work('billing', T0 + 2 * DAY, 2), { project: 'shop' });
    await vectorsFor('n3', unit(0, 1, 0, 0));
    expect((await c.consolidateSession('n3')).status).toBe('summarized');
  });

  it('prunes a summary by hand to the cold tier, with the summary that replaces it', async () => {
    await ctx.mem.append('x', work('queue', T0), { project: 'shop' });
    await ctx.mem.append('y', work('queue2', T0 + DAY), { project: 'shop' });
    const c = ctx.mem.consolidator();
    const [sx] = (await c.consolidateSession('x')).summaries;
    const [sy] = (await c.consolidateSession('y')).summaries;
    const moved = await moveSummaryToCold(ctx.mem.store, sx!.id, 'noise', sy!.id);
    expect(moved).toMatchObject({ coldReason: 'pruned: noise', coldSourceId: sy!.id });
    expect((await ctx.mem.summaries.list()).map((s) => s.id)).toEqual([sy!.id]);
    expect((await ctx.mem.summaries.counts()).cold).toBe(1);
    await expect(moveSummaryToCold(ctx.mem.store, sx!.id, '')).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'reason' } });
    await expect(moveSummaryToCold(ctx.mem.store, 'sum_01JZZZZZZZZZZZZZZZZZZZZZZZ', 'x')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('a purge tombstones the summaries that quote what it removes (cold, out of search); the next consolidation summarizes what is left', async () => {
    await ctx.mem.append('sec', [...work('vault', T0), { kind: 'decision', ts: T0 + 900_000, content: 'Decision: the vault password is hunter2-XYZZY from now on.' }], { project: 'shop' });
    const c = ctx.mem.consolidator();
    const [before] = (await c.consolidateSession('sec')).summaries;
    expect(before!.text).toContain('hunter2-XYZZY');
    await ctx.mem.purge({ match: 'hunter2-XYZZY' }, { actor: 'os:test' });
    const gone = await ctx.mem.summaries.get(before!.id);
    expect(gone.text).not.toContain('hunter2-XYZZY');
    expect(gone).toMatchObject({ coldReason: expect.stringMatching(/^purged/) });
    expect(await ctx.mem.summaries.search('hunter2-XYZZY', { includeCold: true })).toEqual([]);
    expect(await ctx.mem.summaries.search('vault', { includeCold: true })).toEqual([]);
    const [after] = (await c.consolidateSession('sec')).summaries;
    expect(after!.text).not.toContain('hunter2-XYZZY');
    expect(after!.text).toContain('vault');
  });

  it('leases consolidation jobs to one worker at a time; an expired lease is taken over; a grown session is queued again', async () => {
    const jobs = ctx.mem.store.summaries;
    expect(await jobs.enqueue([{ sessionId: 'a', project: 'shop', throughTurn: 4 }, { sessionId: 'b', project: 'shop', throughTurn: 2 }])).toBe(2);
    const now = Date.now();
    const w1 = await jobs.lease('w1', 10, 60_000, now);
    expect(w1.map((j) => [j.sessionId, j.status, j.leasedBy, j.attempts])).toEqual([
      ['a', 'leased', 'w1', 1],
      ['b', 'leased', 'w1', 1],
    ]);
    expect(await jobs.lease('w2', 10, 60_000, now)).toEqual([]);
    // a grows while w1 works on it: done at turn 4 leaves it pending for turn 9.
    await jobs.enqueue([{ sessionId: 'a', project: 'shop', throughTurn: 9 }]);
    await jobs.finish('a', 'w1', { throughTurn: 4 });
    await jobs.finish('b', 'w2', { throughTurn: 2 }); // not w2's lease: changes nothing
    expect((await jobs.counts()).jobs).toEqual({ pending: 1, leased: 1, done: 0, failed: 0 });
    // w1 crashed: its lease on b runs out and w2 takes it over.
    const taken = await jobs.lease('w2', 10, 60_000, now + 61_000);
    expect(taken.map((j) => [j.sessionId, j.leasedBy, j.throughTurn])).toEqual([
      ['a', 'w2', 9],
      ['b', 'w2', 2],
    ]);
    await jobs.finish('a', 'w2', { throughTurn: 9 });
    await jobs.finish('b', 'w2', { throughTurn: 2, error: 'boom' });
    expect((await jobs.counts()).jobs).toEqual({ pending: 0, leased: 0, done: 1, failed: 1 });
  });
});
