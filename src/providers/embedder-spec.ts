import { EngramError } from '../errors.js';
import type { Embedder } from './embedder.js';

/**
 * Which embedder to use, as one string (CLI `--embedder`, `$ENGRAM_EMBEDDER`, library option):
 * - `builtin` (default): the offline GloVe-based embedder, no download;
 * - `none`: full-text recall only;
 * - `onnx:<model>`: a local ONNX sentence model through transformers.js: a Hugging Face id
 *   (`onnx:Xenova/all-MiniLM-L6-v2`, downloaded once into the cache) or a local model directory
 *   (`onnx:./models/bge-small`), which never touches the network;
 * - `openai:<model>`: any OpenAI-compatible `/v1/embeddings` server; its root comes from
 *   `$ENGRAM_EMBEDDER_URL` (default `https://api.openai.com/v1`), its key from `$ENGRAM_EMBEDDER_API_KEY` or
 *   `$OPENAI_API_KEY` (local servers need none).
 */
export type EmbedderSpec =
  | { provider: 'none' }
  | { provider: 'builtin' }
  | { provider: 'onnx'; model: string }
  | { provider: 'openai'; model: string; baseUrl: string; apiKey?: string };

export const DEFAULT_EMBEDDER_SPEC = 'builtin';
export const DEFAULT_OPENAI_URL = 'https://api.openai.com/v1';

/** Parses an embedder string (see {@link EmbedderSpec}); `env` supplies the OpenAI URL and key. */
export function parseEmbedderSpec(spec: string, env: Record<string, string | undefined> = process.env): EmbedderSpec {
  const s = spec.trim();
  if (s === 'none' || s === 'off') return { provider: 'none' };
  if (s === 'builtin') return { provider: 'builtin' };
  const colon = s.indexOf(':');
  const provider = colon > 0 ? s.slice(0, colon) : s;
  const model = colon > 0 ? s.slice(colon + 1).trim() : '';
  if ((provider === 'onnx' || provider === 'openai') && model.length === 0) {
    throw new EngramError('INVALID_INPUT', `embedder: "${spec}" names no model; write ${provider}:<model>`, { field: 'embedder' });
  }
  if (provider === 'onnx') return { provider: 'onnx', model };
  if (provider === 'openai') {
    const apiKey = env.ENGRAM_EMBEDDER_API_KEY ?? env.OPENAI_API_KEY;
    return { provider: 'openai', model, baseUrl: env.ENGRAM_EMBEDDER_URL ?? DEFAULT_OPENAI_URL, ...(apiKey ? { apiKey } : {}) };
  }
  throw new EngramError('INVALID_INPUT', `embedder: unknown "${spec}"; expected builtin, none, onnx:<model or directory> or openai:<model>`, {
    field: 'embedder',
  });
}

/** Creates the embedder a spec names; null for `none`. Providers are loaded only when used. */
export async function createEmbedderFromSpec(spec: EmbedderSpec): Promise<Embedder | null> {
  switch (spec.provider) {
    case 'none':
      return null;
    case 'builtin': {
      const { createBuiltinEmbedder } = await import('./builtin-embedder.js');
      return createBuiltinEmbedder();
    }
    case 'onnx': {
      const { createOnnxEmbedder } = await import('./onnx-embedder.js');
      return createOnnxEmbedder({ model: spec.model });
    }
    case 'openai': {
      const { createOpenAiEmbedder } = await import('./openai-embedder.js');
      return createOpenAiEmbedder({ baseUrl: spec.baseUrl, model: spec.model, ...(spec.apiKey ? { apiKey: spec.apiKey } : {}) });
    }
  }
}
