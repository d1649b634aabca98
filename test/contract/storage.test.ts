import { runStorageContract } from './harnesses.js';
import { defineStorageContract } from './storage-contract.js';

// The conformance suite, once per backend; each test gets a fresh store (a temp SQLite file, or a fresh
// PostgreSQL schema that is dropped afterwards).
runStorageContract('storage contract', defineStorageContract);
