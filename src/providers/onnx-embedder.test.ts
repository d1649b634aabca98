import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { env as transformersEnv } from '@huggingface/transformers';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TINY_HIDDEN_SIZE, writeTinyBertModel, type TinyModel } from '../../test/fixtures/onnx-tiny-model.js';
import { EngramError, isEngramError } from '../errors.js';
import { dot, normalize, type Embedder } from './embedder.js';
import { createEmbedderFromSpec, parseEmbedderSpec } from './embedder-spec.js';
import { createOnnxEmbedder } from './onnx-embedder.js';

const scratch = mkdtempSync(join(tmpdir(), 'engram-onnx-'));
let tiny: TinyModel;
let embedder: Embedder;
const opened: Embedder[] = [];

beforeAll(async () => {
  tiny = writeTinyBertModel(join(scratch, 'tiny-bert'));
  embedder = await open({ model: tiny.dir });
});
afterAll(async () => {
  await Promise.all(opened.map((e) => e.close?.()));
  rmSync(scratch, { recursive: true, force: true });
});

async function open(options: Parameters<typeof createOnnxEmbedder>[0]): Promise<Embedder> {
  const e = await createOnnxEmbedder(options);
  opened.push(e);
  return e;
}

/** What the tiny model must give for these tokens: the normalised mean of their embedding rows. */
function expected(tokens: string[]): Float32Array {
  const v = new Float32Array(TINY_HIDDEN_SIZE);
  for (const t of tokens) tiny.row(t).forEach((x, d) => (v[d] = v[d]! + x / tokens.length));
  return normalize(v);
}

function expectClose(actual: Float32Array | undefined, wanted: Float32Array): void {
  expect(actual).toBeInstanceOf(Float32Array);
  expect(actual!.length).toBe(wanted.length);
  const maxDiff = Math.max(...Array.from(actual!, (x, i) => Math.abs(x - wanted[i]!)));
  expect(maxDiff).toBeLessThan(1e-6);
}

async function rejection(promise: Promise<unknown>): Promise<EngramError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isEngramError(err), `expected an EngramError, got ${String(err)}`).toBe(true);
  return err as EngramError;
}

/** A loopback port with nothing listening: connections to it are refused at once. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

describe('createOnnxEmbedder on a local model directory', () => {
  it('is named after the directory and measures its dimensions from the model', () => {
    expect(embedder.name).toBe('onnx:tiny-bert');
    expect(embedder.dimensions).toBe(TINY_HIDDEN_SIZE);
  });

  it('runs the real tokenizer and graph: a vector is the normalised mean of its tokens, special tokens included', async () => {
    const [v] = await embedder.embed(['The Postgres QUERY']);
    expectClose(v, expected(['[CLS]', 'the', 'postgres', 'query', '[SEP]']));
    const [unknown] = await embedder.embed(['zebra']);
    expectClose(unknown, expected(['[CLS]', '[UNK]', '[SEP]']));
  });

  it('returns unit vectors, and the same vector for the same text', async () => {
    const texts = ['the database query is slow', 'soft cat fur', 'cold rain and snow'];
    const [first, second] = [await embedder.embed(texts), await embedder.embed(texts)];
    for (const [i, v] of first.entries()) {
      expect(dot(v, v)).toBeCloseTo(1, 6);
      expect(Buffer.from(v.buffer).equals(Buffer.from(second[i]!.buffer))).toBe(true);
    }
  });

  it('places texts that share words closer than texts on another topic', async () => {
    const [query, related, unrelated] = await embedder.embed(['the postgres query is slow', 'slow postgres index', 'the cat has soft fur']);
    expect(dot(query!, related!)).toBeGreaterThan(dot(query!, unrelated!) + 0.3);
  });

  it('gives the same vectors in batches of mixed lengths as one text at a time, in input order', async () => {
    const texts = ['cat', 'the postgres query is slow and the index is cold', 'rain', 'soft dog fur', 'sqlite table', 'snow'];
    const batched = await (await open({ model: tiny.dir, batchSize: 2 })).embed(texts);
    expect(batched).toHaveLength(texts.length);
    for (const [i, text] of texts.entries()) expectClose(batched[i], (await embedder.embed([text]))[0]!);
  });

  it('embeds empty and blank texts as zero vectors without running them through the model', async () => {
    const vectors = await embedder.embed(['', 'cat', '  \n ']);
    expect(Array.from(vectors[0]!)).toEqual(new Array(TINY_HIDDEN_SIZE).fill(0));
    expectClose(vectors[1], expected(['[CLS]', 'cat', '[SEP]']));
    expect(Array.from(vectors[2]!)).toEqual(new Array(TINY_HIDDEN_SIZE).fill(0));
    expect(await embedder.embed([])).toEqual([]);
  });

  it('pools the [CLS] vector when pooling is cls, and says so in its name', async () => {
    const cls = await open({ model: tiny.dir, pooling: 'cls' });
    expect(cls.name).toBe('onnx:tiny-bert+cls');
    // The tiny graph is context-free, so every text's [CLS] position holds the same row.
    for (const v of await cls.embed(['postgres query', 'soft cat fur'])) expectClose(v, normalize(tiny.row('[CLS]')));
  });

  it('truncates texts to maxLength tokens', async () => {
    const short = await open({ model: tiny.dir, maxLength: 3 });
    const [a, b] = await short.embed(['postgres sqlite cat dog', 'postgres sqlite rain']);
    // transformers truncates after the special tokens are added, so [SEP] is cut too.
    expectClose(a, expected(['[CLS]', 'postgres', 'sqlite']));
    expectClose(b, a!);
    const [full] = await embedder.embed(['postgres sqlite cat dog']);
    expect(dot(full!, a!)).toBeLessThan(0.99);
  });

  it('names the files an incomplete model directory lacks', async () => {
    const dir = join(scratch, 'no-weights');
    writeTinyBertModel(dir, { omit: ['onnx/model.onnx', 'tokenizer.json'] });
    const err = await rejection(createOnnxEmbedder({ model: dir }));
    expect(err.code).toBe('INVALID_INPUT');
    expect(err.data).toMatchObject({ field: 'model', missing: ['tokenizer.json', 'onnx/model.onnx'] });
    expect(err.message).toContain(`${dir} lacks tokenizer.json, onnx/model.onnx`);
  });

  it('reads the weight file of the chosen dtype, and names the dtypes present when it is missing', async () => {
    const err = await rejection(createOnnxEmbedder({ model: tiny.dir, dtype: 'q8' }));
    expect(err.code).toBe('INVALID_INPUT');
    expect(err.data).toMatchObject({ missing: ['onnx/model_quantized.onnx'], dtypes: ['fp32'] });
    expect(err.message).toContain('the dtypes present are fp32 (onnx/model.onnx)');
  });

  it('rejects a directory that does not exist', async () => {
    const err = await rejection(createOnnxEmbedder({ model: join(scratch, 'nowhere') }));
    expect(err.code).toBe('INVALID_INPUT');
    expect(err.message).toContain('does not exist');
  });

  it('rejects bad options, naming the field', async () => {
    for (const [options, field] of [
      [{ model: '' }, 'model'],
      [{ model: 'not a hub id!' }, 'model'],
      [{ model: tiny.dir, batchSize: 0 }, 'batchSize'],
      [{ model: tiny.dir, maxLength: 2.5 }, 'maxLength'],
      [{ model: tiny.dir, pooling: 'max' }, 'pooling'],
      [{ model: tiny.dir, dtype: 'fp64' }, 'dtype'],
    ] as const) {
      const err = await rejection(createOnnxEmbedder(options as never));
      expect(err.code, JSON.stringify(options)).toBe('INVALID_INPUT');
      expect(err.data.field).toBe(field);
    }
  });

  it('refuses to embed after close', async () => {
    const e = await createOnnxEmbedder({ model: tiny.dir });
    await e.close!();
    const err = await rejection(e.embed(['cat']));
    expect(err.code).toBe('PROVIDER_ERROR');
  });
});

describe('createOnnxEmbedder on a directory that says how to run it', () => {
  /** A copy of the tiny model in `scratch/<name>`, with `files` (path → JSON) added and `omit` removed. */
  function variant(name: string, files: Record<string, unknown>, options: { quantized?: boolean; omit?: string[] } = {}): string {
    const dir = join(scratch, name);
    cpSync(tiny.dir, dir, { recursive: true });
    // The tiny graph is fp32; under the q8 file name it loads the same way, which is all the dtype changes here.
    if (options.quantized) copyFileSync(join(dir, 'onnx/model.onnx'), join(dir, 'onnx/model_quantized.onnx'));
    for (const f of options.omit ?? []) rmSync(join(dir, f));
    for (const [file, content] of Object.entries(files)) {
      mkdirSync(join(dir, file, '..'), { recursive: true });
      writeFileSync(join(dir, file), JSON.stringify(content));
    }
    return dir;
  }
  const CLS_METADATA = {
    'modules.json': [
      { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
      { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
      { idx: 2, name: '2', path: '2_Normalize', type: 'sentence_transformers.models.Normalize' },
    ],
    '1_Pooling/config.json': { word_embedding_dimension: TINY_HIDDEN_SIZE, pooling_mode_cls_token: true, pooling_mode_mean_tokens: false, pooling_mode_max_tokens: false },
  };
  const texts = ['the postgres query is slow', 'soft cat fur'];

  it('pools the [CLS] vector when its sentence-transformers metadata says cls, and is named for it', async () => {
    const dir = variant('bge-like', CLS_METADATA);
    const cls = await open({ model: dir });
    expect(cls.name).toBe('onnx:bge-like+cls');
    const [a, b] = await cls.embed(texts);
    expectClose(a, normalize(tiny.row('[CLS]')));
    expectClose(b, normalize(tiny.row('[CLS]')));
    // The same directory mean-pooled gives other vectors: the metadata is what changed them.
    const [mean] = await embedder.embed(texts);
    expect(dot(a!, mean!)).toBeLessThan(0.9);
  });

  it('lets an explicit pooling override the metadata, under the name that pooling gets', async () => {
    const dir = variant('bge-like-mean', CLS_METADATA);
    const mean = await open({ model: dir, pooling: 'mean' });
    expect(mean.name).toBe('onnx:bge-like-mean');
    expectClose((await mean.embed(['The Postgres QUERY']))[0], expected(['[CLS]', 'the', 'postgres', 'query', '[SEP]']));
  });

  it('takes pooling and dtype from an --embedder spec', async () => {
    const dir = variant('spec-options', {}, { quantized: true });
    const fromSpec = (await createEmbedderFromSpec(parseEmbedderSpec(`onnx[pooling=cls,dtype=q8]:${dir}`)))!;
    opened.push(fromSpec);
    expect(fromSpec.name).toBe('onnx:spec-options+cls+q8');
    expectClose((await fromSpec.embed(['soft cat fur']))[0], normalize(tiny.row('[CLS]')));
  });

  it("loads the dtype config.json's transformers.js_config names, and only its file needs to be there", async () => {
    const config = JSON.parse(readFileSync(join(tiny.dir, 'config.json'), 'utf8')) as Record<string, unknown>;
    const dir = variant('q8-only', { 'config.json': { ...config, 'transformers.js_config': { dtype: 'q8' } } }, { quantized: true, omit: ['onnx/model.onnx'] });
    const q8 = await open({ model: dir });
    expect(q8.name).toBe('onnx:q8-only+q8');
    expectClose((await q8.embed(['soft cat fur']))[0], expected(['[CLS]', 'soft', 'cat', 'fur', '[SEP]']));
    // Asked for fp32 against the metadata, the directory lacks it and says what it has instead.
    const err = await rejection(createOnnxEmbedder({ model: dir, dtype: 'fp32' }));
    expect(err.data).toMatchObject({ field: 'model', missing: ['onnx/model.onnx'], dtypes: ['q8'] });
    expect(err.message).toContain('the dtypes present are q8 (onnx/model_quantized.onnx)');
  });

  it('refuses metadata asking for a pooling it does not do before loading anything', async () => {
    const dir = variant('max-pooled', { ...CLS_METADATA, '1_Pooling/config.json': { pooling_mode_max_tokens: true, pooling_mode_mean_tokens: false } });
    const err = await rejection(createOnnxEmbedder({ model: dir }));
    expect(err.code).toBe('INVALID_INPUT');
    expect(err.message).toContain('asks for max pooling');
    expect((await open({ model: dir, pooling: 'cls' })).name).toBe('onnx:max-pooled+cls');
  });
});

describe('createOnnxEmbedder on a hub id', () => {
  const HUB_ID = 'engram-test/tiny-bert';
  const defaultHost = transformersEnv.remoteHost;
  afterEach(() => {
    transformersEnv.remoteHost = defaultHost;
  });

  it('fails at once, without a download, when the model is not cached and allowRemote is false', async () => {
    transformersEnv.remoteHost = `http://127.0.0.1:${await closedPort()}/`;
    const cacheDir = mkdtempSync(join(scratch, 'cache-'));
    const err = await rejection(createOnnxEmbedder({ model: 'Xenova/all-MiniLM-L6-v2', cacheDir, allowRemote: false }));
    expect(err.code).toBe('PROVIDER_ERROR');
    expect(err.message).toContain('download it on a machine with network');
    expect(err.message).toContain('or pass a local directory');
    expect(err.data).toMatchObject({ model: 'Xenova/all-MiniLM-L6-v2', cacheDir, retryable: false });
  });

  it('says "no network" when the hub cannot be reached and the model is not cached', async () => {
    transformersEnv.remoteHost = `http://127.0.0.1:${await closedPort()}/`;
    const cacheDir = mkdtempSync(join(scratch, 'cache-'));
    const err = await rejection(createOnnxEmbedder({ model: 'Xenova/all-MiniLM-L6-v2', cacheDir }));
    expect(err.code).toBe('PROVIDER_ERROR');
    expect(err.message).toContain('no network: download Xenova/all-MiniLM-L6-v2 on a machine with network');
    expect(err.message).toContain('ECONNREFUSED');
    expect(err.data).toMatchObject({ retryable: true });
  });

  it('loads a model an earlier run downloaded without touching the network', async () => {
    // An id this process never asked the hub about: transformers memoises the answers of its existence checks.
    const id = 'engram-test/downloaded-earlier';
    const cacheDir = mkdtempSync(join(scratch, 'cache-'));
    cpSync(tiny.dir, join(cacheDir, id), { recursive: true });
    transformersEnv.remoteHost = `http://127.0.0.1:${await closedPort()}/`;
    const cached = await open({ model: id, cacheDir });
    expect(cached.name).toBe(`onnx:${id}`);
    expectClose((await cached.embed(['soft cat fur']))[0], (await embedder.embed(['soft cat fur']))[0]!);
  });

  it('ignores pooling metadata in the cache: a hub model runs as its first download did, unless told otherwise', async () => {
    // Downloads fetch only what transformers loads, never modules.json; reading one found later would change the vectors.
    const id = 'engram-test/cached-with-metadata';
    const cacheDir = mkdtempSync(join(scratch, 'cache-'));
    cpSync(tiny.dir, join(cacheDir, id), { recursive: true });
    mkdirSync(join(cacheDir, id, '1_Pooling'));
    writeFileSync(join(cacheDir, id, '1_Pooling/config.json'), JSON.stringify({ pooling_mode_cls_token: true, pooling_mode_mean_tokens: false }));
    transformersEnv.remoteHost = `http://127.0.0.1:${await closedPort()}/`;
    expect((await open({ model: id, cacheDir })).name).toBe(`onnx:${id}`);
    expect((await open({ model: id, cacheDir, pooling: 'cls' })).name).toBe(`onnx:${id}+cls`);
  });

  describe('from a local server speaking the hub protocol', () => {
    let server: Server;
    let requested: string[];
    let hubUrl: string;

    beforeAll(async () => {
      requested = [];
      // The hub serves a repository's files at /<id>/resolve/<revision>/<path>.
      server = createServer((req, res) => {
        requested.push(req.url ?? '');
        const prefix = `/${HUB_ID}/resolve/main/`;
        const file = req.url?.startsWith(prefix) ? join(tiny.dir, decodeURIComponent(req.url.slice(prefix.length))) : undefined;
        if (!file || !existsSync(file)) return void res.writeHead(404).end('Entry not found');
        const body = readFileSync(file);
        res.writeHead(200, { 'content-length': String(body.length) }).end(req.method === 'HEAD' ? undefined : body);
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
      hubUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    });
    afterAll(async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    });

    it('downloads into cacheDir/<id>, then loads from there with no network at all', async () => {
      const cacheDir = mkdtempSync(join(scratch, 'cache-'));
      transformersEnv.remoteHost = hubUrl;
      const downloaded = await open({ model: HUB_ID, cacheDir });
      expect(downloaded.name).toBe(`onnx:${HUB_ID}`);
      expect(requested.some((u) => u.endsWith('/onnx/model.onnx'))).toBe(true);
      for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'onnx/model.onnx']) {
        expect(readFileSync(join(cacheDir, HUB_ID, f)).equals(readFileSync(join(tiny.dir, f))), f).toBe(true);
      }

      // Offline now: any request would be refused, and would fail the load.
      transformersEnv.remoteHost = `http://127.0.0.1:${await closedPort()}/`;
      const cached = await open({ model: HUB_ID, cacheDir });
      const texts = ['the postgres query is slow', 'soft cat fur'];
      const [fromHub, fromCache, fromDirectory] = [await downloaded.embed(texts), await cached.embed(texts), await embedder.embed(texts)];
      texts.forEach((_, i) => {
        expectClose(fromHub[i], fromDirectory[i]!);
        expectClose(fromCache[i], fromDirectory[i]!);
      });
    });

    it('says which repository the hub does not have', async () => {
      transformersEnv.remoteHost = hubUrl;
      const cacheDir = mkdtempSync(join(scratch, 'cache-'));
      const err = await rejection(createOnnxEmbedder({ model: 'engram-test/no-such-model', cacheDir }));
      expect(err.code).toBe('PROVIDER_ERROR');
      expect(err.message).toContain('engram-test/no-such-model was not found on the Hugging Face hub');
      expect(err.data).toMatchObject({ status: 404, retryable: false });
      expect(existsSync(join(cacheDir, 'engram-test/no-such-model/onnx'))).toBe(false);
    });
  });
});
