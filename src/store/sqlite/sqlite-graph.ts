import type Database from 'better-sqlite3';
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
import { VISIBLE_SESSION_SQL } from './sqlite-sessions.js';
import { translateSqliteError } from './sqlite-errors.js';

type Db = Database.Database;

/** "Row `alias` has a citation the project may read": takes the project three times. */
const VISIBLE_TARGET_SQL = (alias: string) =>
  `EXISTS (SELECT 1 FROM graph_citations c WHERE c.target_id = ${alias}.id AND (c.project = ? OR c.session_id IN (${VISIBLE_SESSION_SQL})))`;

/** The knowledge graph in the SQLite backend (tables graph_entities, graph_edges, graph_citations, graph_cursors). */
export class SqliteGraph implements GraphStorage {
  constructor(private readonly db: Db) {}

  async write(batch: GraphBatch): Promise<GraphWriteCounts> {
    checkGraphBatch(batch);
    const now = Date.now();
    const run = this.db.transaction(() => {
      const counts = { entities: 0, edges: 0, citations: 0 };
      const insertEntity = this.db.prepare('INSERT INTO graph_entities (id, kind, name, first_ms, citations) VALUES (?, ?, ?, ?, 0) ON CONFLICT (id) DO NOTHING');
      for (const e of batch.entities) counts.entities += insertEntity.run(e.id, e.kind, e.name, now).changes;
      const insertEdge = this.db.prepare(
        `INSERT INTO graph_edges (id, type, src_id, dst_id, confidence, first_ms) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET confidence = max(confidence, excluded.confidence)`,
      );
      const hadEdge = this.db.prepare('SELECT 1 FROM graph_edges WHERE id = ?');
      for (const e of batch.edges) {
        if (!hadEdge.get(e.id)) counts.edges++;
        insertEdge.run(e.id, e.type, e.src, e.dst, e.confidence, now);
      }
      const sessionOf = this.db.prepare('SELECT session_id FROM events WHERE id = ?');
      const insertCitation = this.db.prepare(
        `INSERT INTO graph_citations (target_id, source_key, event_id, session_id, pointer, digest, commit_sha, project, confidence, quote, ts_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (target_id, source_key) DO NOTHING`,
      );
      const bump = this.db.prepare('UPDATE graph_entities SET citations = citations + 1 WHERE id = ?');
      for (const c of batch.citations) {
        let sessionId: string | null = null;
        if (c.eventId !== undefined) {
          const row = sessionOf.get(c.eventId) as { session_id: string } | undefined;
          if (!row) throw new EngramError('INVALID_INPUT', `citations: no event ${c.eventId} (cited for ${c.targetId})`, { field: 'citations' });
          sessionId = row.session_id;
        }
        const changes = insertCitation.run(
          c.targetId,
          c.eventId ?? c.pointer!,
          c.eventId ?? null,
          sessionId,
          c.pointer ?? null,
          c.digest ?? null,
          c.commit ?? null,
          c.project ?? null,
          c.confidence,
          c.quote,
          c.tsMs,
        ).changes;
        counts.citations += changes;
        if (changes > 0) bump.run(c.targetId);
      }
      const cursor = this.db.prepare(
        'INSERT INTO graph_cursors (source, position, updated_ms) VALUES (?, ?, ?) ON CONFLICT (source) DO UPDATE SET position = excluded.position, updated_ms = excluded.updated_ms',
      );
      for (const [source, position] of Object.entries(batch.cursors ?? {})) cursor.run(source, position, now);
      return counts;
    });
    try {
      return run.immediate();
    } catch (err) {
      throw err instanceof EngramError ? err : translateSqliteError(err, 'storing graph rows failed');
    }
  }

  async entities(q: EntityQuery): Promise<EntityRecord[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    if (q.ids) {
      if (q.ids.length === 0) return [];
      where.push(`e.id IN (${q.ids.map(() => '?').join(',')})`);
      params.push(...q.ids);
    }
    if (q.kinds && q.kinds.length > 0) {
      where.push(`e.kind IN (${q.kinds.map(() => '?').join(',')})`);
      params.push(...q.kinds);
    }
    if (q.nameContains !== undefined && q.nameContains !== '') {
      where.push(`instr(lower(e.name), lower(?)) > 0`);
      params.push(q.nameContains);
    }
    if (q.visibleToProject !== undefined) {
      where.push(VISIBLE_TARGET_SQL('e'));
      params.push(q.visibleToProject, q.visibleToProject, q.visibleToProject);
    }
    const sql = `SELECT e.* FROM graph_entities e ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY e.citations DESC, e.kind, e.name LIMIT ?`;
    return this.all<EntityColumns>(sql, [...params, q.limit]).map(entityFromColumns);
  }

  async edges(q: EdgeQuery): Promise<EdgeRecord[]> {
    if (q.entityIds.length === 0) return [];
    const marks = q.entityIds.map(() => '?').join(',');
    const ends = q.direction === 'out' ? `g.src_id IN (${marks})` : q.direction === 'in' ? `g.dst_id IN (${marks})` : `(g.src_id IN (${marks}) OR g.dst_id IN (${marks}))`;
    const where = [ends];
    const params: unknown[] = q.direction === 'both' ? [...q.entityIds, ...q.entityIds] : [...q.entityIds];
    if (q.types && q.types.length > 0) {
      where.push(`g.type IN (${q.types.map(() => '?').join(',')})`);
      params.push(...q.types);
    }
    if (q.minConfidence !== undefined) {
      where.push('g.confidence >= ?');
      params.push(q.minConfidence);
    }
    if (q.commit !== undefined) {
      where.push('EXISTS (SELECT 1 FROM graph_citations k WHERE k.target_id = g.id AND (k.event_id IS NOT NULL OR k.commit_sha = ?))');
      params.push(q.commit);
    }
    if (q.visibleToProject !== undefined) {
      where.push(VISIBLE_TARGET_SQL('g'));
      params.push(q.visibleToProject, q.visibleToProject, q.visibleToProject);
    }
    return this.all<EdgeColumns>(`SELECT g.* FROM graph_edges g WHERE ${where.join(' AND ')} ORDER BY g.confidence DESC, g.id LIMIT ?`, [...params, q.limit]).map(edgeFromColumns);
  }

  async citations(q: CitationQuery): Promise<CitationRecord[]> {
    if (q.targetIds.length === 0) return [];
    const where = [`c.target_id IN (${q.targetIds.map(() => '?').join(',')})`];
    const params: unknown[] = [...q.targetIds];
    if (q.visibleToProject !== undefined) {
      where.push(`(c.project = ? OR c.session_id IN (${VISIBLE_SESSION_SQL}))`);
      params.push(q.visibleToProject, q.visibleToProject, q.visibleToProject);
    }
    return this.all<CitationColumns>(`SELECT c.* FROM graph_citations c WHERE ${where.join(' AND ')} ORDER BY c.ts_ms DESC, c.id DESC LIMIT ?`, [...params, q.limit]).map(
      citationFromColumns,
    );
  }

  async getCursor(source: string): Promise<number | null> {
    const row = this.db.prepare('SELECT position FROM graph_cursors WHERE source = ?').get(source) as { position: number } | undefined;
    return row ? row.position : null;
  }

  async counts(): Promise<GraphWriteCounts> {
    const row = this.db
      .prepare('SELECT (SELECT count(*) FROM graph_entities) AS entities, (SELECT count(*) FROM graph_edges) AS edges, (SELECT count(*) FROM graph_citations) AS citations')
      .get() as GraphWriteCounts;
    return { entities: Number(row.entities), edges: Number(row.edges), citations: Number(row.citations) };
  }

  async exportRows<T extends keyof GraphRows>(table: T, after: string | null, limit: number): Promise<GraphRows[T]> {
    const rows = (sql: string, key: unknown) => this.all<Record<string, unknown>>(sql, [key, limit]);
    switch (table) {
      case 'entities':
        return rows('SELECT * FROM graph_entities WHERE id > ? ORDER BY id LIMIT ?', after ?? '').map((r) => ({
          key: String(r.id),
          id: String(r.id),
          kind: String(r.kind),
          name: String(r.name),
          firstMs: Number(r.first_ms),
          citations: Number(r.citations),
        })) as GraphRows[T];
      case 'edges':
        return rows('SELECT * FROM graph_edges WHERE id > ? ORDER BY id LIMIT ?', after ?? '').map((r) => ({
          key: String(r.id),
          id: String(r.id),
          type: String(r.type),
          src: String(r.src_id),
          dst: String(r.dst_id),
          confidence: Number(r.confidence),
          firstMs: Number(r.first_ms),
        })) as GraphRows[T];
      case 'citations':
        return rows('SELECT * FROM graph_citations WHERE id > ? ORDER BY id LIMIT ?', after === null ? 0 : Number(after)).map((r) => ({
          key: citationExportKey(r.id as number),
          ...citationFromColumns(r as unknown as CitationColumns),
        })) as GraphRows[T];
      default:
        return rows('SELECT source, position FROM graph_cursors WHERE source > ? ORDER BY source LIMIT ?', after ?? '').map((r) => ({
          key: String(r.source),
          source: String(r.source),
          position: Number(r.position),
        })) as GraphRows[T];
    }
  }

  async importRows(rows: Partial<GraphRows>): Promise<GraphWriteCounts & { cursors: number }> {
    const run = this.db.transaction(() => {
      const counts = { entities: 0, edges: 0, citations: 0, cursors: 0 };
      const entity = this.db.prepare('INSERT INTO graph_entities (id, kind, name, first_ms, citations) VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING');
      for (const e of rows.entities ?? []) counts.entities += entity.run(e.id, e.kind, e.name, e.firstMs, e.citations).changes;
      const edge = this.db.prepare('INSERT INTO graph_edges (id, type, src_id, dst_id, confidence, first_ms) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING');
      for (const e of rows.edges ?? []) counts.edges += edge.run(e.id, e.type, e.src, e.dst, e.confidence, e.firstMs).changes;
      const citation = this.db.prepare(
        `INSERT INTO graph_citations (target_id, source_key, event_id, session_id, pointer, digest, commit_sha, project, confidence, quote, ts_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (target_id, source_key) DO NOTHING`,
      );
      for (const c of rows.citations ?? []) {
        counts.citations += citation.run(
          c.targetId,
          c.eventId ?? c.pointer!,
          c.eventId ?? null,
          c.sessionId ?? null,
          c.pointer ?? null,
          c.digest ?? null,
          c.commit ?? null,
          c.project ?? null,
          c.confidence,
          c.quote,
          c.tsMs,
        ).changes;
      }
      const cursor = this.db.prepare('INSERT INTO graph_cursors (source, position, updated_ms) VALUES (?, ?, ?) ON CONFLICT (source) DO NOTHING');
      const now = Date.now();
      for (const c of rows.cursors ?? []) counts.cursors += cursor.run(c.source, c.position, now).changes;
      return counts;
    });
    try {
      return run.immediate();
    } catch (err) {
      throw translateSqliteError(err, 'copying graph rows failed');
    }
  }

  private all<R>(sql: string, params: unknown[]): R[] {
    try {
      return this.db.prepare(sql).all(...params) as R[];
    } catch (err) {
      throw translateSqliteError(err, 'reading the graph failed');
    }
  }
}
