import { describe, expect, it } from 'vitest';
import { checkGranularity, chooseGranularity, granularHeader, granularText, questionTopic, type GranularAnswer } from './granular-recall.js';

describe('chooseGranularity (the specificity rule, in order)', () => {
  it.each([
    ['"connection reset by peer"', false, 'events', 'quoted'],
    ['`npm run build` output', false, 'events', 'quoted'],
    ['what did we say about "pool size"?', false, 'events', 'quoted'],
    ['ECONNREFUSED', true, 'entities', 'entity'],
    ['what have we learned about the ledger service?', false, 'summaries', 'broad'],
    ['why did the deploy fail', false, 'summaries', 'broad'],
    ['decisions on storage', false, 'summaries', 'broad'],
    ['src/db/pool.ts timeout', false, 'events', 'identifier (src/db/pool.ts)'],
    ['retry --max-retries=7', false, 'events', 'identifier (--max-retries=7)'],
    ['processPayment throws', false, 'events', 'identifier (processPayment)'],
    ['3f9a2c1 regression', false, 'events', 'identifier (3f9a2c1)'],
    ['deploy timeout', false, 'events', 'keywords'],
  ])('%s -> %s', (query, isEntity, granularity, reason) => {
    const choice = chooseGranularity(query, isEntity);
    expect(choice.granularity).toBe(granularity);
    expect(choice.reason).toContain(reason);
  });

  it('an entity that is also an identifier goes to the entity (its expansion cites the events)', () => {
    expect(chooseGranularity('src/db/pool.ts', true).granularity).toBe('entities');
    expect(chooseGranularity('src/db/pool.ts', false).granularity).toBe('events');
  });
});

it('questionTopic leaves out the cue words of a broad question', () => {
  expect(questionTopic('What did we decide about storage?')).toBe('storage');
  expect(questionTopic('what have we learned about the checkout service')).toBe('checkout service');
  expect(questionTopic('what?')).toBe('what?');
});

it('checkGranularity names the field', () => {
  expect(checkGranularity('auto')).toBe('auto');
  expect(() => checkGranularity('fine')).toThrow(/granularity: must be one of auto, events, summaries, entities/);
});

it('the text reports the choice first and puts the derived layers above the raw evidence', () => {
  const a: GranularAnswer = {
    query: 'what about ledger',
    granularity: 'summaries',
    requested: 'auto',
    reason: 'a broad question: summaries and entities first, raw evidence below',
    summaries: [{ kind: 'summary', id: 'sum_A', depth: 1, depthName: 'arc', sessionIds: ['s1', 's2'], childIds: ['sum_B', 'sum_C'], sourceEventIds: [], text: 'Ledger work.', score: 1 }],
    entities: [{ kind: 'entity', id: 'ent_1', entityKind: 'service', name: 'ledger', citations: 3 }],
    drillDown: ['sum_A', 'ent_1'],
  };
  const text = granularText(a, 'EVENTS');
  expect(text.split('\n')[0]).toBe(granularHeader(a));
  expect(text).toContain('[summary sum_A, arc; expand sum_A or its children sum_B, sum_C]\nLedger work.');
  expect(text).toContain('- service:ledger ent_1 (3 citations)');
  expect(text.indexOf('Raw evidence:')).toBeLessThan(text.indexOf('EVENTS'));
  expect(text.indexOf('ent_1')).toBeLessThan(text.indexOf('Raw evidence:'));
  const events: GranularAnswer = { ...a, granularity: 'events', requested: 'events', reason: 'asked for events', summaries: [], entities: [], drillDown: [] };
  expect(granularText(events, 'EVENTS')).toBe('Granularity: events (asked for events)\n\nEVENTS');
});
