import { expect, it } from 'vitest';
import { moveSummaryToCold } from '../../src/consolidate/cold-tier.js';
import { sessionStartEvent } from '../../src/memory/host-sessions.js';
import { DERIVED_EVENT_TAG, type EventInput } from '../../src/model/event.js';
import type { SessionId } from '../../src/model/ids.js';
import { runStorageContract, useEngram } from './harnesses.js';

const T0 = Date.UTC(2026, 2, 2, 9);
const sid = (s: string) => s as SessionId;

/** A session of `turns` substantive exchanges about `topic` (the gate passes it), a minute apart from `startMs`. */
function work(topic: string, startMs: number, turns = 6): EventInput[] {
  const out: EventInput[] = [];
  for (let i = 0; i < turns; i++) {
    out.push({ kind: 'user', ts: startMs + i * 120_000, content: `Turn ${i}: please look at the ${topic} code path and tell me what breaks in step ${i}.` });
    out.push({ kind: 'assistant', ts: startMs + i * 120_000 + 60_000, content: `In step ${i} the ${topic} module fails with ERR_${topic.toUpperCase()}_${i}; I changed src/${topic}/step${i}.ts.` });
  }
  return out;
}

// Session listings (view/session-overview.ts) read a bounded start of many sessions and their latest summaries in
// two queries: the same answers on every backend.
runStorageContract('session overviews', ({ createHarness }) => {
  const ctx = useEngram(createHarness);

  it('reads the opening turns of many sessions in one call, by session then turn, of the kinds asked', async () => {
    await ctx.mem.append('b', [
      { kind: 'system', content: 'b1' },
      { kind: 'assistant', content: 'b2' },
      { kind: 'user', content: 'b3' },
      { kind: 'user', content: 'b4' },
    ]);
    await ctx.mem.append('a', [
      { kind: 'user', content: 'a1' },
      { kind: 'tool_call', content: '{}', toolName: 'Bash' },
    ]);
    await ctx.mem.append('c', { kind: 'user', content: 'c1' });
    const read = await ctx.mem.store.listOpeningEvents({ sessionIds: [sid('b'), sid('a'), sid('missing'), sid('b')], throughTurn: 3, kinds: ['user', 'system'] });
    expect(read.map((e) => [e.sessionId, e.turn, e.content])).toEqual([
      ['a', 1, 'a1'],
      ['b', 1, 'b1'],
      ['b', 3, 'b3'],
    ]);
    const all = await ctx.mem.store.listOpeningEvents({ sessionIds: [sid('a'), sid('b')], throughTurn: 2 });
    expect(all.map((e) => e.content)).toEqual(['a1', '{}', 'b1', 'b2']);
    expect(await ctx.mem.store.listOpeningEvents({ sessionIds: [], throughTurn: 5 })).toEqual([]);
  });

  it("gives each session's latest warm summary: the last episode, not a cold one, not a decision record", async () => {
    await ctx.mem.append('long', [...work('auth', T0, 5), ...work('billing', T0 + 3 * 3_600_000, 5)], { project: 'shop' });
    await ctx.mem.append('one', [...work('storage', T0), { kind: 'decision', ts: T0 + 900_000, content: 'Decision: keep SQLite as the default backend.' }], { project: 'shop' });
    await ctx.mem.append('none', { kind: 'note', content: 'nothing to summarize' });
    const c = ctx.mem.consolidator();
    const long = await c.consolidateSession('long');
    const one = await c.consolidateSession('one');
    expect(long.summaries).toHaveLength(2);
    const latest = await ctx.mem.store.summaries.latestOfSessions(['long', 'one', 'none', 'missing']);
    expect(latest.map((s) => [s.sessionId, s.id]).sort()).toEqual(
      [
        ['long', long.summaries[1]!.id],
        ['one', one.summaries[0]!.id],
      ].sort(),
    );
    await moveSummaryToCold(ctx.mem.store, long.summaries[1]!.id, 'test');
    const after = await ctx.mem.store.summaries.latestOfSessions(['long']);
    expect(after.map((s) => s.id)).toEqual([long.summaries[0]!.id]);
    expect(await ctx.mem.store.summaries.latestOfSessions([])).toEqual([]);
  });

  it("lists each session's host, first request and summary line; a project filter and a bounded reader see only their own", async () => {
    // A Claude Code session as the hooks record it: a start record, an injected brief (Engram's own), then the prompt.
    await ctx.mem.append(
      'cc-1',
      [
        sessionStartEvent({ host: 'claude-code', source: 'startup', cwd: '/repo', project: 'shop', hostPids: [10, 9] }, T0),
        { kind: 'system', ts: T0 + 1, content: 'Earlier sessions: fix the build', tags: [DERIVED_EVENT_TAG] },
        { kind: 'user', ts: T0 + 2, content: '<ide_opened_file>The user opened src/pay.ts</ide_opened_file> fix the refund rounding <private>card 4242</private>' },
        { kind: 'tool_call', ts: T0 + 3, content: JSON.stringify({ file_path: '/repo/src/pay.ts', old_string: 'round(x)', new_string: 'roundHalfEven(x)' }), toolName: 'Edit', toolCallId: 't1', meta: { cwd: '/repo' } },
        { kind: 'tool_result', ts: T0 + 4, content: 'The file /repo/src/pay.ts has been updated.', toolName: 'Edit', toolCallId: 't1', meta: { cwd: '/repo' } },
        ...work('refund', T0 + 60_000),
      ],
      { project: 'shop' },
    );
    // An import: keys say which importer.
    await ctx.mem.append('cx-1', [{ kind: 'user', content: 'list the migrations', key: 'cx:3:abc:0' }], { project: 'ledger' });
    await ctx.mem.append('plain', { kind: 'note', content: 'appended by hand' }, { project: 'shop' });
    await ctx.mem.consolidator().consolidateSession('cc-1');

    const all = await ctx.mem.viewAs().sessionOverviews();
    const byId = new Map(all.map((s) => [s.id as string, s]));
    expect(byId.get('cc-1')).toMatchObject({ project: 'shop', host: 'claude-code', firstRequest: 'fix the refund rounding [private]' });
    expect(byId.get('cc-1')!.summaryLine).toMatch(/^Files edited: src\/pay\.ts \[evt_[0-9a-z]{26}\]$/);
    expect(byId.get('cc-1')!.summaryId).toMatch(/^sum_/);
    const first = await ctx.mem.store.listEvents({ sessionId: sid('cc-1'), kinds: ['user'], limit: 1 });
    expect(byId.get('cc-1')!.firstRequestId).toBe(first[0]!.id);
    expect(byId.get('cx-1')).toMatchObject({ host: 'codex', firstRequest: 'list the migrations', summaryLine: null, summaryId: null });
    expect(byId.get('plain')).toMatchObject({ host: null, firstRequest: null, summaryLine: null });

    expect((await ctx.mem.viewAs().sessionOverviews({ project: 'shop' })).map((s) => s.id).sort()).toEqual(['cc-1', 'plain']);
    expect(await ctx.mem.viewAs().sessionOverviews({ project: 'shop', limit: 1 })).toHaveLength(1);
    const ledger = ctx.mem.viewAs({ kind: 'agent', agentId: 'x', agentName: 'ledger-bot', project: 'ledger', isAdmin: false });
    expect((await ledger.sessionOverviews()).map((s) => s.id)).toEqual(['cx-1']);
    expect(await ledger.sessionOverviews({ project: 'shop' })).toEqual([]);
  });
});
