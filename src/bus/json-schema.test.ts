import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { JSON_SCHEMA_FILES, REGENERATE_JSON_SCHEMAS, buildJsonSchemas, formatJsonSchema } from './json-schema.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('JSON Schemas in schemas/', () => {
  it.each(Object.entries(JSON_SCHEMA_FILES) as Array<[keyof typeof JSON_SCHEMA_FILES, string]>)(
    'the committed %s schema is the one generated from src/model/engram.ts and pointer.ts',
    (name, file) => {
      const committed = readFileSync(`${root}/${file}`, 'utf8');
      const generated = formatJsonSchema(buildJsonSchemas()[name]);
      expect(committed, `${file} is out of date with src/model/engram.ts and pointer.ts; regenerate it from the repository root: ${REGENERATE_JSON_SCHEMAS}`).toBe(generated);
    },
  );

  it("keeps the seed's v0.1 contract: required fields, enums, limits, no extra properties (PAS Bus §4.1, §4.2)", () => {
    const { engram, pointer } = buildJsonSchemas() as unknown as { engram: Schema; pointer: Schema };
    expect(engram.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(engram.required).toEqual(['id', 'kind', 'claim', 'pointers', 'confidence', 'ttl', 'scope', 'provenance']);
    expect(engram.additionalProperties).toBe(false);
    const p = engram.properties;
    expect(Object.keys(p)).toEqual(['id', 'kind', 'claim', 'pointers', 'confidence', 'ttl', 'scope', 'tags', 'hash_keys', 'embedding_ref', 'provenance']);
    expect(p.kind!.enum).toEqual(['fact', 'decision', 'risk', 'todo', 'constraint', 'diff', 'test', 'perf', 'policy']);
    expect(p.claim!.maxLength).toBe(500);
    expect(p.pointers).toMatchObject({ minItems: 1, maxItems: 12, items: { $ref: pointer.$id } });
    expect(p.confidence).toMatchObject({ minimum: 0, maximum: 1 });
    expect(p.ttl).toMatchObject({ type: 'string', format: 'duration' });
    expect(p.scope!.enum).toEqual(['run', 'project', 'org', 'global']);
    expect(p.tags).toMatchObject({ maxItems: 12, items: { maxLength: 40 } });
    expect(p.hash_keys).toMatchObject({ maxItems: 32, items: { maxLength: 80 } });
    expect(p.provenance).toMatchObject({ required: ['created_at', 'created_by', 'source'], additionalProperties: false });
    expect(p.provenance!.properties!.created_at).toMatchObject({ format: 'date-time' });
    expect(p.provenance!.properties!.source!.enum).toEqual(['rag', 'sam', 'agent', 'tool']);

    expect(pointer.required).toEqual(['type', 'ref']);
    expect(pointer.additionalProperties).toBe(false);
    expect(Object.keys(pointer.properties)).toEqual(['type', 'ref', 'digest', 'span']);
    expect(pointer.properties.type!.enum).toEqual(['repo', 'artifact', 'sam', 'url', 'test', 'diff']);
    expect(pointer.properties.ref!.maxLength).toBe(300);
    expect(pointer.properties.span!.maxLength).toBe(80);
  });
});

interface Schema {
  $schema?: string;
  $id?: string;
  $ref?: string;
  type?: string;
  format?: string;
  enum?: string[];
  required?: string[];
  additionalProperties?: boolean;
  properties: Record<string, Schema | undefined>;
  items?: Schema;
  maxLength?: number;
}
