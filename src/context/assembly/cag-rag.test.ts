import { describe, expect, it } from 'vitest';
import { EngramError } from '../../errors.js';
import { DEFAULT_CAG_MAX_FRACTION, decideCodexMode } from './cag-rag.js';

describe('decideCodexMode', () => {
  it('inlines a codex one token under 70 % of the window and serves exactly 70 % through recall', () => {
    expect(DEFAULT_CAG_MAX_FRACTION).toBe(0.7);
    for (const window of [1000, 100_000, 128_000, 200_000]) {
      const threshold = (window * 7) / 10;
      const below = decideCodexMode(threshold - 1, window, { codexBudgetTokens: window });
      const at = decideCodexMode(threshold, window, { codexBudgetTokens: window });
      expect(below).toMatchObject({ mode: 'cag', reason: 'fits', thresholdTokens: threshold, codexTokens: threshold - 1 });
      expect(at).toMatchObject({ mode: 'rag', reason: 'over_threshold', thresholdTokens: threshold, codexTokens: threshold });
    }
  });

  it('rounds a fractional threshold up: 0.7 x 8192 = 5734.4, so 5734 tokens are under it and 5735 are not', () => {
    expect(decideCodexMode(5734, 8192, { codexBudgetTokens: 8192 })).toMatchObject({ mode: 'cag', thresholdTokens: 5735 });
    expect(decideCodexMode(5735, 8192, { codexBudgetTokens: 8192 }).mode).toBe('rag');
  });

  it('falls back to RAG when the codex is under the threshold but over its block budget', () => {
    const decision = decideCodexMode(40_000, 128_000, { codexBudgetTokens: 39_999 });
    expect(decision).toMatchObject({ mode: 'rag', reason: 'over_budget', codexBudgetTokens: 39_999 });
    expect(decision.explanation).toContain('39999-token budget');
    expect(decideCodexMode(39_999, 128_000, { codexBudgetTokens: 39_999 }).mode).toBe('cag');
  });

  it('honours a configured fraction and rejects one outside (0, 1]', () => {
    expect(decideCodexMode(50_000, 100_000, { maxFraction: 0.5, codexBudgetTokens: 100_000 }).mode).toBe('rag');
    expect(decideCodexMode(49_999, 100_000, { maxFraction: 0.5, codexBudgetTokens: 100_000 }).mode).toBe('cag');
    expect(() => decideCodexMode(1, 100, { maxFraction: 1.5, codexBudgetTokens: 100 })).toThrow(EngramError);
    expect(() => decideCodexMode(-1, 100, { codexBudgetTokens: 100 })).toThrow(
      expect.objectContaining({ code: 'INVALID_INPUT', data: { field: 'codexTokens' } }),
    );
  });
});
