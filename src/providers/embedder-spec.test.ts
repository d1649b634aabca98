import { describe, expect, it } from 'vitest';
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

  it('creates nothing for none', async () => {
    expect(await createEmbedderFromSpec({ provider: 'none' })).toBeNull();
  });
});
