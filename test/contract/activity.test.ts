import { expect, it } from 'vitest';
import type { SessionId } from '../../src/model/ids.js';
import { runStorageContract, useEngram } from './harnesses.js';

// Activity per day (the dashboard's overview): the same counts on every backend.
runStorageContract('activity by day', ({ createHarness }) => {
  const ctx = useEngram(createHarness);
  const day = (iso: string) => Date.parse(`${iso}T00:00:00Z`);

  it('counts events and artifact-holding events per UTC day, from a day on, within what a project may read', async () => {
    const large = 'x'.repeat(5000);
    await ctx.mem.append('shop-1', [
      { kind: 'user', content: 'a', ts: day('2026-03-01') + 1 },
      { kind: 'tool_result', content: large, ts: day('2026-03-01') + 86_399_999 },
      { kind: 'note', content: 'b', ts: day('2026-03-03') + 5 },
    ], { project: 'shop' });
    await ctx.mem.append('other-1', [
      { kind: 'note', content: 'c', ts: day('2026-02-27') },
      { kind: 'tool_result', content: `${large}y`, ts: day('2026-03-03') + 7 },
    ], { project: 'other' });

    expect(await ctx.mem.store.activityByDay({ sinceMs: 0 })).toEqual([
      { day: '2026-02-27', events: 1, artifacts: 0 },
      { day: '2026-03-01', events: 2, artifacts: 1 },
      { day: '2026-03-03', events: 2, artifacts: 1 },
    ]);
    expect(await ctx.mem.store.activityByDay({ sinceMs: day('2026-03-02') })).toEqual([{ day: '2026-03-03', events: 2, artifacts: 1 }]);
    expect(await ctx.mem.store.activityByDay({ sinceMs: 0, visibleToProject: 'shop' })).toEqual([
      { day: '2026-03-01', events: 2, artifacts: 1 },
      { day: '2026-03-03', events: 1, artifacts: 0 },
    ]);
    expect(await ctx.mem.store.activityByDay({ sinceMs: 0, visibleToProject: 'nobody' })).toEqual([]);

    // A session shared with a project counts for it too.
    await ctx.mem.store.shareSession({ sessionId: 'other-1' as SessionId, project: 'shop', sharedBy: 'test', tsMs: 1 });
    expect(await ctx.mem.store.activityByDay({ sinceMs: 0, visibleToProject: 'shop' })).toEqual([
      { day: '2026-02-27', events: 1, artifacts: 0 },
      { day: '2026-03-01', events: 2, artifacts: 1 },
      { day: '2026-03-03', events: 2, artifacts: 1 },
    ]);
  });
});
