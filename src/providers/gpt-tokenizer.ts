import { createRequire } from 'node:module';
import { BpeEncoder, buildRankTable } from './bpe-encoder.js';
import type { Tokenizer } from './tokenizer.js';

let loaded: BpeEncoder | undefined;
/**
 * The o200k vocabulary and split pattern come from the `gpt-tokenizer` package; the encoding itself is
 * {@link BpeEncoder} (linear time, see there for why). Loaded on first use: the tables take ~250 ms to load, which
 * every CLI call (an ingest hook after each agent turn) would otherwise pay even when it counts no tokens.
 */
function encoder(): BpeEncoder {
  if (!loaded) {
    const require = createRequire(import.meta.url);
    const vocabulary = (require('gpt-tokenizer/bpeRanks/o200k_base') as { default: Array<string | number[]> }).default;
    const { O200K_TOKEN_SPLIT_REGEX } = require('gpt-tokenizer/encodingParams/constants') as { O200K_TOKEN_SPLIT_REGEX: RegExp };
    loaded = new BpeEncoder(buildRankTable(vocabulary), O200K_TOKEN_SPLIT_REGEX);
  }
  return loaded;
}

/**
 * Texts at least this long (UTF-16 code units) are counted through the memo below. Shorter ones cost less to
 * count than to look up.
 */
const MEMO_MIN_CHARS = 16 * 1024;
/** Characters of text the memo holds at most; the oldest entries go first. */
const MEMO_MAX_CHARS = 16 * 1024 * 1024;

/**
 * The default tokenizer: o200k_base (the GPT-4o family encoding), offline. Counts are exact for ordinary text and
 * within a few tokens per 512 bytes for runs without word breaks (see `MAX_PIECE_BYTES` in bpe-encoder.ts); the work is linear
 * in the text whatever its content (measured: 1 MB of prose ~0.1 s, of random letters or bytes under 0.3 s).
 *
 * Long texts are counted once: the context pack counts the same large message as an event, as a history line and
 * inside the joined history block, and on every later turn. A long text is split where the pre-tokenizer always
 * splits (after a line break that is followed by neither white space nor `/`), so a part counted before, such as
 * a history line inside the block, is not counted again.
 */
export function createGptTokenizer(): Tokenizer {
  const memo = new Map<string, number>();
  let memoChars = 0;

  const countLong = (text: string): number => {
    const known = memo.get(text);
    if (known !== undefined) return known;
    let total = 0;
    let groupStart = 0;
    // Short segments are counted in groups; a long one is counted (and remembered) on its own.
    for (const [start, end] of hardSegments(text)) {
      if (end - start < MEMO_MIN_CHARS) continue;
      if (start > groupStart) total += encoder().count(text.slice(groupStart, start));
      total += start === 0 && end === text.length ? encoder().count(text) : countLong(text.slice(start, end));
      groupStart = end;
    }
    if (groupStart < text.length) total += encoder().count(groupStart === 0 ? text : text.slice(groupStart));
    memo.set(text, total);
    memoChars += text.length;
    for (const key of memo.keys()) {
      if (memoChars <= MEMO_MAX_CHARS) break;
      memo.delete(key);
      memoChars -= key.length;
    }
    return total;
  };

  const count = (text: string): number => {
    if (text.length === 0) return 0;
    return text.length < MEMO_MIN_CHARS ? encoder().count(text) : countLong(text);
  };

  return {
    name: 'o200k_base',
    count,
    truncate(text, maxTokens) {
      if (maxTokens <= 0) return '';
      let limit = maxTokens;
      // A prefix cut at a token boundary re-encodes to at most as many tokens in practice, but BPE does not promise
      // it: check, and cut by the excess when it does not hold.
      for (let attempt = 0; attempt < 4 && limit > 0; attempt++) {
        const cut = text.slice(0, encoder().prefixLength(text, limit));
        const tokens = cut.length === text.length ? count(text) : count(cut);
        if (tokens <= maxTokens) return cut;
        limit -= tokens - maxTokens;
      }
      return '';
    },
  };
}

/**
 * `[start, end)` of the parts of `text` between hard boundaries: positions right after a run of line breaks that
 * is followed by a character that is neither white space nor `/`. The o200k pre-tokenizer always ends a piece
 * there (its only pieces that hold a line break are white space ending in line breaks, and punctuation followed
 * by line breaks and slashes), so a text's count is the sum of its parts' counts.
 */
export function* hardSegments(text: string): Generator<[number, number]> {
  let start = 0;
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c !== 0x0a && c !== 0x0d) {
      i++;
      continue;
    }
    while (i < text.length && (text.charCodeAt(i) === 0x0a || text.charCodeAt(i) === 0x0d)) i++;
    if (i < text.length && !BREAK_CONTINUES.test(text[i]!)) {
      yield [start, i];
      start = i;
    }
  }
  yield [start, text.length];
}

/** Characters after a line break that may still belong to the same pre-token piece. */
const BREAK_CONTINUES = /[\s/]/u;
