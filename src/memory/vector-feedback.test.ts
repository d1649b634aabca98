import { describe, expect, it } from 'vitest';
import { feedbackVector } from './vector-feedback.js';

const unit = (...xs: number[]) => {
  const n = Math.hypot(...xs);
  return Float32Array.from(xs.map((x) => x / n));
};

describe('feedbackVector', () => {
  it('moves the query toward the centroid of the sources and stays unit length', () => {
    const q = unit(1, 0, 0);
    const out = feedbackVector(q, [unit(0, 1, 0), unit(0, 1, 0)], 1);
    expect(out[0]).toBeCloseTo(Math.SQRT1_2);
    expect(out[1]).toBeCloseTo(Math.SQRT1_2);
    expect(Math.hypot(...out)).toBeCloseTo(1);
  });

  it('returns the query itself without sources or at weight 0', () => {
    const q = unit(1, 2, 3);
    expect(feedbackVector(q, [], 1)).toBe(q);
    expect(feedbackVector(q, [unit(0, 1, 0)], 0)).toBe(q);
  });
});
