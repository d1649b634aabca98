import { describe, expect, it } from 'vitest';
import { createGptTokenizer } from './gpt-tokenizer.js';

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
});
