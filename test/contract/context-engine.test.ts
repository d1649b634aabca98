import { expect, it } from 'vitest';
import { defaultBudgets } from '../../src/context/assembly/blocks.js';
import { cacheBudget } from '../../src/context/context-engine.js';
import { openEngram } from '../../src/engine.js';
import type { EventInput } from '../../src/model/event.js';
import type { SessionId } from '../../src/model/ids.js';
import { turnEvents } from '../fixtures/coding-session.js';
import { runStorageContract, useEngram } from './harnesses.js';

const WINDOW = 4096;

runStorageContract('context engine', ({ createHarness }) => {
  const ctx = useEngram(createHarness);

  it('keeps every pack within budget, with the card, markers for all evicted history and the recent tail', async () => {
    await ctx.mem.taskStates.update('s', { goals: ['keep worker batches healthy'], phase: 'debugging', constraints: ['never restart redis in business hours'] });
    let compactions = 0;
    for (let i = 1; i <= 60; i++) {
      await ctx.mem.append('s', turnEvents(i));
      const { pack, compaction } = await ctx.mem.context.pack('s', { windowTokens: WINDOW, query: `what happened in batch ${i}?` });
      if (compaction) compactions++;
      // Within the window, headroom reserved.
      expect(pack.totalTokens + pack.headroomTokens).toBeLessThanOrEqual(WINDOW);
      const blocks = Object.fromEntries(pack.blocks.map((b) => [b.kind, b]));
      expect(blocks.task_state!.text).toContain('never restart redis');
      // Nothing dropped silently: every event of the cache made it into the history block.
      expect(blocks.history!.droppedItems).toBe(0);
      expect(blocks.markers!.droppedItems).toBe(0);
      // The window's map of history is complete: each turn is in the tail or inside exactly one marker.
      const { items } = await ctx.mem.context.loadCache('s' as SessionId);
      const covered = new Map<number, number>();
      for (const it of items) {
        const [from, to] = it.type === 'event' ? [it.event.turn, it.event.turn] : [it.marker.fromTurn, it.marker.toTurn];
        for (let t = from; t <= to; t++) covered.set(t, (covered.get(t) ?? 0) + 1);
      }
      const all = await ctx.mem.listEvents({ sessionId: 's' as SessionId });
      for (const e of all) if (e.kind !== 'task_state') expect(covered.get(e.turn), `turn ${e.turn}`).toBe(1);
      // The newest turn is always in the tail.
      expect(blocks.history!.text).toContain(`step ${i}:`);
    }
    expect(compactions).toBeGreaterThanOrEqual(2);
    const { pack } = await ctx.mem.context.pack('s', { windowTokens: WINDOW });
    const markers = pack.blocks.find((b) => b.kind === 'markers')!;
    // Turn 1 is the task card (not part of the window), so history starts at T2.
    expect(markers.text).toMatch(/^\[Events T2-T\d+ evicted\. Key topics: .*Use recall\(query\) to retrieve details\.\]/);
    // Evicted details are out of the window but recall brings them back exactly.
    expect(pack.blocks.find((b) => b.kind === 'history')!.text).not.toContain('secret/staging/db-7f3a');
    expect((await ctx.mem.recall('vault path for the staging DB password')).hits[0]?.excerpt).toContain('secret/staging/db-7f3a');
    expect((await ctx.mem.recall('ETIMEDOUT')).hits[0]?.excerpt).toContain('ETIMEDOUT 10.42.7.19:6379');
    expect((await ctx.mem.recall('why pin the redis client')).hits[0]?.excerpt).toContain('4.6.13');
  });

  it('keeps the prompt prefix byte-identical between compactions', async () => {
    const texts: string[] = [];
    const versions: number[] = [];
    for (let i = 1; i <= 30; i++) {
      await ctx.mem.append('s', turnEvents(i));
      const r = await ctx.mem.context.pack('s', { windowTokens: WINDOW });
      versions.push(r.cacheVersion);
      texts.push(String(ctx.mem.context.format(r.pack, 'text')));
    }
    let stable = 0;
    for (let i = 1; i < texts.length; i++) {
      if (versions[i] !== versions[i - 1]) continue;
      // Same cache version: the previous pack (minus its empty query) is a prefix of this one.
      const prev = texts[i - 1]!;
      const cut = prev.lastIndexOf('</history>') >= 0 ? prev.lastIndexOf('</history>') : prev.length;
      expect(texts[i]!.startsWith(prev.slice(0, Math.max(0, cut - 200)))).toBe(true);
      stable++;
    }
    expect(stable).toBeGreaterThan(10);
  });

  it('persists compaction: a second engine on the same store sees the same window', async () => {
    for (let i = 1; i <= 40; i++) await ctx.mem.append('s', turnEvents(i));
    const first = await ctx.mem.context.pack('s', { windowTokens: WINDOW });
    expect(first.compaction).toBeDefined();
    const other = await openEngram({ backend: ctx.harness.backend });
    const again = await other.context.pack('s', { windowTokens: WINDOW });
    expect(again.compaction).toBeUndefined();
    expect(again.cacheVersion).toBe(first.cacheVersion);
    expect(String(other.context.format(again.pack, 'text'))).toBe(String(ctx.mem.context.format(first.pack, 'text')));
  });

  it('covers every event by the window or a marker even when the last turns alone exceed the history budget', async () => {
    for (let i = 1; i <= 12; i++) await ctx.mem.append('s', turnEvents(i));
    // Big tool calls (a file write of ~1,200 tokens each) among the last 8 events, which compaction protects.
    for (let i = 0; i < 3; i++) {
      await ctx.mem.append('s', [
        { kind: 'tool_call', toolName: 'Write', toolCallId: `w${i}`, content: JSON.stringify({ path: `src/gen${i}.ts`, text: 'export const x = 1;\n'.repeat(400) }) },
        { kind: 'tool_result', toolName: 'Write', toolCallId: `w${i}`, content: 'ok' },
      ]);
    }
    const { pack } = await ctx.mem.context.pack('s', { windowTokens: WINDOW });
    const history = pack.blocks.find((b) => b.kind === 'history')!;
    expect(history.droppedItems).toBe(0);
    const { items } = await ctx.mem.context.loadCache('s' as SessionId);
    const covered = new Set<number>();
    for (const it of items) {
      const [from, to] = it.type === 'event' ? [it.event.turn, it.event.turn] : [it.marker.fromTurn, it.marker.toTurn];
      for (let t = from; t <= to; t++) covered.add(t);
    }
    const all = await ctx.mem.listEvents({ sessionId: 's' as SessionId });
    for (const e of all) expect(covered.has(e.turn), `turn ${e.turn}`).toBe(true);
  });

  it('bounds the first pack of a large never-compacted session, keeping constraints and covering every turn', async () => {
    const events: EventInput[] = [];
    for (let i = 1; i <= 750; i++) events.push(...turnEvents(i));
    events[199] = { kind: 'note', content: 'Constraint: never run migrations on Fridays.', tags: ['constraint'] };
    for (let i = 0; i < events.length; i += 500) await ctx.mem.append('s', events.slice(i, i + 500));
    const { pack, compaction } = await ctx.mem.context.pack('s', { windowTokens: WINDOW });
    expect(compaction).toBeDefined();
    const blocks = Object.fromEntries(pack.blocks.map((b) => [b.kind, b]));
    expect(blocks.history!.droppedItems).toBe(0);
    expect(blocks.markers!.droppedItems).toBe(0);
    expect(blocks.history!.text).toContain('never run migrations on Fridays');
    // The constraint at turn 200 splits the evicted history; tool counts are exact, not the sample's.
    expect(blocks.markers!.text).toContain('[Events T1-T199 evicted. Key topics: ');
    // The marker after the kept constraint stands in its run's place in the history, not in the markers block.
    expect(blocks.history!.text).toMatch(/\[Events T201-T\d+ evicted\. Key topics: [^\]]*Bash x\d{3}/);
    const { items } = await ctx.mem.context.loadCache('s' as SessionId);
    const covered = new Map<number, number>();
    for (const it of items) {
      const [from, to] = it.type === 'event' ? [it.event.turn, it.event.turn] : [it.marker.fromTurn, it.marker.toTurn];
      for (let t = from; t <= to; t++) covered.set(t, (covered.get(t) ?? 0) + 1);
    }
    for (let t = 1; t <= 3000; t++) expect(covered.get(t), `turn ${t}`).toBe(1);
    expect((await ctx.mem.recall('vault path for the staging DB password')).hits[0]?.excerpt).toContain('secret/staging/db-7f3a');
  });

  it('lends the budget identity, codex and karma leave unused to the history, and compacts less often for it', async () => {
    const identity = 'You are a careful engineer. Check the worker logs before you answer.';
    let lent = 0;
    let plain = 0;
    for (let i = 1; i <= 60; i++) {
      await ctx.mem.append('a', turnEvents(i));
      await ctx.mem.append('b', turnEvents(i));
      if ((await ctx.mem.context.pack('a', { windowTokens: WINDOW, identity })).compaction) lent++;
      // The same budgets as given: nothing lent.
      const b = await ctx.mem.context.pack('b', { windowTokens: WINDOW, identity, budgets: defaultBudgets(WINDOW) });
      if (b.compaction) plain++;
      expect(b.pack.blocks.find((x) => x.kind === 'history')!.droppedItems).toBe(0);
    }
    expect(lent).toBeGreaterThanOrEqual(1);
    expect(lent * 4).toBeLessThanOrEqual(plain);
    const d = defaultBudgets(WINDOW);
    const spare = d.identity - ctx.mem.tokenizer.count(identity) + d.codex + d.karma;
    const before = (await ctx.mem.context.pack('a', { windowTokens: WINDOW, identity })).pack;
    expect(cacheBudget(before.decisions.budgets)).toBe(cacheBudget(d) + spare);
    expect(before.totalTokens + before.headroomTokens).toBeLessThanOrEqual(WINDOW);
    // A verified fact takes its tokens back from the history: the high-water mark moves only when such a block changes.
    await ctx.mem.karma.add('Redis runs in cluster mode on port 6380.', { sessionId: 'a' });
    const after = (await ctx.mem.context.pack('a', { windowTokens: WINDOW, identity })).pack;
    const karma = after.blocks.find((x) => x.kind === 'karma')!;
    expect(karma.items).toBe(1);
    expect(cacheBudget(after.decisions.budgets)).toBe(cacheBudget(d) + spare - karma.budget);
    expect(karma.budget).toBeGreaterThanOrEqual(karma.tokens);
  });

  it('refuses a window too small for its own budgets', async () => {
    await expect(ctx.mem.context.pack('s', { windowTokens: 100 })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });
});
