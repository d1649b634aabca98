import { z } from 'zod';
import type { ArtifactId, EventId, SessionId } from './ids.js';
import { SESSION_ID_PATTERN } from './ids.js';
import type { PreviewKind } from './artifact.js';
import type { ValueIssue } from './limits.js';
import {
  formatLimitBytes,
  jsonValueProblem,
  MAX_ARTIFACT_CONTENT_BYTES,
  MAX_INLINE_CONTENT_BYTES,
  MAX_META_JSON_CHARS,
  MAX_TIMESTAMP_MS,
  MIN_TIMESTAMP_MS,
  stringProblem,
} from './limits.js';

export { MAX_META_JSON_CHARS } from './limits.js';

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
/**
 * Tag of an event that holds Engram's own output come back into a transcript: a recall or expand result returned to
 * the agent as a tool result, a brief or prompt recall a hook injected. Such an event is stored (lossless) but is never
 * evidence: recall and the briefs return the original events it quotes, not it (docs/memory-across-sessions.md).
 */
export const DERIVED_EVENT_TAG = 'engram:derived';

/** A kind a caller may append. */
export type InputEventKind = (typeof EVENT_KINDS)[number];

/** Longest idempotency key accepted, in characters. */
export const MAX_EVENT_KEY_CHARS = 256;
export const sessionIdSchema = z
  .string()
  .regex(SESSION_ID_PATTERN, 'must be 1-128 characters of letters, digits and ._:@- starting with a letter or digit (after a project qualifier and ~, if any)');

/** A short identifier-like string: no NUL (PostgreSQL text cannot hold one, and no tool sends one). */
const label = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .refine((v) => !v.includes('\u0000'), 'must not contain a NUL character');

const timestampSchema = z.union([
  z.number().int().nonnegative(),
  z
    .string()
    .max(64)
    .refine((s) => !Number.isNaN(Date.parse(s)), 'must be an ISO-8601 timestamp'),
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
    /** Plain JSON, within the limits of model/limits.ts (depth, entries, serialized size). */
    meta: z.record(z.string(), z.unknown()).optional(),
    binary: binaryInputSchema.optional(),
};

/** What a caller appends. Everything except `kind` and `content` is optional. */
export const eventInputSchema = z
  .object({ kind: z.enum(EVENT_KINDS), ...eventInputFields })
  .strict()
  .superRefine((event, ctx) => {
    for (const issue of eventValueIssues(event)) ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message, ...(issue.params ? { params: { ...issue.params } } : {}) });
  });
/** The same, for Engram's own writers, which may also use the internal kinds. */
export const internalEventInputSchema = z
  .object({ kind: z.enum(STORED_EVENT_KINDS), ...eventInputFields })
  .strict()
  .superRefine((event, ctx) => {
    for (const issue of eventValueIssues(event)) ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message, ...(issue.params ? { params: { ...issue.params } } : {}) });
  });

/** The fields {@link eventValueIssues} reads, as the field schemas output them. */
interface ParsedEventFields {
  kind: string;
  content: string;
  ts?: number | string | undefined;
  key?: string | undefined;
  taskId?: string | undefined;
  premiseRef?: string | undefined;
  tags?: string[] | undefined;
  toolName?: string | undefined;
  toolCallId?: string | undefined;
  meta?: Record<string, unknown> | undefined;
  binary?: { base64: string; mediaType: string; caption?: string | undefined } | undefined;
}

/**
 * The value checks the field schemas cannot express (model/limits.ts): content size by kind, the timestamp range,
 * valid Unicode in every string, `meta` as bounded plain JSON. Returns the first problem only: one clear error.
 */
export function eventValueIssues(event: ParsedEventFields): ValueIssue[] {
  const bytes = Buffer.byteLength(event.content, 'utf8');
  const isArtifact = event.kind === 'tool_result';
  const maxContent = isArtifact ? MAX_ARTIFACT_CONTENT_BYTES : MAX_INLINE_CONTENT_BYTES;
  if (bytes > maxContent) {
    const limit = isArtifact ? 'MAX_ARTIFACT_CONTENT_BYTES' : 'MAX_INLINE_CONTENT_BYTES';
    const hint = isArtifact
      ? 'keep larger outputs outside the memory and point to them'
      : `only tool results (stored as artifacts, up to ${formatLimitBytes(MAX_ARTIFACT_CONTENT_BYTES)}) may be larger`;
    return [{ path: ['content'], message: `${bytes} bytes exceed the ${formatLimitBytes(maxContent)} limit of ${event.kind} content (${limit}); ${hint}`, params: { limit, max: maxContent, actual: bytes } }];
  }
  if (event.binary) {
    // An upper bound (white space in the base64 counts too), without copying a text of megabytes to strip it.
    const decoded = Math.floor((event.binary.base64.length * 3) / 4);
    if (decoded > MAX_ARTIFACT_CONTENT_BYTES) {
      return [
        {
          path: ['binary', 'base64'],
          message: `about ${decoded} bytes exceed the ${formatLimitBytes(MAX_ARTIFACT_CONTENT_BYTES)} attachment limit (MAX_ARTIFACT_CONTENT_BYTES)`,
          params: { limit: 'MAX_ARTIFACT_CONTENT_BYTES', max: MAX_ARTIFACT_CONTENT_BYTES, actual: decoded },
        },
      ];
    }
  }
  if (event.ts !== undefined) {
    const ms = toEpochMs(event.ts, 0);
    if (!(ms >= MIN_TIMESTAMP_MS && ms <= MAX_TIMESTAMP_MS)) {
      const limit = ms < MIN_TIMESTAMP_MS ? 'MIN_TIMESTAMP_MS' : 'MAX_TIMESTAMP_MS';
      return [
        {
          path: ['ts'],
          message: `must lie in years 0000 to 9999, epoch ms ${MIN_TIMESTAMP_MS} to ${MAX_TIMESTAMP_MS} (${limit}), got ${String(event.ts)}`,
          params: { limit, max: limit === 'MAX_TIMESTAMP_MS' ? MAX_TIMESTAMP_MS : MIN_TIMESTAMP_MS },
        },
      ];
    }
  }
  // Content may hold NUL (tool output does; PostgreSQL stores it escaped); identifiers may not (their schemas say so).
  const strings: Array<[Array<string | number>, string | undefined, boolean]> = [
    [['content'], event.content, true],
    [['key'], event.key, false],
    [['taskId'], event.taskId, false],
    [['premiseRef'], event.premiseRef, false],
    [['toolName'], event.toolName, false],
    [['toolCallId'], event.toolCallId, false],
    [['binary', 'mediaType'], event.binary?.mediaType, false],
    [['binary', 'caption'], event.binary?.caption, true],
    ...(event.tags ?? []).map((tag, i): [Array<string | number>, string, boolean] => [['tags', i], tag, false]),
  ];
  for (const [path, value, allowNul] of strings) {
    const problem = value === undefined ? undefined : stringProblem(value, allowNul);
    if (problem) return [{ path, message: problem }];
  }
  if (event.meta !== undefined) {
    const problem = jsonValueProblem(event.meta);
    if (problem) return [{ ...problem, path: ['meta', ...problem.path] }];
    const chars = JSON.stringify(event.meta).length;
    if (chars > MAX_META_JSON_CHARS) {
      return [
        {
          path: ['meta'],
          message: `serializes to ${chars} characters, over the limit of ${MAX_META_JSON_CHARS} (MAX_META_JSON_CHARS); put large data in the content`,
          params: { limit: 'MAX_META_JSON_CHARS', max: MAX_META_JSON_CHARS, actual: chars },
        },
      ];
    }
  }
  return [];
}

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
