import { expect, it } from 'vitest';
import { hashAgentToken } from '../../src/memory/agent-registry.js';
import { runStorageContract, useEngram } from './harnesses.js';

runStorageContract('agents', ({ createHarness }) => {
  const ctx = useEngram(createHarness);

  it('adds agents in a hierarchy and authenticates their tokens', async () => {
    const root = await ctx.mem.agents.add('architect-1', { role: 'architect', isAdmin: true, project: 'checkout' });
    const child = await ctx.mem.agents.add('prog.7', { role: 'programmer', parent: 'architect-1' });
    const grandchild = await ctx.mem.agents.add('Prog_8', { role: 'programmer', parent: child.agent.id });
    expect(root.token).toMatch(/^eng_[A-Za-z0-9_-]{43}$/);
    expect(root.agent).toMatchObject({ name: 'architect-1', role: 'architect', isAdmin: true, project: 'checkout' });
    expect(root.agent.id).toMatch(/^agt_[0-9a-z]{26}$/);
    expect(child.agent.parentId).toBe(root.agent.id);
    expect(grandchild.agent.parentId).toBe(child.agent.id);

    expect(await ctx.mem.agents.authenticate(child.token)).toEqual(child.agent);
    expect(await ctx.mem.agents.authenticate(root.token)).toEqual(root.agent);
    expect((await ctx.mem.agents.list()).map((a) => a.name)).toEqual(['architect-1', 'prog.7', 'Prog_8']);
    expect(await ctx.mem.agents.get('prog_8')).toEqual(grandchild.agent);
  });

  it('stores only the sha256 of a token', async () => {
    const { agent, token } = await ctx.mem.agents.add('a1', { role: 'manager' });
    expect(await ctx.harness.backend.getAgentByTokenHash(hashAgentToken(token))).toEqual(agent);
    expect(await ctx.harness.backend.getAgentByTokenHash(token)).toBeNull();
  });

  it('refuses a taken name case-insensitively, naming the field', async () => {
    await ctx.mem.agents.add('alice', { role: 'programmer' });
    await expect(ctx.mem.agents.add('ALICE', { role: 'manager' })).rejects.toMatchObject({ code: 'CONFLICT', data: { field: 'name' } });
    expect(await ctx.mem.agents.list()).toHaveLength(1);
  });

  it('refuses bad names, roles and missing or revoked parents, storing nothing', async () => {
    await expect(ctx.mem.agents.add('-bad', { role: 'programmer' })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'name' } });
    await expect(ctx.mem.agents.add('x'.repeat(65), { role: 'programmer' })).rejects.toMatchObject({ data: { field: 'name' } });
    await expect(ctx.mem.agents.add('agt_01jzzzzzzzzzzzzzzzzzzzzzzz', { role: 'programmer' })).rejects.toMatchObject({ data: { field: 'name' } });
    await expect(ctx.mem.agents.add('bob', { role: '' })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'role' } });
    await expect(ctx.mem.agents.add('bob', { role: 'r'.repeat(33) })).rejects.toMatchObject({ data: { field: 'role' } });
    await expect(ctx.mem.agents.add('bob', { role: 'programmer', parent: 'nobody' })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      data: { field: 'parent' },
    });
    const gone = await ctx.mem.agents.add('gone', { role: 'manager' });
    await ctx.mem.agents.revoke('gone');
    await expect(ctx.mem.agents.add('bob', { role: 'programmer', parent: gone.agent.id })).rejects.toMatchObject({ data: { field: 'parent' } });
    expect((await ctx.mem.agents.list()).map((a) => a.name)).toEqual(['gone']);
  });

  it('rejects missing, malformed, unknown and revoked tokens as UNAUTHENTICATED', async () => {
    const { token } = await ctx.mem.agents.add('carol', { role: 'programmer' });
    await expect(ctx.mem.agents.authenticate(undefined)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    await expect(ctx.mem.agents.authenticate('')).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    await expect(ctx.mem.agents.authenticate('eng_short')).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    await expect(ctx.mem.agents.authenticate(`eng_${'A'.repeat(43)}`)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    const revoked = await ctx.mem.agents.revoke('carol');
    expect(revoked.revokedAt).toBeDefined();
    await expect(ctx.mem.agents.authenticate(token)).rejects.toMatchObject({ code: 'UNAUTHENTICATED', data: { agent: 'carol' } });
    // Kept, with when it was revoked; revoking again changes nothing.
    expect(await ctx.mem.agents.revoke('carol')).toEqual(revoked);
    expect(await ctx.mem.agents.list()).toEqual([revoked]);
  });

  it('rotates a token: the old one stops working, the new one works; a revoked agent gets none', async () => {
    const first = await ctx.mem.agents.add('dave', { role: 'director' });
    const rotated = await ctx.mem.agents.rotateToken('dave');
    expect(rotated.token).not.toBe(first.token);
    await expect(ctx.mem.agents.authenticate(first.token)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    expect((await ctx.mem.agents.authenticate(rotated.token)).id).toBe(first.agent.id);
    await ctx.mem.agents.revoke(first.agent.id);
    await expect(ctx.mem.agents.rotateToken('dave')).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(ctx.mem.agents.authenticate(rotated.token)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    await expect(ctx.mem.agents.rotateToken('nobody')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('never rewrites an agent: the backend refuses a second revocation', async () => {
    const { agent } = await ctx.mem.agents.add('erin', { role: 'programmer' });
    expect(await ctx.harness.backend.revokeAgent(agent.id, Date.now())).toBe(true);
    expect(await ctx.harness.backend.revokeAgent(agent.id, Date.now())).toBe(false);
    expect(await ctx.harness.backend.setAgentTokenHash(agent.id, 'f'.repeat(64))).toBe(false);
  });
});
