import { createRequire } from 'node:module';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { loadRankTable } from './bpe-cache.js';
import { BpeEncoder, buildRankTable } from './bpe-encoder.js';
import { defaultCacheDir } from './cache-dir.js';
import type { Tokenizer } from './tokenizer.js';

let loaded: BpeEncoder | undefined;
/**
 * The o200k vocabulary and split pattern come from the `gpt-tokenizer` package; the encoding itself is
 * {@link BpeEncoder} (linear time, see there for why). Loaded on first use, from the binary rank table in the cache
 * directory (bpe-cache.ts; `$ENGRAM_CACHE_DIR`, else `~/.cache/engram`), built there from the package the first time:
 * the package's tables take ~350 ms to parse and hash, which every CLI call that counts (a recall, an ingest hook
 * after each agent turn) would otherwise pay.
 */
function encoder(): BpeEncoder {
  if (!loaded) {
    const require = createRequire(import.meta.url);
    const { version } = require('gpt-tokenizer/package.json') as { version: string };
    const { table } = loadRankTable({
      cacheDir: defaultCacheDir(),
      source: { package: 'gpt-tokenizer', version, encoding: 'o200k_base' },
      build: () => buildRankTable((require('gpt-tokenizer/bpeRanks/o200k_base') as { default: Array<string | number[]> }).default),
    });
    const { O200K_TOKEN_SPLIT_REGEX } = require('gpt-tokenizer/encodingParams/constants') as { O200K_TOKEN_SPLIT_REGEX: RegExp };
    loaded = new BpeEncoder(table, O200K_TOKEN_SPLIT_REGEX);
  }
  return loaded;
}

/** Texts at least this long (UTF-16 code units) are counted through the memo; shorter ones cost less to count. */
const MEMO_MIN_CHARS = 16 * 1024;
/** Parts of a long text at least this long are remembered on their own (see {@link hardSegments}). */
const SEGMENT_MEMO_MIN_CHARS = 2 * 1024;
/** Characters of text the memo holds at most; the oldest entries go first. */
const MEMO_MAX_CHARS = 32 * 1024 * 1024;
/**
 * Units (pieces, or 512-byte parts of long ones) counted between two looks at the clock in `countAsync`: at most
 * 64 KB, a few milliseconds. It yields to the event loop once STEP_MS have passed.
 */
const UNITS_PER_STEP = 128;
const STEP_MS = 4;

/**
 * The default tokenizer: o200k_base (the GPT-4o family encoding), offline. Counts are exact for ordinary text and
 * within a few tokens per 512 bytes for runs without word breaks (see `MAX_PIECE_BYTES` in bpe-encoder.ts); the
 * work is linear in the text whatever its content (measured: 50-90 ms of CPU per MB of prose or random text).
 *
 * Long texts are counted once: the context pack counts the same large message as an event, as a history line and
 * inside the joined history block, on every turn. A long text is split where the pre-tokenizer always splits
 * (after a line break followed by neither white space nor `/`), and its count, and those of its long parts, are
 * remembered, so a part counted before (a history line inside the block) is not counted again. `countAsync` fills
 * the same memo in steps of a few milliseconds, so a server can count a large text without holding its thread.
 */
export function createGptTokenizer(): Tokenizer {
  const memo = new Map<string, number>();
  let memoChars = 0;
  const remember = (text: string, tokens: number): void => {
    if (text.length > MEMO_MAX_CHARS / 4 || memo.has(text)) return;
    memo.set(text, tokens);
    memoChars += text.length;
    for (const key of memo.keys()) {
      if (memoChars <= MEMO_MAX_CHARS) break;
      memo.delete(key);
      memoChars -= key.length;
    }
  };

  /** Count of a part without a hard boundary inside (or a group of short ones). */
  const countPart = (part: string): number => {
    if (part.length < SEGMENT_MEMO_MIN_CHARS) return encoder().count(part);
    const known = memo.get(part);
    if (known !== undefined) return known;
    const tokens = encoder().count(part);
    remember(part, tokens);
    return tokens;
  };

  const count = (text: string): number => {
    if (text.length < MEMO_MIN_CHARS) return text.length === 0 ? 0 : encoder().count(text);
    const known = memo.get(text);
    if (known !== undefined) return known;
    let total = 0;
    let groupStart = 0;
    // Short parts are counted in groups, between the long ones.
    for (const [start, end] of hardSegments(text)) {
      if (end - start < SEGMENT_MEMO_MIN_CHARS) continue;
      if (start > groupStart) total += encoder().count(text.slice(groupStart, start));
      total += countPart(start === 0 && end === text.length ? text : text.slice(start, end));
      groupStart = end;
    }
    if (groupStart < text.length) total += encoder().count(groupStart === 0 ? text : text.slice(groupStart));
    remember(text, total);
    return total;
  };

  const countAsync = async (text: string): Promise<number> => {
    if (text.length < MEMO_MIN_CHARS) return count(text);
    const known = memo.get(text);
    if (known !== undefined) return known;
    const enc = encoder();
    let sliceStart = performance.now();
    const countInSteps = async (part: string): Promise<number> => {
      const progress = enc.startCount(part);
      for (;;) {
        const isDone = enc.countStep(progress, UNITS_PER_STEP);
        if (performance.now() - sliceStart >= STEP_MS) {
          await yieldToEventLoop();
          sliceStart = performance.now();
        }
        if (isDone) return progress.tokens;
      }
    };
    let total = 0;
    let groupStart = 0;
    const flushGroup = async (end: number): Promise<void> => {
      if (end > groupStart) total += await countInSteps(groupStart === 0 && end === text.length ? text : text.slice(groupStart, end));
      groupStart = end;
    };
    // The same parts as `count`, so each remembered part serves both; short parts in groups of about MEMO_MIN_CHARS.
    for (const [start, end] of hardSegments(text)) {
      if (end - start >= SEGMENT_MEMO_MIN_CHARS) {
        await flushGroup(start);
        const part = start === 0 && end === text.length ? text : text.slice(start, end);
        const knownPart = memo.get(part);
        const tokens = knownPart ?? (await countInSteps(part));
        if (knownPart === undefined) remember(part, tokens);
        total += tokens;
        groupStart = end;
      } else if (end - groupStart >= MEMO_MIN_CHARS) {
        await flushGroup(end);
      }
    }
    await flushGroup(text.length);
    remember(text, total);
    return total;
  };

  return {
    name: 'o200k_base',
    count,
    countAsync,
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
