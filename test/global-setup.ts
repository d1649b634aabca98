import { execFileSync, spawnSync } from 'node:child_process';

/**
 * Runs once before the test workers start (they inherit this process's environment):
 * - the CLI tests run the built `bin/engram.js`, as a user would after `npm ci`: build once, fresh;
 * - the PostgreSQL tests need a server: unless ENGRAM_TEST_PG_URL names one, scripts/ensure-test-postgres.sh
 *   installs (apt), starts and prepares a local one and prints its URL. If that fails, the reason is passed on
 *   and every PostgreSQL test fails with it (test/fixtures/postgres.ts); the other tests still run.
 */
export default function setup(): void {
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
}
