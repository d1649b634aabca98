import { EngramError } from '../../errors.js';
import { ENTITY_KINDS, isEntityKind, parseEntityRef, type CitationRecord, type EntityKind, type EntityRecord } from '../../model/graph.js';
import type { StorageBackend } from '../../store/backend.js';
import type { GraphStorage } from '../../store/graph-storage.js';
import type { Tokenizer } from '../../providers/tokenizer.js';
import { expandEntity, type EntityExpandAnswer, type EntityExpandOptions } from './entity-expand.js';
import { impactOf, type ImpactAnswer, type ImpactOptions } from './impact.js';

/** Most entities one listing returns. */
export const MAX_ENTITY_LIST = 500;
export const DEFAULT_ENTITY_LIST = 50;

export interface EntityListQuery {
  kinds?: string[];
  /** Case-insensitive substring of the name. */
  query?: string;
  /** Only these entity ids (an indexed lookup; view/granular-recall.ts looks up a query's names this way). */
  ids?: string[];
  limit?: number;
}

/**
 * The knowledge graph as one reader sees it: with `visibleToProject`, only entities, edges and citations that cite
 * an event of a session the project may read or a repository indexed for it (model/access.ts rules, applied in
 * the store's queries); without it, full trust. Entities that the reader cannot see are NOT_FOUND.
 */
export class KnowledgeGraph {
  constructor(
    private readonly store: StorageBackend,
    private readonly tokenizer: Tokenizer,
    private readonly visibleToProject?: string,
  ) {}

  private get graph(): GraphStorage {
    return this.store.graph;
  }

  private get scope(): { visibleToProject?: string } {
    return this.visibleToProject !== undefined ? { visibleToProject: this.visibleToProject } : {};
  }

  async list(query: EntityListQuery = {}): Promise<EntityRecord[]> {
    const limit = query.limit ?? DEFAULT_ENTITY_LIST;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_ENTITY_LIST) {
      throw new EngramError('INVALID_INPUT', `limit: must be a whole number from 1 to ${MAX_ENTITY_LIST}`, { field: 'limit' });
    }
    const kinds: EntityKind[] = [];
    for (const k of query.kinds ?? []) {
      if (!isEntityKind(k)) throw new EngramError('INVALID_INPUT', `kinds: "${k}" is not one of ${ENTITY_KINDS.join(', ')}`, { field: 'kinds' });
      kinds.push(k);
    }
    return this.graph.entities({ ...this.scope, limit, ...(kinds.length ? { kinds } : {}), ...(query.query ? { nameContains: query.query } : {}), ...(query.ids ? { ids: query.ids } : {}) });
  }

  /** An entity by id or `kind:name` that the reader may see, or NOT_FOUND. */
  async get(ref: string, field = 'entity'): Promise<EntityRecord> {
    const parsed = parseEntityRef(ref, field);
    const [found] = await this.graph.entities({ ...this.scope, ids: [parsed.id], limit: 1 });
    if (!found) throw new EngramError('NOT_FOUND', `no entity ${ref}; run engram graph build, or list them with engram entities`, { field, entity: ref });
    return found;
  }

  async citations(targetIds: string[], limit: number): Promise<CitationRecord[]> {
    return this.graph.citations({ ...this.scope, targetIds, limit });
  }

  async impact(ref: string, options: ImpactOptions = {}): Promise<ImpactAnswer> {
    const entity = await this.get(ref);
    return impactOf(this.graph, entity, options, this.scope);
  }

  async expand(ref: string, options: EntityExpandOptions = {}): Promise<EntityExpandAnswer> {
    const entity = await this.get(ref);
    return expandEntity({ graph: this.graph, store: this.store, tokenizer: this.tokenizer, scope: this.scope }, entity, options);
  }
}
