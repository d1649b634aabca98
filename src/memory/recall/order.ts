/**
 * Stage 7 of recall (pipeline.ts): the order in which the pack is filled. Maximal Marginal Relevance on what the
 * reader will see (mmr.ts): near-identical excerpts (the same log repeated) are dropped and similar ones wait behind
 * different evidence (§5.2). Novelty is measured on the events' vectors when the call has an embedder, else on the
 * excerpts' words (measuring it on the words with vectors at hand was tried and retired: docs/recall.md). Without
 * MMR, the order is the score's.
 */
import type { EventId } from '../../model/ids.js';
import type { Embedder } from '../../providers/embedder.js';
import { mmrSelect } from '../mmr.js';
import type { ResolvedOptions } from './options.js';
import type { RecallDeps, Scored } from './types.js';

/** The detailed candidates in the order the pack takes them. */
export async function orderByNovelty(deps: RecallDeps, detailed: Scored[], embedder: Embedder | null, o: ResolvedOptions): Promise<Scored[]> {
  if (!o.useMmr) return detailed;
  const vectors = embedder ? await deps.store.getVectors(embedder.name, detailed.map((d) => d.event.id)) : new Map<EventId, Float32Array>();
  return mmrSelect(
    detailed.map((d) => {
      const vector = vectors.get(d.event.id);
      return { id: d.event.id, score: d.score, text: d.excerpt, d, ...(vector ? { vector } : {}) };
    }),
    detailed.length,
    { lambda: o.lambda },
  ).map((c) => c.d);
}
