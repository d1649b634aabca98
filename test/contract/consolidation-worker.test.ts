import { expect, it } from 'vitest';
import { ConsolidationWorker } from '../../src/consolidate/consolidation-worker.js';
import type { EventInput } from '../../src/model/event.js';
import { runStorageContract, useEngram } from './harnesses.js';

const MIN = 60_000;

function work(topic: string, startMs: number): EventInput[] {
  const out: EventInput[] = [];
  for (let i = 0; i < 6; i++) {
    out.push({ kind: 'user', ts: startMs + i * 1000, content: `Step ${i}: the ${topic} sync fails again, find the cause and fix it.` });
    out.push({ kind: 'assistant', ts: startMs + i * 1000 + 500, content: `The ${topic} sync failed on ERR_${topic.toUpperCase()}_${i}; fixed in src/${topic}/sync${i}.ts, tests pass.` });
  }
  return out;
}

runStorageContract('consolidation worker', ({ createHarness }) => {
  const ctx = useEngram(createHarness);

  it('two workers share the idle sessions (each summarized once); a busy session waits; a grown one is summarized again', async () => {
    const now = Date.now();
    for (const t of ['alpha', 'beta', 'gamma']) await ctx.mem.append(t, work(t, now - 60 * MIN), { project: 'p' });
    await ctx.mem.append('busy', work('delta', now - MIN), { project: 'p' });
    const worker = (id: string) => new ConsolidationWorker(ctx.mem.store, ctx.mem.consolidator({ llm: null, sessionsPerArc: 2 }), { workerId: id, idleMs: 15 * MIN, batch: 2 });
    const [w1, w2] = [worker('w1'), worker('w2')];
    const rounds = await Promise.all([w1.round(now), w2.round(now)]);
    const second = await Promise.all([w1.round(now), w2.round(now)]);
    const all = [...rounds, ...second];
    expect(all.reduce((n, r) => n + r.summarized, 0)).toBe(3);
    expect(all.reduce((n, r) => n + r.failed, 0)).toBe(0);
    const sessions = await ctx.mem.summaries.list({ depth: 0 });
    expect(sessions.map((s) => s.sessionId).sort()).toEqual(['alpha', 'beta', 'gamma']);
    expect((await ctx.mem.summaries.list({ depth: 1 })).length).toBe(1);
    expect((await ctx.mem.store.summaries.counts()).jobs).toEqual({ pending: 0, leased: 0, done: 3, failed: 0 });

    // busy goes idle: queued and summarized; alpha grows and goes idle again: summarized again, the old one cold.
    await ctx.mem.append('alpha', work('alpha-two', now - 30 * MIN));
    const later = await w1.round(now + 20 * MIN);
    expect(later).toMatchObject({ queued: 2, summarized: 2 });
    const alpha = await ctx.mem.summaries.list({ sessionId: 'alpha', includeCold: true });
    expect(alpha.map((s) => [s.throughTurn, s.coldAt === null ? 'live' : 'cold']).sort()).toEqual([
      [12, 'cold'],
      [24, 'live'],
    ]);
  });

  it("takes over a crashed worker's job once its lease runs out", async () => {
    const now = Date.now();
    await ctx.mem.append('s', work('omega', now - 60 * MIN));
    const store = ctx.mem.store.summaries;
    await store.enqueue([{ sessionId: 's', project: 'default', throughTurn: 12 }]);
    // w1 leased it and crashed (never finished).
    expect(await store.lease('w1', 1, 10 * MIN, now)).toHaveLength(1);
    const w2 = new ConsolidationWorker(ctx.mem.store, ctx.mem.consolidator(), { workerId: 'w2', idleMs: 15 * MIN, leaseMs: 10 * MIN });
    expect(await w2.round(now + MIN)).toMatchObject({ leased: 0, summarized: 0 });
    expect(await w2.round(now + 11 * MIN)).toMatchObject({ leased: 1, summarized: 1 });
    expect((await ctx.mem.summaries.list({ sessionId: 's' })).length).toBe(1);
    expect((await store.counts()).jobs).toMatchObject({ done: 1, leased: 0 });
  });
});
