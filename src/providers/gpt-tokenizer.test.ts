import { describe, expect, it } from 'vitest';
import { createGptTokenizer, hardSegments } from './gpt-tokenizer.js';

describe('gpt tokenizer', () => {
  const t = createGptTokenizer();
  it('counts o200k tokens', () => {
    expect(t.count('')).toBe(0);
    expect(t.count('hello world')).toBe(2);
  });
  it('truncates to a token budget without a broken character at the end', () => {
    const text = 'naïve café résumé '.repeat(50);
    const cut = t.truncate(text, 10);
    expect(t.count(cut)).toBeLessThanOrEqual(10);
    expect(text.startsWith(cut)).toBe(true);
    expect(cut).not.toContain('\uFFFD');
    expect(t.truncate('short', 10)).toBe('short');
    expect(t.truncate('anything', 0)).toBe('');
  });

  it('counts special-token strings as text instead of throwing', () => {
    expect(t.count('<|endoftext|>')).toBeGreaterThan(1);
    expect(t.truncate('a <|im_start|> b', 100)).toBe('a <|im_start|> b');
  });

  it('counts a long text as the sum of its parts between hard line breaks', () => {
    const line = (i: number): string => `[T${i} user] ${'word '.repeat(4000)}${i % 3 === 0 ? '.\n/usr/bin' : ''}`;
    const text = Array.from({ length: 12 }, (_, i) => line(i)).join('\n');
    const parts = [...hardSegments(text)].map(([s, e]) => text.slice(s, e));
    expect(parts.join('')).toBe(text);
    expect(parts.length).toBe(12);
    const fresh = createGptTokenizer();
    expect(fresh.count(text)).toBe(parts.reduce((sum, p) => sum + t.count(p), 0));
    // Counted again (from the memo), the same.
    expect(fresh.count(text)).toBe(t.count(text));
  });

  it('never cuts where a line break can still join the next piece', () => {
    for (const text of ['a.\n/b', 'a\n \nb', 'a\r\n\tb', 'a\n\n\n', '\nb', 'x\n\u00a0y']) {
      const cuts = [...hardSegments(text)].slice(0, -1).map(([, e]) => e);
      for (const cut of cuts) expect(/[\s/]/u.test(text[cut]!), JSON.stringify(text)).toBe(false);
    }
    expect([...hardSegments('a\nb\r\nc')]).toEqual([
      [0, 2],
      [2, 5],
      [5, 6],
    ]);
  });

  it('counts in steps (countAsync) exactly what count counts, and remembers it', async () => {
    const texts = [
      'short text',
      Array.from({ length: 3000 }, (_, i) => `[T${i} user] line ${i} ${'x'.repeat(i % 50)}`).join('\n'),
      `${'word '.repeat(10_000)}\n${'\\'.repeat(50_000)}\n${'😀'.repeat(20_000)}`,
      'é'.repeat(300_000),
    ];
    for (const text of texts) {
      const fresh = createGptTokenizer();
      const stepped = await fresh.countAsync!(text);
      expect(stepped).toBe(createGptTokenizer().count(text));
      expect(fresh.count(text)).toBe(stepped);
      // A text made of remembered parts: the parts' counts add up.
      expect(fresh.count(`${text}\nnext line`)).toBe(createGptTokenizer().count(`${text}\nnext line`));
    }
  });

  it('truncates a 1 MB run without word breaks to a prefix within the limit', () => {
    const text = '\\'.repeat(1024 * 1024);
    const cut = t.truncate(text, 1000);
    expect(text.startsWith(cut)).toBe(true);
    expect(cut.length).toBeGreaterThan(0);
    expect(t.count(cut)).toBeLessThanOrEqual(1000);
  });
});
