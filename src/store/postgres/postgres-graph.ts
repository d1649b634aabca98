import { EngramError } from '../../errors.js';
import type { CitationRecord, EdgeRecord, EntityRecord } from '../../model/graph.js';
import {
  checkGraphBatch,
  citationFromColumns,
  edgeFromColumns,
  entityFromColumns,
  type CitationColumns,
  type CitationQuery,
  type EdgeColumns,
  type EdgeQuery,
  type EntityColumns,
  type EntityQuery,
  type GraphBatch,
  type GraphRows,
  type GraphStorage,
  type GraphWriteCounts,
  citationExportKey,
} from '../graph-storage.js';
import type { PgBusQuery, PgBusTransaction } from './postgres-bus.js';
import { visibleSessionSql } from './postgres-sessions.js';

/** The knowledge graph in the PostgreSQL backend (tables graph_entities, graph_edges, graph_citations, graph_cursors). */
export class PostgresGraph implements GraphStorage {
  constructor(
    /** The quoted schema identifier. */
    private readonly s: string,
    private readonly query: PgBusQuery,
    private readonly transaction: PgBusTransaction,
  ) {}

  async write(batch: GraphBatch): Promise<GraphWriteCounts> {
    checkGraphBatch(batch);
    const s = this.s;
    const now = Date.now();
    return this.transaction('storing graph rows failed', async (c) => {
      const counts = { entities: 0, edges: 0, citations: 0 };
      for (const e of batch.entities) {
        const r = await c.query(`INSERT INTO ${s}.graph_entities (id, kind, name, first_ms, citations) VALUES ($1, $2, $3, $4, 0) ON CONFLICT (id) DO NOTHING`, [
          e.id,
          e.kind,
          e.name,
          now,
        ]);
        counts.entities += r.rowCount ?? 0;
      }
      for (const e of batch.edges) {
        // xmax = 0 only for a row this statement inserted (an update of a conflicting row sets it).
        const r = await c.query<{ inserted: boolean }>(
          `INSERT INTO ${s}.graph_edges (id, type, src_id, dst_id, confidence, first_ms) VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT (id) DO UPDATE SET confidence = greatest(${s}.graph_edges.confidence, excluded.confidence) RETURNING (xmax = 0) AS inserted`,
          [e.id, e.type, e.src, e.dst, e.confidence, now],
        );
        if (r.rows[0]?.inserted) counts.edges++;
      }
      for (const cite of batch.citations) {
        let sessionId: string | null = null;
        if (cite.eventId !== undefined) {
          const r = await c.query<{ session_id: string }>(`SELECT session_id FROM ${s}.events WHERE id = $1`, [cite.eventId]);
          if (r.rows.length === 0) throw new EngramError('INVALID_INPUT', `citations: no event ${cite.eventId} (cited for ${cite.targetId})`, { field: 'citations' });
          sessionId = r.rows[0]!.session_id;
        }
        const r = await c.query(
          `INSERT INTO ${s}.graph_citations (target_id, source_key, event_id, session_id, pointer, digest, commit_sha, project, confidence, quote, ts_ms)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (target_id, source_key) DO NOTHING`,
          [
            cite.targetId,
            cite.eventId ?? cite.pointer!,
            cite.eventId ?? null,
            sessionId,
            cite.pointer ?? null,
            cite.digest ?? null,
            cite.commit ?? null,
            cite.project ?? null,
            cite.confidence,
            cite.quote,
            cite.tsMs,
          ],
        );
        const added = r.rowCount ?? 0;
        counts.citations += added;
        if (added > 0) await c.query(`UPDATE ${s}.graph_entities SET citations = citations + 1 WHERE id = $1`, [cite.targetId]);
      }
      for (const [source, position] of Object.entries(batch.cursors ?? {})) {
        await c.query(
          `INSERT INTO ${s}.graph_cursors (source, position, updated_ms) VALUES ($1, $2, $3)
           ON CONFLICT (source) DO UPDATE SET position = excluded.position, updated_ms = excluded.updated_ms`,
          [source, position, now],
        );
      }
      return counts;
    });
  }

  async exportRows<T extends keyof GraphRows>(table: T, after: string | null, limit: number): Promise<GraphRows[T]> {
    const s = this.s;
    const rows = (sql: string, key: unknown) => this.query<Record<string, unknown>>(sql, [key, limit], 'exporting graph rows failed');
    switch (table) {
      case 'entities':
        return (await rows(`SELECT * FROM ${s}.graph_entities WHERE id COLLATE "C" > $1 ORDER BY id COLLATE "C" LIMIT $2`, after ?? '')).map((r) => ({
          key: String(r.id),
          id: String(r.id),
          kind: String(r.kind),
          name: String(r.name),
          firstMs: Number(r.first_ms),
          citations: Number(r.citations),
        })) as GraphRows[T];
      case 'edges':
        return (await rows(`SELECT * FROM ${s}.graph_edges WHERE id COLLATE "C" > $1 ORDER BY id COLLATE "C" LIMIT $2`, after ?? '')).map((r) => ({
          key: String(r.id),
          id: String(r.id),
          type: String(r.type),
          src: String(r.src_id),
          dst: String(r.dst_id),
          confidence: Number(r.confidence),
          firstMs: Number(r.first_ms),
        })) as GraphRows[T];
      case 'citations':
        return (await rows(`SELECT * FROM ${s}.graph_citations WHERE id > $1 ORDER BY id LIMIT $2`, after === null ? '0' : String(Number(after)))).map((r) => ({
          key: citationExportKey(r.id as string),
          ...citationFromColumns(r as unknown as CitationColumns),
        })) as GraphRows[T];
      default:
        return (await rows(`SELECT source, position FROM ${s}.graph_cursors WHERE source COLLATE "C" > $1 ORDER BY source COLLATE "C" LIMIT $2`, after ?? '')).map((r) => ({
          key: String(r.source),
          source: String(r.source),
          position: Number(r.position),
        })) as GraphRows[T];
    }
  }

  async importRows(rows: Partial<GraphRows>): Promise<GraphWriteCounts & { cursors: number }> {
    const s = this.s;
    return this.transaction('copying graph rows failed', async (c) => {
      const counts = { entities: 0, edges: 0, citations: 0, cursors: 0 };
      for (const e of rows.entities ?? []) {
        const r = await c.query(`INSERT INTO ${s}.graph_entities (id, kind, name, first_ms, citations) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING`, [
          e.id,
          e.kind,
          e.name,
          e.firstMs,
          e.citations,
        ]);
        counts.entities += r.rowCount ?? 0;
      }
      for (const e of rows.edges ?? []) {
        const r = await c.query(`INSERT INTO ${s}.graph_edges (id, type, src_id, dst_id, confidence, first_ms) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING`, [
          e.id,
          e.type,
          e.src,
          e.dst,
          e.confidence,
          e.firstMs,
        ]);
        counts.edges += r.rowCount ?? 0;
      }
      for (const cite of rows.citations ?? []) {
        const r = await c.query(
          `INSERT INTO ${s}.graph_citations (target_id, source_key, event_id, session_id, pointer, digest, commit_sha, project, confidence, quote, ts_ms)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (target_id, source_key) DO NOTHING`,
          [
            cite.targetId,
            cite.eventId ?? cite.pointer!,
            cite.eventId ?? null,
            cite.sessionId ?? null,
            cite.pointer ?? null,
            cite.digest ?? null,
            cite.commit ?? null,
            cite.project ?? null,
            cite.confidence,
            cite.quote,
            cite.tsMs,
          ],
        );
        counts.citations += r.rowCount ?? 0;
      }
      const now = Date.now();
      for (const cur of rows.cursors ?? []) {
        const r = await c.query(`INSERT INTO ${s}.graph_cursors (source, position, updated_ms) VALUES ($1, $2, $3) ON CONFLICT (source) DO NOTHING`, [cur.source, cur.position, now]);
        counts.cursors += r.rowCount ?? 0;
      }
      return counts;
    });
  }

  async entities(q: EntityQuery): Promise<EntityRecord[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    const p = (v: unknown) => {
      params.push(v);
      return `$${params.length}`;
    };
    if (q.ids) {
      if (q.ids.length === 0) return [];
      where.push(`e.id = ANY(${p(q.ids)}::text[])`);
    }
    if (q.kinds && q.kinds.length > 0) where.push(`e.kind = ANY(${p(q.kinds)}::text[])`);
    if (q.nameContains !== undefined && q.nameContains !== '') where.push(`strpos(lower(e.name), lower(${p(q.nameContains)})) > 0`);
    if (q.visibleToProject !== undefined) where.push(this.visibleTarget('e', p(q.visibleToProject)));
    const sql = `SELECT e.* FROM ${this.s}.graph_entities e ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY e.citations DESC, e.kind, e.name COLLATE "C" LIMIT ${p(q.limit)}`;
    return (await this.query<EntityColumns>(sql, params, 'reading entities failed')).map(entityFromColumns);
  }

  async edges(q: EdgeQuery): Promise<EdgeRecord[]> {
    if (q.entityIds.length === 0) return [];
    const params: unknown[] = [];
    const p = (v: unknown) => {
      params.push(v);
      return `$${params.length}`;
    };
    const ids = p(q.entityIds);
    const where = [
      q.direction === 'out' ? `g.src_id = ANY(${ids}::text[])` : q.direction === 'in' ? `g.dst_id = ANY(${ids}::text[])` : `(g.src_id = ANY(${ids}::text[]) OR g.dst_id = ANY(${ids}::text[]))`,
    ];
    if (q.types && q.types.length > 0) where.push(`g.type = ANY(${p(q.types)}::text[])`);
    if (q.minConfidence !== undefined) where.push(`g.confidence >= ${p(q.minConfidence)}`);
    if (q.commit !== undefined) {
      where.push(`EXISTS (SELECT 1 FROM ${this.s}.graph_citations k WHERE k.target_id = g.id AND (k.event_id IS NOT NULL OR k.commit_sha = ${p(q.commit)}))`);
    }
    if (q.visibleToProject !== undefined) where.push(this.visibleTarget('g', p(q.visibleToProject)));
    const sql = `SELECT g.* FROM ${this.s}.graph_edges g WHERE ${where.join(' AND ')} ORDER BY g.confidence DESC, g.id COLLATE "C" LIMIT ${p(q.limit)}`;
    return (await this.query<EdgeColumns>(sql, params, 'reading edges failed')).map(edgeFromColumns);
  }

  async citations(q: CitationQuery): Promise<CitationRecord[]> {
    if (q.targetIds.length === 0) return [];
    const params: unknown[] = [q.targetIds];
    const where = ['c.target_id = ANY($1::text[])'];
    if (q.visibleToProject !== undefined) {
      params.push(q.visibleToProject);
      where.push(`(c.project = $2 OR c.session_id IN (${visibleSessionSql(this.s, '$2')}))`);
    }
    params.push(q.limit);
    const sql = `SELECT c.* FROM ${this.s}.graph_citations c WHERE ${where.join(' AND ')} ORDER BY c.ts_ms DESC, c.id DESC LIMIT $${params.length}`;
    return (await this.query<CitationColumns>(sql, params, 'reading citations failed')).map(citationFromColumns);
  }

  async getCursor(source: string): Promise<number | null> {
    const rows = await this.query<{ position: string }>(`SELECT position FROM ${this.s}.graph_cursors WHERE source = $1`, [source], 'reading a graph cursor failed');
    return rows.length > 0 ? Number(rows[0]!.position) : null;
  }

  async counts(): Promise<GraphWriteCounts> {
    const s = this.s;
    const rows = await this.query<Record<string, string>>(
      `SELECT (SELECT count(*) FROM ${s}.graph_entities) AS entities, (SELECT count(*) FROM ${s}.graph_edges) AS edges, (SELECT count(*) FROM ${s}.graph_citations) AS citations`,
      [],
      'counting graph rows failed',
    );
    const r = rows[0]!;
    return { entities: Number(r.entities), edges: Number(r.edges), citations: Number(r.citations) };
  }

  private visibleTarget(alias: string, project: string): string {
    return `EXISTS (SELECT 1 FROM ${this.s}.graph_citations c WHERE c.target_id = ${alias}.id AND (c.project = ${project} OR c.session_id IN (${visibleSessionSql(this.s, project)})))`;
  }
}
