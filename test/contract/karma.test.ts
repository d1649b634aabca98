import { beforeEach, expect, it } from 'vitest';
import { runStorageContract, useEngram } from './harnesses.js';

runStorageContract('karma', ({ createHarness }) => {
  const ctx = useEngram(createHarness);
  beforeEach(async () => {
    await ctx.mem.append('s', [
      { kind: 'user', content: 'the prod DB is on 5432' },
      { kind: 'assistant', content: 'noted' },
    ]);
    await ctx.mem.append('other', { kind: 'user', content: 'hello' });
  });

  it('promotes verified facts into the karma block in verification order, per scope', async () => {
    const [source] = await ctx.mem.listEvents({ sessionId: 's' as never, limit: 1 });
    const global = await ctx.mem.karma.add('Deploys happen only on weekdays.');
    const scoped = await ctx.mem.karma.add('Production PostgreSQL listens on 5432.', { sessionId: 's', sourceEventId: source!.id, verifiedBy: 'ana' });
    expect((await ctx.mem.karma.list({ sessionId: 's' })).map((k) => k.id)).toEqual([global.id, scoped.id]);
    expect((await ctx.mem.karma.list({ sessionId: 'other' })).map((k) => k.id)).toEqual([global.id]);
    const { pack } = await ctx.mem.context.pack('s', { windowTokens: 4000 });
    const karma = pack.blocks.find((b) => b.kind === 'karma')!.text;
    expect(karma.indexOf('weekdays')).toBeLessThan(karma.indexOf('5432'));
    const otherPack = await ctx.mem.context.pack('other', { windowTokens: 4000 });
    expect(otherPack.pack.blocks.find((b) => b.kind === 'karma')!.text).not.toContain('5432');
  });

  it('records removal without deleting, and refuses a second removal', async () => {
    const k = await ctx.mem.karma.add('Temporary fact.');
    await ctx.mem.karma.remove(k.id, 'bo');
    expect(await ctx.mem.karma.list({ sessionId: 's' })).toEqual([]);
    const all = await ctx.mem.karma.list({ sessionId: 's', includeRemoved: true });
    expect(all[0]).toMatchObject({ id: k.id, text: 'Temporary fact.', removedBy: 'bo' });
    await expect(ctx.mem.karma.remove(k.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('rejects empty text, unknown sessions and unknown source events', async () => {
    await expect(ctx.mem.karma.add('   ')).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'text' } });
    await expect(ctx.mem.karma.add('x', { sessionId: 'nope' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(ctx.mem.karma.add('x', { sourceEventId: 'evt_01jzzzzzzzzzzzzzzzzzzzzzzz' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});
