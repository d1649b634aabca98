import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Runs once before the test workers start (they inherit this process's environment):
 * - the CLI tests run the built `bin/engram.js`, as a user would after `npm ci`: build once, fresh;
 * - the PostgreSQL tests need a server: unless ENGRAM_TEST_PG_URL names one, scripts/ensure-test-postgres.sh
 *   installs (apt), starts and prepares a local one and prints its URL. If that fails, the reason is passed on
 *   and every PostgreSQL test fails with it (test/fixtures/postgres.ts); the other tests still run;
 * - the built-in embedder's tests share one word-vector cache directory per run (ENGRAM_TEST_CACHE_DIR): the
 *   first test that needs the cache builds it there from the real package (a few seconds), the rest load it.
 *   It is created empty here, so a run that tests no embedder pays nothing, and removed afterwards.
 */
export default function setup(): () => void {
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' });

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
  return () => rmSync(cacheDir, { recursive: true, force: true });
}
