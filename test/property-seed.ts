import fc from 'fast-check';
import { beforeEach } from 'vitest';

/**
 * Vitest setup file (vitest.config.ts `setupFiles`): every fast-check property of a test file runs from one seed,
 * `$ENGRAM_FC_SEED` when set (a replay), else a new random one, and a failed property prints that seed with the
 * command that replays it. fast-check's own message also gives the seed and the path to the counterexample
 * (`fc.assert(property, { seed, path })` jumps straight to it).
 */
const given = process.env.ENGRAM_FC_SEED;
const seed = given !== undefined && given.trim() !== '' ? Number(given) : (Math.random() * 0x1_0000_0000) | 0;
if (!Number.isSafeInteger(seed)) throw new Error(`ENGRAM_FC_SEED must be an integer, got ${given ?? ''}`);
fc.configureGlobal({ ...fc.readConfigureGlobal(), seed });

beforeEach(({ onTestFailed, task }) => {
  onTestFailed(({ task: failed }) => {
    // Only a property's failure: fast-check's messages start "Property failed" (or "interrupted", on a time limit).
    if (!(failed.result?.errors ?? []).some((e) => /Property (failed|interrupted)/.test(e.message ?? ''))) return;
    const file = task.file.name;
    console.error(`fast-check seed ${seed} for ${file}; replay: ENGRAM_FC_SEED=${seed} npx vitest run ${file} -t ${JSON.stringify(task.name)}`);
  });
});
