import { expect, it } from 'vitest';
import { sessionStartEvent } from '../../src/memory/host-sessions.js';
import type { EventInput } from '../../src/model/event.js';
import { DashboardView } from '../../src/view/dashboard-view.js';
import { runStorageContract, useEngram } from './harnesses.js';

const T0 = Date.UTC(2026, 10, 20, 10);

/** A Claude Code tool call and its result, as the importer stores them. */
function toolPair(id: string, tool: string, input: Record<string, unknown>, result: string, extra: { isError?: boolean; ts?: number } = {}): EventInput[] {
  const meta = { cwd: '/repo' };
  return [
    { kind: 'tool_call', content: JSON.stringify(input), toolName: tool, toolCallId: id, key: `cc:${id}:call`, meta, ...(extra.ts !== undefined ? { ts: extra.ts } : {}) },
    { kind: 'tool_result', content: result, toolName: tool, toolCallId: id, key: `cc:${id}:result`, meta: { ...meta, ...(extra.isError ? { isError: true } : {}) }, ...(extra.ts !== undefined ? { ts: extra.ts + 1 } : {}) },
  ];
}

// The dashboard's session list and page (view/dashboard-view.ts, view/session-work.ts) on every backend: what a
// session's page shows of its work is read incrementally, and a session of thousands of turns is read in ranges.
runStorageContract('dashboard sessions', ({ createHarness }) => {
  const ctx = useEngram(createHarness);

  it("shows a page of sessions with host, first request and summary line, and a session's summaries and files, updated as it grows", async () => {
    const root = (await ctx.mem.agents.add('root', { role: 'admin', isAdmin: true })).agent;
    const dashboard = new DashboardView(ctx.mem, ctx.mem.viewAs(), root);
    await ctx.mem.append(
      'cc-1',
      [
        sessionStartEvent({ host: 'claude-code', source: 'startup', cwd: '/repo', project: 'shop', hostPids: [7] }, T0),
        { kind: 'user', ts: T0 + 1, content: 'make refunds round half-even', key: 'cc:u1:0', meta: { cwd: '/repo' } },
        ...toolPair('t1', 'Edit', { file_path: '/repo/src/pay.ts', old_string: 'a', new_string: 'b' }, 'The file /repo/src/pay.ts has been updated.', { ts: T0 + 2 }),
        ...toolPair('t2', 'Bash', { command: 'npm test' }, 'FAIL src/pay.test.ts\nExit code 1', { isError: true, ts: T0 + 4 }),
        ...toolPair('t3', 'Write', { file_path: '/repo/src/round.ts', content: 'export {}' }, 'File created successfully at: /repo/src/round.ts', { ts: T0 + 6 }),
        { kind: 'assistant', ts: T0 + 8, content: 'Refunds round half-even now.', key: 'cc:a1:0', meta: { cwd: '/repo' } },
      ],
      { project: 'shop' },
    );
    await ctx.mem.append('plain', { kind: 'note', content: 'by hand' }, { project: 'shop' });
    // A backfill passes the significance gate: what is shown of a summary is under test here, not the gate.
    await ctx.mem.consolidator().consolidateSession('cc-1', { backfill: true });

    const page = await dashboard.sessions({ offset: 0, limit: 10, project: 'shop' });
    expect(page.total).toBe(2);
    const cc = page.sessions.find((s) => s.id === 'cc-1')!;
    expect(cc).toMatchObject({ project: 'shop', host: 'claude-code', firstRequest: 'make refunds round half-even' });
    expect(cc.summaryLine).toMatch(/^Files created: src\/round\.ts \[evt_/);
    expect(page.sessions.find((s) => s.id === 'plain')).toMatchObject({ host: null, firstRequest: null, summaryLine: null });

    const t = await dashboard.timeline('cc-1');
    expect(t.session.host).toBe('claude-code');
    expect(t.summaries).toHaveLength(1);
    // Turn 1 is the start record the hook stored: Engram's own, not summarized.
    expect(t.summaries[0]!.text).toMatch(/^Session cc-1, turns 2-9/);
    expect(t.summaries[0]!.text).toContain('Failed: `npm test`');
    expect(t.work.files.map((f) => [f.path, f.action, f.writes])).toEqual([
      ['src/pay.ts', 'edited', 1],
      ['src/round.ts', 'created', 1],
    ]);
    expect(t.work).toMatchObject({ toolCalls: 3, commands: 1, failedCommands: 1, eventsRead: 6, isPartial: false });

    // The session grows: a call now, its result in a later append (read again with the call, not counted twice).
    await ctx.mem.append('cc-1', toolPair('t4', 'Edit', { file_path: '/repo/src/pay.ts', old_string: 'b', new_string: 'c' }, '').slice(0, 1));
    expect((await dashboard.timeline('cc-1')).work.files.find((f) => f.path === 'src/pay.ts')!.writes).toBe(2);
    await ctx.mem.append('cc-1', toolPair('t4', 'Edit', {}, '<tool_use_error>String to replace not found in file.</tool_use_error>', { isError: true }).slice(1));
    const grown = (await dashboard.timeline('cc-1')).work;
    expect(grown.files.find((f) => f.path === 'src/pay.ts')!.writes).toBe(1);
    expect(grown.eventsRead).toBe(8);
  });

  it("finds the files of a long session's later turns, reading it in ranges of turns", async () => {
    const root = (await ctx.mem.agents.add('root', { role: 'admin', isAdmin: true })).agent;
    const dashboard = new DashboardView(ctx.mem, ctx.mem.viewAs(), root);
    const talk: EventInput[] = Array.from({ length: 4500 }, (_, i) => ({ kind: i % 2 ? 'assistant' : 'user', content: `turn ${i}` }));
    for (let at = 0; at < talk.length; at += 500) await ctx.mem.append('long', talk.slice(at, at + 500));
    await ctx.mem.append('long', toolPair('w1', 'Write', { file_path: '/repo/late.ts', content: '' }, 'File created successfully at: /repo/late.ts'));
    const t = await dashboard.timeline('long');
    expect(t.work.files.map((f) => f.path)).toEqual(['late.ts']);
    expect(t.work).toMatchObject({ eventsRead: 2, isPartial: false });
  });
});
