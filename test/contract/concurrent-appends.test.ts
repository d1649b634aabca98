import { expect, it } from 'vitest';
import { isEngramError } from '../../src/errors.js';
import { HIERARCHY_LINK_KEY } from '../../src/model/hierarchy.js';
import type { IngestOutcome } from '../../src/memory/ingest.js';
import type { SessionId } from '../../src/model/ids.js';
import { runStorageContract, useEngram } from './harnesses.js';

// Appends arriving together, as a server's concurrent requests do. SQLite commits them in one transaction (group
// commit, src/store/sqlite/group-commit.ts), PostgreSQL on connections of its own: either way each append is all
// or nothing, one refused inside the store fails alone, and turns stay gap-free with each batch's events together.
runStorageContract('concurrent appends', ({ createHarness }) => {
  const ctx = useEngram(createHarness);

  const settle = (appends: Array<Promise<IngestOutcome[]>>) => Promise.allSettled(appends);
  const events = (sessionId: string) => ctx.mem.listEvents({ sessionId: sessionId as SessionId, limit: 1000 });
  const turnsOf = async (sessionId: string) => (await events(sessionId)).map((e) => e.turn);

  it('stores every acknowledged event once, readable when acknowledged, with each batch on consecutive turns, gap-free', async () => {
    const sessions = ['s1', 's2', 's3'];
    const appends = sessions.flatMap((s) =>
      Array.from({ length: 8 }, (_, i) =>
        ctx.mem.append(
          s,
          [0, 1, 2].map((j) => ({ kind: 'note' as const, content: `${s} batch ${i} event ${j}`, key: `${s}:${i}:${j}` })),
        ),
      ),
    );
    const outcomes = await Promise.all(
      appends.map(async (p) => {
        const out = await p;
        // Acknowledged means committed: every event of the batch can be read at once.
        expect((await ctx.mem.store.getEvents(out.map((o) => o.record.id))).length).toBe(3);
        return out;
      }),
    );
    for (const out of outcomes) {
      expect(out.every((o) => !o.isDuplicate)).toBe(true);
      const [a, b, c] = out.map((o) => o.record.turn);
      expect([b! - a!, c! - b!]).toEqual([1, 1]);
    }
    for (const s of sessions) expect(await turnsOf(s)).toEqual(Array.from({ length: 24 }, (_, i) => i + 1));
    // A batch's events are stored in its order, on its turns.
    const s2 = await events('s2');
    for (const out of outcomes.filter((o) => o[0]!.record.sessionId === 's2')) {
      const stored = s2.filter((e) => out.some((o) => o.record.id === e.id));
      expect(stored.map((e) => e.content)).toEqual(out.map((o) => o.record.content));
    }
    expect((await ctx.mem.stats()).events).toBe(72);
  });

  it('fails only the append refused inside the store (same key, other content): none of its events, all of the others', async () => {
    await ctx.mem.append('s', { kind: 'note', content: 'first', key: 'first' });
    const results = await settle([
      ctx.mem.append('s', [{ kind: 'note', content: 'A1', key: 'a1' }]),
      ctx.mem.append('s', [
        { kind: 'note', content: 'B1', key: 'b1' },
        { kind: 'note', content: 'one version', key: 'shared' },
      ]),
      ctx.mem.append('s', [
        { kind: 'note', content: 'C1', key: 'c1' },
        { kind: 'note', content: 'another version', key: 'shared' },
      ]),
      ctx.mem.append('t', [{ kind: 'note', content: 'T1', key: 't1' }]),
    ]);
    expect(results[0]!.status).toBe('fulfilled');
    expect(results[3]!.status).toBe('fulfilled');
    // B and C race for the key `shared`: exactly one stores it, the other is refused whole.
    const raced = [results[1]!, results[2]!];
    expect(raced.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const refused = raced.find((r): r is PromiseRejectedResult => r.status === 'rejected')!;
    expect(isEngramError(refused.reason, 'IDEMPOTENCY_CONFLICT')).toBe(true);
    const loser = results[1]!.status === 'rejected' ? 'B1' : 'C1';
    const contents = (await events('s')).map((e) => e.content);
    expect(contents).not.toContain(loser);
    expect(contents).toHaveLength(4);
    expect(contents).toContain('A1');
    expect(await turnsOf('s')).toEqual([1, 2, 3, 4]);
    expect(await turnsOf('t')).toEqual([1]);
  });

  it('still enforces the writer lease of a hierarchical session and the owner project, per append, among concurrent ones', async () => {
    const alice = { id: 'agent:a', name: 'alice' };
    const bob = { id: 'agent:b', name: 'bob' };
    const lease = { hierarchy: { type: 'link', writer: alice } };
    await ctx.mem.ingestor.appendInternal('leased', [{ kind: 'note', content: 'link', key: HIERARCHY_LINK_KEY, meta: lease }], { writer: alice });
    await ctx.mem.append('theirs', { kind: 'note', content: 'owned by shop' }, { project: 'shop' });
    const results = await settle([
      ctx.mem.append('leased', [{ kind: 'note', content: 'by alice 1' }], { writer: alice }),
      ctx.mem.append('leased', [{ kind: 'note', content: 'by bob' }, { kind: 'note', content: 'by bob too' }], { writer: bob }),
      ctx.mem.append('theirs', [{ kind: 'note', content: 'from another project' }], { project: 'other', requireProject: 'other' }),
      ctx.mem.append('leased', [{ kind: 'note', content: 'by alice 2' }], { writer: alice }),
      ctx.mem.append('free', [{ kind: 'note', content: 'anyone' }], { writer: bob }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled', 'fulfilled']);
    const reason = (i: number) => (results[i] as PromiseRejectedResult).reason as unknown;
    expect(isEngramError(reason(1), 'SCOPE_DENIED')).toBe(true);
    expect(isEngramError(reason(2), 'SCOPE_DENIED')).toBe(true);
    const leased = (await events('leased')).map((e) => e.content);
    expect(leased.slice(1).sort()).toEqual(['by alice 1', 'by alice 2']);
    expect(await turnsOf('leased')).toEqual([1, 2, 3]);
    expect((await ctx.mem.getSession('theirs')).eventCount).toBe(1);
    expect((await ctx.mem.getSession('free')).eventCount).toBe(1);
  });

  it('gives appends of one writer, each awaited before the next, increasing turns in that order', async () => {
    const turns: number[] = [];
    for (let i = 0; i < 5; i++) turns.push(...(await ctx.mem.append('seq', [{ kind: 'note', content: `n${i}` }, { kind: 'note', content: `m${i}` }])).map((o) => o.record.turn));
    expect(turns).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect((await events('seq')).map((e) => e.content)).toEqual(['n0', 'm0', 'n1', 'm1', 'n2', 'm2', 'n3', 'm3', 'n4', 'm4']);
  });
});
