import type { EventId } from '../../model/ids.js';
import type { VectorHit } from '../backend.js';

/**
 * The `limit` rows nearest to `query` by dot product (cosine for unit vectors), nearest first, ties by event id: the
 * exact scan's order, shared by the exact scan and the code index's re-rank. Reads the little-endian float32s of
 * each `bytea` in place: copying 50,000 buffers would double the scan's cost.
 */
export function rankByDot(query: Float32Array, rows: ReadonlyArray<{ event_id: string; vector: Buffer }>, limit: number): VectorHit[] {
  const scored = rows.map((r) => {
    const view = new DataView(r.vector.buffer, r.vector.byteOffset, r.vector.byteLength);
    let dot = 0;
    const n = Math.min(query.length, r.vector.byteLength / 4);
    for (let i = 0; i < n; i++) dot += query[i]! * view.getFloat32(i * 4, true);
    return { eventId: r.event_id as EventId, similarity: dot };
  });
  scored.sort((a, b) => b.similarity - a.similarity || (a.eventId < b.eventId ? -1 : 1));
  return scored.slice(0, limit);
}
