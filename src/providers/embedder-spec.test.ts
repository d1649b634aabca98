import { describe, expect, it } from 'vitest';
import type { EngramError } from '../errors.js';
import { createEmbedderFromSpec, DEFAULT_OPENAI_URL, parseEmbedderSpec } from './embedder-spec.js';

describe('embedder spec', () => {
  it('parses every provider', () => {
    expect(parseEmbedderSpec('builtin')).toEqual({ provider: 'builtin' });
    expect(parseEmbedderSpec(' none ')).toEqual({ provider: 'none' });
    expect(parseEmbedderSpec('off')).toEqual({ provider: 'none' });
    expect(parseEmbedderSpec('onnx:Xenova/all-MiniLM-L6-v2')).toEqual({ provider: 'onnx', model: 'Xenova/all-MiniLM-L6-v2' });
    expect(parseEmbedderSpec('onnx:./models/bge')).toEqual({ provider: 'onnx', model: './models/bge' });
  });

  it('takes the OpenAI-compatible root and key from the environment', () => {
    expect(parseEmbedderSpec('openai:text-embedding-3-small', {})).toEqual({ provider: 'openai', model: 'text-embedding-3-small', baseUrl: DEFAULT_OPENAI_URL });
    expect(parseEmbedderSpec('openai:nomic-embed-text', { ENGRAM_EMBEDDER_URL: 'http://127.0.0.1:11434/v1', OPENAI_API_KEY: 'k1' })).toEqual({
      provider: 'openai',
      model: 'nomic-embed-text',
      baseUrl: 'http://127.0.0.1:11434/v1',
      apiKey: 'k1',
    });
    expect(parseEmbedderSpec('openai:m', { ENGRAM_EMBEDDER_API_KEY: 'mine', OPENAI_API_KEY: 'theirs' })).toMatchObject({ apiKey: 'mine' });
  });

  it('rejects unknown providers and missing models, naming the field', () => {
    expect(() => parseEmbedderSpec('word2vec')).toThrow(expect.objectContaining({ code: 'INVALID_INPUT', data: { field: 'embedder' } }));
    expect(() => parseEmbedderSpec('onnx:')).toThrow(/names no model/);
    expect(() => parseEmbedderSpec('')).toThrow(/unknown/);
  });

  it('reads onnx options in brackets before the colon', () => {
    expect(parseEmbedderSpec('onnx[pooling=cls]:./models/bge-small')).toEqual({ provider: 'onnx', model: './models/bge-small', pooling: 'cls' });
    expect(parseEmbedderSpec('onnx[pooling=cls,dtype=q8]:./models/bge-small')).toEqual({ provider: 'onnx', model: './models/bge-small', pooling: 'cls', dtype: 'q8' });
    expect(parseEmbedderSpec(' onnx[ dtype = fp16 , pooling = mean ]:Xenova/bge-small-en-v1.5')).toEqual({
      provider: 'onnx',
      model: 'Xenova/bge-small-en-v1.5',
      pooling: 'mean',
      dtype: 'fp16',
    });
    expect(parseEmbedderSpec('onnx[]:./m')).toEqual({ provider: 'onnx', model: './m' });
  });

  it('takes everything after the first colon as the model, so no path is read as options', () => {
    for (const path of ['./models/odd?pooling=cls', './models/[pooling=cls]', '/srv/m:v2', 'C:\\models\\bge', './a,dtype=q8']) {
      expect(parseEmbedderSpec(`onnx:${path}`)).toEqual({ provider: 'onnx', model: path });
      expect(parseEmbedderSpec(`onnx[dtype=q8]:${path}`)).toEqual({ provider: 'onnx', model: path, dtype: 'q8' });
    }
  });

  it('rejects a bad onnx option, naming it', () => {
    const cases: Array<[spec: string, option: string, message: string]> = [
      ['onnx[pool=cls]:./m', 'pool', 'unknown option "pool" in "onnx[pool=cls]:./m"; onnx takes pooling (mean, cls) and dtype (fp32, fp16, q8,'],
      ['onnx[pooling=max]:./m', 'pooling', 'pooling=max in "onnx[pooling=max]:./m" is not one of mean, cls'],
      ['onnx[dtype=fp64]:./m', 'dtype', 'dtype=fp64 in "onnx[dtype=fp64]:./m" is not one of fp32, fp16, q8, int8, uint8, q4, q4f16, bnb4'],
      ['onnx[pooling]:./m', 'pooling', 'option pooling has no value in "onnx[pooling]:./m"; write pooling=<mean|cls>'],
      ['onnx[dtype=]:./m', 'dtype', 'option dtype has no value'],
      ['onnx[dtype=q8,dtype=fp32]:./m', 'dtype', 'option dtype is given twice'],
      ['onnx[pooling=CLS]:./m', 'pooling', 'pooling=CLS'],
    ];
    for (const [spec, option, message] of cases) {
      const err = (() => {
        try {
          parseEmbedderSpec(spec);
        } catch (e) {
          return e as EngramError;
        }
        throw new Error(`${spec} was accepted`);
      })();
      expect(err.code, spec).toBe('INVALID_INPUT');
      expect(err.data, spec).toEqual({ field: 'embedder', option });
      expect(err.message, spec).toContain(message);
    }
  });

  it('rejects malformed option lists and options on providers that take none', () => {
    expect(() => parseEmbedderSpec('onnx[pooling=cls:./m')).toThrow(/malformed option list; write onnx\[pooling=cls,dtype=q8\]:<model>/);
    expect(() => parseEmbedderSpec('onnx[pooling=cls]x:./m')).toThrow(/malformed option list/);
    expect(() => parseEmbedderSpec('openai[dtype=q8]:text-embedding-3-small')).toThrow(/openai takes no options/);
    expect(() => parseEmbedderSpec('builtin[pooling=cls]')).toThrow(/builtin takes no options/);
    expect(() => parseEmbedderSpec('onnx[pooling=cls]')).toThrow(/names no model; write onnx\[pooling=cls\]:<model>/);
    expect(() => parseEmbedderSpec('word2vec[x=1]:m')).toThrow(/unknown "word2vec\[x=1\]:m"/);
  });

  it('creates nothing for none', async () => {
    expect(await createEmbedderFromSpec({ provider: 'none' })).toBeNull();
  });
});
