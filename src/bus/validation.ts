import type { z } from 'zod';
import { EngramError, invalidInputFromZod } from '../errors.js';
import { engramSchema, type EngramClaim } from '../model/engram.js';
import { jsonValueProblem } from '../model/limits.js';
import { pointerSchema, type Pointer } from '../model/pointer.js';
import { parsePointer } from './pointer.js';

/**
 * Checks engram and pointer objects (`src/model/engram.ts`, `src/model/pointer.ts`) as the bus accepts them:
 * their structure, as a JSON Schema validator would, and what a JSON Schema cannot say: that each `ref` parses
 * as a pointer of its `type` (PAS Bus §8.2 "pointers without a resolvable reference format" are rejected).
 */

/**
 * Checks a pointer object: its structure (INVALID_INPUT naming the field) and that `ref` parses as a pointer of
 * `type` with a consistent `span` (POINTER_INVALID naming `<field>.ref` or `<field>.span`).
 * `field` prefixes the field names in errors; default `pointer`.
 */
export function validatePointer(input: unknown, field = 'pointer'): Pointer {
  const parsed = pointerSchema.safeParse(input);
  if (!parsed.success) throw invalidInput(parsed.error.issues, field);
  const text = jsonValueProblem(parsed.data, { allowNul: false });
  if (text) throw invalidInput([{ code: 'custom', path: text.path, message: text.message, input: undefined }], field);
  parsePointer(parsed.data, field);
  return parsed.data;
}

/**
 * Checks an engram against the v0.1 schema and the pointer grammar. Throws INVALID_INPUT naming the first bad
 * field (`claim`, `pointers[2].type`, `provenance.created_at`), or POINTER_INVALID naming `pointers[i].ref`.
 */
export function validateEngram(input: unknown): EngramClaim {
  const parsed = engramSchema.safeParse(input);
  if (!parsed.success) throw invalidInput(parsed.error.issues);
  // Valid Unicode without NUL in every string: both backends store them as text (model/limits.ts).
  const text = jsonValueProblem(parsed.data, { allowNul: false });
  if (text) throw invalidInput([{ code: 'custom', path: text.path, message: text.message, input: undefined }]);
  parsed.data.pointers.forEach((pointer, i) => parsePointer(pointer, `pointers[${i}]`));
  return parsed.data;
}

/**
 * zod reports an unknown key at the object that holds it (path `[]`); name the key itself, so "extra
 * properties are refused with an error naming the field" holds for them too.
 */
function invalidInput(issues: readonly z.core.$ZodIssue[], prefix = ''): EngramError {
  const named = issues.map((issue) =>
    issue.code === 'unrecognized_keys' && issue.keys[0] !== undefined
      ? { ...issue, path: [...issue.path, issue.keys[0]], message: `unknown property (the schema allows no others)` }
      : issue,
  );
  return invalidInputFromZod(named, prefix);
}
