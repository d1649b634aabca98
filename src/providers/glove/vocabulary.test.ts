import { describe, expect, it } from 'vitest';
import { Vocabulary } from './vocabulary.js';

describe('Vocabulary', () => {
  const words = ['the', 'of', 'café', 'naïve', 'a-b', '’', 'of', 'zebra', '日本'];
  const vocabulary = Vocabulary.build(words);

  it('finds every word at its row, a repeated word at its first row', () => {
    expect(vocabulary.size).toBe(words.length);
    expect(vocabulary.get('the')).toBe(0);
    expect(vocabulary.get('of')).toBe(1);
    expect(vocabulary.get('café')).toBe(2);
    expect(vocabulary.get('naïve')).toBe(3);
    expect(vocabulary.get('’')).toBe(5);
    expect(vocabulary.get('zebra')).toBe(7);
    expect(vocabulary.get('日本')).toBe(8);
    expect(vocabulary.isConsistent()).toBe(true);
  });

  it('misses words it does not hold, including ones of the same byte length', () => {
    for (const w of ['', 'th', 'thee', 'cafe', 'caf', 'cafés', 'naive', 'zebr', 'ofX', '日', '本日']) expect(vocabulary.get(w)).toBeUndefined();
  });

  it('decodes words back by row', () => {
    expect(words.map((_, i) => vocabulary.word(i))).toEqual(words);
  });

  it('works from its stored arrays alone', () => {
    const copy = new Vocabulary(Uint8Array.from(vocabulary.bytes), Uint32Array.from(vocabulary.offsets), Int32Array.from(vocabulary.slots));
    expect(words.map((w) => copy.get(w))).toEqual(words.map((w) => vocabulary.get(w)));
  });

  it('keeps probe chains correct in a crowded table', () => {
    const many = Array.from({ length: 5000 }, (_, i) => `w${i.toString(36)}`);
    const v = Vocabulary.build(many);
    expect(many.every((w, i) => v.get(w) === i)).toBe(true);
    expect(v.get('w-none')).toBeUndefined();
  });
});
