import { EngramError } from '../../errors.js';
import { isEdgeType, EDGE_TYPES, type EdgeRecord, type EdgeType, type EntityRecord } from '../../model/graph.js';
import type { GraphStorage } from '../../store/graph-storage.js';

export const DEFAULT_MIN_CONFIDENCE = 0.7;
export const DEFAULT_MAX_DEPTH = 3;
export const MAX_IMPACT_DEPTH = 6;
/** Edges that carry a change to what depends on it (structural). `mentions`, `decided` and the rest do not. */
export const IMPACT_EDGE_TYPES: readonly EdgeType[] = ['imports', 'calls', 'depends_on'];
/** Most edges read per depth: a hub of a large repository stays bounded. */
const EDGES_PER_DEPTH = 20_000;
/** Citations shown per reached entity. */
const CITES_PER_ENTITY = 3;

export interface ImpactOptions {
  /**
   * `dependents` (default): what imports, calls or depends on the entity, i.e. what breaks if it changes;
   * `dependencies`: what the entity itself imports, calls or depends on.
   */
  direction?: 'dependents' | 'dependencies';
  minConfidence?: number;
  maxDepth?: number;
  /** Code edges of this commit only (full sha); edges learned from sessions always count. */
  commit?: string;
  types?: string[];
}

export interface ImpactEntry {
  id: string;
  kind: string;
  name: string;
  depth: number;
  /** Product of the confidences along the path that reached it first (the most confident at that depth). */
  confidence: number;
  /** The entity it was reached from and the edge type. */
  via: { from: string; type: EdgeType; edgeId: string };
  /** Event ids and `repo:` pointers the edge cites. */
  cites: string[];
}

export interface ImpactGroup {
  depth: number;
  label: 'will break' | 'likely affected' | 'may need testing';
  entities: ImpactEntry[];
}

export interface ImpactAnswer {
  entity: EntityRecord;
  direction: 'dependents' | 'dependencies';
  minConfidence: number;
  maxDepth: number;
  groups: ImpactGroup[];
  /** True when a depth hit the edge cap and was cut. */
  isTruncated: boolean;
}

export function impactLabel(depth: number): ImpactGroup['label'] {
  return depth === 1 ? 'will break' : depth === 2 ? 'likely affected' : 'may need testing';
}

/** Checks impact options, naming the field at fault. */
export function checkImpactOptions(o: ImpactOptions): Required<Pick<ImpactOptions, 'direction' | 'minConfidence' | 'maxDepth'>> & { types: EdgeType[] } {
  const direction = o.direction ?? 'dependents';
  if (direction !== 'dependents' && direction !== 'dependencies') throw bad('direction', 'must be dependents or dependencies');
  const minConfidence = o.minConfidence ?? DEFAULT_MIN_CONFIDENCE;
  if (typeof minConfidence !== 'number' || !(minConfidence >= 0 && minConfidence <= 1)) throw bad('minConfidence', 'must be a number from 0 to 1');
  const maxDepth = o.maxDepth ?? DEFAULT_MAX_DEPTH;
  if (!Number.isInteger(maxDepth) || maxDepth < 1 || maxDepth > MAX_IMPACT_DEPTH) throw bad('maxDepth', `must be a whole number from 1 to ${MAX_IMPACT_DEPTH}`);
  const types = (o.types ?? IMPACT_EDGE_TYPES).map((t) => {
    if (!isEdgeType(t)) throw bad('types', `"${t}" is not one of ${EDGE_TYPES.join(', ')}`);
    return t;
  });
  if (o.commit !== undefined && !/^[0-9a-f]{40}([0-9a-f]{24})?$/.test(o.commit)) throw bad('commit', 'must be a full commit sha (40 hex characters)');
  return { direction, minConfidence, maxDepth, types };
}

/**
 * Blast radius: a breadth-first walk over edges of at least `minConfidence` from the entity, grouped by depth (1
 * will break, 2 likely affected, 3 and deeper may need testing). Each entity appears once, at its least depth.
 */
export async function impactOf(graph: GraphStorage, entity: EntityRecord, options: ImpactOptions, scope: { visibleToProject?: string }): Promise<ImpactAnswer> {
  const o = checkImpactOptions(options);
  const seen = new Map<string, number>([[entity.id, 0]]);
  const confidenceOf = new Map<string, number>([[entity.id, 1]]);
  const groups: ImpactGroup[] = [];
  let frontier = [entity.id];
  let isTruncated = false;
  for (let depth = 1; depth <= o.maxDepth && frontier.length > 0; depth++) {
    const edges = await graph.edges({
      ...scope,
      entityIds: frontier,
      direction: o.direction === 'dependents' ? 'in' : 'out',
      types: o.types,
      minConfidence: o.minConfidence,
      ...(options.commit !== undefined ? { commit: options.commit } : {}),
      limit: EDGES_PER_DEPTH,
    });
    if (edges.length >= EDGES_PER_DEPTH) isTruncated = true;
    const reached = new Map<string, { edge: EdgeRecord; from: string; confidence: number }>();
    for (const edge of edges) {
      const [from, to] = o.direction === 'dependents' ? [edge.dst, edge.src] : [edge.src, edge.dst];
      if (seen.has(to)) continue;
      const confidence = (confidenceOf.get(from) ?? 1) * edge.confidence;
      const prior = reached.get(to);
      if (!prior || prior.confidence < confidence) reached.set(to, { edge, from, confidence });
    }
    if (reached.size === 0) break;
    const ids = [...reached.keys()];
    const entities = new Map((await graph.entities({ ...scope, ids, limit: ids.length })).map((e) => [e.id, e]));
    const cites = await graph.citations({ ...scope, targetIds: [...new Set([...reached.values()].map((r) => r.edge.id))], limit: ids.length * CITES_PER_ENTITY * 4 });
    const citesOf = new Map<string, string[]>();
    for (const c of cites) {
      const list = citesOf.get(c.targetId) ?? [];
      if (list.length < CITES_PER_ENTITY) list.push(c.eventId ?? c.pointer!);
      citesOf.set(c.targetId, list);
    }
    const entries: ImpactEntry[] = [];
    for (const [id, r] of reached) {
      const e = entities.get(id);
      if (!e) continue; // not visible to this reader
      // A named import also links the importer to the symbol; the file edge already carries it.
      if (e.kind === 'symbol' && r.edge.type === 'imports' && entity.kind !== 'symbol') continue;
      seen.set(id, depth);
      confidenceOf.set(id, r.confidence);
      entries.push({ id, kind: e.kind, name: e.name, depth, confidence: round(r.confidence), via: { from: r.from, type: r.edge.type, edgeId: r.edge.id }, cites: citesOf.get(r.edge.id) ?? [] });
    }
    entries.sort((a, b) => b.confidence - a.confidence || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    if (entries.length > 0) groups.push({ depth, label: impactLabel(depth), entities: entries });
    frontier = entries.map((e) => e.id);
  }
  return { entity, direction: o.direction, minConfidence: o.minConfidence, maxDepth: o.maxDepth, groups, isTruncated };
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}

function bad(field: string, message: string): EngramError {
  return new EngramError('INVALID_INPUT', `${field}: ${message}`, { field });
}

/** The answer as text: one block per depth, each line the entity, the path confidence, the edge and its citations. */
export function formatImpact(a: ImpactAnswer): string {
  const head = `${a.direction === 'dependents' ? 'What depends on' : 'What is used by'} ${a.entity.kind}:${a.entity.name} (min confidence ${a.minConfidence}, depth <= ${a.maxDepth})`;
  if (a.groups.length === 0) return `${head}\n(nothing reached)`;
  const blocks = a.groups.map(
    (g) =>
      `## depth ${g.depth}: ${g.label} (${g.entities.length})\n` +
      g.entities.map((e) => `- ${e.kind}:${e.name} (${e.confidence.toFixed(2)}, ${e.via.type})${e.cites.length ? ` [${e.cites.join(', ')}]` : ''}`).join('\n'),
  );
  return [head, ...blocks, ...(a.isTruncated ? ['(cut: a depth reached more edges than one answer reads)'] : [])].join('\n\n');
}
