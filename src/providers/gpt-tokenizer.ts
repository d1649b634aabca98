import { countTokens, decode, encode } from 'gpt-tokenizer';
import type { Tokenizer } from './tokenizer.js';

/** The default tokenizer: o200k_base via `gpt-tokenizer`, offline, about 6 MB/s measured here. */
export function createGptTokenizer(): Tokenizer {
  return {
    name: 'o200k_base',
    count: (text) => (text.length === 0 ? 0 : countTokens(text)),
    truncate(text, maxTokens) {
      if (maxTokens <= 0) return '';
      const tokens = encode(text);
      if (tokens.length <= maxTokens) return text;
      // Decoding a cut in the middle of a multi-byte character yields U+FFFD; drop it.
      return decode(tokens.slice(0, maxTokens)).replace(/\uFFFD+$/u, '');
    },
  };
}
