import { expect, it } from 'vitest';
import { agentPrincipal } from '../../src/model/access.js';
import { sessionRefName } from '../../src/memory/turn-refs.js';
import { runStorageContract, useEngram } from './harnesses.js';

/**
 * Turn references (`<session>#<turn>`, memory/turn-refs.ts): how the prompt injection cites its hits. The name a
 * reference gives its session must resolve to that session on every backend, and a reader scoped to a project
 * resolves only the sessions it may read.
 */
runStorageContract('turn references', ({ createHarness }) => {
  const ctx = useEngram(createHarness);
  const A = '2f6a1c3e-9b1d-4c55-a0b2-4f1f2d3c4b5a';
  const B = '2f6a1c3e-77aa-4c55-a0b2-000000000000';
  const C = '5d0c9e11-0000-4000-8000-000000000000';

  it('names a session by the shortest prefix of at least 8 characters that is its alone, and opens its turns by it', async () => {
    await ctx.mem.append(A, [{ kind: 'user', content: 'first turn of A' }, { kind: 'assistant', content: 'second turn of A' }], { project: 'shop' });
    await ctx.mem.append(C, { kind: 'user', content: 'first turn of C' }, { project: 'shop' });
    expect(await sessionRefName(ctx.mem.store, A)).toBe('2f6a1c3e');
    expect(await sessionRefName(ctx.mem.store, C)).toBe('5d0c9e11');
    expect((await ctx.mem.getEvent('2f6a1c3e#2')).content).toBe('second turn of A');
    expect((await ctx.mem.resolve('2f6a#1')).id).toBe((await ctx.mem.getEvent(`${A}#1`)).id);

    // Another session sharing the first 8 characters: each is named past the characters they share.
    await ctx.mem.append(B, { kind: 'user', content: 'first turn of B' }, { project: 'pay' });
    expect(await sessionRefName(ctx.mem.store, A)).toBe('2f6a1c3e-9');
    expect(await sessionRefName(ctx.mem.store, B)).toBe('2f6a1c3e-7');
    expect((await ctx.mem.getEvent('2f6a1c3e-9#1')).content).toBe('first turn of A');
    await expect(ctx.mem.getEvent('2f6a1c3e#1')).rejects.toMatchObject({ code: 'AMBIGUOUS_ID', data: { matches: [B, A] } });

    // A short id is written whole, and wins over a longer id it starts.
    await ctx.mem.append('bench-1', { kind: 'user', content: 'bench one' });
    await ctx.mem.append('bench-10', { kind: 'user', content: 'bench ten' });
    expect(await sessionRefName(ctx.mem.store, 'bench-1')).toBe('bench-1');
    expect((await ctx.mem.getEvent('bench-1#1')).content).toBe('bench one');
  });

  it('refuses a reference to no session, to a turn the session does not have, or with too short a prefix, naming it', async () => {
    await ctx.mem.append(A, { kind: 'user', content: 'only turn' });
    await expect(ctx.mem.getEvent('ffffffff#1')).rejects.toMatchObject({ code: 'NOT_FOUND', message: expect.stringContaining('no session ffffffff') });
    await expect(ctx.mem.getEvent('2f6a1c3e#2')).rejects.toMatchObject({ code: 'NOT_FOUND', message: `session ${A} has no turn 2` });
    await expect(ctx.mem.resolve('2f6#1')).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('at least 4 characters') });
    await expect(ctx.mem.resolve('2f6a1c3e#0')).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });

  it("resolves a scoped reader's reference among the sessions it may read only", async () => {
    await ctx.mem.append(A, { kind: 'user', content: 'the shop session' }, { project: 'shop' });
    await ctx.mem.append(B, { kind: 'user', content: 'the pay session' }, { project: 'pay' });
    const shop = ctx.mem.viewAs(agentPrincipal((await ctx.mem.agents.add('shop-coder', { role: 'programmer', project: 'shop' })).agent));
    // Ambiguous to full trust, one session to the shop's agent: the pay session is neither matched nor listed.
    await expect(ctx.mem.getEvent('2f6a1c3e#1')).rejects.toMatchObject({ code: 'AMBIGUOUS_ID' });
    expect((await shop.expand('2f6a1c3e#1')).text).toContain('the shop session');
    await expect(shop.expand(`${B}#1`)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(shop.expand('2f6a1c3e-7#1')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});
