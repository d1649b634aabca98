/**
 * Pseudo-relevance feedback on vectors (Rocchio / RM3 in embedding space, issue #13): the query's vector moved
 * toward the centroid of its best hits' vectors, then searched again. A question's words are few and its vector
 * is noisy; the best hits, found with the turn context's help, say in the corpus's own words what it is about.
 */

/** Best fused candidates whose vectors form the centroid. */
export const VECTOR_FEEDBACK_SOURCES = 3;

/**
 * `normalise(query + weight x mean(sources) / |mean(sources)|)`: unit length, like every vector a store holds.
 * Without sources (or weight 0) the query itself.
 */
export function feedbackVector(query: Float32Array, sources: readonly Float32Array[], weight: number): Float32Array {
  if (sources.length === 0 || weight <= 0) return query;
  const centroid = new Float32Array(query.length);
  for (const v of sources) for (let i = 0; i < centroid.length; i++) centroid[i]! += v[i] ?? 0;
  const centroidNorm = length(centroid) || 1;
  const out = new Float32Array(query.length);
  for (let i = 0; i < out.length; i++) out[i] = query[i]! + (weight * centroid[i]!) / centroidNorm;
  const norm = length(out) || 1;
  for (let i = 0; i < out.length; i++) out[i]! /= norm;
  return out;
}

function length(v: Float32Array): number {
  let sum = 0;
  for (const x of v) sum += x * x;
  return Math.sqrt(sum);
}
