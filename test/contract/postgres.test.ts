import { PostgresBackend } from '../../src/store/postgres/postgres-backend.js';
import { dropSchema, testPgUrl, uniqueSchema } from '../fixtures/postgres.js';
import { describeStorageContract } from './storage-contract.js';

// Each test gets a fresh schema in the test database, dropped afterwards: tests never see each other's data.
describeStorageContract('postgres', async () => {
  const schema = uniqueSchema();
  const backend = await PostgresBackend.open(testPgUrl(), { schema, maxConnections: 4 });
  return {
    backend,
    cleanup: async () => {
      await backend.close();
      await dropSchema(schema);
    },
  };
});
