import { thrown } from '../test-support.js';
import { describe, expect, it } from 'vitest';
import { createGptTokenizer } from '../../providers/gpt-tokenizer.js';
import {
  BLOCK_KINDS,
  BUDGET_FIELDS,
  DEFAULT_BLOCK_ORDER,
  DEFAULT_BUDGET_FRACTIONS,
  defaultBudgets,
  lendUnusedBudget,
  prefixReuse,
  prefixReuseTokens,
  validateBlockOrder,
  validateBudgets,
} from './blocks.js';
import type { PackBudgets } from './blocks.js';


describe('validateBudgets', () => {
  const budgets: PackBudgets = {
    identity: 1000,
    codex: 4000,
    karma: 500,
    markers: 300,
    history: 3000,
    task_state: 500,
    query: 500,
    headroomTokens: 1000,
  };

  it('accepts budgets whose sum plus headroom equals the window', () => {
    expect(() => validateBudgets(budgets, 10_800)).not.toThrow();
  });

  it('rejects budgets over the window with BUDGET_EXCEEDED naming every budget and the window', () => {
    const err = thrown(() => validateBudgets(budgets, 10_799));
    expect(err.code).toBe('BUDGET_EXCEEDED');
    expect(err.data).toMatchObject({
      field: 'budgets',
      windowTokens: 10_799,
      totalTokens: 10_800,
      overByTokens: 1,
      budgets: { ...budgets },
    });
    for (const field of BUDGET_FIELDS) expect(err.message).toContain(`${field} ${budgets[field]}`);
    expect(err.message).toContain('windowTokens 10799');
  });

  it('names a malformed budget field', () => {
    const err = thrown(() => validateBudgets({ ...budgets, karma: -1 }, 100_000));
    expect(err.code).toBe('INVALID_INPUT');
    expect(err.data.field).toBe('budgets.karma');
    expect(thrown(() => validateBudgets(budgets, 0)).data.field).toBe('windowTokens');
  });
});

describe('defaultBudgets', () => {
  it('fills the window exactly and gives every block its documented share', () => {
    for (const window of [4096, 8192, 32_000, 128_000, 200_000, 1_000_003]) {
      const b = defaultBudgets(window);
      const sum = BUDGET_FIELDS.reduce((s, f) => s + b[f], 0);
      expect(sum).toBe(window);
      for (const kind of BLOCK_KINDS) expect(b[kind]).toBe(Math.floor(DEFAULT_BUDGET_FRACTIONS[kind] * window));
      expect(b.headroomTokens).toBeGreaterThanOrEqual(Math.floor(0.15 * window));
    }
    expect(defaultBudgets(128_000)).toMatchObject({ codex: 44_800, history: 38_400, task_state: 2560, headroomTokens: 19_200 });
  });

  it('gives the unassigned share to headroom and refuses fractions over the window', () => {
    expect(defaultBudgets(10_000, { codex: 0 }).headroomTokens).toBe(1500 + 3500);
    expect(thrown(() => defaultBudgets(10_000, { codex: 0.9 })).code).toBe('BUDGET_EXCEEDED');
    expect(thrown(() => defaultBudgets(10_000, { history: 1.5 })).data.field).toBe('fractions.history');
  });
});

describe('lendUnusedBudget', () => {
  it('gives what identity, codex and karma leave unused to the history and keeps the sum of the budgets', () => {
    const b = defaultBudgets(8192);
    const lent = lendUnusedBudget(b, { identity: 223, codex: 0, karma: 0 });
    expect(lent).toMatchObject({ identity: 223, codex: 0, karma: 0, markers: b.markers, task_state: b.task_state, query: b.query, headroomTokens: b.headroomTokens });
    expect(lent.history).toBe(b.history + (b.identity - 223) + b.codex + b.karma);
    expect(BUDGET_FIELDS.reduce((s, f) => s + lent[f], 0)).toBe(8192);
    expect(() => validateBudgets(lent, 8192)).not.toThrow();
  });

  it('lends nothing from a block that uses its whole budget or more', () => {
    const b = defaultBudgets(8192);
    expect(lendUnusedBudget(b, { identity: b.identity + 50, codex: b.codex, karma: b.karma })).toEqual(b);
  });

  it('names the field of a count that is not a token count', () => {
    const b = defaultBudgets(8192);
    expect(thrown(() => lendUnusedBudget(b, { identity: 0, codex: -1, karma: 0 })).data.field).toBe('used.codex');
    expect(thrown(() => lendUnusedBudget(b, { identity: 0.5, codex: 0, karma: 0 })).data.field).toBe('used.identity');
  });
});

describe('validateBlockOrder', () => {
  it('accepts the default order, which runs from least to most volatile', () => {
    expect(validateBlockOrder(DEFAULT_BLOCK_ORDER)).toEqual(['identity', 'codex', 'karma', 'markers', 'history', 'task_state', 'query']);
  });

  it('rejects a missing kind, a duplicate and a query that is not last', () => {
    expect(thrown(() => validateBlockOrder(['identity', 'codex', 'karma', 'markers', 'history', 'query'])).data).toMatchObject({
      field: 'order',
      missing: ['task_state'],
    });
    expect(thrown(() => validateBlockOrder(['identity', 'identity', 'karma', 'markers', 'history', 'task_state', 'query'])).data.field).toBe(
      'order[1]',
    );
    expect(thrown(() => validateBlockOrder(['identity', 'codex', 'karma', 'markers', 'history', 'query', 'task_state'])).message).toContain(
      'query must be the last',
    );
  });
});

describe('prefixReuse', () => {
  it('measures the common prefix in characters and as a share of the current rendering', () => {
    expect(prefixReuse('abcdef', 'abcxyz12')).toEqual({ sharedPrefixChars: 3, ratio: 3 / 8 });
    expect(prefixReuse('same', 'same')).toEqual({ sharedPrefixChars: 4, ratio: 1 });
    expect(prefixReuse('abc', '')).toEqual({ sharedPrefixChars: 0, ratio: 0 });
  });

  it('does not split a surrogate pair', () => {
    // U+1F600 and U+1F601 share their high surrogate.
    expect(prefixReuse('a\u{1F600}', 'a\u{1F601}').sharedPrefixChars).toBe(1);
  });
});

describe('prefixReuseTokens', () => {
  const tokenizer = createGptTokenizer();

  it('counts every token of an appended-to rendering except the new tail', () => {
    const previous = 'The quick brown fox jumps over the lazy dog.\n';
    const current = `${previous}A second sentence follows here.`;
    const reuse = prefixReuseTokens(previous, current, tokenizer);
    expect(reuse.currentTokens).toBe(tokenizer.count(current));
    expect(reuse.sharedPrefixTokens).toBe(tokenizer.count(previous));
    expect(reuse.ratio).toBeCloseTo(tokenizer.count(previous) / tokenizer.count(current), 10);
  });

  it('stops before a token that straddles the point where the texts diverge', () => {
    // "unbelievable" and "unbelief" share 'unbelie' but not their tokens from that word on.
    const reuse = prefixReuseTokens('words before unbelievable', 'words before unbelief', tokenizer);
    expect(reuse.sharedPrefixTokens).toBeLessThanOrEqual(tokenizer.count('words before'));
    expect(reuse.sharedPrefixTokens).toBeGreaterThanOrEqual(2);
    expect(prefixReuseTokens('identical', 'identical', tokenizer).ratio).toBe(1);
  });
});
