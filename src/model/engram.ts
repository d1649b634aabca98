import { z } from 'zod';
import { EngramError } from '../errors.js';
import { pointerSchema } from './pointer.js';

/**
 * The engram object of the Engram Bus, v0.1 (PAS Bus spec §4.1; LESS §5 and §14): a micro-claim anchored by
 * pointers. Field names are the seed's wire names (`hash_keys`, `created_at`), so the JSON Schemas in
 * `schemas/` are the seed's schemas; they are generated from the zod schemas here and in `pointer.ts`
 * (`src/bus/json-schema.ts`), never edited by hand.
 *
 * The zod schema checks the structure only, exactly as a JSON Schema validator would. `validateEngram`
 * (`src/bus/validation.ts`) adds what a JSON Schema cannot say: that each `ref` parses as a pointer of its
 * `type` (PAS Bus §8.2 "pointers without a resolvable reference format" are rejected).
 */

/** Longest claim, in characters (PAS Bus §3.1 MAX_ENGRAM_CHARS). */
export const MAX_CLAIM_CHARS = 500;
/** An engram needs at least one pointer: unanchored claims are rejected (PAS Bus §8.1, LESS §3). */
export const MIN_POINTERS_PER_ENGRAM = 1;
/** Most pointers per engram (LESS §5.2). */
export const MAX_POINTERS_PER_ENGRAM = 12;
export const MAX_TAGS_PER_ENGRAM = 12;
export const MAX_TAG_CHARS = 40;
export const MAX_HASH_KEYS_PER_ENGRAM = 32;
export const MAX_HASH_KEY_CHARS = 80;

export const ENGRAM_KINDS = ['fact', 'decision', 'risk', 'todo', 'constraint', 'diff', 'test', 'perf', 'policy'] as const;
export type EngramKind = (typeof ENGRAM_KINDS)[number];

/** Who may see an engram (LESS §4.3): children write run/project; only a parent promotes to org/global. */
export const ENGRAM_SCOPES = ['run', 'project', 'org', 'global'] as const;
export type EngramScope = (typeof ENGRAM_SCOPES)[number];

/** Where a claim came from (LESS §8.3): the truth plane (`rag`), the episodic plane (`sam`), an agent, a tool. */
export const PROVENANCE_SOURCES = ['rag', 'sam', 'agent', 'tool'] as const;
export type ProvenanceSource = (typeof PROVENANCE_SOURCES)[number];

/** `$id` of the published JSON Schema. The seed's `verdict://` scheme names its host system, not ours. */
export const ENGRAM_SCHEMA_ID = 'engram://schemas/engram.v0.1.json';

const provenanceSchema = z
  .object({
    created_at: z.iso.datetime({ offset: true }),
    created_by: z.string().min(1).describe('agent_id'),
    source: z.enum(PROVENANCE_SOURCES),
  })
  .strict();
export type EngramProvenance = z.output<typeof provenanceSchema>;

/** A micro-claim with pointers to canonical sources and its metadata (PAS Bus §1.1). */
export const engramSchema = z
  .object({
    id: z.string().min(1).describe('ULID/UUID'),
    kind: z.enum(ENGRAM_KINDS),
    claim: z.string().min(1).max(MAX_CLAIM_CHARS),
    pointers: z.array(pointerSchema).min(MIN_POINTERS_PER_ENGRAM).max(MAX_POINTERS_PER_ENGRAM),
    confidence: z.number().min(0).max(1),
    ttl: z.iso.duration().describe('ISO-8601 duration, e.g. PT6H, P7D'),
    scope: z.enum(ENGRAM_SCOPES),
    tags: z.array(z.string().min(1).max(MAX_TAG_CHARS)).max(MAX_TAGS_PER_ENGRAM),
    hash_keys: z.array(z.string().min(1).max(MAX_HASH_KEY_CHARS)).max(MAX_HASH_KEYS_PER_ENGRAM),
    embedding_ref: z.string().min(1).describe('Optional pointer to embedding storage/id'),
    provenance: provenanceSchema,
  })
  .partial({ tags: true, hash_keys: true, embedding_ref: true })
  .strict();
/**
 * An engram as stored and exchanged: the claim object. Named `EngramClaim` so it is never confused with the
 * engine (`Engram`, `src/engine.ts`).
 */
export type EngramClaim = z.output<typeof engramSchema>;

/** The parts of an ISO-8601 duration (`P1Y2M3W4DT5H6M7.5S`); absent parts are 0. */
export interface IsoDuration {
  years: number;
  months: number;
  weeks: number;
  days: number;
  hours: number;
  minutes: number;
  seconds: number;
}

const DURATION_PARTS = /^P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:[.,]\d+)?)S)?)?$/;

/** Parses a TTL accepted by `engramSchema` (INVALID_INPUT naming `ttl` otherwise). */
export function parseTtl(ttl: string): IsoDuration {
  const checked = engramSchema.shape.ttl.safeParse(ttl);
  const m = checked.success ? DURATION_PARTS.exec(ttl) : null;
  if (!m) throw new EngramError('INVALID_INPUT', `ttl: "${ttl}" is not an ISO-8601 duration such as PT6H or P7D`, { field: 'ttl' });
  const n = (i: number): number => Number((m[i] ?? '0').replace(',', '.'));
  return { years: n(1), months: n(2), weeks: n(3), days: n(4), hours: n(5), minutes: n(6), seconds: n(7) };
}

/**
 * When an engram with this TTL, created at `createdAt`, expires. Years and months are calendar steps in UTC
 * (P1M from Jan 31 is Mar 3 or 2, as `Date.setUTCMonth` does); weeks, days and times are exact durations.
 */
export function ttlExpiresAt(createdAt: string | Date, ttl: string): Date {
  const d = parseTtl(ttl);
  const at = new Date(typeof createdAt === 'string' ? Date.parse(createdAt) : createdAt.getTime());
  if (Number.isNaN(at.getTime())) throw new EngramError('INVALID_INPUT', `provenance.created_at: not a timestamp`, { field: 'provenance.created_at' });
  if (d.years > 0 || d.months > 0) at.setUTCMonth(at.getUTCMonth() + d.years * 12 + d.months);
  const ms = (((d.weeks * 7 + d.days) * 24 + d.hours) * 60 + d.minutes) * 60_000 + d.seconds * 1000;
  return new Date(at.getTime() + ms);
}
