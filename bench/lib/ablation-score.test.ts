import { describe, expect, it } from 'vitest';
import { scoreAblation, type ProbeOutcome } from './ablation-score.js';

const o = (probeId: string, type: string, condition: string, rankedIds: string[], expectedId: string): ProbeOutcome => ({ probeId, type, condition, rankedIds, expectedId });

describe('scoreAblation', () => {
  const outcomes = [
    o('p1', 'superseded', 'all on', ['a', 'b'], 'a'),
    o('p1', 'superseded', '-supersession', ['b', 'a'], 'a'),
    o('p2', 'superseded', 'all on', ['c', 'x', 'y', 'z', 'w', 'd'], 'd'),
    o('p2', 'superseded', '-supersession', ['c', 'x'], 'd'),
    o('p3', 'plain', 'all on', ['e'], 'e'),
    o('p3', 'plain', '-supersession', ['e'], 'e'),
  ];

  it('computes precision@1 and hit@k overall and per probe type', () => {
    const t = scoreAblation(outcomes, { k: 5 });
    expect(t.conditions).toEqual(['all on', '-supersession']);
    expect(t.types).toEqual(['superseded', 'plain']);
    expect(t.overall['all on']).toEqual({ probes: 3, precisionAt1: 2 / 3, hitAtK: 2 / 3 });
    expect(t.overall['-supersession']).toEqual({ probes: 3, precisionAt1: 1 / 3, hitAtK: 2 / 3 });
    expect(t.byType.superseded!['all on']).toEqual({ probes: 2, precisionAt1: 0.5, hitAtK: 0.5 });
    expect(t.byType.plain!['-supersession']).toEqual({ probes: 1, precisionAt1: 1, hitAtK: 1 });
  });

  it('counts the answer at rank k as a hit and at rank k + 1 as a miss', () => {
    expect(scoreAblation(outcomes, { k: 6 }).byType.superseded!['all on']!.hitAtK).toBe(1);
    expect(scoreAblation(outcomes, { k: 5 }).byType.superseded!['all on']!.hitAtK).toBe(0.5);
  });

  it('counts probes whose first hit differs from the baseline condition', () => {
    const t = scoreAblation(outcomes, { baseline: 'all on' });
    expect(t.changedTop1).toEqual({ 'all on': 0, '-supersession': 1 });
  });

  it('refuses outcomes where a probe is missing a condition or ran twice', () => {
    expect(() => scoreAblation(outcomes.slice(1))).toThrow(/p1 did not run under all on/);
    expect(() => scoreAblation([...outcomes, outcomes[0]!])).toThrow(/p1 ran twice under all on/);
  });
});
