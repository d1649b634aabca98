import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { codeCacheFile, codeCacheKind, hasNodeCompileCache, nodeCompileCacheDir } from './code-cache.js';

let dir: string;
let bundle: string;
let cache: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-code-cache-'));
  bundle = join(dir, 'main.cjs');
  cache = join(dir, 'cache', 'cli-code.bin');
  // Enough functions that V8's cached data is more than a header; run by the test so they are compiled before save().
  const fns = Array.from({ length: 50 }, (_, i) => `function f${i}(x) { return x * ${i} + ${i}; }`).join('\n');
  writeFileSync(
    bundle,
    `${fns}\nconst { basename } = require('node:path');\nexports.file = basename(__filename);\nexports.main = (x) => ${Array.from({ length: 50 }, (_, i) => `f${i}(x)`).join(' + ')};\n`,
  );
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const LOADER = fileURLToPath(new URL('./code-cache.ts', import.meta.url));

/**
 * One CLI start in its own process (as bin/engram.js does): loads the bundle, runs its `main`, saves the cache. A
 * process of its own because V8 keeps what it compiled per process: a second compile of the same source here would
 * come from that, and never read the cached data.
 */
function start(file: string | undefined = cache): { status: string; result: unknown; file: unknown } {
  const script = `import { loadBundle } from ${JSON.stringify(pathToFileURL(LOADER).href)};
const b = loadBundle(process.argv[1], process.argv[2] || undefined);
const result = b.exports.main(2);
b.save();
console.log(JSON.stringify({ status: b.status, result, file: b.exports.file }));`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, bundle, file ?? ''], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout) as { status: string; result: unknown; file: unknown };
}

describe('loadBundle', () => {
  it('runs a CommonJS file with its own require and __filename, and uses the cache it wrote on the next start', () => {
    const sum = Array.from({ length: 50 }, (_, i) => 2 * i + i).reduce((a, b) => a + b, 0);
    expect(start()).toEqual({ status: 'miss', result: sum, file: 'main.cjs' });
    expect(existsSync(cache)).toBe(true);
    expect(start()).toEqual({ status: 'hit', result: sum, file: 'main.cjs' });
  });

  it('reads a bundle that is not ASCII as UTF-8', () => {
    // The file holds the characters themselves (UTF-8 on disk): e-acute, a right quote, an emoji (two UTF-16 units).
    writeFileSync(bundle, "exports.main = () => 'caf\u00e9 \u2019 \u{1F44D}'.length + '\u00e9'; exports.file = 'x';\n");
    expect(readFileSync(bundle).length).toBeGreaterThan(readFileSync(bundle, 'utf8').length);
    expect(start()).toEqual({ status: 'miss', result: '9\u00e9', file: 'x' });
    expect(start()).toEqual({ status: 'hit', result: '9\u00e9', file: 'x' });
  });

  it('ignores a cache written for another build of the bundle and rewrites it', () => {
    start();
    writeFileSync(bundle, `${readFileSync(bundle, 'utf8')}exports.extra = 1;\n`);
    expect(start().status).toBe('stale');
    expect(start().status).toBe('hit');
  });

  it('ignores a damaged cache file (flipped byte, truncated, foreign) and rewrites it', () => {
    start();
    const good = readFileSync(cache);
    const flipped = Buffer.from(good);
    flipped.writeUInt8(flipped.readUInt8(flipped.length - 10) ^ 0xff, flipped.length - 10);
    for (const bad of [flipped, good.subarray(0, good.length - 100), good.subarray(0, 20), Buffer.from('not a cache at all')]) {
      writeFileSync(cache, bad);
      expect(start().status).toBe('corrupt');
      expect(start().status).toBe('hit');
    }
  });

  it('writes the cache for its user only, and does not load one that others could write', () => {
    const first = start();
    expect(first.status).toBe('miss');
    expect(statSync(cache).mode & 0o077).toBe(0);
    expect(start().status).toBe('hit');
    chmodSync(cache, 0o666);
    const loaded = start();
    expect(loaded.status).toBe('untrusted');
    expect(loaded.result).toBe(first.result);
    // Rewritten as its user's own file: the next start uses it.
    expect(statSync(cache).mode & 0o077).toBe(0);
    expect(start().status).toBe('hit');
  });

  it('runs without a cache when V8 rejects the data (another V8 or flags) and rewrites it', () => {
    start();
    // A well-formed file whose data V8 cannot use: the checks above pass, V8's own fail.
    const good = readFileSync(cache);
    const header = good.subarray(0, 8 + 4 + 32);
    const junk = Buffer.alloc(good.length - header.length - 32, 7);
    writeFileSync(cache, Buffer.concat([header, createHash('sha256').update(junk).digest(), junk]));
    expect(start().status).toBe('rejected');
    expect(start().status).toBe('hit');
  });

  it('runs without a cache when none is given or its directory cannot be written', () => {
    expect(start('').status).toBe('off');
    writeFileSync(join(dir, 'a-file'), '');
    const unwritable = join(dir, 'a-file', 'cli-code.bin');
    expect(start(unwritable).status).toBe('miss');
    expect(start(unwritable).status).toBe('miss');
  });
});

describe('codeCacheFile', () => {
  it("is per Node version in Engram's cache directory, and off with ENGRAM_CODE_CACHE=0", () => {
    expect(codeCacheFile({ ENGRAM_CACHE_DIR: '/c' })).toBe(`/c/cli-code-${process.version}-${process.platform}-${process.arch}.bin`);
    expect(codeCacheFile({ XDG_CACHE_HOME: '/x' })).toBe(`/x/engram/cli-code-${process.version}-${process.platform}-${process.arch}.bin`);
    expect(codeCacheFile({ ENGRAM_CACHE_DIR: '/c', ENGRAM_CODE_CACHE: '0' })).toBeUndefined();
  });
});

describe('codeCacheKind', () => {
  it("is the hand-written cache on every Node; Node's own (where Node has one) or none when ENGRAM_CODE_CACHE asks", () => {
    expect(codeCacheKind({}, true)).toBe('vm');
    expect(codeCacheKind({}, false)).toBe('vm');
    expect(codeCacheKind({ ENGRAM_CODE_CACHE: 'node' }, true)).toBe('node');
    expect(codeCacheKind({ ENGRAM_CODE_CACHE: 'node' }, false)).toBe('vm');
    expect(codeCacheKind({ ENGRAM_CODE_CACHE: '0' }, true)).toBe('off');
    expect(nodeCompileCacheDir({ ENGRAM_CACHE_DIR: '/c' })).toBe('/c/node-compile-cache');
    expect(nodeCompileCacheDir({ ENGRAM_CACHE_DIR: '/c', ENGRAM_CODE_CACHE: '0' })).toBeUndefined();
  });
});

describe('loadBundleWithNodeCache', () => {
  /** One start in its own process, as bin/engram.js does it with Node's cache in `nodeDir`. */
  function nodeStart(nodeDir: string): { status: string; result: unknown; file: unknown } {
    const script = `import { loadBundleWithNodeCache } from ${JSON.stringify(pathToFileURL(LOADER).href)};
const b = loadBundleWithNodeCache(process.argv[1], process.argv[2], process.argv[3]);
const result = b.exports.main(2);
b.save();
console.log(JSON.stringify({ status: b.status, result, file: b.exports.file }));`;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, bundle, nodeDir, cache], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(r.stderr);
    return JSON.parse(r.stdout) as { status: string; result: unknown; file: unknown };
  }
  const sum = Array.from({ length: 50 }, (_, i) => 2 * i + i).reduce((a, b) => a + b, 0);

  it.runIf(hasNodeCompileCache)("runs the bundle through require with Node's compile cache in its own directory (mode 0700)", () => {
    const nodeDir = join(dir, 'node-cache');
    expect(nodeStart(nodeDir)).toEqual({ status: 'node', result: sum, file: 'main.cjs' });
    expect(statSync(nodeDir).mode & 0o777).toBe(0o700);
    // Node wrote what it compiled when the process exited: a folder for this Node version, with entries in it.
    expect(readdirSync(nodeDir).length).toBe(1);
    expect(existsSync(cache)).toBe(false);
  });

  it.runIf(hasNodeCompileCache)('falls back to the hand-written cache when others may write the directory', () => {
    const nodeDir = join(dir, 'node-cache');
    mkdirSync(nodeDir, { mode: 0o700 });
    chmodSync(nodeDir, 0o777);
    expect(nodeStart(nodeDir)).toEqual({ status: 'miss', result: sum, file: 'main.cjs' });
    expect(nodeStart(nodeDir).status).toBe('hit');
  });

  it.skipIf(hasNodeCompileCache)('uses the hand-written cache on a Node without a compile cache of its own (Node 20)', () => {
    const nodeDir = join(dir, 'node-cache');
    expect(nodeStart(nodeDir)).toEqual({ status: 'miss', result: sum, file: 'main.cjs' });
    expect(nodeStart(nodeDir).status).toBe('hit');
    expect(existsSync(nodeDir)).toBe(false);
  });
});
