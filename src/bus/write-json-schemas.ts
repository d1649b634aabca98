/**
 * Rewrites `schemas/*.schema.json` from the zod schemas. Run from the repository root after changing
 * `src/model/engram.ts` or `src/model/pointer.ts`:
 *
 *   node --import tsx src/bus/write-json-schemas.ts
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { JSON_SCHEMA_FILES, buildJsonSchemas, formatJsonSchema } from './json-schema.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const docs = buildJsonSchemas();
for (const [name, file] of Object.entries(JSON_SCHEMA_FILES) as Array<[keyof typeof JSON_SCHEMA_FILES, string]>) {
  const path = resolve(root, file);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, formatJsonSchema(docs[name]));
  process.stdout.write(`wrote ${file}\n`);
}
