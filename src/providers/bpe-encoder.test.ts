import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { Prng } from '../util/prng.js';
import { BpeEncoder, buildRankTable, MAX_PIECE_BYTES } from './bpe-encoder.js';

const require = createRequire(import.meta.url);
const reference = require('gpt-tokenizer') as typeof import('gpt-tokenizer');
const vocabulary = (require('gpt-tokenizer/bpeRanks/o200k_base') as { default: Array<string | number[]> }).default;
const { O200K_TOKEN_SPLIT_REGEX } = require('gpt-tokenizer/encodingParams/constants') as { O200K_TOKEN_SPLIT_REGEX: RegExp };
const encoder = new BpeEncoder(buildRankTable(vocabulary), O200K_TOKEN_SPLIT_REGEX);
/** Special-token strings are ordinary text to Engram (stored content may contain them). */
const AS_TEXT = { disallowedSpecial: new Set<string>() };

const SAMPLES = [
  'hello world',
  "I'm sure you've seen it; they'll say we'd go. DON'T SHOUT",
  'naïve café résumé — Привет мир, 你好世界, مرحبا بالعالم, שלום עולם, नमस्ते',
  '🎉👍🏽🇫🇷👨‍👩‍👧 e\u0301 a\u0308\u0301 ﷽',
  'function f(x: number): string {\n  return `${x}`; // comment\n}\n\n\n    indented\r\n\tTabbed',
  '<|endoftext|> <|im_start|>user\nhi<|im_end|>',
  'https://example.com/a/b?c=d&e=f#g 192.168.0.1:8080 0xDEADBEEF 3.14159 1,000,000',
  '   leading spaces and trailing   \n\n  \n',
  'path/to/file.ts:42 --max-retries=7 ECONNREFUSED src/app.ts:\n/usr/bin/env node\n.\n/x',
  '\\\\server\\share "quoted" \'single\' `tick` \u0000 \u200b\u200d \ufeff',
];

/** Random words from several scripts: pieces stay short, so counts must equal the reference exactly. */
function randomProse(prng: Prng, words: number): string {
  const alphabets = ['abcdefghijklmnopqrstuvwxyz', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'éèàçüößñ', 'абвгдежзик', '的一是不了人我在有他', '0123456789', '.,;:!?-_/\\"\'()[]{}', '😀🎉👍'];
  const separators = [' ', ' ', ' ', '\n', '\t', '  ', ', ', '. ', '\n\n'];
  let out = '';
  for (let w = 0; w < words; w++) {
    const chars = [...prng.pick(alphabets)];
    const length = prng.int(1, 12);
    for (let c = 0; c < length; c++) out += prng.pick(chars);
    out += prng.pick(separators);
  }
  return out;
}

/** The o200k pre-tokenizer's pieces of `text`. */
function pieces(text: string): string[] {
  return [...text.matchAll(new RegExp(O200K_TOKEN_SPLIT_REGEX.source, 'gu'))].map((m) => m[0]);
}

describe('BpeEncoder', () => {
  it('counts exactly what gpt-tokenizer counts for text without long runs', () => {
    const prng = new Prng(7);
    const texts = [...SAMPLES, ...Array.from({ length: 40 }, () => randomProse(prng, 200))];
    for (const text of texts) {
      expect(encoder.count(text), JSON.stringify(text.slice(0, 60))).toBe(reference.countTokens(text, AS_TEXT));
    }
  });

  it('cuts prefixes at the reference token boundaries', () => {
    const prng = new Prng(11);
    for (const text of [...SAMPLES, ...Array.from({ length: 10 }, () => randomProse(prng, 100))]) {
      const tokens = reference.encode(text, AS_TEXT);
      for (const k of [1, 2, 3, 7, 20, 50, tokens.length - 1, tokens.length, tokens.length + 5]) {
        if (k < 1) continue;
        const expected = reference.decode(tokens.slice(0, k)).replace(/\uFFFD+$/u, '');
        const cut = text.slice(0, encoder.prefixLength(text, k));
        // The reference decodes bytes; a cut inside a character leaves U+FFFD there, which the prefix drops.
        if (!expected.includes('\uFFFD')) expect(cut, `${JSON.stringify(text.slice(0, 40))} @${k}`).toBe(expected);
      }
    }
  });

  it('counts a long run as the sum of its units of at most MAX_PIECE_BYTES', () => {
    const run = 'x'.repeat(MAX_PIECE_BYTES * 3 + 100);
    const units = [run.slice(0, 100), ...Array.from({ length: 3 }, () => 'x'.repeat(MAX_PIECE_BYTES))];
    expect(encoder.count(run)).toBe(units.reduce((sum, u) => sum + reference.countTokens(u, AS_TEXT), 0));
    // Within a few tokens per cut of the uncut count.
    expect(Math.abs(encoder.count(run) - reference.countTokens(run, AS_TEXT))).toBeLessThanOrEqual(3 * 3);
  });

  it('counts in steps, resuming inside long runs, exactly what count counts', () => {
    const prng = new Prng(5);
    const text = `${randomProse(prng, 300)}${'\\'.repeat(5000)} ${'😀'.repeat(3000)}${randomProse(prng, 50)}`;
    for (const units of [1, 3, 64]) {
      const progress = encoder.startCount(text);
      let steps = 0;
      while (!encoder.countStep(progress, units)) steps++;
      expect(progress.tokens).toBe(encoder.count(text));
      expect(steps).toBeGreaterThan(0);
    }
  });

  const MB = 1024 * 1024;
  const randomBytes = (seed: number, n: number): Buffer => {
    const prng = new Prng(seed);
    return Buffer.from(Array.from({ length: n }, () => prng.int(0, 255)));
  };
  const SHAPES: Record<string, () => string> = {
    'random bytes read as UTF-8': () => randomBytes(1, MB).toString('utf8'),
    'random bytes read as latin1': () => randomBytes(2, MB).toString('latin1'),
    'one long word': () => 'supercalifragilistic'.repeat(MB / 20),
    'random lowercase letters': () => {
      const prng = new Prng(3);
      return Array.from({ length: MB }, () => String.fromCharCode(97 + prng.int(0, 25))).join('');
    },
    emoji: () => '😀🎉👍🏽🇫🇷'.repeat(MB / 12),
    backslashes: () => '\\'.repeat(MB),
    quotes: () => '"'.repeat(MB),
    'accented letters': () => 'é'.repeat(MB / 2),
    CJK: () => '漢字仮名'.repeat(MB / 12),
    'combining marks': () => 'e\u0301\u0308'.repeat(MB / 6),
    'lone surrogates': () => '\ud800'.repeat(MB / 3),
    'line breaks': () => '\n'.repeat(MB),
    spaces: () => ' '.repeat(MB),
  };

  for (const [shape, make] of Object.entries(SHAPES)) {
    it(`counts 1 MB of ${shape} as the sum of its pieces, and truncates it to a prefix within the limit`, () => {
      const text = make();
      const total = encoder.count(text);
      expect(total).toBeGreaterThan(0);
      // Piecewise: each pre-token piece is encoded on its own (long ones in units), so counts add up.
      const sample = text.slice(0, 50_000);
      const parts = pieces(sample);
      expect(parts.join('')).toBe(sample);
      expect(parts.reduce((sum, p) => sum + encoder.count(p), 0)).toBe(encoder.count(sample));
      for (const limit of [1, 100, 5000]) {
        const n = encoder.prefixLength(text, limit);
        const prefix = text.slice(0, n);
        expect(encoder.count(prefix)).toBeLessThanOrEqual(limit);
        // Cut at a character boundary: never half a surrogate pair.
        const last = prefix.charCodeAt(prefix.length - 1);
        expect(last >= 0xd800 && last <= 0xdbff && text.charCodeAt(n) >= 0xdc00 && text.charCodeAt(n) <= 0xdfff).toBe(false);
      }
      expect(encoder.prefixLength(text, total)).toBe(text.length);
    });
  }
});
