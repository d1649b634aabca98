import { expect, it } from 'vitest';
import { runConsolidation } from '../../src/consolidate/consolidation-run.js';
import { ConsolidationWorker } from '../../src/consolidate/consolidation-worker.js';
import type { EventInput } from '../../src/model/event.js';
import { runStorageContract, useEngram } from './harnesses.js';

const MIN = 60_000;

function work(topic: string, startMs: number): EventInput[] {
  const out: EventInput[] = [];
  for (let i = 0; i < 6; i++) {
    out.push({ kind: 'user', ts: startMs + i * 1000, content: `Step ${i}: the ${topic} export breaks again, find the cause and fix it.` });
    out.push({ kind: 'assistant', ts: startMs + i * 1000 + 500, content: `The ${topic} export failed on ERR_${topic.toUpperCase()}_${i}; fixed in src/${topic}/export${i}.ts, tests pass.` });
  }
  return out;
}

// `engram consolidate` (runConsolidation) takes the job lease the serve worker takes (consolidation_jobs), so a CLI
// run and a server never consolidate the same session at once.
runStorageContract('consolidate under the job lease', ({ createHarness }) => {
  const ctx = useEngram(createHarness);

  it('leases one session: queued if new, refused while another worker holds it, renewed for its holder, taken once expired', async () => {
    const jobs = ctx.mem.store.summaries;
    const now = Date.now();
    const mine = await jobs.leaseSession({ sessionId: 'a', project: 'p', throughTurn: 4 }, 'cli-1', 10 * MIN, now);
    expect(mine).toMatchObject({ sessionId: 'a', project: 'p', throughTurn: 4, status: 'leased', leasedBy: 'cli-1', leaseUntilMs: now + 10 * MIN });
    expect(await jobs.leaseSession({ sessionId: 'a', project: 'p', throughTurn: 4 }, 'w1', 10 * MIN, now + MIN)).toBeNull();
    // A server's round does not take it either.
    expect(await jobs.lease('w1', 10, 10 * MIN, now + MIN)).toEqual([]);
    expect(await jobs.leaseSession({ sessionId: 'a', project: 'p', throughTurn: 6 }, 'cli-1', 10 * MIN, now + MIN)).toMatchObject({ leasedBy: 'cli-1', throughTurn: 6 });
    expect(await jobs.leaseSession({ sessionId: 'a', project: 'p', throughTurn: 6 }, 'w1', 10 * MIN, now + 12 * MIN)).toMatchObject({ leasedBy: 'w1' });
    await jobs.finish('a', 'w1', { throughTurn: 6 });
    expect((await jobs.counts()).jobs).toEqual({ pending: 0, leased: 0, done: 1, failed: 0 });
    // A finished job is leased again by a later run (a session that grew, or a run by hand).
    expect(await jobs.leaseSession({ sessionId: 'a', project: 'p', throughTurn: 6 }, 'cli-2', 10 * MIN, now + 13 * MIN)).toMatchObject({ leasedBy: 'cli-2' });
  });

  it("leaves a session a server's worker is consolidating to it, and the worker skips the ones a run holds", async () => {
    const now = Date.now();
    for (const t of ['alpha', 'beta']) await ctx.mem.append(t, work(t, now - 60 * MIN), { project: 'p' });
    const store = ctx.mem.store.summaries;
    // The server leased alpha (and is still at it).
    await store.enqueue([{ sessionId: 'alpha', project: 'p', throughTurn: 12 }]);
    expect((await store.lease('server-1', 1, 10 * MIN)).map((j) => j.sessionId)).toEqual(['alpha']);
    const report = await runConsolidation(ctx.mem.store, ctx.mem.consolidator({ llm: null }), { workerId: 'cli-1' });
    expect(report.byStatus).toEqual({ summarized: 1, skipped: 0, unchanged: 0, empty: 0, held: 1 });
    expect((await ctx.mem.summaries.list({ depth: 0 })).map((s) => s.sessionId)).toEqual(['beta']);
    // alpha is still the server's; beta's job was finished by the run (done), so another may lease it now.
    const probe = (id: string) => store.leaseSession({ sessionId: id, project: 'p', throughTurn: 12 }, 'probe', 1);
    expect(await probe('alpha')).toBeNull();
    expect(await probe('beta')).toMatchObject({ leasedBy: 'probe' });
  });

  it('a run and a worker started together summarize each session once', async () => {
    const now = Date.now();
    const topics = ['gamma', 'delta', 'epsilon', 'zeta'];
    for (const t of topics) await ctx.mem.append(t, work(t, now - 60 * MIN), { project: 'q' });
    const worker = new ConsolidationWorker(ctx.mem.store, ctx.mem.consolidator({ llm: null, gate: false }), { workerId: 'server-1', idleMs: 15 * MIN, batch: 4 });
    const [report, round] = await Promise.all([
      runConsolidation(ctx.mem.store, ctx.mem.consolidator({ llm: null, gate: false }), { workerId: 'cli-1' }),
      worker.round(now),
    ]);
    // Every session was summarized by exactly one of them; the other saw it held (or already summarized).
    expect(report.byStatus.summarized + round.summarized).toBe(topics.length);
    const made = await ctx.mem.summaries.list({ depth: 0, includeCold: true });
    expect(made.map((s) => s.sessionId).sort()).toEqual([...topics].sort());
    expect((await ctx.mem.store.summaries.counts()).jobs).toMatchObject({ leased: 0, failed: 0 });
  });
});
