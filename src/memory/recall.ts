import { EngramError } from '../errors.js';
import type { Embedder } from '../providers/embedder.js';
import type { Tokenizer } from '../providers/tokenizer.js';
import type { StorageBackend } from '../store/backend.js';
import type { RedactionPolicy } from './event-redaction.js';
import { logRecall } from './recall/log.js';
import { DEFAULTS, MIN_RECALL_BUDGET_TOKENS, stripUndefined, validateOptions, type ResolvedOptions } from './recall/options.js';
import { runRecallPipeline } from './recall/pipeline.js';
import {
  MAX_BATCH_QUERIES,
  type ArtifactTextReader,
  type RecallBatchResult,
  type RecallDeps,
  type RecallOptions,
  type RecallResult,
  type Retriever,
  type VectorSource,
} from './recall/types.js';

export * from './recall/types.js';
export {
  DATE_BOOST,
  HYBRID_VECTOR_WEIGHT,
  HYBRID_VECTOR_WEIGHT_WITH_IDENTIFIERS,
  MIN_RECALL_BUDGET_TOKENS,
  MIN_VECTOR_SIMILARITY,
  SECOND_HOP_TRIGGER,
  SECOND_HOP_WEIGHT,
  SPEAKER_BOOST,
} from './recall/options.js';
export { fuseRelevance, fuseScores } from './recall/fuse.js';
export { speakerOf } from './recall/candidates.js';
export { renderHit } from './recall/render.js';
export { RECALL_STAGES, type RecallStage } from './recall/pipeline.js';

/**
 * The recall tool (ENGRAM Annex A.2b): full-text (BM25) candidates plus the task state's key events; a base
 * score from relevance, an exact-identifier boost and recency; times the task-conditioned modifier
 * (task-modifier.ts); MMR against redundancy (mmr.ts); greedy packing under a token budget with per-kind
 * quotas (type-quotas.ts); one recall-log row per call. Every hit carries its provenance; the rendered text
 * quotes each excerpt line so retrieved content can never pose as instructions (ENGRAM §12.3). The stages are
 * declared in recall/pipeline.ts; this class validates a call, chooses its retriever, shares a batch's budget and
 * writes the log.
 */
export class Recaller {
  private readonly deps: RecallDeps;

  constructor(
    store: StorageBackend,
    tokenizer: Tokenizer,
    readArtifactText: ArtifactTextReader,
    private readonly vectorSource?: VectorSource,
    /** Redacts credentials in a query and its options before they are logged (the ingestor's policy). */
    logRedaction?: Pick<RedactionPolicy, 'redactQuery' | 'redactValue'>,
  ) {
    this.deps = { store, tokenizer, readArtifactText, logRedaction };
  }

  async recall(query: string, options: RecallOptions = {}): Promise<RecallResult> {
    return this.recallExcluding(query, options, new Set());
  }

  /**
   * Several queries in one call (ENGRAM §4.5 `recall(["q1", "q2"])`): the token budget is shared evenly, and
   * an event returned for one query is not repeated for a later one, which fills its share with other evidence.
   */
  async recallBatch(queries: readonly string[], options: RecallOptions = {}): Promise<RecallBatchResult> {
    if (!Array.isArray(queries) || queries.length === 0 || queries.length > MAX_BATCH_QUERIES) {
      throw new EngramError('INVALID_INPUT', `queries: give 1 to ${MAX_BATCH_QUERIES} queries`, { field: 'queries' });
    }
    const total = options.budgetTokens ?? DEFAULTS.budgetTokens;
    // One token per joining newline is reserved, so the whole batch stays within the budget.
    const share = Math.floor((total - queries.length) / queries.length);
    if (share < MIN_RECALL_BUDGET_TOKENS) {
      throw new EngramError('INVALID_INPUT', `budgetTokens: ${total} tokens cannot give ${queries.length} queries ${MIN_RECALL_BUDGET_TOKENS} each`, {
        field: 'budgetTokens',
      });
    }
    const seen = new Set<string>();
    const results: RecallResult[] = [];
    for (const [i, query] of queries.entries()) {
      if (typeof query !== 'string') throw new EngramError('INVALID_INPUT', `queries[${i}]: must be a string`, { field: `queries[${i}]` });
      const r = await this.recallExcluding(query, { ...options, budgetTokens: share }, seen);
      for (const h of r.hits) seen.add(h.eventId);
      results.push(r);
    }
    return {
      results,
      budgetTokens: total,
      usedTokens: results.reduce((sum, r) => sum + r.usedTokens + 1, 0),
      text: results.map((r) => r.text).join('\n'),
    };
  }

  private async recallExcluding(query: string, options: RecallOptions, excluded: ReadonlySet<string>): Promise<RecallResult> {
    const startedMs = performance.now();
    const o: ResolvedOptions = { ...DEFAULTS, ...stripUndefined(options) };
    validateOptions(query, o);
    const result = await runRecallPipeline(this.deps, query, o, await this.chooseRetriever(o.retriever), excluded);
    if (o.logRecall) {
      const logId = await logRecall(this.deps, query, options, o, result, performance.now() - startedMs);
      if (logId !== undefined) result.logId = logId;
    }
    return result;
  }

  /** The retriever a call uses: the one asked for, or the best available; an unavailable one is refused. */
  private async chooseRetriever(asked: Retriever | undefined): Promise<{ retriever: Retriever; embedder: Embedder | null }> {
    if (asked === 'fts') return { retriever: 'fts', embedder: null };
    const source = this.vectorSource ? await this.vectorSource() : { embedder: null, reason: 'no embedder is configured (see --embedder)' };
    if (source.embedder) return { retriever: asked ?? 'hybrid', embedder: source.embedder };
    if (asked === undefined) return { retriever: 'fts', embedder: null };
    throw new EngramError('INVALID_INPUT', `retriever: "${asked}" needs vectors, but ${source.reason}`, { field: 'retriever' });
  }
}
