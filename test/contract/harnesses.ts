import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PostgresBackend } from '../../src/store/postgres/postgres-backend.js';
import { SqliteBackend } from '../../src/store/sqlite/sqlite-backend.js';
import { dropSchema, testPgUrl, uniqueSchema } from '../fixtures/postgres.js';
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
