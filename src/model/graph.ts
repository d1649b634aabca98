import { createHash } from 'node:crypto';
import { EngramError } from '../errors.js';

/**
 * The knowledge graph's vocabulary (issue #16, Lossless Context Pattern 5, ENGRAM Annex A.6): entities of a few
 * kinds joined by typed edges with a confidence, every one citing the events or repository spans it came from.
 */
export const ENTITY_KINDS = ['file', 'symbol', 'service', 'command', 'person', 'project', 'error', 'decision'] as const;
export type EntityKind = (typeof ENTITY_KINDS)[number];

export const EDGE_TYPES = ['imports', 'calls', 'depends_on', 'mentions', 'decided', 'supersedes', 'fixed_by'] as const;
export type EdgeType = (typeof EDGE_TYPES)[number];

/** Entity ids are `ent_` and 24 hex characters of sha256("kind:name"): the same entity always has the same id. */
export const ENTITY_ID_PREFIX = 'ent_';
/** Edge ids likewise, from "type:src:dst". */
export const EDGE_ID_PREFIX = 'edg_';

/** The longest entity name kept (a path, an identifier, a decision's first words). */
export const MAX_ENTITY_NAME_CHARS = 300;

export interface EntityRecord {
  id: string;
  kind: EntityKind;
  name: string;
  /** How many citations the store holds for it (all of them, not only the ones a reader may see). */
  citations: number;
  /** ISO-8601, UTC: when it was first seen. */
  firstSeen: string;
}

export interface EdgeRecord {
  id: string;
  type: EdgeType;
  src: string;
  dst: string;
  /** 0-1: the highest confidence any of its citations gave it. */
  confidence: number;
}

/**
 * Where an entity or edge came from: an event (`eventId`, its session bounds who may see it) or a span of a file in
 * a git repository at a commit (`pointer` is a bus `repo:` pointer, `digest` the sha256 of the excerpt, `project`
 * the project the repository was indexed for). Never both, never neither.
 */
export interface CitationRecord {
  targetId: string;
  eventId?: string;
  sessionId?: string;
  pointer?: string;
  digest?: string;
  /** The repository commit of a `pointer` citation (full sha). */
  commit?: string;
  project?: string;
  confidence: number;
  /** A short excerpt: the words that made the extractor cite it. */
  quote: string;
  tsMs: number;
}

export function entityId(kind: EntityKind, name: string): string {
  return ENTITY_ID_PREFIX + createHash('sha256').update(`${kind}:${name}`).digest('hex').slice(0, 24);
}

export function edgeId(type: EdgeType, src: string, dst: string): string {
  return EDGE_ID_PREFIX + createHash('sha256').update(`${type}:${src}:${dst}`).digest('hex').slice(0, 24);
}

export function isEntityKind(value: string): value is EntityKind {
  return (ENTITY_KINDS as readonly string[]).includes(value);
}

export function isEdgeType(value: string): value is EdgeType {
  return (EDGE_TYPES as readonly string[]).includes(value);
}

/**
 * An entity reference as a user writes it: an id (`ent_...`), or `kind:name` (`file:src/engine.ts`,
 * `service:payments`). Refuses anything else naming `field`.
 */
export function parseEntityRef(ref: string, field = 'entity'): { id: string } | { kind: EntityKind; name: string; id: string } {
  const text = ref.trim();
  if (text.startsWith(ENTITY_ID_PREFIX)) {
    if (!/^ent_[0-9a-f]{24}$/.test(text)) throw new EngramError('INVALID_INPUT', `${field}: "${ref}" is not an entity id (ent_ and 24 hex characters)`, { field });
    return { id: text };
  }
  const colon = text.indexOf(':');
  const kind = colon > 0 ? text.slice(0, colon) : '';
  const name = text.slice(colon + 1);
  if (!isEntityKind(kind) || name === '') {
    throw new EngramError('INVALID_INPUT', `${field}: give an entity id (ent_...) or kind:name with kind one of ${ENTITY_KINDS.join(', ')}`, { field });
  }
  if (name.length > MAX_ENTITY_NAME_CHARS) throw new EngramError('INVALID_INPUT', `${field}: the name is longer than ${MAX_ENTITY_NAME_CHARS} characters`, { field });
  return { kind, name, id: entityId(kind, name) };
}
