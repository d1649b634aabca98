import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * Runs once before the test workers start (they inherit this process's environment):
 * - the CLI tests run the built `bin/engram.js`, as a user would after `npm ci`: build once, fresh (dist/ and its
 *   bundle, dist/cli-bundle/);
 * - the PostgreSQL tests need a server: unless ENGRAM_TEST_PG_URL names one, scripts/ensure-test-postgres.sh
 *   installs (apt), starts and prepares a local one and prints its URL. If that fails, the reason is passed on
 *   and every PostgreSQL test fails with it (test/fixtures/postgres.ts); the other tests still run;
 * - the built-in embedder's word-vector cache is built once per run from the real package (~5 s) in a temp
 *   directory (ENGRAM_TEST_CACHE_DIR for tests, ENGRAM_CACHE_DIR for the CLI processes they spawn, which
 *   embed with it by default), and removed afterwards.
 */
export default async function setup(): Promise<() => void> {
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
  // bin/engram.js runs the bundle of dist/ when it is not older than dist/: rebuilt here, so the tests run what a user runs.
  execFileSync(process.execPath, ['scripts/build-cli-bundle.mjs'], { stdio: 'inherit' });

  if (!process.env.ENGRAM_TEST_PG_URL) {
    const run = spawnSync('bash', ['scripts/ensure-test-postgres.sh'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      // A first run may apt-get install PostgreSQL.
      timeout: 15 * 60_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    process.stderr.write(run.stderr ?? '');
    const url = (run.stdout ?? '').trim();
    if (run.status === 0 && /^postgres(ql)?:\/\//.test(url)) {
      process.env.ENGRAM_TEST_PG_URL = url;
    } else {
      const lastLine = (run.stderr ?? '').trim().split('\n').pop();
      process.env.ENGRAM_TEST_PG_SETUP_ERROR = `scripts/ensure-test-postgres.sh ${
        run.error ? `could not run (${run.error.message})` : `exited ${String(run.status ?? run.signal)}`
      }${lastLine ? `: ${lastLine}` : ''}`;
    }
  }

  const cacheDir = mkdtempSync(join(tmpdir(), 'engram-test-cache-'));
  process.env.ENGRAM_TEST_CACHE_DIR = cacheDir;
  // CLI processes the tests spawn use the built-in embedder by default: same cache, built once here (~5 s)
  // rather than by several test files at once.
  process.env.ENGRAM_CACHE_DIR = cacheDir;
  const builtin = (await import(pathToFileURL(join(process.cwd(), 'dist/providers/builtin-embedder.js')).href)) as typeof import('../src/providers/builtin-embedder.js');
  await builtin.createBuiltinEmbedder({ cacheDir });
  return () => rmSync(cacheDir, { recursive: true, force: true });
}
