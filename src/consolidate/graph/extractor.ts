import type { EdgeType, EntityKind } from '../../model/graph.js';

/** An entity an extractor found in one event, with the words that made it. */
export interface ExtractedEntity {
  kind: EntityKind;
  name: string;
  /** Offset of the mention in the text (for sentence-level relations). */
  at: number;
  quote: string;
}

/** A relation found in one event, between two of its entities. */
export interface ExtractedEdge {
  type: EdgeType;
  src: { kind: EntityKind; name: string };
  dst: { kind: EntityKind; name: string };
  confidence: number;
  quote: string;
}

/** What the extractor reads of an event (the builder hands it stored events; private spans already masked). */
export interface ExtractionInput {
  id: string;
  kind: string;
  content: string;
  toolName?: string;
  tags: string[];
  meta?: Record<string, unknown>;
}

export interface Extraction {
  entities: ExtractedEntity[];
  edges: ExtractedEdge[];
}

/**
 * The seam of entity extraction: the deterministic extractor below now; an LLM extractor (run through
 * consolidate/escalation.ts, its levels and caps) can implement the same interface and be chosen by the builder.
 * Extractors are pure: the builder resolves ids, writes and cites.
 */
export interface EntityExtractor {
  /** Stored with each citation's confidence ceiling: an LLM extractor would report its escalation level's. */
  readonly name: string;
  extract(event: ExtractionInput): Promise<Extraction>;
}
