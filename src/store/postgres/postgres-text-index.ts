import type { TextIndexEntry } from '../backend.js';
import { TEXT_SEARCH_CONFIG } from './migrations.js';
import type { PgRunner } from './pg-runner.js';
import { rewriteIdentifierRows } from './postgres-identifier-index.js';
import { chunkForIndex, indexTokens } from './tsquery.js';

/**
 * Writes events' full-text rows again (a purge's neighbours, `replaceTextIndex`): their chunks are deleted and
 * inserted from the new text, as an append indexes them (body weight A, the second column D on the first chunk).
 * The identifier index's rows of those events are written again too. Runs on the caller's connection, in its
 * transaction; returns the events written (missing ones are skipped).
 */
export async function rewriteTextRows(c: PgRunner, s: string, entries: readonly TextIndexEntry[]): Promise<number> {
  if (entries.length === 0) return 0;
  const ids = entries.map((e) => e.eventId);
  await c.query(`DELETE FROM ${s}.event_text WHERE event_pk IN (SELECT pk FROM ${s}.events WHERE id = ANY($1::text[]))`, [ids]);
  const rows = entries.flatMap((e) => {
    const meta = indexTokens(e.searchMeta).join(' ');
    return chunkForIndex(e.searchText).map((body, chunkNo) => ({ id: e.eventId, chunkNo, body, meta }));
  });
  const config = `'${s}.${TEXT_SEARCH_CONFIG}'::regconfig`;
  const inserted = await c.query<{ event_pk: string }>(
    `INSERT INTO ${s}.event_text (event_pk, chunk_no, tsv)
     SELECT e.pk, c.chunk_no,
       CASE WHEN c.chunk_no = 0
         THEN setweight(to_tsvector(${config}, c.body), 'A') || setweight(to_tsvector(${config}, c.meta), 'D')
         ELSE setweight(to_tsvector(${config}, c.body), 'A')
       END
     FROM unnest($1::text[], $2::int[], $3::text[], $4::text[]) AS c(event_id, chunk_no, body, meta)
     JOIN ${s}.events e ON e.id = c.event_id
     RETURNING event_pk`,
    [rows.map((r) => r.id), rows.map((r) => r.chunkNo), rows.map((r) => r.body), rows.map((r) => r.meta)],
  );
  await rewriteIdentifierRows(c, s, entries);
  return new Set(inserted.rows.map((r) => r.event_pk)).size;
}
