import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, isAbsolute, join, resolve } from 'node:path';
import { EngramError } from '../errors.js';
import type { Embedder } from './embedder.js';
import { normalize } from './embedder.js';
import { defaultCacheDir } from './glove/glove-cache.js';
import { isMissingPackage, isOptionalPackageInstalled, missingPackageError } from './optional-package.js';
import { ONNX_DTYPES, ONNX_MODEL_FILES, ONNX_POOLINGS, onnxWeightFile, openOnnxModelDir, type OnnxDtype, type OnnxPooling } from './onnx-model-dir.js';

export interface OnnxEmbedderOptions {
  /**
   * A Hugging Face hub id with ONNX weights (`Xenova/all-MiniLM-L6-v2`, `Xenova/bge-small-en-v1.5`), or a local
   * directory holding `config.json`, `tokenizer.json`, `tokenizer_config.json` and `onnx/model.onnx` (or another
   * dtype's `onnx/model_<suffix>.onnx`): the layout of those repositories. Absolute paths, paths starting with `.`
   * or `~`, and existing directories are directories; anything else is a hub id.
   */
  model: string;
  /**
   * Where hub models are downloaded to and looked up, one folder per id (`<cacheDir>/Xenova/all-MiniLM-L6-v2/`).
   * Default: `$ENGRAM_CACHE_DIR/models`, else `$XDG_CACHE_HOME/engram/models`, else `~/.cache/engram/models`.
   * Unused for a local directory.
   */
  cacheDir?: string;
  /**
   * Download a hub model that is not in `cacheDir`. Default true. A model already in the cache, or a local
   * directory, is loaded without any network access.
   */
  allowRemote?: boolean;
  /**
   * How token vectors become one text vector: `mean` over the non-padding tokens (sentence-transformers models
   * such as all-MiniLM-L6-v2) or the `cls` token's vector (BGE models). Default: what a local directory's
   * sentence-transformers metadata says (`modules.json` and `1_Pooling/config.json`), else `mean`.
   */
  pooling?: OnnxPooling;
  /** Texts per model call. Default 32. */
  batchSize?: number;
  /**
   * Tokens per text, special tokens included; longer texts are truncated. Default: the tokenizer's
   * `model_max_length`, capped by the model's `max_position_embeddings`, else 512.
   */
  maxLength?: number;
  /**
   * Weight variant: `fp32` reads `onnx/model.onnx`, `q8` reads `onnx/model_quantized.onnx`, etc. Default: a local
   * directory's `config.json` `transformers.js_config.dtype` when it names one, else `fp32`.
   */
  dtype?: OnnxDtype;
}

const DEFAULT_BATCH_SIZE = 32;
const FALLBACK_MAX_LENGTH = 512;
/** The parts of `@huggingface/transformers` this provider uses (the library's own types are much wider). */
interface TensorLike {
  readonly dims: readonly number[];
  readonly data: ArrayLike<number | bigint>;
}
type Tokenizer = ((texts: string[], options: { padding: true; truncation: true; max_length: number }) => Record<string, TensorLike>) & {
  readonly model_max_length: unknown;
};
type Model = ((inputs: Record<string, TensorLike>) => Promise<Record<string, TensorLike | undefined>>) & {
  readonly config: { max_position_embeddings?: unknown };
  dispose(): Promise<unknown>;
};

type ModelSource = { kind: 'directory'; dir: string } | { kind: 'hub'; id: string; cacheDir: string };

/** transformers.js, an optional peer dependency (./optional-package.ts): not installed, a NOT_FOUND naming the install. */
async function importTransformers(): Promise<typeof import('@huggingface/transformers')> {
  try {
    return await import('@huggingface/transformers');
  } catch (err) {
    throw isMissingPackage(err, '@huggingface/transformers') ? missingPackageError('@huggingface/transformers', err) : err;
  }
}

/**
 * Local sentence embeddings from an ONNX export of a Hugging Face model, run in-process by
 * `@huggingface/transformers` on onnxruntime-node. The library (and its native runtime) is imported on the
 * first call, so importing this module costs nothing. Vectors are pooled as `pooling` says and L2-normalised;
 * empty or blank texts get the zero vector without running the model. `dimensions` is measured with one probe
 * text at load time, so a model whose output differs from its config's `hidden_size` is still right.
 *
 * A local directory is checked before anything loads (a missing file is named, with the dtypes the directory does
 * hold) and its metadata decides the pooling and dtype that `options` leave open (see {@link openOnnxModelDir}).
 * Hub models take `options` or the defaults (`mean`, `fp32`): their metadata files are not downloaded.
 *
 * Named `onnx:<hub id or directory name>`, with `+cls` and `+<dtype>` appended when those differ from the
 * defaults, since they change every vector: whether they were passed or read from the directory, a store
 * embedded one way is never compared with vectors made another.
 */
export async function createOnnxEmbedder(options: OnnxEmbedderOptions): Promise<Embedder> {
  validateOptions(options);
  // Before the model is looked at: without the library, no model of any kind can run.
  if (!isOptionalPackageInstalled('@huggingface/transformers')) throw missingPackageError('@huggingface/transformers');
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  const source = resolveModelSource(options.model, options.cacheDir);
  const local =
    source.kind === 'directory'
      ? openOnnxModelDir(source.dir, { ...(options.pooling ? { pooling: options.pooling } : {}), ...(options.dtype ? { dtype: options.dtype } : {}) })
      : undefined;
  const pooling = local?.pooling.value ?? options.pooling ?? 'mean';
  const dtype = local?.dtype.value ?? options.dtype ?? 'fp32';
  const modelFile = onnxWeightFile(dtype);
  const label = source.kind === 'hub' ? source.id : basename(source.dir);
  const { tokenizer, model } = await loadModel(source, modelFile, dtype, options.allowRemote ?? true);

  // Tokenizer configs without a limit say 1e30 (Python's VERY_LARGE_INTEGER); the position table is the real one.
  const limit = (n: unknown): number => (typeof n === 'number' && n > 0 && n < 1e9 ? n : Infinity);
  const knownMax = Math.min(limit(tokenizer.model_max_length), limit(model.config.max_position_embeddings));
  const maxLength = options.maxLength ?? (knownMax === Infinity ? FALLBACK_MAX_LENGTH : knownMax);

  let closed = false;
  const embedBatch = async (texts: string[]): Promise<Float32Array[]> => {
    try {
      const inputs = tokenizer(texts, { padding: true, truncation: true, max_length: maxLength });
      const outputs = await model(inputs);
      const hidden = outputs.last_hidden_state ?? outputs.token_embeddings;
      if (!hidden) {
        throw new EngramError('PROVIDER_ERROR', `${label}: the model has no last_hidden_state output (it has ${Object.keys(outputs).join(', ')})`, {
          model: options.model,
          retryable: false,
        });
      }
      return pool(hidden, inputs.attention_mask, pooling);
    } catch (err) {
      if (err instanceof EngramError) throw err;
      throw new EngramError('PROVIDER_ERROR', `${label}: the model failed: ${(err as Error).message}`, { model: options.model, retryable: false }, { cause: err });
    }
  };

  let dimensions: number;
  try {
    dimensions = (await embedBatch(['dimension probe']))[0]!.length;
    if (dimensions === 0) {
      throw new EngramError('PROVIDER_ERROR', `${label}: the model returned an empty embedding`, { model: options.model, retryable: false });
    }
  } catch (err) {
    await model.dispose().catch(() => undefined);
    throw err;
  }

  const embed = async (texts: string[]): Promise<Float32Array[]> => {
    if (closed) throw new EngramError('PROVIDER_ERROR', `${label}: the embedder is closed`, { model: options.model, retryable: false });
    const out: Float32Array[] = new Array(texts.length);
    // Blank texts get zeros (the seam's contract) instead of the vector of `[CLS] [SEP]`. The rest run longest
    // first, so a batch holds texts of similar length and pads little; pooling ignores padding, so the order
    // does not change any vector.
    const order = texts
      .map((_, i) => i)
      .filter((i) => texts[i]!.trim().length > 0)
      .sort((a, b) => texts[b]!.length - texts[a]!.length);
    for (let start = 0; start < order.length; start += batchSize) {
      const ids = order.slice(start, start + batchSize);
      const vectors = await embedBatch(ids.map((i) => texts[i]!));
      ids.forEach((id, j) => (out[id] = vectors[j]!));
    }
    for (let i = 0; i < texts.length; i++) out[i] ??= new Float32Array(dimensions);
    return out;
  };

  return {
    name: `onnx:${label}${pooling === 'mean' ? '' : `+${pooling}`}${dtype === 'fp32' ? '' : `+${dtype}`}`,
    dimensions,
    embed,
    async close() {
      if (closed) return;
      closed = true;
      await model.dispose();
    },
  };
}

function validateOptions(o: OnnxEmbedderOptions): void {
  const invalid = (field: string, message: string): EngramError => new EngramError('INVALID_INPUT', `${field}: ${message}`, { field });
  if (typeof o.model !== 'string' || o.model.trim() === '') throw invalid('model', 'expected a hub id or a model directory');
  if (o.pooling !== undefined && !ONNX_POOLINGS.includes(o.pooling)) throw invalid('pooling', `expected ${ONNX_POOLINGS.join(' or ')}, got ${String(o.pooling)}`);
  if (o.dtype !== undefined && !ONNX_DTYPES.includes(o.dtype)) throw invalid('dtype', `expected one of ${ONNX_DTYPES.join(', ')}, got ${String(o.dtype)}`);
  for (const field of ['batchSize', 'maxLength'] as const) {
    const v = o[field];
    if (v !== undefined && (!Number.isInteger(v) || v < 1)) throw invalid(field, `expected a positive integer, got ${String(v)}`);
  }
}

/** Hub ids as the hub accepts them: `name` or `owner/name`, letters, digits, `-`, `_`, `.`. */
const HUB_ID = /^[\w.-]+(\/[\w.-]+)?$/;

function resolveModelSource(model: string, cacheDir: string | undefined): ModelSource {
  const expanded = model === '~' || model.startsWith('~/') ? join(homedir(), model.slice(1)) : model;
  if (isAbsolute(expanded) || expanded.startsWith('.') || model.startsWith('~') || existsSync(expanded)) {
    return { kind: 'directory', dir: resolve(expanded) };
  }
  if (!HUB_ID.test(model) || model.includes('..')) {
    throw new EngramError('INVALID_INPUT', `model: ${model} is neither an existing directory nor a hub id like Xenova/all-MiniLM-L6-v2`, {
      field: 'model',
    });
  }
  return { kind: 'hub', id: model, cacheDir: resolve(cacheDir ?? join(defaultCacheDir(), 'models')) };
}

/** The files a directory must hold, of those listed, that are missing. */
function missingFiles(dir: string, files: readonly string[]): string[] {
  return files.filter((f) => !existsSync(join(dir, f)));
}

async function loadModel(
  source: ModelSource,
  modelFile: string,
  dtype: OnnxDtype,
  allowRemote: boolean,
): Promise<{ tokenizer: Tokenizer; model: Model }> {
  const required = [...ONNX_MODEL_FILES, modelFile];
  let path: string;
  /** Set when the hub model must be downloaded: the cache directory transformers writes it to. */
  let downloadTo: string | undefined;
  if (source.kind === 'directory') {
    // openOnnxModelDir has checked that every file is there.
    path = source.dir;
  } else {
    // A model whose files are all in the cache loads from there as a plain directory: no network, not even the
    // existence checks transformers makes (its tokenizer lookup ignores `cache_dir` and `local_files_only`).
    const cachedDir = join(source.cacheDir, source.id);
    const missing = missingFiles(cachedDir, required);
    if (missing.length === 0) {
      path = cachedDir;
    } else if (!allowRemote) {
      throw new EngramError(
        'PROVIDER_ERROR',
        `${source.id} is not in the model cache (${cachedDir} lacks ${missing.join(', ')}) and downloads are off: download it on a machine with network (it is saved under ${cachedDir}) or pass a local directory`,
        { model: source.id, cacheDir: source.cacheDir, missing, retryable: false },
      );
    } else {
      path = source.id;
      downloadTo = source.cacheDir;
    }
  }

  const transformers = await importTransformers();
  const loadOptions = downloadTo === undefined ? { local_files_only: true } : { local_files_only: false, cache_dir: downloadTo };
  let model: Model | undefined;
  try {
    // The model first: on the hub, its config.json decides "no such repository" before the tokenizer is asked.
    model = (await transformers.AutoModel.from_pretrained(path, { ...loadOptions, dtype, device: 'cpu' })) as unknown as Model;
    const tokenizer = (await transformers.AutoTokenizer.from_pretrained(path, loadOptions)) as unknown as Tokenizer;
    return { tokenizer, model };
  } catch (err) {
    await model?.dispose().catch(() => undefined);
    const missing = source.kind === 'hub' ? missingFiles(join(source.cacheDir, source.id), required) : [];
    throw loadError(err, source, missing, transformers.ModelFileNotFoundError);
  }
}

/**
 * Translates a loading failure of transformers (or of fetch under it) into an EngramError that says what to do.
 * `missing`: the required files still absent from the hub model's cache folder afterwards.
 */
function loadError(err: unknown, source: ModelSource, missing: string[], notFound: new (...args: never[]) => Error): EngramError {
  const detail = err instanceof Error ? err.message : String(err);
  if (source.kind === 'directory') {
    return new EngramError('PROVIDER_ERROR', `${source.dir}: cannot load the model: ${detail}`, { model: source.dir, retryable: false }, { cause: err });
  }
  const cachedDir = join(source.cacheDir, source.id);
  const data = { model: source.id, cacheDir: source.cacheDir, missing };
  if (err instanceof notFound) {
    return new EngramError(
      'PROVIDER_ERROR',
      `${source.id} was not found on the Hugging Face hub, or is gated (set HF_TOKEN), or has no ${missing.join(', ') || 'ONNX weights of this dtype'}: ${detail}`,
      { ...data, status: (err as { status?: unknown }).status, retryable: false },
      { cause: err },
    );
  }
  // fetch rejects with a TypeError whose `cause` is the socket error (ENOTFOUND, ECONNREFUSED, a connect timeout).
  const isNetworkFailure =
    err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError' || (err instanceof TypeError && err.cause !== undefined));
  if (isNetworkFailure) {
    const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause;
    return new EngramError(
      'PROVIDER_ERROR',
      `no network: download ${source.id} on a machine with network (it is saved under ${cachedDir}) or pass a local directory (${String(cause?.code ?? cause?.message ?? detail)})`,
      { ...data, retryable: true },
      { cause: err },
    );
  }
  const lacking = missing.length > 0 ? ` (${cachedDir} still lacks ${missing.join(', ')})` : '';
  return new EngramError('PROVIDER_ERROR', `${source.id}: cannot load the model${lacking}: ${detail}`, { ...data, retryable: false }, { cause: err });
}

/**
 * One normalised vector per row of `hidden` ([batch, sequence, hidden]). Mean pooling skips the positions
 * `mask` ([batch, sequence]) marks as padding: a model's states there are not zero.
 */
function pool(hidden: TensorLike, mask: TensorLike | undefined, pooling: OnnxPooling): Float32Array[] {
  const [batch, seq, dims] = hidden.dims as [number, number, number];
  const h = hidden.data as ArrayLike<number>;
  const m = mask?.data;
  const out: Float32Array[] = [];
  for (let b = 0; b < batch; b++) {
    const v = new Float32Array(dims);
    if (pooling === 'cls') {
      for (let d = 0; d < dims; d++) v[d] = h[b * seq * dims + d]!;
    } else {
      let count = 0;
      for (let s = 0; s < seq; s++) {
        if (m && Number(m[b * seq + s]) === 0) continue;
        count++;
        const base = (b * seq + s) * dims;
        for (let d = 0; d < dims; d++) v[d] = v[d]! + h[base + d]!;
      }
      if (count > 0) for (let d = 0; d < dims; d++) v[d] = v[d]! / count;
    }
    out.push(normalize(v));
  }
  return out;
}
