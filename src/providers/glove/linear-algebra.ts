/** Eigen-decomposition of a symmetric matrix, eigenvalues in descending order. */
export interface SymmetricEigen {
  values: Float64Array;
  /** Row `i` (length n) is the unit eigenvector of `values[i]`, its largest-magnitude entry positive. */
  vectors: Float64Array;
}

/**
 * Cyclic Jacobi rotations on an n x n symmetric matrix (row-major; not modified). It stops when the
 * off-diagonal mass is below 1e-18 of the total (eigenpairs accurate to ~1e-9 relative), which is plenty for
 * the 100 x 100 covariances here; deterministic, a few milliseconds, no dependency.
 */
export function symmetricEigen(matrix: Float64Array, n: number): SymmetricEigen {
  const a = Float64Array.from(matrix);
  const v = new Float64Array(n * n);
  for (let i = 0; i < n; i++) v[i * n + i] = 1;
  let total = 0;
  for (let i = 0; i < n * n; i++) total += a[i]! * a[i]!;
  for (let sweep = 0; sweep < 60; sweep++) {
    let off = 0;
    for (let p = 0; p < n; p++) for (let q = p + 1; q < n; q++) off += a[p * n + q]! * a[p * n + q]!;
    if (off <= total * 1e-18 || off === 0) break;
    for (let p = 0; p < n - 1; p++) {
      for (let q = p + 1; q < n; q++) {
        const apq = a[p * n + q]!;
        if (apq === 0) continue;
        const app = a[p * n + p]!;
        const aqq = a[q * n + q]!;
        const theta = (aqq - app) / (2 * apq);
        const t = Math.sign(theta || 1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
        const c = 1 / Math.sqrt(t * t + 1);
        const s = t * c;
        for (let k = 0; k < n; k++) {
          const akp = a[k * n + p]!;
          const akq = a[k * n + q]!;
          a[k * n + p] = c * akp - s * akq;
          a[k * n + q] = s * akp + c * akq;
        }
        for (let k = 0; k < n; k++) {
          const apk = a[p * n + k]!;
          const aqk = a[q * n + k]!;
          a[p * n + k] = c * apk - s * aqk;
          a[q * n + k] = s * apk + c * aqk;
        }
        for (let k = 0; k < n; k++) {
          const vkp = v[k * n + p]!;
          const vkq = v[k * n + q]!;
          v[k * n + p] = c * vkp - s * vkq;
          v[k * n + q] = s * vkp + c * vkq;
        }
      }
    }
  }
  const order = Array.from({ length: n }, (_, i) => i).sort((i, j) => a[j * n + j]! - a[i * n + i]! || i - j);
  const values = new Float64Array(n);
  const vectors = new Float64Array(n * n);
  order.forEach((col, row) => {
    values[row] = a[col * n + col]!;
    let largest = 0;
    for (let k = 0; k < n; k++) if (Math.abs(v[k * n + col]!) > Math.abs(largest)) largest = v[k * n + col]!;
    const sign = largest < 0 ? -1 : 1;
    for (let k = 0; k < n; k++) vectors[row * n + k] = sign * v[k * n + col]!;
  });
  return { values, vectors };
}

/** Adds `x x^T` (scaled by `weight`) into the n x n row-major `acc`, upper triangle only; see {@link mirrorUpper}. */
export function addOuterUpper(acc: Float64Array, x: ArrayLike<number>, n: number, weight = 1): void {
  for (let i = 0; i < n; i++) {
    const xi = x[i]! * weight;
    if (xi === 0) continue;
    const row = i * n;
    for (let j = i; j < n; j++) acc[row + j] = acc[row + j]! + xi * x[j]!;
  }
}

/** Copies the upper triangle of an n x n row-major matrix onto its lower triangle. */
export function mirrorUpper(m: Float64Array, n: number): Float64Array {
  for (let i = 0; i < n; i++) for (let j = 0; j < i; j++) m[i * n + j] = m[j * n + i]!;
  return m;
}
