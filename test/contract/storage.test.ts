import { BACKEND_HARNESSES } from './harnesses.js';
import { describeStorageContract } from './storage-contract.js';

// The conformance suite, once per backend; each test gets a fresh store (a temp SQLite file, or a fresh
// PostgreSQL schema that is dropped afterwards).
for (const [name, createHarness] of BACKEND_HARNESSES) describeStorageContract(name, createHarness);
