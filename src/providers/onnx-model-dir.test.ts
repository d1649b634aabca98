import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EngramError, isEngramError } from '../errors.js';
import { openOnnxModelDir, weightFilesIn } from './onnx-model-dir.js';

const scratch = mkdtempSync(join(tmpdir(), 'engram-onnx-dir-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

let dirCount = 0;
/**
 * A model directory holding `files` (path → content; objects are written as JSON). Unless `bare`, it starts from
 * the files every directory needs, with empty stand-ins for the weights: only their presence is checked here.
 */
function modelDir(files: Record<string, unknown>, bare = false): string {
  const dir = join(scratch, `model-${++dirCount}`);
  const base = bare ? {} : { 'config.json': { model_type: 'bert' }, 'tokenizer.json': {}, 'tokenizer_config.json': {}, 'onnx/model.onnx': '' };
  for (const [name, content] of Object.entries({ ...base, ...files })) {
    if (content === undefined) continue;
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), typeof content === 'string' ? content : JSON.stringify(content));
  }
  mkdirSync(dir, { recursive: true });
  return dir;
}

function failure(fn: () => unknown): EngramError {
  try {
    fn();
  } catch (err) {
    expect(isEngramError(err), `expected an EngramError, got ${String(err)}`).toBe(true);
    return err as EngramError;
  }
  throw new Error('expected an error');
}

/** sentence-transformers' `modules.json` for Transformer → Pooling → Normalize, as BAAI/bge-small-en-v1.5 has it. */
const MODULES = [
  { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
  { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
  { idx: 2, name: '2', path: '2_Normalize', type: 'sentence_transformers.models.Normalize' },
];
/** A full `1_Pooling/config.json` as sentence-transformers writes it, with one mode on. */
function poolingConfig(mode: 'cls_token' | 'mean_tokens' | 'max_tokens'): Record<string, unknown> {
  return {
    word_embedding_dimension: 384,
    pooling_mode_cls_token: mode === 'cls_token',
    pooling_mode_mean_tokens: mode === 'mean_tokens',
    pooling_mode_max_tokens: mode === 'max_tokens',
    pooling_mode_mean_sqrt_len_tokens: false,
    pooling_mode_weightedmean_tokens: false,
    pooling_mode_lasttoken: false,
    include_prompt: true,
  };
}

describe('openOnnxModelDir: pooling', () => {
  it('defaults to mean when the directory has no sentence-transformers metadata', () => {
    expect(openOnnxModelDir(modelDir({})).pooling).toEqual({ value: 'mean', from: 'default' });
  });

  it('reads cls pooling from the Pooling module modules.json lists', () => {
    const dir = modelDir({ 'modules.json': MODULES, '1_Pooling/config.json': poolingConfig('cls_token') });
    expect(openOnnxModelDir(dir).pooling).toEqual({ value: 'cls', from: '1_Pooling/config.json' });
  });

  it('reads mean pooling, and follows the folder modules.json names', () => {
    const modules = MODULES.map((m) => (m.path === '1_Pooling' ? { ...m, path: 'pooler' } : m));
    const dir = modelDir({ 'modules.json': modules, 'pooler/config.json': poolingConfig('mean_tokens'), '1_Pooling/config.json': poolingConfig('cls_token') });
    expect(openOnnxModelDir(dir).pooling).toEqual({ value: 'mean', from: 'pooler/config.json' });
  });

  it('reads 1_Pooling/config.json when there is no modules.json', () => {
    expect(openOnnxModelDir(modelDir({ '1_Pooling/config.json': poolingConfig('cls_token') })).pooling.value).toBe('cls');
  });

  it('takes absent flags at their sentence-transformers defaults (mean on) and honours a pooling_mode string', () => {
    expect(openOnnxModelDir(modelDir({ '1_Pooling/config.json': { word_embedding_dimension: 8 } })).pooling.value).toBe('mean');
    expect(openOnnxModelDir(modelDir({ '1_Pooling/config.json': { pooling_mode: 'CLS' } })).pooling.value).toBe('cls');
  });

  it('falls back to the default when modules.json lists no Pooling module', () => {
    const dir = modelDir({ 'modules.json': MODULES.filter((m) => !m.type.endsWith('Pooling')) });
    expect(openOnnxModelDir(dir).pooling).toEqual({ value: 'mean', from: 'default' });
  });

  it('lets an explicit pooling win without reading the metadata at all', () => {
    const dir = modelDir({ 'modules.json': '{ not json', '1_Pooling/config.json': poolingConfig('cls_token') });
    expect(openOnnxModelDir(dir, { pooling: 'mean' }).pooling).toEqual({ value: 'mean', from: 'option' });
  });

  it('refuses a pooling Engram does not do, naming the file and the way out', () => {
    const dir = modelDir({ 'modules.json': MODULES, '1_Pooling/config.json': poolingConfig('max_tokens') });
    const err = failure(() => openOnnxModelDir(dir));
    expect(err.code).toBe('INVALID_INPUT');
    expect(err.data).toMatchObject({ field: 'model', path: dir, file: '1_Pooling/config.json' });
    expect(err.message).toContain(`${join(dir, '1_Pooling/config.json')} asks for max pooling`);
    expect(err.message).toContain('pooling=mean or pooling=cls');
    // Two modes at once are concatenated by sentence-transformers: not one vector Engram could make either.
    const both = modelDir({ '1_Pooling/config.json': { ...poolingConfig('cls_token'), pooling_mode_mean_tokens: true } });
    expect(failure(() => openOnnxModelDir(both)).message).toContain('asks for cls + mean pooling');
  });

  it('names a metadata file that is not JSON, or that modules.json points to but is missing', () => {
    const broken = modelDir({ 'modules.json': MODULES, '1_Pooling/config.json': '{"pooling_mode_cls_token": tru' });
    const err = failure(() => openOnnxModelDir(broken));
    expect(err.data).toMatchObject({ field: 'model', file: '1_Pooling/config.json' });
    expect(err.message).toContain(`${join(broken, '1_Pooling/config.json')} cannot be read as JSON`);
    const notAList = failure(() => openOnnxModelDir(modelDir({ 'modules.json': { pooling: 'cls' } })));
    expect(notAList.message).toContain('modules.json is not a list of modules');
    const withoutPooling = modelDir({ 'modules.json': MODULES });
    const missing = failure(() => openOnnxModelDir(withoutPooling));
    expect(missing.message).toContain(`${join(withoutPooling, '1_Pooling/config.json')} is missing, though modules.json lists a Pooling module in 1_Pooling/`);
  });
});

describe('openOnnxModelDir: dtype', () => {
  it('defaults to fp32, onnx/model.onnx', () => {
    expect(openOnnxModelDir(modelDir({}))).toMatchObject({ dtype: { value: 'fp32', from: 'default' }, modelFile: 'onnx/model.onnx' });
  });

  it('reads the dtype transformers.js_config names in config.json, the CPU entry first', () => {
    const q8 = modelDir({ 'config.json': { model_type: 'bert', 'transformers.js_config': { dtype: 'q8' } }, 'onnx/model_quantized.onnx': '' });
    expect(openOnnxModelDir(q8)).toMatchObject({ dtype: { value: 'q8', from: 'config.json' }, modelFile: 'onnx/model_quantized.onnx' });
    const perFile = modelDir({ 'config.json': { 'transformers.js_config': { dtype: { model: 'fp16' } } }, 'onnx/model_fp16.onnx': '' });
    expect(openOnnxModelDir(perFile).dtype.value).toBe('fp16');
    const cpu = modelDir({
      'config.json': { 'transformers.js_config': { dtype: 'fp16', device_config: { cpu: { dtype: 'q4' } } } },
      'onnx/model_q4.onnx': '',
    });
    expect(openOnnxModelDir(cpu).dtype.value).toBe('q4');
    expect(openOnnxModelDir(modelDir({ 'config.json': { 'transformers.js_config': { dtype: 'auto' } } })).dtype.value).toBe('fp32');
  });

  it('lets an explicit dtype win over config.json', () => {
    const dir = modelDir({ 'config.json': { 'transformers.js_config': { dtype: 'q8' } } });
    expect(openOnnxModelDir(dir, { dtype: 'fp32' }).dtype).toEqual({ value: 'fp32', from: 'option' });
  });

  it('refuses a dtype in config.json that Engram does not load', () => {
    const err = failure(() => openOnnxModelDir(modelDir({ 'config.json': { 'transformers.js_config': { dtype: 'q2' } } })));
    expect(err.data).toMatchObject({ field: 'model', file: 'config.json' });
    expect(err.message).toContain('asks for dtype "q2"');
  });
});

describe('openOnnxModelDir: missing files', () => {
  it('names the missing weight file and the dtypes the directory does hold', () => {
    const dir = modelDir({ 'onnx/model.onnx': undefined, 'onnx/model_fp16.onnx': '', 'onnx/model_quantized.onnx': '', 'onnx/model_O4.onnx': '' });
    const err = failure(() => openOnnxModelDir(dir));
    expect(err.code).toBe('INVALID_INPUT');
    expect(err.data).toEqual({ field: 'model', path: dir, missing: ['onnx/model.onnx'], dtypes: ['fp16', 'q8'] });
    expect(err.message).toContain(`model: ${dir} lacks onnx/model.onnx; onnx/model.onnx holds the fp32 weights (dtype fp32: the default)`);
    expect(err.message).toContain('the dtypes present are fp16 (onnx/model_fp16.onnx), q8 (onnx/model_quantized.onnx)');
    expect(err.message).toContain(`--embedder 'onnx[dtype=fp16]:${dir}'`);
    expect(err.message).toContain('onnx/ also holds model_O4.onnx, which no dtype names');
  });

  it('says where a dtype that is absent was asked for', () => {
    const asked = failure(() => openOnnxModelDir(modelDir({}), { dtype: 'q8' }));
    expect(asked.data).toMatchObject({ missing: ['onnx/model_quantized.onnx'], dtypes: ['fp32'] });
    expect(asked.message).toContain('onnx/model_quantized.onnx holds the q8 weights (dtype q8: asked for); the dtypes present are fp32 (onnx/model.onnx)');
    const configured = failure(() => openOnnxModelDir(modelDir({ 'config.json': { 'transformers.js_config': { dtype: 'q4' } } })));
    expect(configured.message).toContain('(dtype q4: set by config.json)');
  });

  it('says when there are no weights at all, and when they sit outside onnx/', () => {
    const dir = modelDir({ 'onnx/model.onnx': undefined, 'model.onnx': '' });
    const err = failure(() => openOnnxModelDir(dir));
    expect(err.data).toMatchObject({ missing: ['onnx/model.onnx'], dtypes: [] });
    expect(err.message).toContain('no dtype has its weights here');
    expect(err.message).toContain('model.onnx is at the top of the directory, but belongs in onnx/');
  });

  it('names missing tokenizer files, and says vocab.txt alone will not do', () => {
    const dir = modelDir({ 'tokenizer.json': undefined, 'tokenizer_config.json': undefined, 'vocab.txt': '[PAD]\n' });
    const err = failure(() => openOnnxModelDir(dir));
    expect(err.data).toMatchObject({ missing: ['tokenizer.json', 'tokenizer_config.json'], dtypes: ['fp32'] });
    expect(err.message).toContain(`${dir} lacks tokenizer.json, tokenizer_config.json; transformers.js reads the tokenizer from tokenizer.json; vocab.txt alone is not enough`);
    expect(err.message).not.toContain('holds the fp32 weights');
  });

  it('lists every missing file of an empty directory', () => {
    const dir = modelDir({}, true);
    const err = failure(() => openOnnxModelDir(dir));
    expect(err.data.missing).toEqual(['config.json', 'tokenizer.json', 'tokenizer_config.json', 'onnx/model.onnx']);
  });

  it('rejects a directory that does not exist', () => {
    const err = failure(() => openOnnxModelDir(join(scratch, 'nowhere')));
    expect(err.code).toBe('INVALID_INPUT');
    expect(err.message).toContain('does not exist');
  });
});

/** What a clone without git-lfs holds in place of a large file (the pointer of the Git LFS spec). */
const LFS_POINTER = 'version https://git-lfs.github.com/spec/v1\noid sha256:759c3cd2b7fe7e93933ad23c4c9181b7396442a2ed746ec7c1d46192c469c46e\nsize 90387630\n';

describe('openOnnxModelDir: Git LFS pointers', () => {
  it('refuses a weight file that is only a pointer, saying how to fetch it', () => {
    const dir = modelDir({ 'onnx/model.onnx': LFS_POINTER });
    const err = failure(() => openOnnxModelDir(dir));
    expect(err.code).toBe('INVALID_INPUT');
    expect(err.data).toEqual({ field: 'model', path: dir, pointers: ['onnx/model.onnx'] });
    expect(err.message).toContain(`in ${dir}, onnx/model.onnx is a Git LFS pointer, not the file itself: run git lfs pull --include "onnx/model.onnx"`);
  });

  it('does not count pointers among the dtypes present', () => {
    const dir = modelDir({ 'onnx/model.onnx': LFS_POINTER, 'onnx/model_quantized.onnx': 'weights' });
    const err = failure(() => openOnnxModelDir(dir, { dtype: 'fp16' }));
    expect(err.data).toMatchObject({ missing: ['onnx/model_fp16.onnx'], dtypes: ['q8'] });
    expect(err.message).toContain('the dtypes present are q8 (onnx/model_quantized.onnx)');
    expect(err.message).toContain('Git LFS pointers stand for fp32 (onnx/model.onnx): git lfs pull fetches them');
    expect(openOnnxModelDir(dir, { dtype: 'q8' }).modelFile).toBe('onnx/model_quantized.onnx');
  });
});

describe('weightFilesIn', () => {
  it('maps onnx/ file names to dtypes in a fixed order, and keeps the rest apart', () => {
    const dir = modelDir({ 'onnx/model_q4f16.onnx': '', 'onnx/model_q4.onnx': '', 'onnx/model_qint8_avx512.onnx': '', 'onnx/notes.txt': '' });
    expect(weightFilesIn(dir)).toEqual({ dtypes: ['fp32', 'q4', 'q4f16'], pointers: [], others: ['model_qint8_avx512.onnx'] });
    expect(weightFilesIn(join(scratch, 'nowhere'))).toEqual({ dtypes: [], pointers: [], others: [] });
  });

  it('tells Git LFS pointers from weights', () => {
    const dir = modelDir({ 'onnx/model.onnx': LFS_POINTER, 'onnx/model_quantized.onnx': 'weights' });
    expect(weightFilesIn(dir)).toEqual({ dtypes: ['q8'], pointers: ['fp32'], others: [] });
  });
});
