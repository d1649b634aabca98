import { describe, expect, it } from 'vitest';
import { hasPrivateSpans, maskPrivate } from './private-spans.js';

describe('private spans', () => {
  it('replaces each span, tags included, by [private]', () => {
    expect(maskPrivate('my card is <private>4111 1111 1111 1111</private>, expiry <private>12/29</private>.')).toBe(
      'my card is [private], expiry [private].',
    );
  });

  it('leaves text without tags untouched (the same string)', () => {
    const text = 'a < b and private > public';
    expect(hasPrivateSpans(text)).toBe(false);
    expect(maskPrivate(text)).toBe(text);
  });

  it('matches tags in any case and across lines', () => {
    expect(maskPrivate('a <PRIVATE>line 1\nline 2</Private> b')).toBe('a [private] b');
  });

  it('hides the rest of the text after an unclosed <private> (fail closed)', () => {
    expect(maskPrivate('visible <private>hidden to the end\nstill hidden')).toBe('visible [private]');
  });

  it('hides what precedes a </private> without its opening tag (a cut preview)', () => {
    expect(maskPrivate('…tail of the span</private> visible after')).toBe('[private] visible after');
    expect(maskPrivate('<private>a</private> shown b</private> c')).toBe('[private] c');
  });

  it('nests: the span ends at the matching close tag', () => {
    expect(maskPrivate('x <private>a <private>b</private> c</private> y')).toBe('x [private] y');
  });

  it('merges adjacent spans into one placeholder', () => {
    expect(maskPrivate('<private>a</private><private>b</private>!')).toBe('[private]!');
  });

  it('is linear on 1 MB of tags', () => {
    const text = '<private>'.repeat(60_000) + '</private>'.repeat(50_000);
    expect(maskPrivate(text)).toBe('[private]');
  });
});
