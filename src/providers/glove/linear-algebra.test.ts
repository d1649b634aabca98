import { describe, expect, it } from 'vitest';
import { addOuterUpper, mirrorUpper, symmetricEigen } from './linear-algebra.js';

describe('symmetricEigen', () => {
  it('finds the eigenpairs of a known matrix, largest first, with a canonical sign', () => {
    // [[2,1],[1,2]]: eigenvalues 3 (along [1,1]) and 1 (along [1,-1]).
    const { values, vectors } = symmetricEigen(Float64Array.from([2, 1, 1, 2]), 2);
    expect(values[0]).toBeCloseTo(3, 12);
    expect(values[1]).toBeCloseTo(1, 12);
    expect(vectors[0]).toBeCloseTo(Math.SQRT1_2, 12);
    expect(vectors[1]).toBeCloseTo(Math.SQRT1_2, 12);
    expect(Math.abs(vectors[2]!)).toBeCloseTo(Math.SQRT1_2, 12);
    expect(vectors[2]! * vectors[3]!).toBeCloseTo(-0.5, 12);
  });

  it('reconstructs a random covariance: A v = lambda v for every pair', () => {
    const n = 12;
    const cov = new Float64Array(n * n);
    let seed = 7;
    const random = () => ((seed = (seed * 16807) % 2147483647) / 2147483647) * 2 - 1;
    for (let s = 0; s < 50; s++) addOuterUpper(cov, Array.from({ length: n }, random), n);
    mirrorUpper(cov, n);
    const { values, vectors } = symmetricEigen(cov, n);
    for (let e = 0; e < n; e++) {
      if (e > 0) expect(values[e]!).toBeLessThanOrEqual(values[e - 1]!);
      for (let i = 0; i < n; i++) {
        let av = 0;
        for (let j = 0; j < n; j++) av += cov[i * n + j]! * vectors[e * n + j]!;
        // Relative accuracy ~1e-10 of the largest eigenvalue (~50 here).
        expect(av).toBeCloseTo(values[e]! * vectors[e * n + i]!, 7);
      }
    }
  });
});
