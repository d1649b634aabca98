import { fuseRelevance, MIN_VECTOR_SIMILARITY } from '../memory/recall.js';
import type { ParsedQuery } from '../memory/query-terms.js';
import type { Embedder } from '../providers/embedder.js';
import { summaryVectorModelKey, type SummaryHit, type SummaryKindFilter, type SummaryStorage, type SummaryVisibility } from '../store/summary-storage.js';
import type { SummaryDepth, SummaryRecord } from '../model/summary.js';

export interface SummarySearchFilter extends SummaryVisibility, SummaryKindFilter {
  project?: string;
  depth?: SummaryDepth;
  includeCold?: boolean;
  limit: number;
}

/**
 * Summary search as event recall does it (memory/recall.ts): full-text hits and, when an embedder is configured,
 * the summaries nearest the query's vector (those at least {@link MIN_VECTOR_SIMILARITY} similar), fused with
 * {@link fuseRelevance} (the vector weight lower when the query names identifiers). A paraphrase that shares no
 * word with a summary is found by its vector. The best hit scores 1. With no embedder, or when the embedder
 * fails, the full-text ranking (its own scores) is returned as is. Summaries not yet embedded are found by
 * full-text only until the indexer reaches them (memory/embedding-indexer.ts).
 */
export async function searchSummariesHybrid(
  store: SummaryStorage,
  embedder: Embedder | null,
  query: string,
  parsed: ParsedQuery,
  filter: SummarySearchFilter,
): Promise<SummaryHit[]> {
  const text = await store.search({ terms: parsed.terms, ...filter });
  if (embedder === null) return text;
  let vector: Float32Array | undefined;
  try {
    [vector] = await embedder.embed([query]);
  } catch {
    return text;
  }
  if (vector === undefined) return text;
  const near = (await store.vectorSearch({ model: summaryVectorModelKey(embedder), vector, ...filter })).filter((h) => h.score >= MIN_VECTOR_SIMILARITY);
  if (near.length === 0) return text;
  const records = new Map<string, SummaryRecord>([...text, ...near].map((h) => [h.summary.id, h.summary]));
  const fused = fuseRelevance(
    text.map((h) => ({ eventId: h.summary.id, relevance: h.score })),
    near.map((h) => ({ eventId: h.summary.id, similarity: h.score })),
    'hybrid',
    parsed.identifiers.length > 0,
  );
  return [...fused.entries()]
    .sort((a, b) => b[1].relevance - a[1].relevance || a[0].localeCompare(b[0]))
    .slice(0, filter.limit)
    .map(([id, f]) => ({ summary: records.get(id)!, score: f.relevance }));
}
