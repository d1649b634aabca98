import { describe, expect, it } from 'vitest';
import { isEngramError } from '../errors.js';
import type { TypeQuotas } from './type-quotas.js';
import { packUnderBudget, validateTypeQuotas } from './type-quotas.js';

interface Item {
  id: string;
  kind: string;
  tokens: number;
}
const item = (id: string, kind: string, tokens: number): Item => ({ id, kind, tokens });
const pack = (items: Item[], budgetTokens: number, quotas: TypeQuotas, maxItems = 100) =>
  packUnderBudget(items, { budgetTokens, usedTokens: 0, maxItems, quotas, kindOf: (i) => i.kind, measure: (i) => i.tokens }).packed.map(
    (p) => p.item.id,
  );

describe('packUnderBudget', () => {
  it('keeps a kind within its share while other kinds compete', () => {
    const items = [item('t1', 'tool_result', 29), item('t2', 'tool_result', 29), item('t3', 'tool_result', 29), item('d', 'decision', 29)];
    // 100 tokens, tool results at most 50: one fits (30 with its separator), a second would make 60.
    expect(pack(items, 100, { tool_result: 0.5 })).toEqual(['t1', 'd', 't2']);
    expect(pack(items, 100, {})).toEqual(['t1', 't2', 't3']);
  });

  it('gives room left at the end to items held back by their quota', () => {
    const items = [item('t1', 'tool_result', 19), item('t2', 'tool_result', 19), item('t3', 'tool_result', 19)];
    expect(pack(items, 100, { tool_result: 0.2 })).toEqual(['t1', 't2', 't3']);
  });

  it('skips an item that does not fit so that a smaller one still may', () => {
    expect(pack([item('big', 'note', 80), item('mid', 'note', 60), item('small', 'note', 30)], 100, {})).toEqual(['big']);
    expect(pack([item('mid', 'note', 60), item('big', 'note', 80), item('small', 'note', 30)], 100, {})).toEqual(['mid', 'small']);
  });

  it('stops at the most items asked for and counts the tokens it used', () => {
    const items = [item('a', 'note', 9), item('b', 'note', 9), item('c', 'note', 9)];
    const out = packUnderBudget(items, { budgetTokens: 100, usedTokens: 5, maxItems: 2, quotas: {}, kindOf: (i) => i.kind, measure: (i) => i.tokens });
    expect(out.packed.map((p) => p.item.id)).toEqual(['a', 'b']);
    expect(out.usedTokens).toBe(25);
  });
});

describe('validateTypeQuotas', () => {
  it('rejects unknown kinds and shares outside 0..1 naming the field', () => {
    for (const [bad, field] of [
      [{ shout: 0.5 }, 'typeQuotas.shout'],
      [{ tool_result: 1.5 }, 'typeQuotas.tool_result'],
      [[], 'typeQuotas'],
    ] as const) {
      const err = (() => {
        try {
          validateTypeQuotas(bad);
        } catch (e) {
          return e;
        }
      })();
      expect(isEngramError(err, 'INVALID_INPUT')).toBe(true);
      expect((err as { data: { field: string } }).data.field).toBe(field);
    }
    expect(() => validateTypeQuotas({ tool_result: 0.5, note: 0 })).not.toThrow();
  });
});
