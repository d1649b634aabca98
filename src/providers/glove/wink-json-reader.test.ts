import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isEngramError } from '../../errors.js';
import { writeWinkFixture } from './test-support.js';
import { readWinkEmbeddings, type WinkRowSink } from './wink-json-reader.js';

const dir = mkdtempSync(join(tmpdir(), 'engram-wink-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function collector(): WinkRowSink & { rows: Map<number, number[]>; size: number; dims: number } {
  const sink = {
    rows: new Map<number, number[]>(),
    size: 0,
    dims: 0,
    start(size: number, dims: number) {
      sink.size = size;
      sink.dims = dims;
    },
    row(index: number, values: Float64Array) {
      sink.rows.set(index, [...values]);
    },
  };
  return sink;
}

async function readError(path: string): Promise<Error> {
  try {
    await readWinkEmbeddings(path, collector());
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected the read to fail');
}

describe('readWinkEmbeddings', () => {
  const path = join(dir, 'fixture.json');
  const fixture = writeWinkFixture(path, { words: 120, dimensions: 8 });

  it('reads every word and places each vector by its word index, with the values JSON.parse gives', async () => {
    const sink = collector();
    const vocabulary = await readWinkEmbeddings(path, sink);
    expect(vocabulary.words).toEqual(fixture.words);
    expect(vocabulary.dimensions).toBe(8);
    expect(sink.size).toBe(120);
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as { vectors: Record<string, number[]> };
    for (let i = 0; i < fixture.words.length; i++) {
      expect(sink.rows.get(i)).toEqual(parsed.vectors[fixture.words[i]!]!.slice(0, 8));
    }
  });

  it('gives the same result when every token is split across chunk boundaries', async () => {
    const whole = collector();
    await readWinkEmbeddings(path, whole);
    for (const chunkBytes of [1, 3, 7]) {
      const split = collector();
      const vocabulary = await readWinkEmbeddings(path, split, { chunkBytes });
      expect(vocabulary.words).toEqual(fixture.words);
      expect(split.rows).toEqual(whole.rows);
    }
  });

  it('rejects a truncated file', async () => {
    const text = readFileSync(path, 'utf8');
    const cut = join(dir, 'cut.json');
    writeFileSync(cut, text.slice(0, Math.floor(text.length * 0.7)));
    const err = await readError(cut);
    expect(isEngramError(err, 'INVALID_INPUT')).toBe(true);
    expect(err.message).toContain('truncated');
  });

  it('names the word whose vector carries the wrong index', async () => {
    const text = readFileSync(path, 'utf8').replace(/"word50":\[([^\]]*),50\]/, '"word50":[$1,51]');
    const bad = join(dir, 'bad-index.json');
    writeFileSync(bad, text);
    expect((await readError(bad)).message).toMatch(/vectors\.word50: word index 51 names "word51"/);
  });

  it('names a vector of the wrong length', async () => {
    const text = readFileSync(path, 'utf8').replace(/"word60":\[[^,]*,/, '"word60":[');
    const bad = join(dir, 'bad-length.json');
    writeFileSync(bad, text);
    expect((await readError(bad)).message).toMatch(/vectors\.word60: expected 10 numbers, found 9/);
  });

  it('reports words without a vector', async () => {
    const text = readFileSync(path, 'utf8').replace(/,"word70":\[[^\]]*\]/, '');
    const bad = join(dir, 'missing.json');
    writeFileSync(bad, text);
    expect((await readError(bad)).message).toMatch(/1 words have no vector \(the first: "word70"\)/);
  });

  it('rejects a file whose size disagrees with its words', async () => {
    const text = readFileSync(path, 'utf8').replace('"size":120', '"size":121');
    const bad = join(dir, 'size.json');
    writeFileSync(bad, text);
    expect((await readError(bad)).message).toMatch(/"words" holds 120 words but "size" says 121/);
  });
});
