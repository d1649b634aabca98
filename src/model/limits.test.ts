import { describe, expect, it } from 'vitest';
import {
  checkQuery,
  checkRequestIndexedChars,
  findLoneSurrogate,
  jsonTextProblem,
  jsonValueProblem,
  artifactIndexChars,
  MAX_ARTIFACT_INDEXED_CHARS,
  MAX_JSON_DEPTH,
  MAX_JSON_ENTRIES,
  MAX_QUERY_CHARS,
  MAX_REQUEST_INDEXED_CHARS,
  MAX_REQUEST_JSON_DEPTH,
  MAX_REQUEST_JSON_VALUES,
  MIN_ARTIFACT_INDEXED_CHARS,
  stringProblem,
} from './limits.js';

describe('findLoneSurrogate', () => {
  it('finds a half pair and ignores whole pairs', () => {
    expect(findLoneSurrogate('plain 😀 text')).toBe(-1);
    expect(findLoneSurrogate('a\ud800b')).toBe(1);
    expect(findLoneSurrogate('ends in half \ud83d')).toBe(13);
    expect(findLoneSurrogate('\ude00 starts with a low half')).toBe(0);
    expect(findLoneSurrogate('😀\ude00')).toBe(2);
  });
});

describe('stringProblem', () => {
  it('refuses lone surrogates always and NUL only where not allowed', () => {
    expect(stringProblem('ok', false)).toBeUndefined();
    expect(stringProblem('a\u0000b', true)).toBeUndefined();
    expect(stringProblem('a\u0000b', false)).toMatch(/NUL character at index 1/);
    expect(stringProblem('a\ud800', true)).toMatch(/lone UTF-16 surrogate \(\\uD800\) at index 1/);
  });
});

describe('jsonValueProblem', () => {
  const nested = (depth: number): unknown => {
    let v: unknown = 1;
    for (let i = 0; i < depth; i++) v = i % 2 ? { a: v } : [v];
    return v;
  };

  it('accepts plain JSON up to the depth limit and refuses one level more, naming where', () => {
    expect(jsonValueProblem(nested(MAX_JSON_DEPTH))).toBeUndefined();
    const problem = jsonValueProblem(nested(MAX_JSON_DEPTH + 1));
    expect(problem).toMatchObject({ params: { limit: 'MAX_JSON_DEPTH', max: MAX_JSON_DEPTH } });
    expect(problem!.path).toHaveLength(MAX_JSON_DEPTH);
  });

  it('walks a million levels without recursion, and refuses a cycle as too deep', () => {
    expect(jsonValueProblem(nested(1_000_000))).toMatchObject({ params: { limit: 'MAX_JSON_DEPTH' } });
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(jsonValueProblem(cycle)).toMatchObject({ params: { limit: 'MAX_JSON_DEPTH' } });
  });

  it('counts entries at every level', () => {
    const half = Object.fromEntries(Array.from({ length: MAX_JSON_ENTRIES / 2 }, (_, i) => [`k${i}`, i]));
    expect(jsonValueProblem({ a: half, b: Object.keys(half).slice(0, MAX_JSON_ENTRIES / 2 - 2) })).toBeUndefined();
    expect(jsonValueProblem({ a: half, b: Object.keys(half) })).toMatchObject({ params: { limit: 'MAX_JSON_ENTRIES' } });
  });

  it('refuses what JSON cannot hold, and lone surrogates in keys and strings, naming the path', () => {
    expect(jsonValueProblem({ a: [1, Number.NaN] })).toMatchObject({ path: ['a', 1], message: expect.stringMatching(/finite number/) });
    expect(jsonValueProblem({ a: 1n })).toMatchObject({ path: ['a'], message: expect.stringMatching(/not bigint/) });
    expect(jsonValueProblem({ when: new Date(0) })).toMatchObject({ path: ['when'], message: expect.stringMatching(/not Date/) });
    expect(jsonValueProblem({ f: () => 1 })).toMatchObject({ path: ['f'] });
    expect(jsonValueProblem({ a: { 'k\ud800': 1 } })).toMatchObject({ path: ['a', 'k\ud800'], message: expect.stringMatching(/^key contains a lone/) });
    expect(jsonValueProblem({ a: ['\udfff'] })).toMatchObject({ path: ['a', 0] });
    expect(jsonValueProblem({ a: 'x\u0000' })).toBeUndefined();
    expect(jsonValueProblem({ a: 'x\u0000' }, { allowNul: false })).toMatchObject({ path: ['a'] });
    expect(jsonValueProblem(Object.create(null) as object)).toBeUndefined();
  });
});

describe('jsonTextProblem', () => {
  it('refuses nesting past the request limit without parsing', () => {
    expect(jsonTextProblem(`${'['.repeat(MAX_REQUEST_JSON_DEPTH)}${']'.repeat(MAX_REQUEST_JSON_DEPTH)}`)).toBeUndefined();
    expect(jsonTextProblem(`${'['.repeat(MAX_REQUEST_JSON_DEPTH + 1)}`)).toMatchObject({ params: { limit: 'MAX_REQUEST_JSON_DEPTH' } });
    expect(jsonTextProblem('{"a":'.repeat(4_000_000))).toMatchObject({ params: { limit: 'MAX_REQUEST_JSON_DEPTH' } });
  });

  it('counts values outside strings only, with escaped quotes and backslashes inside them', () => {
    expect(jsonTextProblem(`[${'1,'.repeat(MAX_REQUEST_JSON_VALUES - 2)}1]`)).toBeUndefined();
    expect(jsonTextProblem(`[${'1,'.repeat(MAX_REQUEST_JSON_VALUES)}1]`)).toMatchObject({ params: { limit: 'MAX_REQUEST_JSON_VALUES' } });
    const tricky = JSON.stringify({ content: `${'[{,'.repeat(MAX_REQUEST_JSON_VALUES)} \\" \\\\" end` });
    expect(jsonTextProblem(tricky)).toBeUndefined();
    // A string ending in an escaped backslash closes at the next quote; what follows is structure again.
    expect(jsonTextProblem(`["a\\\\", ${'['.repeat(MAX_REQUEST_JSON_DEPTH)}]`)).toMatchObject({ params: { limit: 'MAX_REQUEST_JSON_DEPTH' } });
  });

  it('leaves malformed JSON to the parser', () => {
    expect(jsonTextProblem('{"unterminated')).toBeUndefined();
    expect(jsonTextProblem(']]]')).toBeUndefined();
  });
});

describe('checkQuery', () => {
  it('accepts a query at the length limit and refuses one more character, NUL and lone surrogates', () => {
    expect(() => checkQuery('q'.repeat(MAX_QUERY_CHARS), 'query')).not.toThrow();
    expect(() => checkQuery('q'.repeat(MAX_QUERY_CHARS + 1), 'query')).toThrow(expect.objectContaining({ code: 'INVALID_INPUT', data: expect.objectContaining({ field: 'query', limit: 'MAX_QUERY_CHARS' }) }));
    expect(() => checkQuery('a\u0000', 'text')).toThrow(expect.objectContaining({ data: expect.objectContaining({ field: 'text' }) }));
    expect(() => checkQuery('\ud800', 'query')).toThrow(expect.objectContaining({ code: 'INVALID_INPUT' }));
  });
});

describe('checkRequestIndexedChars', () => {
  it('counts inline content whole and a tool result up to what the index keeps of it', () => {
    expect(() => checkRequestIndexedChars([{ kind: 'tool_result', content: 'x'.repeat(MAX_REQUEST_INDEXED_CHARS * 2) }])).not.toThrow();
    expect(() => checkRequestIndexedChars([{ kind: 'user', content: 'x'.repeat(MAX_REQUEST_INDEXED_CHARS) }])).not.toThrow();
    expect(() => checkRequestIndexedChars([{ kind: 'user', content: 'x'.repeat(MAX_REQUEST_INDEXED_CHARS + 1) }])).toThrow(
      expect.objectContaining({ code: 'INVALID_INPUT', data: expect.objectContaining({ field: 'events', limit: 'MAX_REQUEST_INDEXED_CHARS' }) }),
    );
    const big = { kind: 'tool_result', content: 'y'.repeat(3_000_000) };
    expect(() => checkRequestIndexedChars([big, big])).toThrow(expect.objectContaining({ data: expect.objectContaining({ actual: 2 * MIN_ARTIFACT_INDEXED_CHARS }) }));
  });

  it('ignores inputs the schema will refuse anyway', () => {
    expect(() => checkRequestIndexedChars([null, 3, { content: 7 }, { kind: 'user' }])).not.toThrow();
  });
});

describe('artifactIndexChars', () => {
  const log = (lines: number) => Array.from({ length: lines }, (_, i) => `[build] compiling module ${i} ... ok (${(i * 2654435761).toString(16)})`).join('\n');
  const randomWords = (chars: number) => {
    let s = '';
    for (let i = 0; s.length < chars; i++) s += `${(i * 2654435761 % 1e9).toString(36)} `;
    return s.slice(0, chars);
  };

  it('indexes small texts whole and never more than asked', () => {
    expect(artifactIndexChars('short', MAX_ARTIFACT_INDEXED_CHARS)).toBe(5);
    const text = log(100_000);
    expect(artifactIndexChars(text, 1000)).toBe(1000);
  });

  it('indexes a log up to the maximum but text dense in distinct terms down to the minimum, the same each time', () => {
    const logText = log(200_000);
    expect(artifactIndexChars(logText, MAX_ARTIFACT_INDEXED_CHARS)).toBeGreaterThan(1_000_000);
    const words = randomWords(8_000_000);
    const indexed = artifactIndexChars(words, MAX_ARTIFACT_INDEXED_CHARS);
    expect(indexed).toBeGreaterThanOrEqual(MIN_ARTIFACT_INDEXED_CHARS);
    expect(indexed).toBeLessThan(600_000);
    expect(artifactIndexChars(words, MAX_ARTIFACT_INDEXED_CHARS)).toBe(indexed);
  });
});
