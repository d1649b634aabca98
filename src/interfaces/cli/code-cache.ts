import { isAscii } from 'node:buffer';
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Script } from 'node:vm';
import { defaultCacheDir } from '../../providers/cache-dir.js';

/**
 * Loads the CLI bundle (dist/cli-bundle/main.cjs, scripts/build-cli-bundle.mjs) with a code cache, so a CLI start
 * skips parsing and compiling the bundle's JavaScript (issue #14, "CLI start to first recall"). Two kinds:
 *
 * - `vm`, the default: a hand-written one. Node 20 has no compile cache of its own, but `vm.Script` takes V8's
 *   `cachedData`; the bundle is CommonJS for this reason (a CommonJS file is one script `vm.Script` can compile). On
 *   Node 24 it also starts faster than Node's own (see {@link codeCacheKind}).
 * - `node` (`ENGRAM_CODE_CACHE=node`): Node's own compile cache (`module.enableCompileCache`, Node 22.1+), in a
 *   directory of Engram's cache directory; it also covers the packages the bundle loads from node_modules.
 *
 * Neither cache is trusted blindly. The `vm` file names the bundle's SHA-256 and the cached data's SHA-256, so a
 * cache from another build (stale) or a damaged file (corrupt, truncated) is ignored and rewritten; a file another
 * user owns or could write (untrusted) is not loaded, since V8 runs cached data as compiled code; V8 itself rejects
 * data from another V8 version or other flags (rejected). Node checks its own entries' source hashes and
 * checksums; its directory is used only when it is this user's and no one else may write it (else `vm`). Any
 * failure to read or write a cache only costs the compile it would have saved.
 */

/** What happened to the code cache on this start. */
export type CodeCacheStatus = 'hit' | 'miss' | 'stale' | 'corrupt' | 'untrusted' | 'rejected' | 'off' | 'node';

/** Which code cache a start uses (see the module comment). */
export type CodeCacheKind = 'node' | 'vm' | 'off';

/** Whether this Node has a compile cache of its own (`module.enableCompileCache`, Node 22.1+). */
export const hasNodeCompileCache = typeof (Module as { enableCompileCache?: unknown }).enableCompileCache === 'function';

/**
 * The code cache a start uses: the hand-written one (`vm`) unless `ENGRAM_CODE_CACHE=node` asks for Node's (where
 * Node has one, else `vm`) or `ENGRAM_CODE_CACHE=0` for none. Why `vm` on every Node: on Node 24 Node's compile cache
 * cost more CPU per start than the hand-written one in both runs measured (a recall +2 % and +4 %, `--version` +11 %
 * and +7 %, p50; bench/results/cli-compile-cache-node24.md), likely because its entry for the bundle holds what was
 * compiled before it ran (544 KB) and ours what had been compiled when the command ended. With both, the packages from
 * node_modules in Node's cache and the bundle in ours, a start cost the same as with ours alone.
 */
export function codeCacheKind(env: NodeJS.ProcessEnv = process.env, nodeHasCache = hasNodeCompileCache): CodeCacheKind {
  if (env.ENGRAM_CODE_CACHE === '0') return 'off';
  return env.ENGRAM_CODE_CACHE === 'node' && nodeHasCache ? 'node' : 'vm';
}

export interface LoadedBundle {
  /** The bundle's `module.exports`. */
  exports: Record<string, unknown>;
  status: CodeCacheStatus;
  /**
   * Writes the cache for the next start when this one did not use it. Call it after the command ran: V8's data then
   * also holds the functions the command compiled on first call, not only the bundle's top level.
   */
  save(): void;
}

const MAGIC = Buffer.from('ENGRAMCC');
/** Bumped when the file layout below changes; a file of another format reads as corrupt and is rewritten. */
const FORMAT = 1;
const DIGEST_BYTES = 32;
/** magic, format (uint32 LE), SHA-256 of the bundle's source, SHA-256 of the cached data; then the data. */
const HEADER_BYTES = MAGIC.length + 4 + DIGEST_BYTES * 2;

/**
 * The directory of Node's compile cache: `<cache dir>/node-compile-cache` (Node keeps one folder per Node version
 * inside), or undefined when `ENGRAM_CODE_CACHE=0` turns caching off.
 */
export function nodeCompileCacheDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.ENGRAM_CODE_CACHE === '0') return undefined;
  return join(defaultCacheDir(env), 'node-compile-cache');
}

/**
 * The cache file for this Node version and platform: `<cache dir>/cli-code-<node version>-<platform>-<arch>.bin`
 * (the cache dir is `$ENGRAM_CACHE_DIR`, else `$XDG_CACHE_HOME/engram`, else `~/.cache/engram`), or undefined when
 * `ENGRAM_CODE_CACHE=0` turns the cache off. One file per Node version: a new build overwrites it.
 */
export function codeCacheFile(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.ENGRAM_CODE_CACHE === '0') return undefined;
  return join(defaultCacheDir(env), `cli-code-${process.version}-${process.platform}-${process.arch}.bin`);
}

const sha256 = (data: Buffer): Buffer => createHash('sha256').update(data).digest();

/** The cached data in `file` when it was written for exactly `sourceDigest` and is intact; else why not. */
export function readCodeCache(file: string, sourceDigest: Buffer): { data: Buffer } | { status: 'miss' | 'stale' | 'corrupt' | 'untrusted' } {
  let bytes: Buffer;
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return { status: 'miss' };
  }
  try {
    // V8 runs cached data as compiled code: a file another user could have written is not loaded (the checks below
    // catch damage, not intent). Read through the descriptor that was checked, so the file cannot be swapped between.
    if (!isOwnFile(fstatSync(fd))) return { status: 'untrusted' };
    bytes = readFileSync(fd);
  } catch {
    return { status: 'miss' };
  } finally {
    closeSync(fd);
  }
  if (bytes.length <= HEADER_BYTES || !bytes.subarray(0, MAGIC.length).equals(MAGIC) || bytes.readUInt32LE(MAGIC.length) !== FORMAT) {
    return { status: 'corrupt' };
  }
  const at = MAGIC.length + 4;
  if (!bytes.subarray(at, at + DIGEST_BYTES).equals(sourceDigest)) return { status: 'stale' };
  const data = bytes.subarray(HEADER_BYTES);
  if (!sha256(data).equals(bytes.subarray(at + DIGEST_BYTES, HEADER_BYTES))) return { status: 'corrupt' };
  return { data };
}

/** Whether a file or directory is this process's user's and writable by no one else (always, where there are no user ids). */
function isOwnFile(stat: { uid: number; mode: number }): boolean {
  const uid = process.getuid?.();
  return uid === undefined || (stat.uid === uid && (stat.mode & 0o022) === 0);
}

/** Writes `data` for `sourceDigest` to `file`, through a temporary file renamed into place (a concurrent start reads the old file or the new one). */
export function writeCodeCache(file: string, sourceDigest: Buffer, data: Buffer): void {
  const format = Buffer.alloc(4);
  format.writeUInt32LE(FORMAT);
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    mkdirSync(dirname(file), { recursive: true });
    // Only its user may write it (isOwnFile): mode 0600, whatever the umask allows beyond.
    writeFileSync(tmp, Buffer.concat([MAGIC, format, sourceDigest, sha256(data), data]), { mode: 0o600 });
    renameSync(tmp, file);
  } catch {
    // A read-only or full cache directory (or a file where it should be): the next start compiles again, as without
    // a cache. The temporary file may be there, half-written, or its directory may not exist.
    try {
      rmSync(tmp, { force: true });
    } catch {
      // nothing to remove
    }
  }
}

/**
 * Compiles and runs the CommonJS file `bundle` as `require` would (its own `require`, `module`, `__filename`), with
 * the code cache in `cacheFile` when given. The bundle must not use `import()`: a `vm.Script` cannot run one without
 * an experimental flag, so the build turns them into `require` (every package the CLI imports has a CommonJS entry).
 */
export function loadBundle(bundle: string, cacheFile: string | undefined): LoadedBundle {
  const bytes = readFileSync(bundle);
  // The file's bytes, not the decoded string: hashing a string re-encodes its 2.3M characters to UTF-8 first.
  const sourceDigest = cacheFile === undefined ? Buffer.alloc(0) : sha256(bytes);
  // The build makes the bundle ASCII (scripts/build-cli-bundle.mjs): then Latin-1 decodes it the same, ~30x faster.
  const source = isAscii(bytes) ? bytes.toString('latin1') : bytes.toString('utf8');
  const cached = cacheFile === undefined ? { status: 'off' as const } : readCodeCache(cacheFile, sourceDigest);
  const script = new Script(`(function (exports, require, module, __filename, __dirname) { ${source}\n});`, { filename: bundle, ...('data' in cached ? { cachedData: cached.data } : {}) });
  const status: CodeCacheStatus = 'data' in cached ? (script.cachedDataRejected === true ? 'rejected' : 'hit') : cached.status;
  const module = { exports: {} as Record<string, unknown> };
  const run = script.runInThisContext() as (exports: unknown, require: NodeJS.Require, module: unknown, filename: string, dirname: string) => void;
  run.call(module.exports, module.exports, createRequire(bundle), module, bundle, dirname(bundle));
  return {
    exports: module.exports,
    status,
    save: () => {
      if (cacheFile !== undefined && status !== 'hit') writeCodeCache(cacheFile, sourceDigest, script.createCachedData());
    },
  };
}

/**
 * Runs the CommonJS file `bundle` through `require` with Node's compile cache on in `cacheDir` (Node 22.1+, see
 * {@link hasNodeCompileCache}): Node reads each module's cached code when it loads it and writes what it compiled
 * when the process exits, so `save` has nothing to do. The directory is made with mode 0700 when missing; when it is
 * another user's or others may write it, or Node cannot use it, the bundle runs through {@link loadBundle} with the
 * hand-written cache instead (`vmCacheFile`), which checks each file.
 */
export function loadBundleWithNodeCache(bundle: string, cacheDir: string, vmCacheFile: string | undefined): LoadedBundle {
  const enable = (Module as { enableCompileCache?: (dir: string) => { status: number } }).enableCompileCache;
  if (enable === undefined || !isOwnDirectory(cacheDir)) return loadBundle(bundle, vmCacheFile);
  const { status } = enable(cacheDir);
  const { ENABLED, ALREADY_ENABLED } = (Module as unknown as { constants: { compileCacheStatus: Record<string, number> } }).constants.compileCacheStatus;
  if (status !== ENABLED && status !== ALREADY_ENABLED) return loadBundle(bundle, vmCacheFile);
  return { exports: createRequire(bundle)(bundle) as Record<string, unknown>, status: 'node', save: () => undefined };
}

/** Whether `dir` is this user's and writable by no one else, creating it (mode 0700) when missing. */
function isOwnDirectory(dir: string): boolean {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return isOwnFile(statSync(dir));
  } catch {
    return false;
  }
}
