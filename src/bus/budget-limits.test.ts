import { describe, expect, it } from 'vitest';
import { isEngramError } from '../errors.js';
import {
  BUDGET_LIMIT_SEED_NAMES,
  DEFAULT_BUDGET_LIMITS,
  DEREF_COUNT_LIMIT_BY_POINTER_TYPE,
  narrowBudgetLimits,
  resolveBudgetLimits,
} from './budget-limits.js';
import { POINTER_TYPES } from '../model/pointer.js';

/** The field an INVALID_INPUT error names; fails when `fn` does not throw one. */
function invalidField(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    if (isEngramError(err, 'INVALID_INPUT')) return err.data.field;
    throw err;
  }
  return undefined;
}

describe('budget limits', () => {
  it("defaults to the seed's example values (PAS Bus §3, §10.1)", () => {
    expect(DEFAULT_BUDGET_LIMITS).toEqual({
      maxInlineTokens: 800,
      maxEngramsPerMessage: 12,
      maxEngramChars: 500,
      maxInlineCodeChars: 0,
      maxRepoSpansPerTurn: 3,
      maxArtifactSectionsPerTurn: 2,
      maxSamItemsPerTurn: 2,
      maxDerefTokensPerTurn: 1200,
      maxEngramsPerAgentPerMinute: 30,
      maxSharedBriefLines: 30,
      maxSharedBriefTokens: 400,
    });
    expect(Object.isFrozen(DEFAULT_BUDGET_LIMITS)).toBe(true);
    expect(Object.keys(BUDGET_LIMIT_SEED_NAMES).sort()).toEqual(Object.keys(DEFAULT_BUDGET_LIMITS).sort());
    expect(BUDGET_LIMIT_SEED_NAMES.maxDerefTokensPerTurn).toBe('MAX_TOTAL_DEREF_TOKENS');
  });

  it('resolves no overrides to the defaults, frozen', () => {
    const limits = resolveBudgetLimits();
    expect(limits).toEqual(DEFAULT_BUDGET_LIMITS);
    expect(Object.isFrozen(limits)).toBe(true);
    expect(resolveBudgetLimits(undefined)).toEqual(DEFAULT_BUDGET_LIMITS);
    expect(resolveBudgetLimits(null)).toEqual(DEFAULT_BUDGET_LIMITS);
  });

  it('applies overrides and keeps the other defaults', () => {
    const limits = resolveBudgetLimits({ maxInlineTokens: 1200, maxInlineCodeChars: 300, maxRepoSpansPerTurn: 0 });
    expect(limits.maxInlineTokens).toBe(1200);
    expect(limits.maxInlineCodeChars).toBe(300);
    expect(limits.maxRepoSpansPerTurn).toBe(0);
    expect(limits.maxEngramsPerMessage).toBe(12);
  });

  it('treats an override given as undefined as absent', () => {
    expect(resolveBudgetLimits({ maxInlineTokens: undefined }).maxInlineTokens).toBe(800);
  });

  it('rejects a bad value, naming the field', () => {
    expect(invalidField(() => resolveBudgetLimits({ maxEngramsPerMessage: -1 }))).toBe('maxEngramsPerMessage');
    expect(invalidField(() => resolveBudgetLimits({ maxRepoSpansPerTurn: 2.5 }))).toBe('maxRepoSpansPerTurn');
    expect(invalidField(() => resolveBudgetLimits({ maxDerefTokensPerTurn: '1200' }))).toBe('maxDerefTokensPerTurn');
    expect(invalidField(() => resolveBudgetLimits({ maxInlineTokens: 0 }))).toBe('maxInlineTokens');
    expect(invalidField(() => resolveBudgetLimits('800'))).toBe('(root)');
  });

  it('names a misspelt limit instead of ignoring it', () => {
    expect(invalidField(() => resolveBudgetLimits({ maxInlineToken: 900 }))).toBe('maxInlineToken');
    expect(invalidField(() => resolveBudgetLimits({ maxInlineToken: 900 }, { fieldPrefix: 'bus.budgets' }))).toBe('bus.budgets.maxInlineToken');
  });

  it("caps a claim at the schema's 500 characters and a brief at 30 lines, inclusive", () => {
    expect(resolveBudgetLimits({ maxEngramChars: 500 }).maxEngramChars).toBe(500);
    expect(invalidField(() => resolveBudgetLimits({ maxEngramChars: 501 }))).toBe('maxEngramChars');
    expect(resolveBudgetLimits({ maxSharedBriefLines: 30 }).maxSharedBriefLines).toBe(30);
    expect(invalidField(() => resolveBudgetLimits({ maxSharedBriefLines: 31 }))).toBe('maxSharedBriefLines');
  });

  it('rejects a brief token budget larger than the message it travels in', () => {
    expect(resolveBudgetLimits({ maxInlineTokens: 400 }).maxSharedBriefTokens).toBe(400);
    expect(invalidField(() => resolveBudgetLimits({ maxInlineTokens: 399 }))).toBe('maxSharedBriefTokens');
    expect(invalidField(() => resolveBudgetLimits({ maxSharedBriefTokens: 900 }, { fieldPrefix: 'limits' }))).toBe('limits.maxSharedBriefTokens');
  });

  it("lowers limits to a parent's BUDGETS but never raises them", () => {
    const narrowed = narrowBudgetLimits(DEFAULT_BUDGET_LIMITS, { maxEngramsPerMessage: 10, maxRepoSpansPerTurn: 5, maxInlineTokens: 300 });
    expect(narrowed.maxEngramsPerMessage).toBe(10);
    expect(narrowed.maxRepoSpansPerTurn).toBe(3);
    expect(narrowed.maxInlineTokens).toBe(300);
    // The brief must still fit in the narrowed message budget.
    expect(narrowed.maxSharedBriefTokens).toBe(300);
    expect(narrowed.maxSamItemsPerTurn).toBe(2);
    expect(Object.isFrozen(narrowed)).toBe(true);
    expect(DEFAULT_BUDGET_LIMITS.maxEngramsPerMessage).toBe(12);
  });

  it('maps every pointer type to a per-turn deref count', () => {
    for (const type of POINTER_TYPES) expect(DEFAULT_BUDGET_LIMITS[DEREF_COUNT_LIMIT_BY_POINTER_TYPE[type]]).toBeGreaterThan(0);
    expect(DEREF_COUNT_LIMIT_BY_POINTER_TYPE.repo).toBe('maxRepoSpansPerTurn');
    expect(DEREF_COUNT_LIMIT_BY_POINTER_TYPE.artifact).toBe('maxArtifactSectionsPerTurn');
    expect(DEREF_COUNT_LIMIT_BY_POINTER_TYPE.sam).toBe('maxSamItemsPerTurn');
  });
});
