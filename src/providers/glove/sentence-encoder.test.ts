import { describe, expect, it } from 'vitest';
import { harmonicNumber, sifWeight, sifWeights } from './sentence-encoder.js';

describe('sifWeight', () => {
  it('is, row by row, the float32 value sifWeights stores (the encoder computes weights per word used)', () => {
    // The built-in vocabulary's size, and a small one.
    for (const size of [341_479, 1_000]) {
      const all = sifWeights(size, 1e-3);
      const harmonic = harmonicNumber(size);
      let differing = 0;
      for (let r = 0; r < size; r++) if (sifWeight(r, harmonic, 1e-3) !== all[r]) differing++;
      expect(differing).toBe(0);
    }
    // Not a constant: frequent words weigh less than rare ones.
    expect(sifWeight(0, harmonicNumber(1_000), 1e-3)).toBeLessThan(sifWeight(999, harmonicNumber(1_000), 1e-3));
  });
});
