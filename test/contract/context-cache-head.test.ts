import { expect, it } from 'vitest';
import type { AnthropicMessagesPayload } from '../../src/context/assembly/formatters.js';
import type { SessionId } from '../../src/model/ids.js';
import { turnEvents } from '../fixtures/coding-session.js';
import { runStorageContract, useEngram } from './harnesses.js';

const WINDOW = 8192;
/** A short system prompt (~120 tokens): alone it is below the 1,024-token minimum a prompt cache stores. */
const IDENTITY = Array.from({ length: 6 }, (_, i) => `Rule ${i + 1}: read the worker logs before answering, quote the lines you rely on, and say when unsure.`).join('\n');

/** The request's content blocks in order, without `cache_control` (not part of the cached bytes), and where the breakpoints are. */
function blocksOf(payload: AnthropicMessagesPayload): { keys: string[]; breakpoints: number[] } {
  const all = [...payload.system.map((b) => ['system', b] as const), ...payload.messages.flatMap((m) => m.content.map((b) => [m.role, b] as const))];
  return {
    keys: all.map(([role, b]) => {
      const { cache_control: _ignored, ...bare } = b;
      return JSON.stringify([role, bare]);
    }),
    breakpoints: all.flatMap(([, b], i) => (b.cache_control ? [i] : [])),
  };
}

runStorageContract('context engine, stable head', ({ createHarness }) => {
  const ctx = useEngram(createHarness);

  it('keeps the prompt up to the head byte-identical across compactions, with a breakpoint at its end, and loses nothing', async () => {
    let previous: { text: string; blocks: ReturnType<typeof blocksOf> } | undefined;
    let compactionsKeepingHead = 0;
    for (let i = 1; i <= 70; i++) {
      await ctx.mem.append('s', turnEvents(i));
      const r = await ctx.mem.context.pack('s', { windowTokens: WINDOW, identity: IDENTITY, query: `what happened in batch ${i}?` });
      const text = String(ctx.mem.context.format(r.pack, 'text'));
      const blocks = blocksOf(ctx.mem.context.format(r.pack, 'anthropic') as AnthropicMessagesPayload);
      expect(r.pack.totalTokens + r.pack.headroomTokens).toBeLessThanOrEqual(WINDOW);
      expect(r.pack.blocks.find((b) => b.kind === 'history')!.droppedItems).toBe(0);
      const headEnd = r.pack.history.findIndex((h) => h.isCacheHeadEnd === true);
      if (r.compaction && previous) {
        expect(r.compaction.keptHeadItems).toBeGreaterThan(0);
        expect(headEnd).toBeGreaterThanOrEqual(0);
        compactionsKeepingHead++;
        // Text: everything up to the head's last line is what the previous pack had.
        const headLine = r.pack.history[headEnd]!.text;
        const through = text.indexOf(headLine) + headLine.length;
        expect(through).toBeGreaterThan(headLine.length);
        expect(previous.text.slice(0, through)).toBe(text.slice(0, through));
        // Anthropic: both requests carry a breakpoint on the same block, and every block up to it is unchanged,
        // so the entry the previous request wrote there is read; it holds more than the 1,024-token minimum.
        const shared = blocks.breakpoints.filter((b) => previous!.blocks.breakpoints.includes(b) && blocks.keys.slice(0, b + 1).every((k, j) => k === previous!.blocks.keys[j]));
        expect(shared.length).toBeGreaterThan(0);
        const payload = ctx.mem.context.format(r.pack, 'anthropic') as AnthropicMessagesPayload;
        const head = [...payload.system.map((b) => b.text), ...payload.messages.flatMap((m) => m.content.map((b) => JSON.stringify(b)))].slice(0, Math.max(...shared) + 1);
        expect(ctx.mem.tokenizer.count(head.join('\n'))).toBeGreaterThanOrEqual(1024);
      }
      previous = { text, blocks };
    }
    expect(compactionsKeepingHead).toBeGreaterThanOrEqual(2);
    // Lossless: every turn is in the window or inside exactly one marker, and recall still finds what left.
    const { items } = await ctx.mem.context.loadCache('s' as SessionId);
    const covered = new Map<number, number>();
    for (const it of items) {
      const [from, to] = it.type === 'event' ? [it.event.turn, it.event.turn] : [it.marker.fromTurn, it.marker.toTurn];
      for (let t = from; t <= to; t++) covered.set(t, (covered.get(t) ?? 0) + 1);
    }
    const all = await ctx.mem.listEvents({ sessionId: 's' as SessionId });
    for (const e of all) expect(covered.get(e.turn), `turn ${e.turn}`).toBe(1);
    const { pack } = await ctx.mem.context.pack('s', { windowTokens: WINDOW, identity: IDENTITY });
    const history = pack.blocks.find((b) => b.kind === 'history')!.text;
    expect(history).toMatch(/\[T\d+ system\] \[Events T\d+-T\d+ evicted\./);
    expect(history).not.toContain('job 1005 processed');
    expect((await ctx.mem.recall('job 1005 processed')).hits[0]?.excerpt).toContain('job 1005');
  });

  it('compacts from the start of the history when the head is turned off', async () => {
    for (let i = 1; i <= 40; i++) await ctx.mem.append('s', turnEvents(i));
    const r = await ctx.mem.context.pack('s', { windowTokens: WINDOW, identity: IDENTITY, minCacheableTokens: 0 });
    expect(r.compaction?.keptHeadItems).toBe(0);
    expect(r.pack.history.some((h) => h.isCacheHeadEnd === true)).toBe(false);
    await expect(ctx.mem.context.pack('s', { windowTokens: WINDOW, minCacheableTokens: -1 })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'minCacheableTokens' } });
  });
});
