import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PostgresBackend } from '../../src/store/postgres/postgres-backend.js';
import { SqliteBackend } from '../../src/store/sqlite/sqlite-backend.js';
import { dropSchema, testPgUrl, uniqueSchema } from '../fixtures/postgres.js';
import { afterEach, beforeEach } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import type { BackendHarness } from './storage-contract.js';

/** Every backend, as a fresh store per call: contract files loop over these. */
export const BACKEND_HARNESSES: ReadonlyArray<[name: string, create: () => Promise<BackendHarness>]> = [
  [
    'sqlite',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'engram-contract-'));
      const backend = SqliteBackend.open(join(dir, 'engram.db'));
      return {
        backend,
        cleanup: async () => {
          await backend.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  ],
  [
    'postgres',
    async () => {
      const schema = uniqueSchema();
      const backend = await PostgresBackend.open(testPgUrl(), { schema, maxConnections: 4 });
      return {
        backend,
        cleanup: async () => {
          await backend.close();
          await dropSchema(schema);
        },
      };
    },
  ],
];

/**
 * Registers beforeEach/afterEach that open an engine on a fresh store of one backend and close it; the
 * returned object reads the current ones inside tests.
 */
export function useEngram(createHarness: () => Promise<BackendHarness>): { readonly mem: Engram; readonly harness: BackendHarness } {
  let harness: BackendHarness | undefined;
  let mem: Engram | undefined;
  beforeEach(async () => {
    harness = await createHarness();
    mem = await openEngram({ backend: harness.backend });
  });
  afterEach(async () => {
    // Guarded: when the harness failed to open, the real error must not be buried under a TypeError.
    await mem?.close();
    await harness?.cleanup();
    mem = undefined;
    harness = undefined;
  });
  return {
    get mem() {
      return mem!;
    },
    get harness() {
      return harness!;
    },
  };
}
