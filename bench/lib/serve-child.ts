/**
 * Runs the `engram` CLI from the TypeScript sources (through tsx), so benchmarks exercise the current code
 * without a build: `node --import tsx bench/lib/serve-child.ts serve --db ... --port 0 --json`.
 * With $ENGRAM_BENCH_QUERY_COUNT_DIR set it counts the queries sent to PostgreSQL (pg-query-count.ts).
 */
import { main } from '../../src/interfaces/cli/main.js';
import { countPgQueries } from './pg-query-count.js';

const countDir = process.env.ENGRAM_BENCH_QUERY_COUNT_DIR;
if (countDir) countPgQueries(countDir);
process.exitCode = await main(process.argv);
