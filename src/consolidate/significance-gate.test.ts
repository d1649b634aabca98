import { describe, expect, it } from 'vitest';
import { identifiersIn } from './identifiers.js';
import { meanVector, significanceGate, substantiveTurns, toSessionSkippedRecord, type GateEvent } from './significance-gate.js';

const trivial: GateEvent[] = [
  { kind: 'user', content: 'hi' },
  { kind: 'assistant', content: 'Hello! How can I help?' },
  { kind: 'user', content: 'what time zone is UTC+2 in summer?' },
  { kind: 'assistant', content: 'Central European Summer Time (CEST) is UTC+2.' },
  { kind: 'user', content: 'thanks!' },
  { kind: 'assistant', content: 'ok' },
];

/** Six real exchanges about the billing service. */
const work: GateEvent[] = Array.from({ length: 6 }, (_, i) => [
  { kind: 'user', content: `Step ${i}: the invoice job in services/billing/run.ts fails with ERR_BILLING_${i}, please check.` },
  { kind: 'tool_call', content: `Bash: npm test -- services/billing --grep case${i}` },
  { kind: 'tool_result', content: 'FAIL services/billing/run.test.ts' },
  { kind: 'assistant', content: `Fixed the rounding in computeTotal for case ${i}; the test passes now.` },
]).flat();

const v = (...xs: number[]): Float32Array => Float32Array.from(xs);

describe('substantiveTurns', () => {
  it('counts user messages beyond small talk that the agent answered with substance or a tool call', () => {
    const t = { minUserChars: 20, minAssistantChars: 40 };
    expect(substantiveTurns(trivial, t)).toBe(1);
    expect(substantiveTurns(work, t)).toBe(6);
    expect(substantiveTurns([{ kind: 'user', content: 'please rename the config loader module' }, { kind: 'assistant', content: 'Sure!' }], t)).toBe(0);
    expect(substantiveTurns([{ kind: 'user', content: 'please rename the config loader module' }, { kind: 'tool_call', content: 'Edit src/config.ts' }], t)).toBe(1);
  });
});

describe('significanceGate', () => {
  it('skips a short chat that mentions nothing known and repeats a recent session', () => {
    const out = significanceGate({ events: trivial, knownTerms: ['services/billing', 'computeTotal'], sessionVector: v(1, 0.1, 0), recentVectors: [v(0, 1, 0), v(1, 0.12, 0)] });
    expect(out.decision).toBe('skip');
    expect(out.checks.map((c) => [c.name, c.isJudged, c.isLow])).toEqual([
      ['substantive_turns', true, true],
      ['known_overlap', true, true],
      ['novelty', true, true],
    ]);
    expect(out.reasons[0]).toBe('1 substantive turn (fewer than 5)');
    expect(out.checks[2]!.value).toBeGreaterThan(0.99);
  });

  it('keeps a short session that is novel, under the default all-checks-low rule', () => {
    const out = significanceGate({ events: trivial, knownTerms: [], sessionVector: v(0, 0, 1), recentVectors: [v(1, 0, 0)] });
    expect(out.decision).toBe('keep');
    expect(out.checks[2]).toMatchObject({ isLow: false, value: 0 });
    expect(significanceGate({ events: trivial, knownTerms: [], sessionVector: v(0, 0, 1), recentVectors: [v(1, 0, 0)] }, { skipWhen: 'any' }).decision).toBe('skip');
  });

  it('keeps a working session that mentions known identifiers, and lists them', () => {
    const out = significanceGate({ events: work, knownTerms: ['services/billing/run.ts', 'computeTotal', 'kafka', 'invoice job'] });
    expect(out.decision).toBe('keep');
    expect(out.matchedTerms).toEqual(['services/billing/run.ts', 'computeTotal', 'invoice job']);
    expect(out.checks[1]).toMatchObject({ value: 3, isLow: false });
  });

  it('leaves novelty out of the decision without vectors, and skips on the other two', () => {
    const out = significanceGate({ events: trivial });
    expect(out.checks[2]).toMatchObject({ name: 'novelty', isJudged: false, reason: 'novelty not judged (no session or recent vectors)' });
    expect(out.decision).toBe('skip');
  });

  it('always keeps a session with a decision event', () => {
    const out = significanceGate({ events: [...trivial, { kind: 'decision', content: 'Use UTC everywhere.' }] });
    expect(out.decision).toBe('keep');
    expect(out.reasons[0]).toBe('has a decision event');
  });

  it('passes a working session on a fresh store: tool calls are turns of work, and nothing known yet is not low overlap', () => {
    const coding: GateEvent[] = [
      { kind: 'user', content: 'build a countdown timer page with pause' },
      ...Array.from({ length: 12 }, (_, i): GateEvent[] => [
        { kind: 'tool_call', content: `{"file_path":"/app/file${i}.js"}` },
        { kind: 'tool_result', content: 'ok' },
      ]).flat(),
      { kind: 'assistant', content: 'Done.' },
    ];
    const out = significanceGate({ events: coding, knownTerms: [] });
    expect(out.decision).toBe('keep');
    expect(out.checks[0]).toMatchObject({ name: 'substantive_turns', value: 13, isLow: false });
    expect(out.reasons[0]).toBe('13 substantive turns (1 exchange, 12 tool calls) (at least 5)');
    expect(out.checks[1]).toMatchObject({ name: 'known_overlap', isJudged: false, reason: 'known overlap not judged (nothing is known yet)' });
  });

  it('counts dictated facts answered "Noted." as substantive, and still skips small talk on a fresh store', () => {
    const dictated: GateEvent[] = Array.from({ length: 8 }, (_, i): GateEvent[] => [
      { kind: 'user', content: `Fact ${i}: the staging database for team ${i} lives on host db-${i}.internal, port 54${i}2.` },
      { kind: 'assistant', content: 'Noted.' },
    ]).flat();
    expect(significanceGate({ events: dictated }).decision).toBe('keep');
    expect(significanceGate({ events: trivial, knownTerms: [] }).decision).toBe('skip');
  });

  it('takes configured thresholds', () => {
    expect(significanceGate({ events: trivial }, { minSubstantiveTurns: 1, minKnownOverlap: 0 }).decision).toBe('keep');
  });

  it('builds the session_skipped record with the thresholds in force', () => {
    const decision = significanceGate({ events: trivial });
    const record = toSessionSkippedRecord('ses_1', 6, decision, { minSubstantiveTurns: 3 }, new Date('2026-03-01T10:00:00Z'));
    expect(record).toMatchObject({ type: 'session_skipped', sessionId: 'ses_1', throughTurn: 6, decidedAt: '2026-03-01T10:00:00.000Z', reasons: decision.reasons });
    expect(record.thresholds).toMatchObject({ minSubstantiveTurns: 3, minKnownOverlap: 1, maxSimilarity: 0.92 });
  });
});

describe('helpers', () => {
  it('meanVector averages and normalises', () => {
    expect(Array.from(meanVector([v(1, 0), v(0, 1)])!).map((x) => x.toFixed(4))).toEqual(['0.7071', '0.7071']);
    expect(meanVector([])).toBeUndefined();
  });

  it('identifiersIn finds paths, codes and flags once, without sentence punctuation', () => {
    expect(identifiersIn('See src/app.ts:42, then ECONNREFUSED (again) and --max-retries=7. Also src/app.ts:42.')).toEqual(['src/app.ts:42', 'ECONNREFUSED', '--max-retries=7']);
    expect(identifiersIn('Take 3-5 retries, e.g. <b>bold</b> or v2 of 100-200 ms')).toEqual(['v2']);
  });
});
