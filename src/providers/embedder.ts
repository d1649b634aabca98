/**
 * Turns texts into vectors for semantic recall. Core code depends on this interface only; providers live
 * beside it (built-in offline, local ONNX, OpenAI-compatible HTTP). Vectors are L2-normalised, so a dot
 * product is the cosine similarity.
 */
export interface Embedder {
  /**
   * Identifies the model and its version, e.g. `builtin-glove-100d@1`, `onnx:Xenova/all-MiniLM-L6-v2`,
   * `openai:text-embedding-3-small`. Stored with every vector: vectors of two names are never compared.
   */
  readonly name: string;
  readonly dimensions: number;
  /** One vector per text, in order. Texts may be empty (the vector is then all zeros). */
  embed(texts: string[]): Promise<Float32Array[]>;
  /** Releases model files, sessions or sockets. */
  close?(): Promise<void>;
}

/** Scales a vector to unit length in place (a zero vector stays zero); returns it. */
export function normalize(v: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i]! * v[i]!;
  if (sum === 0) return v;
  const inv = 1 / Math.sqrt(sum);
  for (let i = 0; i < v.length; i++) v[i] = v[i]! * inv;
  return v;
}

/** Dot product; for normalised vectors, the cosine similarity. */
export function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) s += a[i]! * b[i]!;
  return s;
}
