import type { PreviewKind } from '../model/artifact.js';
import type { EventKind, EventRecord } from '../model/event.js';
import type { ArtifactId, EventId, SessionId } from '../model/ids.js';
import type { EventDraft } from './backend.js';

/**
 * An event row as every backend stores it, after the driver's own decoding (JSON text parsed, bigints
 * made numbers, escaped content restored). Backends map their rows to this and share the rest.
 */
export interface EventColumns {
  id: string;
  session_id: string;
  turn: number;
  kind: string;
  ts_ms: number;
  content: string;
  artifact_id: string | null;
  artifact_media: string | null;
  artifact_size: number | null;
  preview_kind: string | null;
  event_key: string | null;
  task_id: string | null;
  premise_ref: string | null;
  tags: string[];
  supersedes: string | null;
  tool_name: string | null;
  tool_call_id: string | null;
  meta: Record<string, unknown> | null;
}

export function eventFromColumns(c: EventColumns): EventRecord {
  const rec: EventRecord = {
    id: c.id as EventId,
    sessionId: c.session_id as SessionId,
    turn: c.turn,
    kind: c.kind as EventKind,
    ts: new Date(c.ts_ms).toISOString(),
    content: c.content,
    tags: c.tags,
  };
  if (c.artifact_id) {
    rec.artifact = {
      id: c.artifact_id as ArtifactId,
      mediaType: c.artifact_media ?? 'application/octet-stream',
      sizeBytes: c.artifact_size ?? 0,
      previewKind: (c.preview_kind ?? 'tail') as PreviewKind,
    };
  }
  if (c.event_key !== null) rec.key = c.event_key;
  if (c.task_id !== null) rec.taskId = c.task_id;
  if (c.premise_ref !== null) rec.premiseRef = c.premise_ref;
  if (c.supersedes !== null) rec.supersedes = c.supersedes as EventId;
  if (c.tool_name !== null) rec.toolName = c.tool_name;
  if (c.tool_call_id !== null) rec.toolCallId = c.tool_call_id;
  if (c.meta !== null) rec.meta = c.meta;
  return rec;
}

/** The record an appended draft becomes, without reading it back. */
export function eventFromDraft(d: EventDraft, sessionId: SessionId, turn: number): EventRecord {
  const rec: EventRecord = {
    id: d.id,
    sessionId,
    turn,
    kind: d.kind,
    ts: new Date(d.tsMs).toISOString(),
    content: d.content,
    tags: d.tags,
  };
  if (d.artifact) rec.artifact = d.artifact;
  if (d.key !== undefined) rec.key = d.key;
  if (d.taskId !== undefined) rec.taskId = d.taskId;
  if (d.premiseRef !== undefined) rec.premiseRef = d.premiseRef;
  if (d.supersedes !== undefined) rec.supersedes = d.supersedes;
  if (d.toolName !== undefined) rec.toolName = d.toolName;
  if (d.toolCallId !== undefined) rec.toolCallId = d.toolCallId;
  if (d.meta !== undefined) rec.meta = d.meta;
  return rec;
}
