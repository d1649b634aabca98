import { describe, expect, it } from 'vitest';
import { createGptTokenizer } from '../../providers/gpt-tokenizer.js';
import { fitToTokens } from './fit-to-tokens.js';
import { numberedLines } from './test-support.js';

const tokenizer = createGptTokenizer();
const count = (text: string): number => tokenizer.count(text);

describe('fitToTokens', () => {
  it('keeps a text that fits, whole', () => {
    const text = numberedLines(5, 'const x =');
    expect(fitToTokens(text, 400, count)).toEqual({ text, tokens: count(text), isTruncated: false, keptLines: 5 });
    expect(fitToTokens('', 1, count)).toEqual({ text: '', tokens: 0, isTruncated: false, keptLines: 0 });
  });

  it('cuts at whole lines to the longest prefix within the budget', () => {
    const text = numberedLines(400, 'export const value');
    for (const max of [1, 7, 50, 333, 1000]) {
      const fitted = fitToTokens(text, max, count);
      expect(fitted.tokens).toBe(count(fitted.text));
      expect(fitted.tokens).toBeLessThanOrEqual(max);
      expect(fitted.isTruncated).toBe(true);
      expect(text.startsWith(fitted.text)).toBe(true);
      if (text[fitted.text.length] === '\n') {
        // Cut at a line end: one more line would not have fitted.
        const oneMore = text.split('\n').slice(0, fitted.keptLines + 1).join('\n');
        expect(count(oneMore)).toBeGreaterThan(max);
      }
    }
  });

  it('cuts inside the first line when not even that fits, never splitting a surrogate pair', () => {
    const line = '🙂'.repeat(500);
    const fitted = fitToTokens(`${line}\nnext`, 10, count);
    expect(fitted.isTruncated).toBe(true);
    expect(fitted.tokens).toBeLessThanOrEqual(10);
    expect(fitted.text.length).toBeGreaterThan(0);
    expect(line.startsWith(fitted.text)).toBe(true);
    expect(/[\uD800-\uDBFF]$/.test(fitted.text)).toBe(false);
  });

  it('keeps the final newline of a text that fits whole, and drops a trailing CR when cutting', () => {
    expect(fitToTokens('a\nb\n', 100, count).text).toBe('a\nb\n');
    const crlf = Array.from({ length: 300 }, (_, i) => `row ${i}`).join('\r\n');
    const fitted = fitToTokens(crlf, 20, count);
    expect(fitted.text.endsWith('\r')).toBe(false);
    expect(fitted.isTruncated).toBe(true);
  });
});
