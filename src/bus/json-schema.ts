import { z } from 'zod';
import { ENGRAM_SCHEMA_ID, engramSchema } from '../model/engram.js';
import { POINTER_SCHEMA_ID, pointerSchema } from '../model/pointer.js';

/** A JSON Schema document, as written to `schemas/`. */
export type JsonSchemaDocument = Record<string, unknown>;

/** Where the published schemas live, relative to the repository root, and how to rebuild them. */
export const JSON_SCHEMA_FILES = {
  engram: 'schemas/engram.schema.json',
  pointer: 'schemas/pointer.schema.json',
} as const;
export const REGENERATE_JSON_SCHEMAS = 'node --import tsx src/bus/write-json-schemas.ts';

/**
 * The engram and pointer JSON Schemas (draft 2020-12), generated from the zod schemas so the two can never
 * disagree. The engram schema refers to the pointer schema by `$id`, as the seed's does (PAS Bus §4.1).
 */
export function buildJsonSchemas(): { engram: JsonSchemaDocument; pointer: JsonSchemaDocument } {
  const registry = z.registry<{ id: string }>();
  registry.add(pointerSchema, { id: 'pointer' });
  registry.add(engramSchema, { id: 'engram' });
  const ids: Record<string, string> = { pointer: POINTER_SCHEMA_ID, engram: ENGRAM_SCHEMA_ID };
  const out = z.toJSONSchema(registry, { target: 'draft-2020-12', uri: (id) => ids[id] ?? id });
  const engram = out.schemas.engram;
  const pointer = out.schemas.pointer;
  if (!engram || !pointer) throw new Error('zod did not emit both schemas');
  return {
    engram: titled(engram, 'Engram (v0.1)', 'A micro-claim with 1-12 pointers to canonical sources, confidence, TTL, scope and provenance (PAS Bus spec §4.1).'),
    pointer: titled(pointer, 'Engram Bus pointer (v0.1)', 'An address of canonical content, not the content (PAS Bus spec §1.2, §4.2).'),
  };
}

/** Puts `title` and `description` right after `$schema` and `$id`, where a reader looks first. */
function titled(doc: Record<string, unknown>, title: string, description: string): JsonSchemaDocument {
  const { $schema, $id, ...rest } = doc;
  return { $schema, $id, title, description, ...rest };
}

/** The file text of a schema document: 2-space JSON and a final newline. */
export function formatJsonSchema(doc: JsonSchemaDocument): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}
