import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createGptTokenizer } from '../providers/gpt-tokenizer.js';
import { extractiveSummary, splitSentences, type SourceItem } from './extractive-summary.js';

const tokenizer = createGptTokenizer();

const session: SourceItem[] = [
  { id: 'e1', kind: 'user', text: 'The deploy to staging fails with ECONNREFUSED on port 5432. Can you look at it?' },
  { id: 'e2', kind: 'tool_call', text: 'Bash: kubectl logs deploy/api --tail=50' },
  {
    id: 'e3',
    kind: 'tool_result',
    text: Array.from({ length: 30 }, (_, i) => `2026-03-0${(i % 9) + 1} INFO request ${i} served in ${i * 3} ms`).join('\n'),
  },
  { id: 'e4', kind: 'assistant', text: 'The api pod reads DATABASE_URL from config/staging.env, which still points at the old host db-old.internal.' },
  { id: 'e5', kind: 'decision', text: 'We decided to move staging to the managed Postgres cluster pg-prod-2 and retire db-old.internal.' },
  { id: 'e6', kind: 'user', text: 'Thanks, that works.' },
];

describe('splitSentences', () => {
  it('splits at line breaks and sentence ends, not inside identifiers', () => {
    expect(splitSentences('Fixed src/app.ts:42. Next step: run v1.2.3 tests!\nDone')).toEqual(['Fixed src/app.ts:42.', 'Next step: run v1.2.3 tests!', 'Done']);
  });
});

describe('extractiveSummary', () => {
  it('keeps the decision and the diagnosis first and prints them in source order', () => {
    const text = extractiveSummary(session, tokenizer, { budgetTokens: 60 });
    expect(tokenizer.count(text)).toBeLessThanOrEqual(60);
    const lines = text.split('\n');
    expect(lines).toContain('We decided to move staging to the managed Postgres cluster pg-prod-2 and retire db-old.internal.');
    expect(text).not.toContain('request 17 served');
    const decision = lines.findIndex((l) => l.startsWith('We decided'));
    const diagnosis = lines.findIndex((l) => l.startsWith('The api pod'));
    if (diagnosis >= 0) expect(diagnosis).toBeLessThan(decision);
  });

  it('names identifiers of sentences that did not fit on an Identifiers line', () => {
    const text = extractiveSummary(session, tokenizer, { budgetTokens: 50 });
    const identifiersLine = text.split('\n').find((l) => l.startsWith('Identifiers:'));
    expect(identifiersLine).toBeDefined();
    expect(tokenizer.count(text)).toBeLessThanOrEqual(50);
    for (const id of ['ECONNREFUSED', 'DATABASE_URL', 'config/staging.env', 'pg-prod-2']) {
      if (!text.includes(id)) throw new Error(`${id} is lost: ${text}`);
    }
  });

  it('cuts the best sentence when not one fits, and returns nothing for no sources or no budget', () => {
    const long: SourceItem[] = [{ id: 'x', kind: 'decision', text: `We decided ${'very '.repeat(100)}carefully.` }];
    const text = extractiveSummary(long, tokenizer, { budgetTokens: 5 });
    expect(text.startsWith('We decided')).toBe(true);
    expect(tokenizer.count(text)).toBeLessThanOrEqual(5);
    expect(extractiveSummary([], tokenizer, { budgetTokens: 50 })).toBe('');
    expect(extractiveSummary(session, tokenizer, { budgetTokens: 0 })).toBe('');
  });

  it('is always within the budget', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ kind: fc.constantFrom('user', 'assistant', 'tool_result', 'decision'), text: fc.string({ maxLength: 400 }) }), { maxLength: 12 }),
        fc.integer({ min: 0, max: 120 }),
        (raw, budget) => {
          const items = raw.map((r, i) => ({ id: `e${i}`, ...r }));
          expect(tokenizer.count(extractiveSummary(items, tokenizer, { budgetTokens: budget }))).toBeLessThanOrEqual(budget);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('leaves out sentences of fewer than two words that name nothing', () => {
    const items: SourceItem[] = [{ id: 'a', kind: 'assistant', text: 'Create:\n```text\nThe parser now accepts trailing commas.' }];
    expect(extractiveSummary(items, tokenizer, { budgetTokens: 100 })).toBe('The parser now accepts trailing commas.');
  });

  it('gives the same summary for the same sources', () => {
    expect(extractiveSummary(session, tokenizer, { budgetTokens: 70 })).toBe(extractiveSummary(session, tokenizer, { budgetTokens: 70 }));
  });
});
