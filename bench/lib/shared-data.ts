import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * The benchmark data folder beside the repository (`../shared/bench-data`), or beside the folder that holds it
 * (a git worktree under `<dir>/wt/<name>` next to `<dir>/shared`); `$ENGRAM_BENCH_DATA` overrides both. The
 * first candidate when none exists, so messages name the expected place.
 */
export function sharedBenchData(): string {
  if (process.env.ENGRAM_BENCH_DATA) return resolve(process.env.ENGRAM_BENCH_DATA);
  const candidates = [resolve(REPO_ROOT, '../shared/bench-data'), resolve(REPO_ROOT, '../../shared/bench-data')];
  return candidates.find((c) => existsSync(c)) ?? candidates[0]!;
}
