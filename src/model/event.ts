import { z } from 'zod';
import type { ArtifactId, EventId, SessionId } from './ids.js';
import { SESSION_ID_PATTERN } from './ids.js';
import type { PreviewKind } from './artifact.js';

/** Kinds of events callers append (ENGRAM §4.3). */
export const EVENT_KINDS = ['user', 'assistant', 'system', 'tool_call', 'tool_result', 'decision', 'note'] as const;
/**
 * Kinds only Engram itself writes: `task_state` versions of the task card (written through the task-state
 * store, which validates them). Stored and searchable like any event, but never accepted from an import.
 */
export const INTERNAL_EVENT_KINDS = ['task_state'] as const;
/** Every kind a stored event can have. */
export const STORED_EVENT_KINDS = [...EVENT_KINDS, ...INTERNAL_EVENT_KINDS] as const;
export type EventKind = (typeof STORED_EVENT_KINDS)[number];
/** A kind a caller may append. */
export type InputEventKind = (typeof EVENT_KINDS)[number];

/** Longest idempotency key accepted, in characters. */
export const MAX_EVENT_KEY_CHARS = 256;
/** Largest `meta` object accepted, as serialized JSON characters. */
export const MAX_META_JSON_CHARS = 64 * 1024;

export const sessionIdSchema = z
  .string()
  .regex(SESSION_ID_PATTERN, 'must be 1-128 characters of letters, digits and ._:@- starting with a letter or digit');

/** A short identifier-like string: no NUL (PostgreSQL text cannot hold one, and no tool sends one). */
const label = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .refine((v) => !v.includes('\u0000'), 'must not contain a NUL character');

const timestampSchema = z.union([
  z.number().int().nonnegative(),
  z.string().refine((s) => !Number.isNaN(Date.parse(s)), 'must be an ISO-8601 timestamp'),
]);

/** A binary payload (an image, a PDF) attached to an event; it is always stored as an artifact. */
export const binaryInputSchema = z
  .object({
    /** Base64-encoded bytes. */
    base64: z.string().min(1),
    mediaType: z.string().min(1).max(200),
    /** A human or model caption; kept in the preview so the model knows what the artifact shows. */
    caption: z.string().max(2000).optional(),
  })
  .strict();

const eventInputFields = {
    content: z.string(),
    /** When the event happened: epoch milliseconds or ISO-8601. Defaults to now. */
    ts: timestampSchema.optional(),
    /** Idempotency key: appending the same key to the same session twice stores one event. */
    key: label(MAX_EVENT_KEY_CHARS).optional(),
    taskId: label(200).optional(),
    /** Reference to the premise this event was produced under (ENGRAM §5.2). */
    premiseRef: label(200).optional(),
    tags: z.array(label(100)).max(50).optional(),
    /** Id of an earlier event this one supersedes (a revised decision, a corrected value). */
    supersedes: z.string().regex(/^evt_[0-9a-z]{26}$/, 'must be an event id (evt_...)').optional(),
    toolName: label(200).optional(),
    toolCallId: label(200).optional(),
    meta: z
      .record(z.string(), z.unknown())
      .refine((m) => JSON.stringify(m).length <= MAX_META_JSON_CHARS, `must serialize to at most ${MAX_META_JSON_CHARS} characters`)
      .optional(),
    binary: binaryInputSchema.optional(),
};

/** What a caller appends. Everything except `kind` and `content` is optional. */
export const eventInputSchema = z.object({ kind: z.enum(EVENT_KINDS), ...eventInputFields }).strict();
/** The same, for Engram's own writers, which may also use the internal kinds. */
export const internalEventInputSchema = z.object({ kind: z.enum(STORED_EVENT_KINDS), ...eventInputFields }).strict();

export type EventInput = z.input<typeof eventInputSchema>;
export type InternalEventInput = z.input<typeof internalEventInputSchema>;
export type ValidEventInput = z.output<typeof internalEventInputSchema>;

/** Where an event's full content lives when it was too large to keep inline. */
export interface EventArtifactRef {
  id: ArtifactId;
  mediaType: string;
  sizeBytes: number;
  previewKind: PreviewKind;
}

/** A stored event. Immutable once written. */
export interface EventRecord {
  id: EventId;
  sessionId: SessionId;
  /** Per-session sequence number, starting at 1, gap-free. */
  turn: number;
  kind: EventKind;
  /** ISO-8601 with milliseconds, UTC. */
  ts: string;
  /** The verbatim content, or the artifact's preview when `artifact` is set. */
  content: string;
  artifact?: EventArtifactRef;
  key?: string;
  taskId?: string;
  premiseRef?: string;
  tags: string[];
  supersedes?: EventId;
  toolName?: string;
  toolCallId?: string;
  meta?: Record<string, unknown>;
}

export interface SessionRecord {
  id: SessionId;
  /** The project that owns the session (model/access.ts): its agents read and write it. */
  project: string;
  /** Projects that may read the session (shared read-only), sorted. */
  sharedWith: string[];
  createdAt: string;
  eventCount: number;
  /** Highest turn stored; 0 for an empty session. */
  lastTurn: number;
  firstTs?: string;
  lastTs?: string;
}

export function toEpochMs(ts: number | string | undefined, fallbackMs: number): number {
  if (ts === undefined) return fallbackMs;
  return typeof ts === 'number' ? ts : Date.parse(ts);
}
