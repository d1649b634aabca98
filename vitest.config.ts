import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'bench/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    globalSetup: ['test/global-setup.ts'],
    // fast-check properties run from a seed printed on failure and replayable with ENGRAM_FC_SEED (test/property-seed.ts).
    setupFiles: ['test/property-seed.ts'],
  },
});
