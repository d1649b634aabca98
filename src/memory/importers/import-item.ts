export { formatBytes } from '../../util/format-bytes.js';
import { createHash } from 'node:crypto';
import type { z } from 'zod';
import { eventInputSchema, sessionIdSchema } from '../../model/event.js';
import type { EventInput } from '../../model/event.js';
import type { ImportedEvent, ImportItem } from './types.js';

/** An issue item; `field` is left out when not given so issues compare cleanly. */
export function issueItem(line: number, message: string, field?: string): ImportItem {
  return { type: 'issue', value: field === undefined ? { line, message } : { line, message, field } };
}

/** A skip item: something recognised and deliberately not stored. */
export function skipItem(line: number, reason: string): ImportItem {
  return { type: 'skip', value: { line, reason } };
}

export interface EventItemOptions {
  line: number;
  sessionId?: string;
  /**
   * Where in the source the event was built from (`messages[3].content[1]`). Reported as the issue's
   * field when the built event is invalid. Omit it when the source record is the event itself (Engram
   * JSONL), so the event's own field path is reported.
   */
  source?: string;
}

/** Validates an event built from the source and wraps it as an item, or as an issue naming the field. */
export function eventItem(event: EventInput, options: EventItemOptions): ImportItem {
  const { line, sessionId, source } = options;
  if (sessionId !== undefined) {
    const checked = sessionIdSchema.safeParse(sessionId);
    if (!checked.success) return issueItem(line, `sessionId: ${checked.error.issues[0]?.message ?? 'invalid'}`, 'sessionId');
  }
  const checked = eventInputSchema.safeParse(event);
  if (!checked.success) {
    const { field, message } = describeZodIssue(checked.error.issues);
    if (source === undefined) return issueItem(line, message, field);
    return issueItem(line, `the event built from ${source} is invalid: ${message}`, source);
  }
  const value: ImportedEvent = sessionId === undefined ? { line, event } : { line, sessionId, event };
  if (source !== undefined) value.source = source;
  return { type: 'event', value };
}

/** The first zod issue as a field path and a message that names it; unknown keys name the key itself. */
export function describeZodIssue(issues: readonly z.core.$ZodIssue[]): { field: string; message: string } {
  const first = issues[0];
  if (first === undefined) return { field: '(root)', message: 'invalid' };
  const base = first.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('').replace(/^\./, '');
  if (first.code === 'unrecognized_keys') {
    const keys = first.keys.map((k) => (base === '' ? k : `${base}.${k}`));
    const noun = keys.length === 1 ? 'unknown field' : 'unknown fields';
    return { field: keys[0] ?? '(root)', message: `${noun} ${keys.map((k) => `'${k}'`).join(', ')}` };
  }
  const field = base === '' ? '(root)' : base;
  return { field, message: `${field}: ${first.message}` };
}

/** First 16 hex digits of the sha256 of the bytes: enough to tell lines apart inside one key space. */
export function shortSha256(bytes: Uint8Array | string): string {
  return createHash('sha256').update(bytes).digest('hex').slice(0, 16);
}

/** Drops undefined optional fields and empty tags/meta so built events stay minimal and comparable. */
export function compactEvent(event: EventInput): EventInput {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(event)) {
    if (value === undefined) continue;
    if (name === 'tags' && Array.isArray(value) && value.length === 0) continue;
    if (name === 'meta' && typeof value === 'object' && value !== null && Object.keys(value).length === 0) continue;
    out[name] = value;
  }
  return out as EventInput;
}

/** A plain JSON object (not an array, not null). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A timestamp as the source gave it, if it is one the event schema could accept; else undefined. */
export function timestampOf(value: unknown): string | number | undefined {
  return typeof value === 'string' || typeof value === 'number' ? value : undefined;
}

/** A parser failure message for a JSONL line. */
export function malformedJsonMessage(err: unknown): string {
  return `malformed JSON: ${err instanceof Error ? err.message : String(err)}`;
}

/** Decoded size of base64 text, without decoding it. */
export function base64ByteLength(base64: string): number {
  const padding = base64.endsWith('==') ? 2 : base64.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((base64.length * 3) / 4) - padding);
}

