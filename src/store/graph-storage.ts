import { EngramError } from '../errors.js';
import type { CitationRecord, EdgeRecord, EdgeType, EntityKind, EntityRecord } from '../model/graph.js';

/** An entity to store (or to cite again): its id is derived from kind and name (model/graph.ts entityId). */
export interface EntityDraft {
  id: string;
  kind: EntityKind;
  name: string;
}

export interface EdgeDraft {
  id: string;
  type: EdgeType;
  src: string;
  dst: string;
  confidence: number;
}

/** A citation to store: of an entity or an edge of the same batch (or already stored). */
export type CitationDraft = Omit<CitationRecord, 'sessionId'>;

/**
 * What one extraction step writes, in one transaction: entities and edges are upserted (an edge keeps the highest
 * confidence it was given), citations are added once (the same target, event and pointer again changes nothing).
 */
export interface GraphBatch {
  entities: EntityDraft[];
  edges: EdgeDraft[];
  citations: CitationDraft[];
  /** Extraction progress stored in the same transaction (source name -> position), see {@link GraphStorage.getCursor}. */
  cursors?: Record<string, number>;
}

export interface GraphWriteCounts {
  entities: number;
  edges: number;
  citations: number;
}

/** Who may see a row: it has a citation from an event of a session the project may read, or a repo citation for it. */
export interface GraphVisibility {
  /** Absent: full trust. */
  visibleToProject?: string;
}

export interface EntityQuery extends GraphVisibility {
  ids?: string[];
  kinds?: EntityKind[];
  /** Case-insensitive substring of the name. */
  nameContains?: string;
  limit: number;
}

export interface EdgeQuery extends GraphVisibility {
  /** Edges touching these entities: from them (`out`), to them (`in`) or both. */
  entityIds: string[];
  direction: 'out' | 'in' | 'both';
  types?: EdgeType[];
  minConfidence?: number;
  /**
   * Only edges with a citation at this repository commit (full sha) or from an event: the code graph of one
   * commit plus what sessions taught. Absent: every commit.
   */
  commit?: string;
  limit: number;
}

export interface CitationQuery extends GraphVisibility {
  targetIds: string[];
  /** Most citations per call, newest first. */
  limit: number;
}

/**
 * The knowledge graph's tables (entities, edges, citations, extraction cursors) behind the storage seam. A row is
 * never stored without a citation ({@link checkGraphBatch}); readers bounded by a project see a row only through a
 * citation they may read.
 */
export interface GraphStorage {
  write(batch: GraphBatch): Promise<GraphWriteCounts>;
  entities(query: EntityQuery): Promise<EntityRecord[]>;
  edges(query: EdgeQuery): Promise<EdgeRecord[]>;
  citations(query: CitationQuery): Promise<CitationRecord[]>;
  /** An extraction source's position (e.g. `session:<id>` -> last turn read), or null before the first step. */
  getCursor(source: string): Promise<number | null>;
  /** Counts of stored rows. */
  counts(): Promise<GraphWriteCounts>;
  /**
   * Every row of one table, a page at a time in a stable order (entities and edges by id, citations by their row
   * key, cursors by source), for copying the graph to another store (`engram migrate`, memory/graph-copy.ts).
   * Full trust: no visibility filter.
   */
  exportRows<T extends keyof GraphRows>(table: T, after: string | null, limit: number): Promise<GraphRows[T]>;
  /**
   * Stores rows read by {@link exportRows} from another store as they are (first-seen times, citation counts,
   * confidences, cursor positions), each row once: a row already present is left unchanged, so a copy can be
   * run again after an interruption. No batch check: the source's rows were checked when they were written;
   * a citation's event must exist (copy the events first).
   */
  importRows(rows: Partial<GraphRows>): Promise<GraphWriteCounts & { cursors: number }>;
}

/** Rows of the graph's tables as {@link GraphStorage.exportRows} pages them; `key` is the paging key. */
export interface GraphRows {
  entities: Array<{ key: string; id: string; kind: string; name: string; firstMs: number; citations: number }>;
  edges: Array<{ key: string; id: string; type: string; src: string; dst: string; confidence: number; firstMs: number }>;
  /** `key`: the row's id in its store, zero-padded so that keys sort as the rows do. */
  citations: Array<CitationRecord & { key: string }>;
  cursors: Array<{ key: string; source: string; position: number }>;
}

/** A citation row id as an export key that sorts like the number. */
export function citationExportKey(id: number | string): string {
  return String(id).padStart(20, '0');
}

/**
 * Refuses a batch that would store an uncited row, a citation of nothing, a citation that is neither of an event
 * nor of a repository span, or an edge whose ends are not in the batch (every edge's ends are cited with it).
 */
export function checkGraphBatch(batch: GraphBatch): void {
  const cited = new Set(batch.citations.map((c) => c.targetId));
  const entityIds = new Set(batch.entities.map((e) => e.id));
  const edgeIds = new Set(batch.edges.map((e) => e.id));
  for (const e of batch.entities) if (!cited.has(e.id)) throw invalid('entities', `entity ${e.kind}:${e.name} has no citation`);
  for (const e of batch.edges) {
    if (!cited.has(e.id)) throw invalid('edges', `edge ${e.type} ${e.src} -> ${e.dst} has no citation`);
    if (!entityIds.has(e.src) || !entityIds.has(e.dst)) throw invalid('edges', `edge ${e.id}: both ends must be entities of the same batch`);
    if (!(e.confidence > 0 && e.confidence <= 1)) throw invalid('edges', `edge ${e.id}: confidence must be in (0, 1]`);
  }
  for (const c of batch.citations) {
    if (!entityIds.has(c.targetId) && !edgeIds.has(c.targetId)) throw invalid('citations', `citation of ${c.targetId}, which is not in the batch`);
    const isEvent = c.eventId !== undefined;
    const isRepo = c.pointer !== undefined;
    if (isEvent === isRepo) throw invalid('citations', `citation of ${c.targetId}: cite either an event or a repo pointer`);
    if (isRepo && (c.digest === undefined || c.commit === undefined || c.project === undefined)) {
      throw invalid('citations', `citation of ${c.targetId}: a repo pointer needs its digest, commit and project`);
    }
  }
}

function invalid(field: string, message: string): EngramError {
  return new EngramError('INVALID_INPUT', `${field}: ${message}`, { field });
}

/** A citations row as both backends read it. */
export interface CitationColumns {
  target_id: string;
  event_id: string | null;
  session_id: string | null;
  pointer: string | null;
  digest: string | null;
  commit_sha: string | null;
  project: string | null;
  confidence: number;
  quote: string;
  ts_ms: number | string;
}

export function citationFromColumns(r: CitationColumns): CitationRecord {
  return {
    targetId: r.target_id,
    ...(r.event_id !== null ? { eventId: r.event_id } : {}),
    ...(r.session_id !== null ? { sessionId: r.session_id } : {}),
    ...(r.pointer !== null ? { pointer: r.pointer } : {}),
    ...(r.digest !== null ? { digest: r.digest } : {}),
    ...(r.commit_sha !== null ? { commit: r.commit_sha } : {}),
    ...(r.project !== null ? { project: r.project } : {}),
    confidence: Number(r.confidence),
    quote: r.quote,
    tsMs: Number(r.ts_ms),
  };
}

export interface EntityColumns {
  id: string;
  kind: string;
  name: string;
  citations: number | string;
  first_ms: number | string;
}

export function entityFromColumns(r: EntityColumns): EntityRecord {
  return { id: r.id, kind: r.kind as EntityKind, name: r.name, citations: Number(r.citations), firstSeen: new Date(Number(r.first_ms)).toISOString() };
}

export interface EdgeColumns {
  id: string;
  type: string;
  src_id: string;
  dst_id: string;
  confidence: number | string;
}

export function edgeFromColumns(r: EdgeColumns): EdgeRecord {
  return { id: r.id, type: r.type as EdgeType, src: r.src_id, dst: r.dst_id, confidence: Number(r.confidence) };
}
