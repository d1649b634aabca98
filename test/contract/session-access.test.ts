import { expect, it } from 'vitest';
import { isEngramError } from '../../src/errors.js';
import type { ArtifactId, SessionId } from '../../src/model/ids.js';
import { runStorageContract, useEngram } from './harnesses.js';

// Session ownership behind the storage seam (model/access.ts): the same behaviour on every backend.
runStorageContract('session ownership', ({ createHarness }) => {
  const ctx = useEngram(createHarness);
  const sid = (s: string) => s as SessionId;

  it('gives a new session the appending project, and keeps it on later appends', async () => {
    await ctx.mem.append('a', { kind: 'note', content: 'first' }, { project: 'shop' });
    await ctx.mem.append('a', { kind: 'note', content: 'second' }, { project: 'other' });
    await ctx.mem.append('b', { kind: 'note', content: 'no project' });
    expect(await ctx.mem.getSession('a')).toMatchObject({ project: 'shop', sharedWith: [], eventCount: 2 });
    expect((await ctx.mem.getSession('b')).project).toBe('default');
  });

  it('refuses an append that requires another owner, storing nothing (SCOPE_DENIED)', async () => {
    await ctx.mem.append('a', { kind: 'note', content: 'first' }, { project: 'shop' });
    const err = await ctx.mem
      .append('a', [{ kind: 'note', content: 'x' }, { kind: 'note', content: 'y' }], { project: 'other', requireProject: 'other' })
      .catch((e: unknown) => e);
    expect(isEngramError(err, 'SCOPE_DENIED')).toBe(true);
    expect((await ctx.mem.getSession('a')).eventCount).toBe(1);
    await ctx.mem.append('a', { kind: 'note', content: 'owner' }, { project: 'shop', requireProject: 'shop' });
    expect((await ctx.mem.getSession('a')).eventCount).toBe(2);
  });

  it('refuses a supersedes that points into another project, answered like a missing event', async () => {
    const [theirs] = await ctx.mem.append('other-1', { kind: 'decision', content: 'use the secret vendor' }, { project: 'other' });
    const [ours] = await ctx.mem.append('shop-1', { kind: 'decision', content: 'use postgres' }, { project: 'shop' });
    const err = await ctx.mem
      .append('shop-1', { kind: 'decision', content: 'use mysql', supersedes: theirs!.record.id }, { project: 'shop', requireProject: 'shop' })
      .catch((e: unknown) => e);
    expect(isEngramError(err, 'INVALID_INPUT')).toBe(true);
    expect((err as Error).message).toContain(`no event ${theirs!.record.id} exists`);
    // A new session takes the appending project, so the same rule holds for it.
    const err2 = await ctx.mem.append('shop-2', { kind: 'decision', content: 'x', supersedes: theirs!.record.id }, { project: 'shop' }).catch((e: unknown) => e);
    expect(isEngramError(err2, 'INVALID_INPUT')).toBe(true);
    expect((await ctx.mem.getSession('shop-1')).eventCount).toBe(1);
    await ctx.mem.append('shop-1', { kind: 'decision', content: 'use mysql', supersedes: ours!.record.id }, { project: 'shop', requireProject: 'shop' });
    expect((await ctx.mem.getSession('shop-1')).eventCount).toBe(2);
  });

  it('shares and unshares sessions read-only, and lists sessions visible to a project', async () => {
    await ctx.mem.append('shop-1', { kind: 'note', content: 'one' }, { project: 'shop' });
    await ctx.mem.append('shop-2', { kind: 'note', content: 'two' }, { project: 'shop' });
    await ctx.mem.append('other-1', { kind: 'note', content: 'three' }, { project: 'other' });
    await ctx.mem.store.shareSession({ sessionId: sid('shop-2'), project: 'other', sharedBy: 'test', tsMs: 1 });
    await ctx.mem.store.shareSession({ sessionId: sid('shop-2'), project: 'other', sharedBy: 'test', tsMs: 2 });
    await ctx.mem.store.shareSession({ sessionId: sid('shop-2'), project: 'audit', sharedBy: 'test', tsMs: 3 });
    const ids = async (project?: string) =>
      (await ctx.mem.store.listSessions(project !== undefined ? { visibleToProject: project } : {})).map((s) => s.id).sort();
    expect(await ids('shop')).toEqual(['shop-1', 'shop-2']);
    expect(await ids('other')).toEqual(['other-1', 'shop-2']);
    expect(await ids('nobody')).toEqual([]);
    expect(await ids()).toEqual(['other-1', 'shop-1', 'shop-2']);
    expect((await ctx.mem.getSession('shop-2')).sharedWith).toEqual(['audit', 'other']);
    const access = await ctx.mem.store.getSessionAccess([sid('shop-2'), sid('other-1'), sid('missing')]);
    expect(Object.fromEntries(access)).toEqual({ 'shop-2': { project: 'shop', sharedWith: ['audit', 'other'] }, 'other-1': { project: 'other', sharedWith: [] } });

    expect(await ctx.mem.store.unshareSession(sid('shop-2'), 'other')).toBe(true);
    expect(await ctx.mem.store.unshareSession(sid('shop-2'), 'other')).toBe(false);
    expect(await ids('other')).toEqual(['other-1']);
    const err = await ctx.mem.store.shareSession({ sessionId: sid('missing'), project: 'other', sharedBy: 'test', tsMs: 4 }).catch((e: unknown) => e);
    expect(isEngramError(err, 'NOT_FOUND')).toBe(true);
  });

  it('searches only sessions visible to a project, shared ones included', async () => {
    await ctx.mem.append('shop-1', { kind: 'note', content: 'the wombatron broke' }, { project: 'shop' });
    await ctx.mem.append('shop-2', { kind: 'note', content: 'the wombatron is shared' }, { project: 'shop' });
    await ctx.mem.append('other-1', { kind: 'note', content: 'the wombatron of other' }, { project: 'other' });
    await ctx.mem.store.shareSession({ sessionId: sid('shop-2'), project: 'other', sharedBy: 'test', tsMs: 1 });
    const sessions = async (visibleToProject?: string) => {
      const hits = await ctx.mem.store.searchText({ terms: [{ text: 'wombatron' }], limit: 10, ...(visibleToProject ? { filter: { visibleToProject } } : {}) });
      return (await ctx.mem.store.getEvents(hits.map((h) => h.eventId))).map((e) => e.sessionId).sort();
    };
    expect(await sessions('shop')).toEqual(['shop-1', 'shop-2']);
    expect(await sessions('other')).toEqual(['other-1', 'shop-2']);
    expect(await sessions('nobody')).toEqual([]);
    expect(await sessions()).toEqual(['other-1', 'shop-1', 'shop-2']);
    const recalled = await ctx.mem.recall('wombatron', { visibleToProject: 'other', logRecall: true });
    expect(recalled.hits.map((h) => h.sessionId).sort()).toEqual(['other-1', 'shop-2']);
    expect((await ctx.mem.store.listRecallLog({ project: 'other' })).map((r) => r.query)).toEqual(['wombatron']);
    expect(await ctx.mem.store.listRecallLog({ project: 'shop' })).toEqual([]);
  });

  it("never adds a task card's key events from sessions the reader may not read", async () => {
    const [secret] = await ctx.mem.append('shop-1', { kind: 'decision', content: 'the vault code is 4242' }, { project: 'shop' });
    const [own] = await ctx.mem.append('other-1', { kind: 'decision', content: 'our own decision' }, { project: 'other' });
    const taskState = { ...(await import('../../src/model/task-state.js')).EMPTY_TASK_STATE, keyEvents: [secret!.record.id, own!.record.id] };
    const r = await ctx.mem.recall('unrelated words', { taskState, visibleToProject: 'other', logRecall: false });
    expect(r.hits.map((h) => h.eventId)).toEqual([own!.record.id]);
    expect(r.text).not.toContain('4242');
  });

  it('names the sessions that hold an artifact', async () => {
    const big = Array.from({ length: 3000 }, (_, i) => `line ${i} of a long build log`).join('\n');
    const [a] = await ctx.mem.append('s1', { kind: 'tool_result', toolName: 'Bash', content: big }, { project: 'shop' });
    await ctx.mem.append('s2', { kind: 'tool_result', toolName: 'Bash', content: big }, { project: 'other' });
    const artifactId = a!.record.artifact!.id as ArtifactId;
    expect((await ctx.mem.store.findArtifactSessions(artifactId, 10)).sort()).toEqual(['s1', 's2']);
    expect(await ctx.mem.store.findArtifactSessions('art_0000000000000000000000000000000000000000000000000000000000000000' as ArtifactId, 10)).toEqual([]);
  });
});
