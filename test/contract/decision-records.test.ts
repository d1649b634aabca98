import { expect, it } from 'vitest';
import { agentPrincipal } from '../../src/model/access.js';
import type { EventInput } from '../../src/model/event.js';
import type { SessionId } from '../../src/model/ids.js';
import { runStorageContract, useEngram } from './harnesses.js';

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 2, 2, 9); // 2 March 2026

function work(topic: string, startMs: number): EventInput[] {
  const out: EventInput[] = [];
  for (let i = 0; i < 5; i++) {
    out.push({ kind: 'user', ts: startMs + i * 60_000, content: `Step ${i}: look at the ${topic} code path and tell me what breaks.` });
    out.push({ kind: 'assistant', ts: startMs + i * 60_000 + 30_000, content: `The ${topic} module fails with ERR_${topic.toUpperCase()}_${i}; fixed in src/${topic}/step${i}.ts.` });
  }
  return out;
}

// Decision records (consolidate/decision-records.ts): objects of their own (summaries of kind decision), linked when
// a later decision replaces an earlier one (its supersedes pointer, or the same meta.subject), the replaced one cold.
runStorageContract('decision records', ({ createHarness }) => {
  const ctx = useEngram(createHarness);
  const decisionIds = async (sessionId: string) => (await ctx.mem.store.listEvents({ sessionId: sessionId as SessionId, kinds: ['decision'], limit: 10 })).map((e) => e.id);

  it('records each decision event, supersedes by pointer and by subject, keeps the replaced ones cold with the chain', async () => {
    const c = ctx.mem.consolidator({ llm: null });
    await ctx.mem.append(
      'd1',
      [
        ...work('storage', T0),
        { kind: 'decision', ts: T0 + 600_000, content: 'Decision: the default store is SQLite.', meta: { subject: 'Storage  Backend' } },
        { kind: 'decision', ts: T0 + 660_000, content: 'Decision: sessions are cached in Redis.' },
      ],
      { project: 'shop' },
    );
    const [sqlite, redis] = await decisionIds('d1');
    const first = await c.consolidateSession('d1');
    expect(first.decisions!.map((d) => [d.kind, d.subject, d.sourceEventIds, d.confidence, d.coldAt])).toEqual([
      ['decision', 'storage backend', [sqlite], 1, null],
      ['decision', null, [redis], 1, null],
    ]);
    expect(first.decisions![0]!.text).toBe(`Decision (session d1, turn 11, 2 March 2026; subject storage backend): the default store is SQLite. [${sqlite}]`);
    // Decision records are not summaries: lists and searches of summaries leave them out.
    expect((await ctx.mem.summaries.list()).every((s) => s.kind === undefined)).toBe(true);
    expect((await ctx.mem.summaries.list({ kind: 'decision' })).map((d) => d.sourceEventIds[0]).sort()).toEqual([sqlite, redis].sort());

    await ctx.mem.append(
      'd2',
      [
        ...work('storage2', T0 + DAY),
        { kind: 'decision', ts: T0 + DAY + 600_000, content: 'Decision: the default store is PostgreSQL from now on.', meta: { subject: 'storage backend' } },
        { kind: 'decision', ts: T0 + DAY + 660_000, content: 'Decision: sessions are cached in memory instead.', supersedes: redis! },
      ],
      { project: 'shop' },
    );
    const [pg, memory] = await decisionIds('d2');
    const second = await c.consolidateSession('d2');
    const [pgRecord, memoryRecord] = second.decisions!;
    expect(memoryRecord!.subject).toBeNull();
    const all = await ctx.mem.summaries.list({ kind: 'decision', includeCold: true });
    const byEvent = new Map(all.map((d) => [d.sourceEventIds[0], d]));
    expect(byEvent.get(sqlite)).toMatchObject({ coldSourceId: pgRecord!.id, coldReason: expect.stringContaining('subject "storage backend"') });
    expect(byEvent.get(redis)).toMatchObject({ coldSourceId: memoryRecord!.id, coldReason: expect.stringContaining(`supersedes ${redis}`) });
    expect(byEvent.get(pg)!.coldAt).toBeNull();
    expect(byEvent.get(memory)!.coldAt).toBeNull();
    // In force: the two of d2; the replaced ones only with the cold tier.
    expect((await ctx.mem.summaries.list({ kind: 'decision' })).map((d) => d.sourceEventIds[0]).sort()).toEqual([pg, memory].sort());
    expect((await ctx.mem.summaries.list({ kind: 'decision', subject: 'Storage Backend', includeCold: true })).map((d) => d.sourceEventIds[0])).toEqual([pg, sqlite]);
    // Searchable; the cold tier only when asked for.
    expect((await ctx.mem.summaries.search('default store', { kind: 'decision' })).map((h) => h.summary.sourceEventIds[0])).toEqual([pg]);
    expect((await ctx.mem.summaries.search('default store', { kind: 'decision', includeCold: true })).map((h) => h.summary.sourceEventIds[0]).sort()).toEqual([pg, sqlite].sort());
    // Expand: the decision's event.
    const expanded = await ctx.mem.summaries.expand(pgRecord!.id);
    expect(expanded.events.map((e) => e.id)).toEqual([pg]);
    // Consolidating again records nothing twice.
    await ctx.mem.append('d2', [{ kind: 'user', ts: T0 + DAY + 900_000, content: 'Thanks, the switch to PostgreSQL looks good to me.' }]);
    expect((await c.consolidateSession('d2')).decisions).toEqual([]);

    // An older session consolidated late: its decision on the subject is recorded, replaced from the start.
    await ctx.mem.append('d0', [...work('storage0', T0 - DAY), { kind: 'decision', ts: T0 - DAY + 600_000, content: 'Decision: store everything in flat files.', meta: { subject: 'storage backend' } }], { project: 'shop' });
    const [late] = (await c.consolidateSession('d0')).decisions!;
    expect(late).toMatchObject({ coldSourceId: pgRecord!.id });
    expect((await ctx.mem.summaries.get(pgRecord!.id)).coldAt).toBeNull();
  });

  it('reads decision records through the trust model, and a purge reaches them', async () => {
    const c = ctx.mem.consolidator({ llm: null });
    await ctx.mem.append('p1', [...work('vault', T0), { kind: 'decision', ts: T0 + 600_000, content: 'Decision: the vault key is kiwi-2718-VAULT.', meta: { subject: 'vault' } }], { project: 'pay' });
    const [record] = (await c.consolidateSession('p1')).decisions!;
    const other = ctx.mem.viewAs(agentPrincipal((await ctx.mem.agents.add('bob', { role: 'programmer', project: 'shop' })).agent));
    const payAgent = ctx.mem.viewAs(agentPrincipal((await ctx.mem.agents.add('amy', { role: 'programmer', project: 'pay' })).agent));
    expect(await other.summaries.list({ kind: 'decision' })).toEqual([]);
    await expect(other.summaries.get(record!.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect((await payAgent.summaries.list({ kind: 'decision' })).map((d) => d.id)).toEqual([record!.id]);
    await expect(payAgent.summaries.list({ kind: 'verdict' as never })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'kind' } });

    await ctx.mem.purge({ match: 'kiwi-2718-VAULT' }, { actor: 'os:test' });
    const purged = await ctx.mem.summaries.get(record!.id);
    expect(purged.text).not.toContain('kiwi-2718-VAULT');
    expect(purged).toMatchObject({ kind: 'decision', coldReason: expect.stringMatching(/^purged/) });
    expect(await ctx.mem.summaries.search('kiwi-2718-VAULT', { kind: 'decision', includeCold: true })).toEqual([]);
  });
});
