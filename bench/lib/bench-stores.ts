import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { StoreLocation } from '../../src/store/open-store.js';

export type BenchBackend = 'sqlite' | 'postgres';

export interface BenchStore {
  location: StoreLocation;
  /** Removes the store (temp directory or schema). */
  cleanup(): Promise<void>;
}

let pgUrl: string | undefined;

/**
 * A PostgreSQL database for benchmarks: $ENGRAM_BENCH_PG_URL, else the local test server that
 * scripts/ensure-test-postgres.sh starts (the same one `npm test` uses).
 */
export function benchPgUrl(): string {
  if (pgUrl) return pgUrl;
  pgUrl = process.env.ENGRAM_BENCH_PG_URL ?? process.env.ENGRAM_TEST_PG_URL;
  if (!pgUrl) {
    const run = spawnSync('bash', ['scripts/ensure-test-postgres.sh'], { encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`no PostgreSQL for the benchmark: ${run.stderr}`);
    pgUrl = run.stdout.trim();
  }
  return pgUrl;
}

export async function createBenchStore(backend: BenchBackend): Promise<BenchStore> {
  if (backend === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'engram-bench-'));
    return { location: { db: join(dir, 'bench.db') }, cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const schema = `engram_bench_${randomBytes(4).toString('hex')}`;
  const base = benchPgUrl();
  return {
    location: { pg: `${base}${base.includes('?') ? '&' : '?'}schema=${schema}` },
    cleanup: async () => {
      const client = new pg.Client({ connectionString: base });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await client.end();
    },
  };
}
