/**
 * Runs the `engram` CLI from the TypeScript sources (through tsx), so benchmarks exercise the current code
 * without a build: `node --import tsx bench/lib/serve-child.ts serve --db ... --port 0 --json`.
 */
import { main } from '../../src/interfaces/cli/main.js';

process.exitCode = await main(process.argv);
