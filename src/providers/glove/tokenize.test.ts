import { describe, expect, it } from 'vitest';
import { tokenizeForEmbedding } from './tokenize.js';

const texts = (s: string) => tokenizeForEmbedding(s).map((t) => t.text);
const partsOf = (s: string) => tokenizeForEmbedding(s)[0]!.parts;

describe('tokenizeForEmbedding', () => {
  it('lowercases words and keeps identifiers, paths and versions whole', () => {
    expect(texts('Fix ECONNREFUSED in src/db/pool.ts:42 before v2.3.1, see tau-bench.')).toEqual([
      'fix',
      'econnrefused',
      'in',
      'src/db/pool.ts:42',
      'before',
      'v2.3.1',
      'see',
      'tau-bench',
    ]);
  });

  it('splits identifiers into words for lookup: camelCase, snake_case, acronyms, digits', () => {
    expect(partsOf('createBuiltinEmbedder')).toEqual(['create', 'builtin', 'embedder']);
    expect(partsOf('max_retry_count')).toEqual(['max', 'retry', 'count']);
    expect(partsOf('HTTPServerError')).toEqual(['http', 'server', 'error']);
    expect(partsOf('src/db/pool.ts:42')).toEqual(['src', 'db', 'pool', 'ts', '42']);
    expect(partsOf('tau-bench')).toEqual(['tau', 'bench']);
    expect(partsOf('utf8')).toEqual(['utf', '8']);
  });

  it('marks identifiers, and plain words and contractions as not identifiers', () => {
    const [plain, camel, path, contraction] = tokenizeForEmbedding("database getUser pool.ts don't");
    expect(plain).toMatchObject({ isIdentifier: false, isContraction: false, parts: [] });
    expect(camel).toMatchObject({ isIdentifier: true });
    expect(path).toMatchObject({ isIdentifier: true });
    expect(contraction).toMatchObject({ isIdentifier: false, isContraction: true });
  });

  it('expands contractions, curly apostrophes included', () => {
    expect(partsOf("don't")).toEqual(['do', 'not']);
    expect(partsOf('can’t')).toEqual(['can', 'not']);
    expect(partsOf("won't")).toEqual(['will', 'not']);
    expect(partsOf("I'm")).toEqual(['i', 'am']);
    expect(partsOf("we've")).toEqual(['we', 'have']);
    expect(partsOf("Caroline's")).toEqual(['caroline']);
  });

  it('drops single letters, which the vocabulary lacks, but keeps single digits', () => {
    expect(texts('I saw a cat and 3 dogs')).toEqual(['saw', 'cat', 'and', '3', 'dogs']);
  });

  it('returns nothing for text without letters or digits', () => {
    expect(tokenizeForEmbedding('')).toEqual([]);
    expect(tokenizeForEmbedding(' -- !! ... ')).toEqual([]);
  });
});
