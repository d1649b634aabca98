import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { EngramError } from '../errors.js';

/** ONNX weight variants, named as `@huggingface/transformers` names them; each is its own file under `onnx/`. */
export const ONNX_DTYPES = ['fp32', 'fp16', 'q8', 'int8', 'uint8', 'q4', 'q4f16', 'bnb4'] as const;
export type OnnxDtype = (typeof ONNX_DTYPES)[number];

/**
 * How token vectors become one text vector: `mean` over the non-padding tokens (sentence-transformers models such
 * as all-MiniLM-L6-v2, E5, GTE) or the first token's vector, `cls` (BGE models).
 */
export const ONNX_POOLINGS = ['mean', 'cls'] as const;
export type OnnxPooling = (typeof ONNX_POOLINGS)[number];

/** The onnx file suffix of each dtype; mirrors `DEFAULT_DTYPE_SUFFIX_MAPPING` in transformers' utils/dtypes.js. */
const DTYPE_FILE_SUFFIX: Record<OnnxDtype, string> = {
  fp32: '',
  fp16: '_fp16',
  q8: '_quantized',
  int8: '_int8',
  uint8: '_uint8',
  q4: '_q4',
  q4f16: '_q4f16',
  bnb4: '_bnb4',
};

/** The weight file of a dtype, relative to the model directory: `fp32` → `onnx/model.onnx`, `q8` → `onnx/model_quantized.onnx`. */
export function onnxWeightFile(dtype: OnnxDtype): string {
  return `onnx/model${DTYPE_FILE_SUFFIX[dtype]}.onnx`;
}

/** The files besides the weights that transformers.js loads from a model directory. */
export const ONNX_MODEL_FILES = ['config.json', 'tokenizer.json', 'tokenizer_config.json'] as const;

/**
 * A setting and where it came from: `option` (the caller or the `--embedder` spec said so), `default`, or the
 * metadata file of the model directory it was read from (`1_Pooling/config.json`, `config.json`).
 */
export interface OnnxSetting<T> {
  value: T;
  from: string;
}

/** A local model directory, checked complete, with its pooling and dtype decided. */
export interface OnnxModelDir {
  dir: string;
  pooling: OnnxSetting<OnnxPooling>;
  dtype: OnnxSetting<OnnxDtype>;
  /** The weight file of `dtype`, relative to `dir`. */
  modelFile: string;
}

/**
 * Checks a local model directory and decides how to run it. Explicit `options` win; otherwise the directory's
 * own metadata decides, as sentence-transformers and transformers.js would read it:
 * - pooling from the Pooling module that `modules.json` lists (its `config.json`, usually `1_Pooling/config.json`:
 *   `pooling_mode_cls_token`, `pooling_mode_mean_tokens`, ...), or from `1_Pooling/config.json` alone;
 * - dtype from `config.json`'s `transformers.js_config.dtype` (its `device_config.cpu` entry first);
 * and otherwise the defaults, `mean` and `fp32`. Metadata a setting was given for is not read at all.
 *
 * Throws INVALID_INPUT (`field: 'model'`) naming the file when the directory does not exist, a metadata file is
 * not JSON or asks for a pooling Engram does not do, or a needed file is missing; the last error lists the
 * dtypes whose weights the directory does hold (`data.dtypes`).
 */
export function openOnnxModelDir(dir: string, options: { pooling?: OnnxPooling; dtype?: OnnxDtype } = {}): OnnxModelDir {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw new EngramError('INVALID_INPUT', `model: the directory ${dir} does not exist`, { field: 'model', path: dir });
  }
  const pooling = options.pooling !== undefined ? { value: options.pooling, from: 'option' } : (poolingFromMetadata(dir) ?? { value: 'mean' as const, from: 'default' });
  const dtype = options.dtype !== undefined ? { value: options.dtype, from: 'option' } : (dtypeFromMetadata(dir) ?? { value: 'fp32' as const, from: 'default' });
  const modelFile = onnxWeightFile(dtype.value);
  const needed = [...ONNX_MODEL_FILES, modelFile];
  const missing = needed.filter((f) => !existsSync(join(dir, f)));
  if (missing.length > 0) throw incompleteDirectory(dir, missing, dtype);
  // A clone without git-lfs (or with GIT_LFS_SKIP_SMUDGE=1) has every large file, as a pointer to it.
  const pointers = needed.filter((f) => isLfsPointer(join(dir, f)));
  if (pointers.length > 0) {
    throw new EngramError(
      'INVALID_INPUT',
      `model: in ${dir}, ${pointers.join(', ')} ${pointers.length === 1 ? 'is a Git LFS pointer' : 'are Git LFS pointers'}, not the file itself: run git lfs pull --include "${pointers.join(',')}" in the clone (git-lfs installed), or download ${pointers.length === 1 ? 'it' : 'them'} with hf download`,
      { field: 'model', path: dir, pointers },
    );
  }
  return { dir, pooling, dtype, modelFile };
}

/** The first line of every Git LFS pointer file (https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md). */
const LFS_POINTER_START = 'version https://git-lfs.github.com/spec/';
/** Pointer files are about 130 bytes; git-lfs itself reads nothing larger than 1024 bytes as one. */
const MAX_LFS_POINTER_BYTES = 1024;

function isLfsPointer(path: string): boolean {
  try {
    if (statSync(path).size > MAX_LFS_POINTER_BYTES) return false;
    const fd = openSync(path, 'r');
    try {
      const head = Buffer.alloc(LFS_POINTER_START.length);
      readSync(fd, head, 0, head.length, 0);
      return head.toString('latin1') === LFS_POINTER_START;
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
}

/**
 * What `dir/onnx/` holds, in {@link ONNX_DTYPES} order: `dtypes` whose weights are there, `pointers`, dtypes whose
 * file is only a Git LFS pointer, and `others`, the `.onnx` files no dtype names (`model_O4.onnx`).
 */
export function weightFilesIn(dir: string): { dtypes: OnnxDtype[]; pointers: OnnxDtype[]; others: string[] } {
  let names: string[] = [];
  try {
    names = readdirSync(join(dir, 'onnx'));
  } catch {
    // No onnx/ folder: no weights of any dtype.
  }
  const named = ONNX_DTYPES.filter((d) => names.includes(onnxWeightFile(d).slice('onnx/'.length)));
  const pointers = named.filter((d) => isLfsPointer(join(dir, onnxWeightFile(d))));
  const known = new Set(named.map((d) => onnxWeightFile(d).slice('onnx/'.length)));
  const others = names.filter((n) => n.endsWith('.onnx') && !known.has(n)).sort();
  return { dtypes: named.filter((d) => !pointers.includes(d)), pointers, others };
}

function incompleteDirectory(dir: string, missing: string[], dtype: OnnxSetting<OnnxDtype>): EngramError {
  const notes: string[] = [];
  if (missing.includes('tokenizer.json') && existsSync(join(dir, 'vocab.txt'))) {
    notes.push('transformers.js reads the tokenizer from tokenizer.json; vocab.txt alone is not enough');
  }
  const { dtypes, pointers, others } = weightFilesIn(dir);
  const modelFile = onnxWeightFile(dtype.value);
  if (missing.includes(modelFile)) {
    const why = dtype.from === 'option' ? 'asked for' : dtype.from === 'default' ? 'the default' : `set by ${dtype.from}`;
    let note = `${modelFile} holds the ${dtype.value} weights (dtype ${dtype.value}: ${why}); `;
    note +=
      dtypes.length > 0
        ? `the dtypes present are ${dtypes.map((d) => `${d} (${onnxWeightFile(d)})`).join(', ')}: choose one, e.g. --embedder 'onnx[dtype=${dtypes[0]}]:${dir}'`
        : 'no dtype has its weights here (no onnx/model*.onnx)';
    if (pointers.length > 0) note += `; Git LFS pointers stand for ${pointers.map((d) => `${d} (${onnxWeightFile(d)})`).join(', ')}: git lfs pull fetches them`;
    if (others.length > 0) note += `; onnx/ also holds ${others.join(', ')}, which no dtype names`;
    const misplaced = readdirSafe(dir).filter((n) => /^model(_\w+)?\.onnx$/.test(n));
    if (misplaced.length > 0) note += `; ${misplaced.join(', ')} ${misplaced.length === 1 ? 'is at the top of the directory, but belongs' : 'are at the top of the directory, but belong'} in onnx/`;
    notes.push(note);
  }
  const layout = `an ONNX model directory holds ${ONNX_MODEL_FILES.join(', ')} and onnx/model<dtype suffix>.onnx (the layout of the Xenova/* repositories on the Hugging Face hub)`;
  return new EngramError('INVALID_INPUT', `model: ${dir} lacks ${missing.join(', ')}; ${[...notes, layout].join('; ')}`, { field: 'model', path: dir, missing, dtypes });
}

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** sentence-transformers' Pooling flags, the mode each turns on, and its default when the key is absent (`Pooling.__init__`). */
const POOLING_FLAGS: ReadonlyArray<readonly [key: string, mode: string, byDefault: boolean]> = [
  ['pooling_mode_cls_token', 'cls', false],
  ['pooling_mode_mean_tokens', 'mean', true],
  ['pooling_mode_max_tokens', 'max', false],
  ['pooling_mode_mean_sqrt_len_tokens', 'mean_sqrt_len_tokens', false],
  ['pooling_mode_weightedmean_tokens', 'weightedmean', false],
  ['pooling_mode_lasttoken', 'lasttoken', false],
];

function poolingFromMetadata(dir: string): OnnxSetting<OnnxPooling> | undefined {
  let file: string;
  if (existsSync(join(dir, 'modules.json'))) {
    const modules = readJson(dir, 'modules.json');
    if (!Array.isArray(modules)) throw badMetadata(dir, 'modules.json', 'is not a list of modules');
    const module: unknown = modules.find((m) => isRecord(m) && typeof m.type === 'string' && (m.type === 'Pooling' || m.type.endsWith('.Pooling')));
    // No Pooling module: the pipeline says nothing Engram can follow about pooling, so the default applies.
    if (!isRecord(module)) return undefined;
    const folder = typeof module.path === 'string' ? module.path : '1_Pooling';
    file = folder === '' ? 'config.json' : `${folder}/config.json`;
    if (!existsSync(join(dir, file))) {
      throw badMetadata(dir, file, `is missing, though modules.json lists a Pooling module in ${folder}/: copy it from the export, or pass pooling=mean or pooling=cls`);
    }
  } else if (existsSync(join(dir, '1_Pooling', 'config.json'))) {
    file = '1_Pooling/config.json';
  } else {
    return undefined;
  }
  const config = readJson(dir, file);
  if (!isRecord(config)) throw badMetadata(dir, file, 'is not a JSON object');
  // A `pooling_mode` string replaces the flags, as in sentence-transformers.
  const modes =
    typeof config.pooling_mode === 'string'
      ? [config.pooling_mode.toLowerCase()]
      : POOLING_FLAGS.filter(([key, , byDefault]) => Boolean(config[key] ?? byDefault)).map(([, mode]) => mode);
  const [mode] = modes;
  if (modes.length === 1 && (mode === 'mean' || mode === 'cls')) return { value: mode, from: file };
  const asked = modes.length === 0 ? 'no pooling' : `${modes.join(' + ')} pooling`;
  throw badMetadata(dir, file, `asks for ${asked}; Engram pools by mean or cls alone: pass pooling=mean or pooling=cls to choose`);
}

function dtypeFromMetadata(dir: string): OnnxSetting<OnnxDtype> | undefined {
  // A missing config.json is reported with the other missing files.
  if (!existsSync(join(dir, 'config.json'))) return undefined;
  const config = readJson(dir, 'config.json');
  const custom = isRecord(config) ? config['transformers.js_config'] : undefined;
  if (!isRecord(custom)) return undefined;
  // transformers.js lays `device_config[device]` over the top level; Engram runs on the CPU.
  const cpu = isRecord(custom.device_config) && isRecord(custom.device_config.cpu) ? custom.device_config.cpu : {};
  let dtype = cpu.dtype ?? custom.dtype;
  // The per-file form names each session's dtype; an embedding model has one session, `model`.
  if (isRecord(dtype)) dtype = dtype.model;
  // `auto` is the device's default, fp32 on the CPU.
  if (dtype === undefined || dtype === 'auto') return undefined;
  if (typeof dtype !== 'string' || !(ONNX_DTYPES as readonly string[]).includes(dtype)) {
    throw badMetadata(dir, 'config.json', `asks for dtype ${JSON.stringify(dtype)} in transformers.js_config; Engram loads ${ONNX_DTYPES.join(', ')}: pass dtype= to choose`);
  }
  return { value: dtype as OnnxDtype, from: 'config.json' };
}

function readJson(dir: string, file: string): unknown {
  try {
    return JSON.parse(readFileSync(join(dir, file), 'utf8')) as unknown;
  } catch (err) {
    throw badMetadata(dir, file, `cannot be read as JSON (${(err as Error).message})`);
  }
}

function badMetadata(dir: string, file: string, problem: string): EngramError {
  return new EngramError('INVALID_INPUT', `model: ${join(dir, file)} ${problem}`, { field: 'model', path: dir, file });
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
