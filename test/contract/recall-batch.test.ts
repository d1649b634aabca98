import { expect, it } from 'vitest';
import { runStorageContract, useEngram } from './harnesses.js';

runStorageContract('batch recall', ({ createHarness }) => {
  const ctx = useEngram(createHarness);

  it('answers several queries within one shared budget, each event once', async () => {
    // Three sessions, so that no event is found through the indexed context of another (turn-context.ts).
    await ctx.mem.append('s1', [{ kind: 'tool_result', content: 'Error: connect ECONNREFUSED 10.0.0.5:5432 (postgres primary)' }]);
    await ctx.mem.append('s2', [{ kind: 'decision', content: 'We pinned the redis client to 4.6.13 because 4.7 broke cluster mode.' }]);
    await ctx.mem.append('s3', [{ kind: 'note', content: 'postgres primary moved to 10.0.0.6 after failover' }]);
    const batch = await ctx.mem.recallBatch(['ECONNREFUSED postgres', 'redis client version', 'postgres primary'], { budgetTokens: 900 });
    expect(batch.results.map((r) => r.query)).toEqual(['ECONNREFUSED postgres', 'redis client version', 'postgres primary']);
    expect(batch.results[0]!.hits[0]!.excerpt).toContain('ECONNREFUSED');
    expect(batch.results[1]!.hits[0]!.excerpt).toContain('4.6.13');
    const ids = batch.results.flatMap((r) => r.hits.map((h) => h.eventId));
    expect(new Set(ids).size).toBe(ids.length);
    expect(batch.usedTokens).toBeLessThanOrEqual(900);
    expect(ctx.mem.tokenizer.count(batch.text)).toBeLessThanOrEqual(batch.usedTokens);
  });

  it('rejects an empty batch and a budget too small to share', async () => {
    await expect(ctx.mem.recallBatch([])).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'queries' } });
    await expect(ctx.mem.recallBatch(['a', 'b', 'c'], { budgetTokens: 100 })).rejects.toMatchObject({ data: { field: 'budgetTokens' } });
  });
});
