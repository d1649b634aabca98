import { expect, it } from 'vitest';
import { agentPrincipal } from '../../src/model/access.js';
import type { EventInput } from '../../src/model/event.js';
import { granularText } from '../../src/view/granular-recall.js';
import { runStorageContract, useEngram } from './harnesses.js';

// Multi-granularity recall (issue #16 item 4) over real summaries and a real knowledge graph: each routing case of
// the specificity rule, the report of the choice (JSON and text), drill-down ids, and trust (an agent never gets
// a summary or entity of a session it may not read).
const T0 = Date.UTC(2026, 2, 3, 9);

function work(topic: string, startMs: number): EventInput[] {
  const out: EventInput[] = [];
  for (let i = 0; i < 6; i++) {
    out.push({ kind: 'user', ts: startMs + i * 60_000, content: `Step ${i}: check why the ${topic} job fails and fix it, please.` });
    out.push({ kind: 'assistant', ts: startMs + i * 60_000 + 30_000, content: `The ${topic} job failed with ERR_${topic.toUpperCase()}_${i}; I fixed src/${topic}/job${i}.ts and the tests pass.` });
  }
  return out;
}

runStorageContract('granular recall', ({ createHarness }) => {
  const ctx = useEngram(createHarness);

  const seed = async () => {
    await ctx.mem.append(
      'pay',
      [
        ...work('storage', T0),
        { kind: 'decision', ts: T0 + 600_000, content: 'Decision: the storage layer stays on SQLite; PostgreSQL only for teams.' },
        { kind: 'assistant', ts: T0 + 700_000, content: 'The checkout service depends on the ledger service. ERR_CARD_DECLINED was fixed in src/pay/charge.ts.' },
      ],
      { project: 'shop' },
    );
    await ctx.mem.append('wh', work('warehouse', T0), { project: 'blue' });
    const c = ctx.mem.consolidator({ llm: null });
    expect((await c.consolidateSession('pay')).status).toBe('summarized');
    expect((await c.consolidateSession('wh')).status).toBe('summarized');
    await ctx.mem.graphBuilder().buildFromSessions();
    const shop = ctx.mem.viewAs(agentPrincipal((await ctx.mem.agents.add('shop-coder', { role: 'programmer', project: 'shop' })).agent));
    const blue = ctx.mem.viewAs(agentPrincipal((await ctx.mem.agents.add('blue-coder', { role: 'programmer', project: 'blue' })).agent));
    return { shop, blue };
  };

  it('routes by specificity: identifiers and quoted phrases to events, broad questions to summaries, entity names to their expansion', async () => {
    const { shop } = await seed();
    const id = await shop.recallGranular('job failed with ERR_STORAGE_2', {});
    expect(id.granular).toMatchObject({ granularity: 'events', requested: 'auto', summaries: [], entities: [], drillDown: [] });
    expect(id.granular.reason).toContain('identifier (ERR_STORAGE_2)');
    expect(id.text).toContain('ERR_STORAGE_2');

    const quoted = await shop.recallGranular('what about "stays on SQLite"', {});
    expect(quoted.granular).toMatchObject({ granularity: 'events', reason: expect.stringContaining('quoted') });
    expect(quoted.text).toContain('stays on SQLite');

    const broad = await shop.recallGranular('what did we decide about storage?', {});
    expect(broad.granular.granularity).toBe('summaries');
    expect(broad.granular.summaries.length).toBeGreaterThan(0);
    const sum = broad.granular.summaries[0]!;
    expect(sum).toMatchObject({ kind: 'summary', depth: 0, sessionIds: ['pay'] });
    expect(sum.id).toMatch(/^sum_/);
    expect(broad.granular.drillDown[0]).toBe(sum.id);
    // Raw evidence still below, and the summary drills down through expand.
    expect(broad.hits.length).toBeGreaterThan(0);
    const expanded = await shop.expand(sum.id);
    expect(expanded.text).toContain(sum.id);
    const text = granularText(broad.granular, broad.text);
    expect(text.split('\n')[0]).toBe('Granularity: summaries (auto: a broad question: summaries and entities first, raw evidence below)');
    expect(text.indexOf(`[summary ${sum.id}`)).toBeLessThan(text.indexOf('Raw evidence:'));

    const learned = await shop.recallGranular('what have we learned about the checkout service', {});
    expect(learned.granular.granularity).toBe('summaries');
    expect(learned.granular.entities.map((e) => `${e.entityKind}:${e.name}`)).toContain('service:checkout');
    // A bare name in a broad question is looked up too.
    const bareName = await shop.recallGranular('why did checkout break?', {});
    expect(bareName.granular).toMatchObject({ granularity: 'summaries', entities: [{ entityKind: 'service', name: 'checkout' }] });
    expect(bareName.granular.expansion).toBeUndefined();
    // A broad question naming an exact identifier the graph knows also gets that entity's expansion (its cited lines).
    const fixedIn = await shop.recallGranular('which file fixed ERR_CARD_DECLINED?', {});
    expect(fixedIn.granular.granularity).toBe('summaries');
    const declined = fixedIn.granular.entities.find((e) => e.name === 'ERR_CARD_DECLINED')!;
    expect(fixedIn.granular.expansion!.entityId).toBe(declined.id);
    expect(fixedIn.granular.expansion!.text).toMatch(/file:src\/pay\/charge\.ts \(0\.80\) \[evt_/);
    expect(granularText(fixedIn.granular, fixedIn.text).indexOf('file:src/pay/charge.ts (0.80)')).toBeLessThan(granularText(fixedIn.granular, fixedIn.text).indexOf('Raw evidence:'));

    const entity = await shop.recallGranular('ERR_CARD_DECLINED', {});
    expect(entity.granular).toMatchObject({ granularity: 'entities', entities: [{ kind: 'entity', entityKind: 'error', name: 'ERR_CARD_DECLINED' }] });
    expect(entity.granular.expansion!.entityId).toBe(entity.granular.entities[0]!.id);
    expect(entity.granular.expansion!.text).toContain('ERR_CARD_DECLINED');
    expect(entity.granular.drillDown).toEqual([entity.granular.entities[0]!.id]);
    expect((await shop.knowledge.expand(entity.granular.drillDown[0]!)).entity.name).toBe('ERR_CARD_DECLINED');
    expect((await shop.recallGranular('service:checkout', {})).granular).toMatchObject({ granularity: 'entities', entities: [{ name: 'checkout' }] });

    // A forced granularity is reported as asked; events keeps recall as it was.
    const forced = await shop.recallGranular('job failed with ERR_STORAGE_2', { granularity: 'summaries' });
    expect(forced.granular).toMatchObject({ granularity: 'summaries', requested: 'summaries', reason: 'asked for summaries' });
    const plain = await shop.recallGranular('what did we decide about storage?', { granularity: 'events' });
    expect(plain.granular).toMatchObject({ granularity: 'events', summaries: [], entities: [] });
    expect(plain.hits.map((h) => h.eventId)).toEqual((await shop.recallOne('what did we decide about storage?', {})).hits.map((h) => h.eventId));
    await expect(shop.recallGranular('storage', { granularity: 'coarse' as never })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'granularity' } });
  });

  it("never gives an agent a summary or entity of a session it may not read", async () => {
    const { shop, blue } = await seed();
    const broad = await blue.recallGranular('what did we decide about storage?', {});
    expect(broad.granular.granularity).toBe('summaries');
    expect(broad.granular.summaries.every((s) => s.sessionIds.every((id) => id === 'wh'))).toBe(true);
    expect(broad.granular.summaries.map((s) => s.text).join(' ')).not.toContain('storage');
    expect((await blue.recallGranular('what did we learn about the warehouse job?', {})).granular.summaries.map((s) => s.sessionIds)).toEqual([['wh']]);
    // ERR_CARD_DECLINED is an entity of shop's session only: for blue it is just keywords (raw events, none readable).
    const entity = await blue.recallGranular('ERR_CARD_DECLINED', { granularity: 'entities' });
    expect(entity.granular.entities).toEqual([]);
    expect(entity.granular.expansion).toBeUndefined();
    expect(entity.hits).toEqual([]);
    expect((await blue.recallGranular('ERR_CARD_DECLINED', {})).granular.granularity).toBe('events');
    expect((await blue.recallGranular('service:checkout', {})).granular.granularity).toBe('events');
    expect((await shop.recallGranular('ERR_CARD_DECLINED', {})).granular.granularity).toBe('entities');
    // Full trust (the local engine) sees both.
    const full = await ctx.mem.recallGranular('what was learned about the warehouse job?');
    expect(full.granular.summaries.map((s) => s.sessionIds[0])).toContain('wh');
  });
});
