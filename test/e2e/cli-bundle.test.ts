import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hasNodeCompileCache } from '../../src/interfaces/cli/code-cache.js';
import { cliEnv, ENGRAM_BIN } from '../fixtures/cli.js';

/**
 * bin/engram.js runs the CLI bundle (dist/cli-bundle/main.cjs, scripts/build-cli-bundle.mjs; test/global-setup.ts
 * builds it after dist/) with V8's code cache (src/interfaces/cli/code-cache.ts) when it is there and not older than
 * dist/, else dist/'s modules. These tests check that choice on a copy of the launcher, that the bundle prints,
 * exits and fails exactly as dist/'s modules do, and that the code cache changes nothing a user sees.
 */
const BUNDLE_MAIN = resolve('dist/cli-bundle/main.cjs');
const MODULES_MAIN = resolve('dist/interfaces/cli/main.js');
const DEMO = resolve('examples/demo-session.jsonl');

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-bundle-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('bin/engram.js picks the bundle', () => {
  /**
   * A package layout with the real launcher and two fake entry points that say which one ran; `sources` adds a src/
   * folder, as a checkout has (the npm package has none).
   */
  function fakePackage(options: { bundle: boolean; sources?: boolean }): { bin: string; bundle: string; modules: string } {
    mkdirSync(join(dir, 'bin'));
    if (options.sources ?? true) mkdirSync(join(dir, 'src'));
    mkdirSync(join(dir, 'dist', 'interfaces', 'cli'), { recursive: true });
    mkdirSync(join(dir, 'dist', 'providers'));
    copyFileSync(ENGRAM_BIN, join(dir, 'bin', 'engram.js'));
    // The launcher's code-cache loader, as built.
    copyFileSync(resolve('dist/interfaces/cli/code-cache.js'), join(dir, 'dist', 'interfaces', 'cli', 'code-cache.js'));
    copyFileSync(resolve('dist/providers/cache-dir.js'), join(dir, 'dist', 'providers', 'cache-dir.js'));
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
    const say = (name: string) => `{ console.log(${JSON.stringify(name)}, argv.slice(2).join(' ')); return 3; }`;
    const modules = join(dir, 'dist', 'interfaces', 'cli', 'main.js');
    writeFileSync(modules, `export async function main(argv) ${say('modules')}\n`);
    const bundle = join(dir, 'dist', 'cli-bundle', 'main.cjs');
    if (options.bundle) {
      mkdirSync(join(dir, 'dist', 'cli-bundle'));
      writeFileSync(bundle, `exports.main = async function main(argv) ${say('bundle')};\n`);
    }
    return { bin: join(dir, 'bin', 'engram.js'), bundle, modules };
  }
  const run = (bin: string) => spawnSync(process.execPath, [bin, 'recall', 'x'], { encoding: 'utf8', env: cliEnv({ ENGRAM_CACHE_DIR: join(dir, 'cache') }) });
  const at = (file: string, seconds: number) => utimesSync(file, seconds, seconds);

  it('runs the bundle when it is newer than dist/ or as new (npm packs every file with one mtime)', () => {
    const p = fakePackage({ bundle: true });
    at(p.modules, 1_000_000);
    at(p.bundle, 1_000_100);
    let r = run(p.bin);
    expect([r.stdout.trim(), r.status]).toEqual(['bundle recall x', 3]);
    at(p.bundle, 1_000_000);
    r = run(p.bin);
    expect(r.stdout.trim()).toBe('bundle recall x');
  });

  it('runs the bundle of a package without sources (npm packed) even when it was unpacked before dist/', () => {
    // npm gives each unpacked file the time it wrote it, in the archive's order: the bundle can come out older.
    const p = fakePackage({ bundle: true, sources: false });
    at(p.bundle, 1_000_000);
    at(p.modules, 1_000_002);
    const r = run(p.bin);
    expect([r.stdout.trim(), r.status]).toEqual(['bundle recall x', 3]);
    rmSync(p.bundle);
    expect(run(p.bin).stdout.trim()).toBe('modules recall x');
  });

  it("runs dist/'s modules when the bundle is older (tsc rebuilt dist/ after it) or missing", () => {
    const p = fakePackage({ bundle: true });
    at(p.bundle, 1_000_000);
    at(p.modules, 1_000_100);
    let r = run(p.bin);
    expect([r.stdout.trim(), r.status]).toEqual(['modules recall x', 3]);
    rmSync(p.bundle);
    r = run(p.bin);
    expect(r.stdout.trim()).toBe('modules recall x');
  });
});

describe('the bundle', () => {
  it('is built and runs the same CLI as dist/ (output, errors, exit codes)', () => {
    expect(existsSync(BUNDLE_MAIN)).toBe(true);
    // Strict, as dist/'s ES modules are: the directive must be the file's first statement (before the build's banner).
    expect(readFileSync(BUNDLE_MAIN, 'utf8').startsWith("'use strict';\n")).toBe(true);
    const db = join(dir, 'store.db');
    const engram = (main: string, args: string[]) => {
      // The same argv shape bin/engram.js passes: node, the script, then the user's words.
      const script = `const { main } = await import(${JSON.stringify(pathToFileURL(main).href)}); process.exitCode = await main(['node', 'engram', ...JSON.parse(process.argv[1])]);`;
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', script, JSON.stringify(['--db', db, ...args])], { cwd: dir, encoding: 'utf8', env: cliEnv({ ENGRAM_EMBEDDER: 'none' }) });
      // A recall is logged: its log id is the one thing two runs print differently.
      return { code: r.status, stdout: r.stdout.replace(/"logId": \d+/g, '"logId": N'), stderr: r.stderr };
    };
    // Writes first, through dist/'s modules; then every read through both.
    expect(engram(MODULES_MAIN, ['ingest', DEMO]).code).toBe(0);
    // A record zod rejects: its message comes from zod's English locale, the one locale the bundle keeps.
    const bad = join(dir, 'bad.jsonl');
    writeFileSync(bad, '{"kind":"message","role":"robot","content":"hi","sessionId":"s1"}\n');
    const reads: string[][] = [
      ['--version'],
      ['recall', 'ECONNREFUSED'],
      ['recall', 'ECONNREFUSED', '--json', '--retriever', 'fts'],
      ['recall', '--k', 'many', 'x'],
      ['stats', '--json'],
      ['sessions'],
      ['show', 'evt_00000000000000000000000000'],
      ['show', 'evt_00000000000000000000000000', '--json'],
      ['recall', 'x', '--kind', 'nonsense'],
      ['no-such-command'],
      ['hooks', 'install', '--help'],
      ['ingest', bad],
    ];
    for (const args of reads) {
      const viaModules = engram(MODULES_MAIN, args);
      const viaBundle = engram(BUNDLE_MAIN, args);
      expect({ args, ...viaBundle }).toEqual({ args, ...viaModules });
    }
    // Not vacuous: the recall found the demo's evidence, the bad option failed as invalid input.
    expect(engram(BUNDLE_MAIN, ['recall', 'ECONNREFUSED']).stdout).toContain('ECONNREFUSED');
    expect(engram(BUNDLE_MAIN, ['recall', '--k', 'many', 'x']).code).toBe(2);
    expect(engram(BUNDLE_MAIN, ['ingest', bad]).stderr).toContain('Invalid option: expected one of');
  }, 180_000);
});

describe('the code cache', () => {
  const cacheDir = () => join(dir, 'cache');
  const db = () => join(dir, 'store.db');
  /** The CLI as a user starts it; ENGRAM_CODE_CACHE as `env` says (unset: the launcher's own choice). */
  const cliAt = (args: string[], env: Record<string, string> = {}) => {
    const r = spawnSync(process.execPath, [ENGRAM_BIN, '--db', db(), ...args], { cwd: dir, encoding: 'utf8', env: cliEnv({ ENGRAM_EMBEDDER: 'none', ENGRAM_CACHE_DIR: cacheDir(), ...env }) });
    return { code: r.status, stdout: r.stdout.replace(/"logId": \d+/g, '"logId": N'), stderr: r.stderr };
  };

  it.runIf(hasNodeCompileCache)("is Node's own compile cache with ENGRAM_CODE_CACHE=node (Node 22.1+): written by the first start, output unchanged", () => {
    const cli = (args: string[], env: Record<string, string> = {}) => cliAt(args, { ENGRAM_CODE_CACHE: 'node', ...env });
    expect(cli(['ingest', DEMO]).code).toBe(0);
    const recall = ['recall', 'ECONNREFUSED', '--json', '--retriever', 'fts'];
    const first = cli(recall);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('ECONNREFUSED');
    expect(cli(recall)).toEqual(first);
    expect(cli(recall, { ENGRAM_CODE_CACHE: '0' })).toEqual(first);
    const nodeDir = join(cacheDir(), 'node-compile-cache');
    expect(readdirSync(nodeDir).length).toBe(1);
    expect(readdirSync(cacheDir()).some((f) => f.startsWith('cli-code-'))).toBe(false);
  }, 120_000);

  it('is the hand-written one by default, on every Node', () => {
    expect(cliAt(['--version']).code).toBe(0);
    expect(readdirSync(cacheDir()).filter((f) => f.startsWith('cli-code-') || f === 'node-compile-cache')).toEqual([`cli-code-${process.version}-${process.platform}-${process.arch}.bin`]);
  });

  it('(the hand-written one) is written by the first start, used by the next, and a damaged one is ignored and rewritten; output never changes', () => {
    const cacheDir = join(dir, 'cache');
    const cli = (args: string[], env: Record<string, string> = {}) => cliAt(args, { ENGRAM_CODE_CACHE: 'vm', ...env });
    const cacheFile = () => join(cacheDir, readdirSync(cacheDir).find((f) => f.startsWith('cli-code-')) ?? 'none');
    expect(cli(['ingest', DEMO]).code).toBe(0);
    expect(existsSync(cacheFile())).toBe(true);
    const written = readFileSync(cacheFile());
    expect(written.subarray(0, 8).toString()).toBe('ENGRAMCC');

    const recall = ['recall', 'ECONNREFUSED', '--json', '--retriever', 'fts'];
    const first = cli(recall);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('ECONNREFUSED');
    // A start that used the cache leaves it as it was.
    expect(cli(recall)).toEqual(first);
    expect(readFileSync(cacheFile()).equals(written)).toBe(true);

    // A damaged file (here: half of it) is ignored, the command runs as before, and the file is written afresh.
    writeFileSync(cacheFile(), written.subarray(0, written.length >> 1));
    expect(cli(recall)).toEqual(first);
    expect(readFileSync(cacheFile()).subarray(0, 8).toString()).toBe('ENGRAMCC');
    expect(readFileSync(cacheFile()).length).toBeGreaterThan(written.length >> 1);

    // Off: no file read or written, the same output.
    rmSync(cacheDir, { recursive: true });
    expect(cli(recall, { ENGRAM_CODE_CACHE: '0' })).toEqual(first);
    expect(existsSync(cacheDir) && readdirSync(cacheDir).some((f) => f.startsWith('cli-code-'))).toBe(false);
  }, 120_000);
});
