/** Longest token whose n-grams are hashed; a longer one (a base64 blob, a minified line) adds its head only. */
export const MAX_NGRAM_TOKEN_CHARS = 64;

/**
 * Adds the character n-grams of one token (padded as `<token>`, so prefixes and suffixes are features of
 * their own) and the whole token as one more feature, into `out` by feature hashing: each feature goes to
 * one bucket with a sign drawn from its hash, so collisions cancel in expectation instead of adding up.
 * Each feature carries `weight / sqrt(features)`, so a token's contribution has norm ~`weight` whatever its
 * length. Deterministic: FNV-1a over UTF-16 code units, then the murmur3 finaliser.
 */
export function addTokenNgrams(token: string, n: number, weight: number, out: Float64Array): void {
  const length = Math.min(token.length, MAX_NGRAM_TOKEN_CHARS);
  const padded = length + 2;
  const grams = Math.max(1, padded - n + 1);
  const w = weight / Math.sqrt(grams + 1);
  const buckets = out.length;
  for (let start = 0; start < grams; start++) {
    let h = (0x811c9dc5 ^ n) >>> 0;
    const end = Math.min(padded, start + n);
    for (let i = start; i < end; i++) {
      h ^= i === 0 ? 0x3c : i === padded - 1 ? 0x3e : token.charCodeAt(i - 1);
      h = Math.imul(h, 0x01000193);
    }
    addFeature(h, w, out, buckets);
  }
  // The whole token: two tokens that share every n-gram but differ in length still differ here.
  let h = 0x9747b28c;
  for (let i = 0; i < length; i++) {
    h ^= token.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  addFeature(h, w, out, buckets);
}

function addFeature(hash: number, weight: number, out: Float64Array, buckets: number): void {
  let h = hash;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  const bucket = (h >>> 1) % buckets;
  out[bucket] = out[bucket]! + (h & 1 ? weight : -weight);
}
