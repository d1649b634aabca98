import { z } from 'zod';

/**
 * The pointer object of the Engram Bus, v0.1 (PAS Bus spec §4.2; LESS §5): an address of canonical content,
 * not the content (PAS Bus §1.2). Field names are the seed's wire names. The zod schema checks the structure
 * only, as a JSON Schema validator would; the `ref` grammar (`repo:...@<commit>`) is parsed in
 * `src/bus/pointer.ts`, and `validatePointer` (`src/bus/validation.ts`) checks both.
 */

/** Longest pointer `ref`, in characters (PAS Bus §4.2). */
export const MAX_POINTER_REF_CHARS = 300;
/** Longest pointer `span` (`L10-L20` or a section id), in characters. */
export const MAX_POINTER_SPAN_CHARS = 80;

/** The pointer types, in the order of PAS Bus §4.2. */
export const POINTER_TYPES = ['repo', 'artifact', 'sam', 'url', 'test', 'diff'] as const;
export type PointerType = (typeof POINTER_TYPES)[number];

/** `$id` of the published JSON Schema. The seed's `verdict://` scheme names its host system, not ours. */
export const POINTER_SCHEMA_ID = 'engram://schemas/pointer.v0.1.json';

/** A pointer as exchanged between agents: an address, not content (PAS Bus §1.2). */
export const pointerSchema = z
  .object({
    type: z.enum(POINTER_TYPES),
    ref: z
      .string()
      .min(1)
      .max(MAX_POINTER_REF_CHARS)
      .describe('The address, scheme first: repo:src/a.ts#L10-L20@<commit>, artifact:<name>#sec=<section>@<digest>, sam:<kind>:<id>, diff:<commit>#<path>#L1-L9, test:<id>, url:<url>'),
    digest: z.string().min(1).describe('Optional content hash for integrity: the sha256 (hex) of the span the resolver returned'),
    span: z.string().min(1).max(MAX_POINTER_SPAN_CHARS).describe('Optional Lx-Ly or section id, when the ref does not carry it'),
  })
  .partial({ digest: true, span: true })
  .strict();
export type Pointer = z.output<typeof pointerSchema>;
