import { describe, expect, it } from 'vitest';
import { cutExcerpt } from './excerpt.js';

describe('cutExcerpt', () => {
  it('returns short texts whole', () => {
    expect(cutExcerpt('short text', ['text'], [])).toBe('short text');
  });

  it('centres on the identifier deep inside a long log', () => {
    const lines = Array.from({ length: 400 }, (_, i) => `line ${i}: compiling module ${i}`);
    lines[300] = 'Error: connect ECONNREFUSED 127.0.0.1:5432';
    const excerpt = cutExcerpt(lines.join('\n'), ['connect'], ['ECONNREFUSED'], { maxChars: 200 });
    expect(excerpt).toContain('ECONNREFUSED 127.0.0.1:5432');
    expect(excerpt.startsWith('…')).toBe(true);
    expect(excerpt.length).toBeLessThanOrEqual(202);
  });

  it('prefers the window holding more distinct terms', () => {
    const filler = 'x'.repeat(1000);
    const text = `alpha here ${filler} alpha beta gamma together ${filler} gamma`;
    const excerpt = cutExcerpt(text, ['alpha', 'beta', 'gamma'], [], { maxChars: 100 });
    expect(excerpt).toContain('alpha beta gamma together');
  });

  it('searches a repeated needle once: the excerpt is the one of the needle given once', () => {
    const lines = Array.from({ length: 2000 }, (_, i) => `line ${i}: a b compiling module ${i}`);
    lines[1500] = 'Error: connect ECONNREFUSED 127.0.0.1:5432';
    const text = lines.join('\n');
    const once = cutExcerpt(text, ['econnrefused'], ['ECONNREFUSED'], { maxChars: 200 });
    const repeated = cutExcerpt(text, Array(700).fill('econnrefused'), Array(700).fill('ECONNREFUSED'), { maxChars: 200 });
    expect(repeated).toBe(once);
    expect(once).toContain('ECONNREFUSED');
  });

  it('falls back to the head when nothing matches', () => {
    const text = 'abc '.repeat(500);
    const excerpt = cutExcerpt(text, ['zzz'], [], { maxChars: 50 });
    expect(excerpt.startsWith('abc')).toBe(true);
    expect(excerpt.endsWith('…')).toBe(true);
  });
});

describe('cutExcerpt keeps the hits it chose whole', () => {
  it('does not cut through an identifier at the end of the window when the window began early', () => {
    const id = 'needle-11-33-71a49405';
    // "33" 465 characters before the identifier: the window ending at the identifier's last part ("71a49") holds
    // both, and starting 120 characters before "33" its 600 characters end inside the identifier.
    const text = `${'a'.repeat(114)} 33 ${'b '.repeat(231)}${id}\n${'tail '.repeat(30)}`;
    expect(text.indexOf(id) - text.indexOf('33')).toBe(465);
    const excerpt = cutExcerpt(text, [id], [id], { maxChars: 600 });
    expect(excerpt).toContain(id);
    expect(excerpt.replace(/…/g, '').length).toBeLessThanOrEqual(600);
  });
});
