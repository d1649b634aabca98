import { describe, expect, it } from 'vitest';
import { isEngramError } from '../errors.js';
import { createEscalationCounter, escalate, type BoundCheck } from './escalation.js';

/** Values are lengths; the bound is 10 at the normal level, 5 at the aggressive one, as half the budget. */
const check = (value: number, level: string): BoundCheck =>
  value <= (level === 'aggressive' ? 5 : 10) ? { ok: true } : { ok: false, outcome: 'over_budget', reason: `${value} > bound` };

describe('escalate', () => {
  it('returns the normal answer with confidence 0.7 when it is within bounds', async () => {
    const counter = createEscalationCounter();
    const asked: string[] = [];
    const out = await escalate({ llm: async (level) => (asked.push(level), 8), check, deterministic: () => 1 }, counter);
    expect(out).toEqual({ value: 8, level: 'normal', confidence: 0.7, attempts: [{ level: 'normal', outcome: 'ok' }] });
    expect(asked).toEqual(['normal']);
    expect(counter.stats().results).toEqual({ normal: 1, aggressive: 0, deterministic: 0 });
  });

  it('escalates an overrun to the aggressive level (confidence 0.5)', async () => {
    const out = await escalate({ llm: async (level) => (level === 'normal' ? 30 : 4), check, deterministic: () => 1 });
    expect(out.level).toBe('aggressive');
    expect(out.confidence).toBe(0.5);
    expect(out.attempts).toEqual([
      { level: 'normal', outcome: 'over_budget', reason: '30 > bound' },
      { level: 'aggressive', outcome: 'ok' },
    ]);
  });

  it('ends at the deterministic level (confidence 0.3) when the model fails or overruns at both levels', async () => {
    const counter = createEscalationCounter();
    await escalate({ llm: async () => 99, check, deterministic: () => 2 }, counter);
    const failed = await escalate(
      {
        llm: async () => {
          throw new Error('circuit open');
        },
        check,
        deterministic: () => 3,
      },
      counter,
    );
    expect(failed).toMatchObject({ value: 3, level: 'deterministic', confidence: 0.3 });
    expect(failed.attempts.map((a) => a.outcome)).toEqual(['failed', 'failed', 'ok']);
    expect(failed.attempts[0]!.reason).toBe('circuit open');
    expect(counter.stats()).toEqual({
      results: { normal: 0, aggressive: 0, deterministic: 2 },
      escalations: { over_budget: 2, invalid: 0, failed: 2, no_model: 0 },
    });
  });

  it('goes straight to the deterministic level without a model, counted once as no_model', async () => {
    const counter = createEscalationCounter();
    const out = await escalate({ check, deterministic: () => 4 }, counter);
    expect(out.attempts).toEqual([
      { level: 'normal', outcome: 'no_model' },
      { level: 'deterministic', outcome: 'ok' },
    ]);
    expect(counter.stats().escalations.no_model).toBe(1);
  });

  it('treats a deterministic value out of bounds as a bug', async () => {
    const err = await escalate({ check, deterministic: () => 11 }).catch((e: unknown) => e);
    expect(isEngramError(err, 'INTERNAL')).toBe(true);
  });
});
