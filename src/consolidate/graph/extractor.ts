import type { EdgeType, EntityKind } from '../../model/graph.js';

/** An entity an extractor found in one event, with the words that made it. */
export interface ExtractedEntity {
  kind: EntityKind;
  name: string;
  /** Offset of the mention in the text (for sentence-level relations). */
  at: number;
  quote: string;
  /** Confidence of its citation (default 1: the words are in the event). An LLM extractor gives its level's. */
  confidence?: number;
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
 * The seam of entity extraction: the deterministic extractor, and the LLM extractor (llm-extractor.ts: a model
 * through consolidate/structured-escalation.ts, its levels and caps, merged with the deterministic output).
 * Extractors are pure: the builder resolves ids, writes and cites.
 */
export interface EntityExtractor {
  readonly name: string;
  extract(event: ExtractionInput): Promise<Extraction>;
  /**
   * Several events at once (one per input, same order), for extractors that read a batch in one call (a model
   * reads a chunk of events together). The builder uses it when present, else `extract` per event.
   */
  extractBatch?(events: readonly ExtractionInput[]): Promise<Extraction[]>;
}
