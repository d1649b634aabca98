import type { EventId, SessionId } from '../model/ids.js';
import type { KarmaRecord } from '../model/karma.js';

/** A karma row as both backends store it (bigints may arrive as strings from PostgreSQL). */
export interface KarmaColumns {
  id: string;
  session_id: string | null;
  text: string;
  source_event_id: string | null;
  verified_by: string;
  verified_ms: number | string;
  removed_ms: number | string | null;
  removed_by: string | null;
}

export function karmaFromColumns(r: KarmaColumns): KarmaRecord {
  return {
    id: r.id,
    text: r.text,
    verifiedBy: r.verified_by,
    verifiedAt: new Date(Number(r.verified_ms)).toISOString(),
    ...(r.session_id !== null ? { sessionId: r.session_id as SessionId } : {}),
    ...(r.source_event_id !== null ? { sourceEventId: r.source_event_id as EventId } : {}),
    ...(r.removed_ms !== null ? { removedAt: new Date(Number(r.removed_ms)).toISOString() } : {}),
    ...(r.removed_by !== null ? { removedBy: r.removed_by } : {}),
  };
}
