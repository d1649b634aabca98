import { describe, expect, it } from 'vitest';
import type { Tokenizer } from '../../providers/tokenizer.js';
import type { TraceEvent } from './needle-types.js';
import type { Summarizer } from './summarizer.js';
import { SimulatedWindow } from './window-sim.js';

/** One token per word: easy to count by hand. */
const words: Tokenizer = {
  name: 'words',
  count: (t) => t.split(/\s+/).filter(Boolean).length,
  truncate: (t, n) => t.split(/\s+/).slice(0, n).join(' '),
};

/** Keeps the first two words of every item, cut to the budget, so what survived a summary is visible. */
const firstWords: Summarizer = {
  name: 'first-words',
  isSimulation: true,
  summarize: async ({ items, depth, budgetTokens }) =>
    words.truncate(`d${depth}: ${items.map((i) => i.replace(/^\[\w+\]\s*/, '').split(/\s+/).slice(0, 2).join(' ')).join(' / ')}`, budgetTokens),
};

/** An event of `n` words, the first being its label. */
function event(label: string, n: number): TraceEvent {
  return { label, event: { kind: 'tool_result', content: [label, ...Array.from({ length: n - 2 }, () => 'x')].join(' ') } };
}

describe('SimulatedWindow', () => {
  it('truncation drops the oldest 60 % of the tokens at a trigger and keeps the newest event', async () => {
    const w = new SimulatedWindow('truncation', { budgetTokens: 100, tokenizer: words });
    for (let i = 1; i <= 5; i++) expect(await w.append([event(`e${i}`, 20)])).toBe(0);
    expect(w.tokens).toBe(100);
    // 120 tokens > 100: the oldest events until 60 % of 120 (72 tokens) are gone: e1..e4 (80 tokens).
    expect(await w.append([event('e6', 20)])).toBe(1);
    expect(w.compactions).toBe(1);
    expect(w.text()).not.toContain('e4');
    expect(w.text()).toContain('e5');
    expect(w.text()).toContain('e6');
    expect(w.tokens).toBe(40);
  });

  it('truncation keeps the newest event even when it alone is most of the window', async () => {
    const w = new SimulatedWindow('truncation', { budgetTokens: 100, tokenizer: words });
    await w.append([event('e1', 30)]);
    await w.append([event('big', 90)]);
    expect(w.text()).toContain('big');
    expect(w.text()).not.toContain('e1');
  });

  it('narrative replaces the oldest 60 % with one summary, and summarizes that summary at the next trigger', async () => {
    const w = new SimulatedWindow('narrative', { budgetTokens: 2000, tokenizer: words, summarizer: firstWords });
    for (let i = 1; i <= 21; i++) await w.append([event(`e${i}`, 100)]);
    // 2,100 tokens: e1..e13 (1,300 >= 60 % of 2,100) become one summary.
    expect(w.compactions).toBe(1);
    expect(w.text()).toMatch(/^\[summary\] d0: e1 x \/ e2 x \/ .* \/ e13 x\n\[tool_result\] e14 /);
    for (let i = 22; i <= 40; i++) await w.append([event(`e${i}`, 100)]);
    expect(w.compactions).toBeGreaterThanOrEqual(2);
    // The first summary was itself among the oldest 60 %: the new summary summarizes it.
    expect(w.text()).toMatch(/^\[summary\] d0: d0: e1 \/ e14 x/);
    expect(w.tokens).toBeLessThanOrEqual(2000);
  });

  it('the DAG keeps summaries in the window and every raw message for grep, and condenses four leaves into one', async () => {
    const w = new SimulatedWindow('dag', { budgetTokens: 2000, tokenizer: words, summarizer: firstWords });
    for (let i = 1; i <= 60; i++) await w.append([event(`e${i}`, 100)]);
    expect(w.compactions).toBeGreaterThanOrEqual(4);
    expect(w.text()).toMatch(/^\[summary\] d1: /);
    expect(w.text()).not.toMatch(/\[tool_result\] e1 /);
    expect(w.tokens).toBeLessThanOrEqual(2000);
    // Raw messages stay reachable by keyword, newest first.
    const grep = w.grep('e1', 10_000);
    expect(grep).toContain('[e1]');
    expect(grep.indexOf('[e19]')).toBeLessThan(grep.indexOf('[e1]'));
    expect(w.grep('nowhere', 1000)).toContain('No matches found.');
  });

  it('grep stays within its token budget', async () => {
    const w = new SimulatedWindow('dag', { budgetTokens: 10_000, tokenizer: words, summarizer: firstWords });
    for (let i = 1; i <= 50; i++) await w.append([event(`e${i}`, 30)]);
    const grep = w.grep('x', 100);
    expect(words.count(grep)).toBeLessThanOrEqual(100);
    expect(grep.split('\n').length).toBeGreaterThan(1);
  });

  it('refuses a summarizing policy without a summarizer', () => {
    expect(() => new SimulatedWindow('narrative', { budgetTokens: 100, tokenizer: words })).toThrow(/summarizer/);
  });
});
