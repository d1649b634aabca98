import { expect, it } from 'vitest';
import { z } from 'zod';
import { isEngramError } from '../../src/errors.js';
import type { SessionId } from '../../src/model/ids.js';
import { runStorageContract, useEngram } from './harnesses.js';

runStorageContract('task state', ({ createHarness }) => {
  const ctx = useEngram(createHarness);

  it('starts empty, then stores each update as a new version event', async () => {
    expect(await ctx.mem.taskStates.get('s')).toBeNull();
    await ctx.mem.append('s', [
      { kind: 'user', content: 'fix the checkout bug' },
      { kind: 'assistant', content: 'looking' },
    ]);
    const v1 = await ctx.mem.taskStates.update('s', { goals: ['fix checkout'], phase: 'debugging' });
    expect(v1).toMatchObject({ version: 1, producedByTurn: 2, state: { goals: ['fix checkout'], phase: 'debugging', constraints: [] } });
    const v2 = await ctx.mem.taskStates.update('s', { nextActions: ['add a regression test'] }, { producedByTurn: 2 });
    expect(v2.version).toBe(2);
    // Partial updates merge: the goal set earlier is still there.
    expect(v2.state).toMatchObject({ goals: ['fix checkout'], nextActions: ['add a regression test'], phase: 'debugging' });
    expect((await ctx.mem.taskStates.get('s'))!.version).toBe(2);
    // Lossless: every version stays, as an event of the session.
    expect((await ctx.mem.taskStates.history('s')).map((v) => v.version)).toEqual([2, 1]);
    const events = await ctx.mem.listEvents({ sessionId: 's' as SessionId });
    expect(events.map((e) => e.kind)).toEqual(['user', 'assistant', 'task_state', 'task_state']);
  });

  it('rejects an invalid update naming the field and stores nothing', async () => {
    await ctx.mem.taskStates.update('s', { goals: ['g'] });
    for (const [bad, field] of [
      [{ phase: 'dreaming' }, 'taskState.phase'],
      [{ goals: 'not a list' }, 'taskState.goals'],
      [{ keyEvents: ['evt_nope'] }, 'taskState.keyEvents[0]'],
      [{ unknownField: 1 }, 'taskState'],
    ] as const) {
      const err = await ctx.mem.taskStates.update('s', bad as never).catch((e: unknown) => e);
      expect(isEngramError(err, 'INVALID_INPUT')).toBe(true);
      expect((err as { data: { field: string } }).data.field).toBe(field);
    }
    expect((await ctx.mem.taskStates.get('s'))!.version).toBe(1);
  });

  it('requires key events to exist', async () => {
    const [e] = await ctx.mem.append('s', { kind: 'decision', content: 'use postgres' });
    const err = await ctx.mem.taskStates.update('s', { keyEvents: ['evt_01jzzzzzzzzzzzzzzzzzzzzzzz'] }).catch((x: unknown) => x);
    expect(isEngramError(err, 'INVALID_INPUT')).toBe(true);
    const ok = await ctx.mem.taskStates.update('s', { keyEvents: [e!.record.id] });
    expect(ok.state.keyEvents).toEqual([e!.record.id]);
  });

  it('validates extensions against registered schemas and removes one set to null', async () => {
    const unregistered = await ctx.mem.taskStates.update('s', { extensions: { ci: { status: 'red' } } }).catch((e: unknown) => e);
    expect((unregistered as { data: { field: string } }).data.field).toBe('taskState.extensions.ci');
    ctx.mem.taskStates.registerExtension('ci', z.object({ status: z.enum(['green', 'red']) }).strict());
    const bad = await ctx.mem.taskStates.update('s', { extensions: { ci: { status: 'purple' } } }).catch((e: unknown) => e);
    expect((bad as { data: { field: string } }).data.field).toBe('taskState.extensions.ci.status');
    await ctx.mem.taskStates.update('s', { extensions: { ci: { status: 'red' } } });
    expect((await ctx.mem.taskStates.get('s'))!.state.extensions).toEqual({ ci: { status: 'red' } });
    await ctx.mem.taskStates.update('s', { extensions: { ci: null } });
    expect((await ctx.mem.taskStates.get('s'))!.state.extensions).toEqual({});
  });

  it('gives concurrent updates distinct, gap-free versions without losing either change', async () => {
    await Promise.all([
      ctx.mem.taskStates.update('s', { goals: ['a'] }),
      ctx.mem.taskStates.update('s', { constraints: ['never force-push'] }),
      ctx.mem.taskStates.update('s', { openLoops: ['flaky test'] }),
    ]);
    const history = await ctx.mem.taskStates.history('s');
    expect(history.map((v) => v.version)).toEqual([3, 2, 1]);
    // Each writer re-read and merged on conflict, so the last version holds all three changes.
    expect(history[0]!.state).toMatchObject({ goals: ['a'], constraints: ['never force-push'], openLoops: ['flaky test'] });
  });

  it('does not accept task_state events through a plain append or an import', async () => {
    const err = await ctx.mem.append('s', { kind: 'task_state', content: '{}' } as never).catch((e: unknown) => e);
    expect(isEngramError(err, 'INVALID_INPUT')).toBe(true);
  });

  it('replaces the whole card when asked', async () => {
    await ctx.mem.taskStates.update('s', { goals: ['old'], constraints: ['keep'] });
    const v = await ctx.mem.taskStates.update('s', { goals: ['new'] }, { replace: true });
    expect(v.state.constraints).toEqual([]);
    expect(v.state.goals).toEqual(['new']);
  });
});
