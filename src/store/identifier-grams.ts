import { stemmer } from 'stemmer';

/**
 * The identifier index's keys (docs/recall.md, "Full-text at scale", identifiers). An identifier such as
 * `src/orders/client.ts:385` is a phrase of tokens that are each in nearly every tool event (`src`, `ts`, `385`), so
 * a full-text engine walks huge posting lists to find its few rows. Its token trigrams are rare: every run of three
 * consecutive tokens inside one whitespace-delimited word of an event's indexed text (its body and context column)
 * is kept as a 48-bit hash with the run's position. An identifier query of n >= 3 tokens then finds the rows holding
 * its first trigram at some position p and each next trigram at p + 1, p + 2, ...: the rows where its tokens stand
 * next to each other inside one word, as the phrase matches them, without reading a common token's postings.
 *
 * Tokens are the full-text index's own (lower case, diacritics removed, split on what is not a letter or digit,
 * Porter-stemmed), so an identifier matches exactly where its phrase matches, except where the text spells it
 * with spaces between its parts (`client.ts 385`), which no identifier-like query means.
 */

/**
 * Most events past the identifier index's watermark that a search covers through the plain full-text phrase
 * (docs/recall.md, identifier index: watermark and tail). The catch-up keeps the tail near zero where a server runs;
 * past this many (a bulk import not yet caught up) searches take the plain path, as a store without the index does:
 * the same events, at the cost measured before the index (SQLite identifier p95 142 ms at 1M), where the tail's phrase
 * would cost about what FTS5 costs over that many rows. A search never writes: it runs on read-only stores and
 * under an agent's view, so it does not index the tail itself.
 */
export const MAX_IDENTIFIER_TAIL_EVENTS = 50_000;

/** One key of an event: a trigram's hash and where it starts among the event's tokens. */
export interface IdentifierGram {
  gram: number;
  pos: number;
}

/** Longest word read for trigrams: longer ones are blobs (base64, minified code), not identifiers. */
const MAX_WORD_CHARS = 200;
/** Most trigrams kept per event: a safety bound above what the 2M characters indexed of an artifact can hold. */
export const MAX_GRAMS_PER_EVENT = 1_000_000;
const ASCII = /^[\x00-\x7f]*$/;
const SPLIT_ASCII = /[^a-z0-9]+/;
const SPLIT = /[^\p{L}\p{N}]+/u;
/** A token's two 32-bit hashes, by its unstemmed form (stemming and hashing done once per distinct token). */
const TOKEN_HASHES = new Map<string, readonly [number, number]>();
const MAX_CACHED_TOKENS = 100_000;

/** The index's tokens of one word, as the full-text index makes them (see fts5-planner.ts `tokenize`). */
export function wordTokens(word: string): string[] {
  const ascii = ASCII.test(word);
  const folded = ascii ? word.toLowerCase() : word.toLowerCase().normalize('NFKD').replace(/\p{M}/gu, '');
  return folded.split(ascii ? SPLIT_ASCII : SPLIT).filter((t) => t.length > 0);
}

function tokenHashes(token: string): readonly [number, number] {
  let h = TOKEN_HASHES.get(token);
  if (h === undefined) {
    // Letters only are stemmed (Porter, as the full-text index does); a token with a digit is kept as it is.
    const stem = /[0-9]/.test(token) ? token : stemmer(token);
    let h1 = 0x811c9dc5;
    let h2 = 0x9747b28c ^ stem.length;
    for (let i = 0; i < stem.length; i++) {
      const ch = stem.charCodeAt(i);
      h1 = Math.imul(h1 ^ ch, 0x01000193);
      h2 = Math.imul(h2 ^ ch, 0x5bd1e995);
      h2 ^= h2 >>> 13;
    }
    h = [h1 >>> 0, h2 >>> 0];
    if (TOKEN_HASHES.size >= MAX_CACHED_TOKENS) TOKEN_HASHES.clear();
    TOKEN_HASHES.set(token, h);
  }
  return h;
}

/** A 48-bit key of three tokens' hashes, in order: exact in a double, a SQLite integer, a PostgreSQL bigint. */
function combine(a: readonly [number, number], b: readonly [number, number], c: readonly [number, number]): number {
  let h1 = Math.imul(a[0] ^ 0x2f, 0x01000193);
  h1 = Math.imul(h1 ^ b[0], 0x85ebca6b);
  h1 ^= h1 >>> 16;
  h1 = Math.imul(h1 ^ c[0], 0xc2b2ae35);
  h1 ^= h1 >>> 13;
  let h2 = Math.imul(a[1] ^ 0x71, 0x5bd1e995);
  h2 = Math.imul(h2 ^ b[1], 0x27d4eb2f);
  h2 ^= h2 >>> 15;
  h2 = Math.imul(h2 ^ c[1], 0x165667b1);
  h2 ^= h2 >>> 16;
  return (h1 >>> 0) * 0x10000 + ((h2 >>> 0) & 0xffff);
}

/** {@link combine} of three tokens' hash pairs given one by one (no pair arrays). */
function combine2(a0: number, a1: number, b0: number, b1: number, c0: number, c1: number): number {
  let h1 = Math.imul(a0 ^ 0x2f, 0x01000193);
  h1 = Math.imul(h1 ^ b0, 0x85ebca6b);
  h1 ^= h1 >>> 16;
  h1 = Math.imul(h1 ^ c0, 0xc2b2ae35);
  h1 ^= h1 >>> 13;
  let h2 = Math.imul(a1 ^ 0x71, 0x5bd1e995);
  h2 = Math.imul(h2 ^ b1, 0x27d4eb2f);
  h2 ^= h2 >>> 15;
  h2 = Math.imul(h2 ^ c1, 0x165667b1);
  h2 ^= h2 >>> 16;
  return (h1 >>> 0) * 0x10000 + ((h2 >>> 0) & 0xffff);
}

/** The key of three tokens (as {@link wordTokens} makes them). */
export function gramHash(a: string, b: string, c: string): number {
  return combine(tokenHashes(a), tokenHashes(b), tokenHashes(c));
}

/**
 * The trigram keys of an event's indexed text (body, then the context column): (gram, pos) pairs, at most
 * {@link MAX_GRAMS_PER_EVENT}. Positions count the tokens of the words read, so two trigrams at consecutive
 * positions are always inside one word.
 */
export function identifierGrams(...texts: string[]): IdentifierGram[] {
  const out: IdentifierGram[] = [];
  let pos = 0;
  forEachIdentifierWord(texts, (word) => {
    const tokens = wordTokens(word);
    if (tokens.length < 3) return true;
    const hashes = tokens.map(tokenHashes);
    for (let t = 0; t + 3 <= hashes.length; t++) {
      out.push({ gram: combine(hashes[t]!, hashes[t + 1]!, hashes[t + 2]!), pos: pos + t });
      if (out.length >= MAX_GRAMS_PER_EVENT) return false;
    }
    pos += tokens.length;
    return true;
  });
  return out;
}

/** The trigram keys of one word (as {@link identifierGrams} reads it), in order; empty below three tokens. */
export function wordGrams(word: string): number[] {
  const tokens = wordTokens(word);
  const grams: number[] = [];
  if (tokens.length < 3) return grams;
  const hashes = tokens.map(tokenHashes);
  for (let t = 0; t + 3 <= hashes.length; t++) grams.push(combine(hashes[t]!, hashes[t + 1]!, hashes[t + 2]!));
  return grams;
}

/**
 * Calls `visit` with each whitespace-delimited word of the texts that may hold an identifier's trigrams, in order
 * (shorter than 5 or longer than {@link MAX_WORD_CHARS} characters, or ASCII with fewer than three letter-or-digit
 * runs, are skipped); stops when `visit` returns false. The words {@link identifierGrams} reads: a word's keys
 * depend on the word alone, and two words' keys never stand at consecutive positions.
 */
export function forEachIdentifierWord(texts: readonly string[], visit: (word: string) => boolean): void {
  for (const text of texts) {
    // One pass over the characters (a regex over the words cost 10x more at ingest): each word, its ASCII
    // letter-or-digit runs counted; a word with three or more, or with other characters, is tokenized.
    const n = text.length;
    let i = 0;
    while (i < n) {
      while (i < n && isSpace(text.charCodeAt(i))) i++;
      const start = i;
      let runs = 0;
      let inRun = false;
      let isAscii = true;
      while (i < n) {
        const c = text.charCodeAt(i);
        if (isSpace(c)) break;
        if (c >= 0x80) isAscii = false;
        const isWordChar = (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || (c >= 65 && c <= 90);
        if (isWordChar && !inRun) runs++;
        inRun = isWordChar;
        i++;
      }
      const length = i - start;
      if (isSkippedWord(length, isAscii, runs)) continue;
      if (!visit(text.slice(start, i))) return;
    }
  }
}

/**
 * Whether both scans of words ({@link forEachIdentifierWord}, {@link forEachWordGrams}) skip a word: shorter than 5 or
 * longer than {@link MAX_WORD_CHARS} characters, or ASCII with fewer than three letter-or-digit runs (no trigram).
 */
function isSkippedWord(length: number, isAscii: boolean, runs: number): boolean {
  return length < 5 || length > MAX_WORD_CHARS || (isAscii && runs < 3);
}

/** The grams of the word being read by {@link forEachWordGrams}: one array, reused for every word. */
const WORD_GRAMS: number[] = [];
/** The token hashes of the word being read (two per token), reused likewise. */
const WORD_HASHES: number[] = [];

/**
 * Calls `visit` with the trigram keys of each word {@link forEachIdentifierWord} reads that has any (three or more
 * tokens), in order, in an array reused for the next word: the keys {@link wordGrams} gives, without copying the word
 * or its tokens. An ASCII word's tokens are hashed where they stand; a token with a digit (not stemmed) without
 * being copied at all, one of letters only by its stem through the cache of tokens. Other words take
 * {@link wordGrams}. Stops when `visit` returns false. The catch-up's trigram rows were most of its CPU.
 */
export function forEachWordGrams(texts: readonly string[], visit: (grams: readonly number[]) => boolean): void {
  for (const text of texts) {
    const n = text.length;
    let i = 0;
    while (i < n) {
      while (i < n && isSpace(text.charCodeAt(i))) i++;
      const start = i;
      let runs = 0;
      let inRun = false;
      let isAscii = true;
      while (i < n) {
        const c = text.charCodeAt(i);
        let kind = OTHER;
        if (c < 0x80) kind = ASCII_KIND[c]!;
        else if (isSpace(c)) break;
        else isAscii = false;
        if (kind === SPACE) break;
        if (kind === WORD_CHAR) {
          if (!inRun) runs++;
          inRun = true;
        } else inRun = false;
        i++;
      }
      const length = i - start;
      if (isSkippedWord(length, isAscii, runs)) continue;
      if (!isAscii) {
        const grams = wordGrams(text.slice(start, i));
        if (grams.length > 0 && !visit(grams)) return;
        continue;
      }
      asciiWordHashes(text, start, i);
      const tokens = WORD_HASHES.length / 2;
      WORD_GRAMS.length = 0;
      for (let t = 0; t + 3 <= tokens; t++) {
        const h = 2 * t;
        WORD_GRAMS.push(combine2(WORD_HASHES[h]!, WORD_HASHES[h + 1]!, WORD_HASHES[h + 2]!, WORD_HASHES[h + 3]!, WORD_HASHES[h + 4]!, WORD_HASHES[h + 5]!));
      }
      if (!visit(WORD_GRAMS)) return;
    }
  }
}

const OTHER = 0;
const SPACE = 1;
const WORD_CHAR = 2;
/** Each ASCII character's kind for the scan of words: white space (as `\s`), a letter or digit, or other. */
const ASCII_KIND = Uint8Array.from({ length: 0x80 }, (_, c) =>
  c === 32 || (c >= 9 && c <= 13) ? SPACE : (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || (c >= 65 && c <= 90) ? WORD_CHAR : OTHER,
);

/** The token hashes of the ASCII word `text[start, end)` into {@link WORD_HASHES}, as {@link tokenHashes} makes them. */
function asciiWordHashes(text: string, start: number, end: number): void {
  WORD_HASHES.length = 0;
  let i = start;
  while (i < end) {
    let c = text.charCodeAt(i);
    while (i < end && !isAsciiWordChar(c)) c = text.charCodeAt(++i);
    if (i >= end) break;
    const from = i;
    let hasDigit = false;
    let hasUpper = false;
    while (i < end && isAsciiWordChar(c)) {
      if (c <= 57) hasDigit = true;
      else if (c <= 90) hasUpper = true;
      c = text.charCodeAt(++i);
    }
    if (hasDigit) {
      // Kept as it is (lower case): hashed in place, as tokenHashes hashes it.
      let h1 = 0x811c9dc5;
      let h2 = 0x9747b28c ^ (i - from);
      for (let k = from; k < i; k++) {
        let ch = text.charCodeAt(k);
        if (ch >= 65 && ch <= 90) ch += 32;
        h1 = Math.imul(h1 ^ ch, 0x01000193);
        h2 = Math.imul(h2 ^ ch, 0x5bd1e995);
        h2 ^= h2 >>> 13;
      }
      WORD_HASHES.push(h1 >>> 0, h2 >>> 0);
    } else {
      const token = text.slice(from, i);
      const h = tokenHashes(hasUpper ? token.toLowerCase() : token);
      WORD_HASHES.push(h[0], h[1]);
    }
  }
}

function isAsciiWordChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || (c >= 65 && c <= 90);
}

/** What `\s` matches (the words of a text are what lies between). */
function isSpace(c: number): boolean {
  if (c < 0x80) return c === 32 || (c >= 9 && c <= 13);
  return /\s/.test(String.fromCharCode(c));
}

/**
 * The trigram keys of a query term, in order, when the index can answer it: a single word (no spaces) of three or
 * more tokens. Null otherwise (a plain word, a two-token name, a quoted phrase of several words).
 */
export function queryGrams(text: string): number[] | null {
  const word = text.trim();
  if (word.length === 0 || /\s/.test(word) || word.length > MAX_WORD_CHARS) return null;
  const tokens = wordTokens(word);
  if (tokens.length < 3) return null;
  const hashes = tokens.map(tokenHashes);
  const grams: number[] = [];
  for (let i = 0; i + 3 <= hashes.length; i++) grams.push(combine(hashes[i]!, hashes[i + 1]!, hashes[i + 2]!));
  return grams;
}

/** Which distinct grams an event holds (its purge and rewrite delete by them). */
export function distinctGrams(grams: readonly IdentifierGram[]): number[] {
  return [...new Set(grams.map((g) => g.gram))];
}

/**
 * Whether a row's (gram, pos) entries hold the query's trigrams at consecutive positions. `entries` maps each of
 * the query's grams to the positions the row holds it at.
 */
export function holdsChain(grams: readonly number[], positionsOf: (gram: number) => ReadonlySet<number> | undefined): boolean {
  const first = positionsOf(grams[0]!);
  if (!first) return false;
  for (const p of first) {
    let ok = true;
    for (let j = 1; j < grams.length && ok; j++) ok = positionsOf(grams[j]!)?.has(p + j) === true;
    if (ok) return true;
  }
  return false;
}
