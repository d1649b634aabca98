import { describe, expect, it } from 'vitest';
import { coverageTerms, eventCoverage, ownTextParts, termCoverage } from './term-coverage.js';

const event = (content: string, over: { toolName?: string; tags?: string[]; meta?: Record<string, unknown> } = {}) => ({ content, tags: [], ...over });

describe('coverageTerms', () => {
  it('keeps content words stemmed, without stop words or the letters apostrophes leave', () => {
    expect(coverageTerms("What did Caroline's sister paint?").map((t) => t.tokens)).toEqual([['carolin'], ['sister'], ['paint']]);
  });

  it('keeps an identifier or a quoted phrase as one term of adjacent tokens', () => {
    const terms = coverageTerms('why "connection reset" on --max-retries=7');
    expect(terms.map((t) => t.tokens)).toEqual([['connect', 'reset'], ['max', 'retri', '7']]);
  });

  it('matches a short hash as the prefix of a token, unstemmed', () => {
    expect(coverageTerms('e3b0c44')).toEqual([{ tokens: ['e3b0c44'], isPrefix: true }]);
    expect(eventCoverage('e3b0c44', event('commit e3b0c44298fc1c149afbf4c8996fb924'))).toBe(1);
  });
});

describe('termCoverage', () => {
  it('is the share of the terms the text holds, in any word form, terms weighing equally', () => {
    expect(eventCoverage('painted sunsets lake', event('She paints a sunset every evening.'))).toBeCloseTo(2 / 3);
    expect(eventCoverage('painted sunsets lake', event('Nothing here.'))).toBe(0);
  });

  it('counts the tool name, tags and speaker as own text', () => {
    const e = event('ok', { toolName: 'Bash', tags: ['deploy'], meta: { speaker: 'Melanie' } });
    expect(eventCoverage('bash deploy melanie', e)).toBe(1);
    expect(ownTextParts(e)).toEqual(['ok', 'Bash', 'deploy', 'Melanie']);
  });

  it('does not count a phrase split across parts, nor a term inside a longer word', () => {
    expect(eventCoverage('"down bash"', event('the service is down', { toolName: 'Bash' }))).toBe(0);
    expect(eventCoverage('pause', event("getElementById('pauseBtn')"))).toBe(0);
  });

  it('reads private spans as masked unless given the text', () => {
    expect(eventCoverage('password', event('the <private>password is hunter2</private> was rotated'))).toBe(0);
  });

  it('folds case and diacritics as the full-text index does', () => {
    expect(eventCoverage('resume cafe', event('Her RÉSUMÉ mentions the Café.'))).toBe(1);
  });

  it('is 0 for a query without content terms', () => {
    expect(termCoverage(coverageTerms('what is the'), ['what is the'])).toBe(0);
  });
});
