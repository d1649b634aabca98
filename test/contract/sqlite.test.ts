import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteBackend } from '../../src/store/sqlite/sqlite-backend.js';
import { describeStorageContract } from './storage-contract.js';

describeStorageContract('sqlite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'engram-contract-'));
  const backend = SqliteBackend.open(join(dir, 'engram.db'));
  return {
    backend,
    cleanup: async () => {
      await backend.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
