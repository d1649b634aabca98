import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { EngramError, invalidInputFromZod, isEngramError } from '../errors.js';
import type { EventKind, EventRecord } from '../model/event.js';
import { DERIVED_EVENT_TAG, STORED_EVENT_KINDS } from '../model/event.js';
import { checkQuery, MAX_ARTIFACT_INDEXED_CHARS } from '../model/limits.js';
import { capForIndex } from './ingest.js';
import type { ArtifactId, EventId, SessionId } from '../model/ids.js';
import type { TaskState } from '../model/task-state.js';
import { taskStateSchema } from '../model/task-state.js';
import type { Tokenizer } from '../providers/tokenizer.js';
import type { Embedder } from '../providers/embedder.js';
import type { EventFilter, RecallLogInput, StorageBackend, TextHit, VectorHit } from '../store/backend.js';
import { cutExcerpt } from './excerpt.js';
import { exactMatch, exactNeedles, type ExactNeedles } from './exact-match.js';
import { coverageTerms, ownTextParts, termCoverage, type CoverageTerm } from './term-coverage.js';
import { noMatchHeader, packHeader, recallMatch, reservedHeader, returnedEarlierHeader, type RecallMatch } from './recall-match.js';
import type { RedactionPolicy } from './event-redaction.js';
import { maskPrivate } from './private-spans.js';
import { mmrSelect, MMR_DEFAULTS } from './mmr.js';
import { MAX_QUERY_TERMS, parseQuery, type ParsedQuery } from './query-terms.js';
import { fuseSecondHop, looksMultiHop, SECOND_HOP_SOURCES, SECOND_HOP_TERM_RANKINGS, SECOND_HOP_TERMS, secondHopTerms, type SecondHopTermRanking } from './second-hop.js';
import { feedbackVector, VECTOR_FEEDBACK_SOURCES } from './vector-feedback.js';
import { parseDateRanges } from './date-expressions.js';
import { eventMeetsDates } from './relative-dates.js';
import { VECTOR_SHARE_RULES, vectorShare, type VectorShareRule } from './vector-share.js';
import { rm3Terms } from './rm3-feedback.js';
import { expandHits } from './term-expansion.js';
import { categoryHits, type CategoryMembers } from './category-expansion.js';
import { FUSION_RULES, fuseByRule, type FusionRule } from './fusion-rule.js';
import type { ModifierFactor, ModifierFactors, ModifierOptions } from './task-modifier.js';
import { MODIFIER_FACTORS, taskModifier } from './task-modifier.js';
import type { TypeQuotas } from './type-quotas.js';
import { DEFAULT_TYPE_QUOTAS, packUnderBudget, validateTypeQuotas } from './type-quotas.js';

export interface RecallOptions {
  /** Only these sessions. Default: all. */
  sessionIds?: string[];
  /**
   * Only sessions this project owns or that are shared with it (model/access.ts). Default: every session
   * (full trust). The engine sets it for agents; it also bounds the task card's key events.
   */
  visibleToProject?: string;
  kinds?: EventKind[];
  /** Inclusive time range, epoch ms. */
  fromMs?: number;
  toMs?: number;
  taskId?: string;
  /** Most hits returned. Default 10. */
  k?: number;
  /** Token budget of the rendered pack (counted with the engine's tokenizer). Default 2000. */
  budgetTokens?: number;
  /** Weight of recency in the score, 0..1. Default 0.05: relevance decides, recency breaks near-ties. */
  recencyWeight?: number;
  /** Age at which the recency factor halves, relative to the newest candidate. Default 7 days. */
  recencyHalfLifeMs?: number;
  /** Longest excerpt per hit in characters. Default 600. */
  maxExcerptChars?: number;
  /**
   * The asking session's current task card. It conditions the ranking (ENGRAM §5.2, Annex A.3: task,
   * premises, phase, supersession, self-assessment, constraints) and adds its key events to the candidates
   * even when the query does not match them (Annex A.2b, C_ptr). Without it every modifier is 1.
   */
  taskState?: TaskState;
  /** Modifier factors forced to 1, for ablation. Default none. */
  disableFactors?: ModifierFactor[];
  /** Tuning of the modifier's constants (cross-task factor, floor, ...); see {@link ModifierOptions}. */
  modifierOptions?: Omit<ModifierOptions, 'disable'>;
  /**
   * Fill the pack in Maximal Marginal Relevance order instead of score order (which hits make it under k and the
   * budget); the packed hits are listed by score either way. Default true.
   */
  useMmr?: boolean;
  /** MMR weight of relevance against novelty, 0..1. Default 0.7 (ENGRAM §5.2). */
  lambda?: number;
  /** Most of the budget each kind may take, as fractions. Default `{ tool_result: 0.5 }`; `{}` switches quotas off. */
  typeQuotas?: TypeQuotas;
  /** The session that asks, recorded in the recall log. It does not filter (that is `sessionIds`). */
  askingSessionId?: string;
  /** Write the call to the recall log (query, task, results; Annex A.2b line 14). Default true. */
  logRecall?: boolean;
  /**
   * Where candidates come from: `fts` (full-text), `vector` (embeddings), `hybrid` (both, scores fused).
   * Default: `hybrid` when the engine has an embedder whose vectors the store holds, else `fts`. Asking for
   * `vector` or `hybrid` without one is INVALID_INPUT.
   */
  retriever?: Retriever;
  /**
   * Share of vector similarity in `hybrid` relevance, 0..1 (the rest is full-text). Default
   * {@link HYBRID_VECTOR_WEIGHT}, {@link HYBRID_VECTOR_WEIGHT_WITH_IDENTIFIERS} when the query names identifiers.
   */
  vectorWeight?: number;
  /** Weight of the indexed context column against an event's own words, 0..1 (store/backend.ts DEFAULT_CONTEXT_WEIGHT). */
  contextWeight?: number;
  /**
   * How much an event said by a speaker the query names is preferred, as a factor on the relevance of the
   * other candidates: 1 / (1 + speakerBoost). Default {@link SPEAKER_BOOST}; 0 switches it off.
   */
  speakerBoost?: number;
  /**
   * Weight of the second-hop query (second-hop.ts: the first hits' words feed a second full-text query, fused
   * into the first list), 0..1. Default {@link SECOND_HOP_WEIGHT}; 0 switches it off.
   */
  secondHopWeight?: number;
  /** When the second hop runs: `multi-hop` (questions that look multi-hop, second-hop.ts) or `always`. Default {@link SECOND_HOP_TRIGGER}. */
  secondHopTrigger?: SecondHopTrigger;
  /**
   * Weight of the best hits' vector centroid blended into the query vector before a second vector search
   * (vector-feedback.ts), 0..1. Default {@link VECTOR_FEEDBACK_WEIGHT}; 0 switches it off. Hybrid and vector only.
   */
  vectorFeedbackWeight?: number;
  /**
   * When the query names an absolute date ("in June 2022", "on 9 November, 2022": date-expressions.ts) and some
   * candidates' times fall in it, the others' relevance is divided by 1 + this. Default {@link DATE_BOOST}; 0 switches it off.
   */
  dateBoost?: number;
  /**
   * Whether the date boost also counts events whose relative dates ("yesterday", "last month": relative-dates.ts)
   * resolve, against their own time, into the question's date. Default {@link RELATIVE_DATE_BOOST} (off); the
   * resolved dates are indexed with the turn either way (IngestOptions.relativeDates), so full-text finds them.
   */
  relativeDates?: boolean;
  /** How the vector weight follows the question (vector-share.ts). Default {@link VECTOR_SHARE_RULE}. Ignored when `vectorWeight` is given. */
  vectorShare?: VectorShareRule;
  /**
   * Weight of RM3-style feedback on full-text (rm3-feedback.ts: the best hits' frequent, locally rare words searched
   * again and fused in), 0..1, for every question. Default {@link RM3_WEIGHT} (off).
   */
  rm3Weight?: number;
  /**
   * Weight of query-term expansion with the embedder's word vectors (term-expansion.ts: the question's content words
   * plus their nearest words searched again and fused in), 0..1. Needs an embedder with `similarTerms` (the built-in
   * one): hybrid calls (a full-text call has no embedder). Default {@link EXPANSION_WEIGHT}; 0 switches it off.
   */
  expansionWeight?: number;
  /**
   * Weight of category-member expansion (category-expansion.ts: for a question asking about a category, "what
   * instruments...", the category's members from the engine's lexicon, WordNet, searched with the question's terms
   * and fused in), 0..1. Default {@link CATEGORY_WEIGHT}; 0 switches it off.
   */
  categoryWeight?: number;
  /** How hybrid fuses the full-text and vector rankings (fusion-rule.ts). Default {@link FUSION_RULE}. */
  fusion?: FusionRule;
  /**
   * What MMR measures novelty on when the store has vectors: `vectors` (the events' embeddings) or `text` (the
   * excerpts' words, as without vectors). Default {@link NOVELTY_ON}.
   */
  noveltyOn?: NoveltySource;
  /** How the second hop ranks the first hits' words (second-hop.ts). Default {@link SECOND_HOP_TERM_RANKING}. */
  secondHopTerms?: SecondHopTermRanking;
}

export const NOVELTY_SOURCES = ['vectors', 'text'] as const;
export type NoveltySource = (typeof NOVELTY_SOURCES)[number];

export const SECOND_HOP_TRIGGERS = ['multi-hop', 'always'] as const;
export type SecondHopTrigger = (typeof SECOND_HOP_TRIGGERS)[number];
/**
 * Default of {@link RecallOptions.secondHopWeight}: the second query counts half as much as the question's own, so
 * what the question itself found stays on top. Chosen by leave-one-conversation-out on the LoCoMo development
 * split among 0, 0.3, 0.5 and 1 (bench/results/locomo.md).
 */
export const SECOND_HOP_WEIGHT = 0.5;
/**
 * Default of {@link RecallOptions.secondHopTrigger}: questions that look multi-hop. On every query the hop gained as
 * much on the development split (bench/results/locomo.md), but it also brings events that share no word with the
 * query: for an agent's keyword query ("lighthouse museum") that is padding, and a second search on every call.
 */
export const SECOND_HOP_TRIGGER: SecondHopTrigger = 'multi-hop';
/**
 * Default of {@link RecallOptions.vectorFeedbackWeight}: off. The best hits' centroid blended into the query vector
 * (0.3, 0.6, 1) did not gain on the development split (bench/results/locomo.md): the built-in word vectors of the
 * best hits mostly repeat what full-text already found.
 */
export const VECTOR_FEEDBACK_WEIGHT = 0;
/**
 * Default of {@link RecallOptions.dateBoost}: a question naming a date prefers what was said then, as it prefers
 * the speaker it names. On the LoCoMo development split 0.25, 0.5 and 1 each gained on every conversation, 0.5 and
 * 1 equally (bench/results/locomo.md); the smaller keeps it a preference.
 */
export const DATE_BOOST = 0.5;
/**
 * Default of {@link RecallOptions.relativeDates}: off. Indexing a turn's resolved relative dates gained on every
 * development conversation with full-text recall; counting them in the date boost as well added nothing alone and
 * cost a point on one conversation with the index (bench/results/locomo.md, "relative dates" rows).
 */
export const RELATIVE_DATE_BOOST = false;
/**
 * Default of {@link RecallOptions.rm3Weight}: off. Measured on the development split against and beside the second
 * hop (docs/recall.md).
 */
export const RM3_WEIGHT = 0;
/**
 * Default of {@link RecallOptions.expansionWeight}: off. Measured on the development split (docs/recall.md,
 * "Query-term expansion").
 */
export const EXPANSION_WEIGHT = 0;
/**
 * Default of {@link RecallOptions.categoryWeight}: off. Measured on the development split (docs/recall.md,
 * "Category-member expansion").
 */
export const CATEGORY_WEIGHT = 0;
/**
 * Default of {@link RecallOptions.vectorShare}: the same weight for every question. Neither rule of vector-share.ts
 * kept hybrid at or above full-text at every k on the development split (bench/results/locomo.md, "vector share"
 * rows): half the weight for single-fact questions also lost temporal questions, which the vectors help.
 */
export const VECTOR_SHARE_RULE: VectorShareRule = 'fixed';
/** Default of {@link RecallOptions.fusion} (fusion-rule.ts); measured on the development split in docs/recall.md. */
export const FUSION_RULE: FusionRule = 'weighted';
/** Default of {@link RecallOptions.noveltyOn}; measured on the development split in docs/recall.md. */
export const NOVELTY_ON: NoveltySource = 'vectors';
/** Default of {@link RecallOptions.secondHopTerms}; measured on the development split in docs/recall.md. */
export const SECOND_HOP_TERM_RANKING: SecondHopTermRanking = 'shared';

export const RETRIEVERS = ['fts', 'vector', 'hybrid'] as const;
export type Retriever = (typeof RETRIEVERS)[number];

/**
 * The embedder recall may use, or why it may not: the engine answers from its embedding indexer, so a
 * store whose vectors come from another model is never queried with this model's vectors.
 */
export type VectorSource = () => Promise<{ embedder: Embedder } | { embedder: null; reason: string }>;

export interface RecallHit {
  eventId: string;
  sessionId: string;
  turn: number;
  kind: EventKind;
  ts: string;
  /** Final score: `baseScore × modifier`; 0..5 with the default modifier cap, 0..1 without a task state. */
  score: number;
  /** Query relevance in 0..1: full-text relevance, exact-match boost and recency combined. */
  baseScore: number;
  /** The task-conditioned modifier (Annex A.3); 1 without a task state. */
  modifier: number;
  /** The modifier's factors, for evaluation and ablation. */
  factors: ModifierFactors;
  /**
   * Query relevance in 0..1 before the exact-match boost and recency: full-text relevance normalised to the
   * best candidate, fused with vector similarity under `hybrid` (0 for a key event the query did not match).
   */
  relevance: number;
  /** Cosine similarity of the event's vector to the query's, when the vector side ranked it. */
  similarity?: number;
  /**
   * Whether the event's own text (content as recall reads it, private spans masked; tool name; tags) holds the query's
   * exact string (case-insensitive, whitespace runs as one space), or each of the query's identifiers, as whole tokens
   * (exact-match.ts: `pause` is not in `pauseBtn`).
   */
  isExactMatch: boolean;
  /**
   * Share of the query's content terms (stop words out, stemmed as the full-text index stems) that occur in the event's
   * own text (content, tool name, tags, `meta.speaker`), 0..1; not in its indexed context (term-coverage.ts).
   */
  coverage: number;
  excerpt: string;
  /** Tokens this hit takes in the rendered pack (its provenance line and quoted excerpt). */
  tokens: number;
  toolName?: string;
  artifactId?: string;
  /** The event that supersedes this one (the most recently stored, when several do). */
  supersededBy?: string;
  /** The task state lists this event among its key events. */
  isKeyEvent: boolean;
}

/** Results of {@link Recaller.recallBatch}, one per query, in order. */
export interface RecallBatchResult {
  results: RecallResult[];
  budgetTokens: number;
  /** Upper bound of the tokens of `text`, never above `budgetTokens`. */
  usedTokens: number;
  /** Every result's pack, in order. */
  text: string;
}

/** Most queries in one batch. */
export const MAX_BATCH_QUERIES = 10;

export interface RecallResult {
  query: string;
  /** The retriever that ranked the candidates (see {@link RecallOptions.retriever}). */
  retriever: Retriever;
  /**
   * How the hits match the query (recall-match.ts): `exact` (some hit is an exact match), `related` (some hit holds
   * some of its terms or is close in meaning), `none` (no hit does: `hits` is empty but for the task card's key
   * events, and `text` says no event matches). In a batch, a query whose matching events were all returned for an
   * earlier query keeps their match, with no hits, and its text says they are above.
   */
  match: RecallMatch;
  hits: RecallHit[];
  /**
   * How many events were ranked (before k and the budget): the full-text matches plus the task state's key
   * events that the query did not match.
   */
  candidates: number;
  budgetTokens: number;
  /** Tokens of `text`, counted part by part: an upper bound that never exceeds `budgetTokens`. */
  usedTokens: number;
  /** True when matches were left out because of k or the budget. */
  isTruncated: boolean;
  /** The pack as the model sees it: quoted evidence with provenance. */
  text: string;
  /**
   * Id of the recall-log row. Absent when logging was switched off or the store refused the write (a
   * read-only store): a recall that found its evidence is not failed for its log.
   */
  logId?: number;
}

/** Reads an artifact's full text (decompressed); the engine supplies it with a cache. */
export type ArtifactTextReader = (id: ArtifactId) => Promise<string>;

/**
 * When a query names the speaker of some candidates (`meta.speaker`, e.g. "what did Melanie paint?"), the
 * others' relevance is divided by 1 + this. Soft, because a question may name one person and be answered by
 * another (LoCoMo's adversarial questions swap the speaker on purpose): at 0.25 categories 1-4 gained and the
 * adversarial ones lost less than the others gained; at 0.5 the loss grew (bench/results/locomo.md).
 */
export const SPEAKER_BOOST = 0.25;

const DEFAULTS = {
  k: 10,
  budgetTokens: 2000,
  // Relevance is normalised to the best candidate (1); at 0.15 a candidate 15 % less relevant but new outranked
  // an old exact answer, which cost 2 points of LoCoMo recall@10 against 0.05 (bench/results/locomo.md).
  recencyWeight: 0.05,
  recencyHalfLifeMs: 7 * 24 * 3600 * 1000,
  maxExcerptChars: 600,
  useMmr: true,
  lambda: MMR_DEFAULTS.lambda as number,
  typeQuotas: DEFAULT_TYPE_QUOTAS as TypeQuotas,
  logRecall: true,
  speakerBoost: SPEAKER_BOOST,
  secondHopWeight: SECOND_HOP_WEIGHT,
  secondHopTrigger: SECOND_HOP_TRIGGER as SecondHopTrigger,
  vectorFeedbackWeight: VECTOR_FEEDBACK_WEIGHT,
  dateBoost: DATE_BOOST,
  relativeDates: RELATIVE_DATE_BOOST as boolean,
  vectorShare: VECTOR_SHARE_RULE as VectorShareRule,
  rm3Weight: RM3_WEIGHT,
  expansionWeight: EXPANSION_WEIGHT,
  categoryWeight: CATEGORY_WEIGHT,
  fusion: FUSION_RULE as FusionRule,
  noveltyOn: NOVELTY_ON as NoveltySource,
  secondHopTerms: SECOND_HOP_TERM_RANKING as SecondHopTermRanking,
};
type ResolvedOptions = typeof DEFAULTS & RecallOptions;
/** Full-text candidates examined per requested hit: enough for re-ranking, few enough to stay fast. */
const CANDIDATES_PER_HIT = 4;
const MIN_CANDIDATES = 40;
/** Vector candidates per call: the depth the fusion was measured at (bench/results/locomo.md). */
const MIN_VECTOR_CANDIDATES = 100;
// Candidates whose full text is read (for the exact-match check and the excerpt), per requested hit. MMR and
// the quotas pass over some of them (duplicates, a kind over its share), so they need spare ones.
const DETAIL_PER_HIT = 2;
const DETAIL_PER_HIT_MMR = 3;
/** Below this a pack cannot hold its header plus one useful hit. */
export const MIN_RECALL_BUDGET_TOKENS = 64;
// Exact occurrences of the query's identifiers outrank prose that only shares their tokens.
const EXACT_MATCH_BOOST = 0.6;
/**
 * Hybrid fusion: relevance = (1 - w) x full-text / best full-text + w x min-max normalised cosine, then over
 * the best candidate. w is chosen by leave-one-conversation-out cross-validation on the LoCoMo development
 * split (bench/results/locomo.md: every fold picked 0.2 from 0-0.5, and hybrid at 0.2 is not below full-text at
 * any k there over all five categories). It was 0.5 when full-text indexed turns alone; with context-aware
 * units full-text is much stronger and the built-in word vectors' share smaller. A query naming identifiers
 * (a hash, an error code, a path) asks for those exact strings, so vectors get less say there: prose that is
 * merely about the same thing must not outrank the event that holds the string.
 */
export const HYBRID_VECTOR_WEIGHT = 0.2;
/**
 * Least cosine similarity of a vector-only candidate. The built-in embedder scores unrelated texts near 0 and
 * paraphrases from about 0.2 (src/providers/glove/sentence-encoder.ts); other models run higher, so this only
 * keeps out what is plainly unrelated.
 */
export const MIN_VECTOR_SIMILARITY = 0.1;
export const HYBRID_VECTOR_WEIGHT_WITH_IDENTIFIERS = 0.1;

/**
 * The recall tool (ENGRAM Annex A.2b): full-text (BM25) candidates plus the task state's key events; a base
 * score from relevance, an exact-identifier boost and recency; times the task-conditioned modifier
 * (task-modifier.ts); MMR against redundancy (mmr.ts); greedy packing under a token budget with per-kind
 * quotas (type-quotas.ts); one recall-log row per call. Every hit carries its provenance; the rendered text
 * quotes each excerpt line so retrieved content can never pose as instructions (ENGRAM §12.3).
 */
export class Recaller {
  constructor(
    private readonly store: StorageBackend,
    private readonly tokenizer: Tokenizer,
    private readonly readArtifactText: ArtifactTextReader,
    private readonly vectorSource?: VectorSource,
    /** Redacts credentials in a query and its options before they are logged (the ingestor's policy). */
    private readonly logRedaction?: Pick<RedactionPolicy, 'redactQuery' | 'redactValue'>,
    /** The lexicon of category members (category-expansion.ts); without it `categoryWeight` does nothing. */
    private readonly categoryMembers?: CategoryMembers,
  ) {}

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
    const result = await this.rank(query, o, excluded);
    if (o.logRecall) {
      const logId = await this.log(query, options, o, result, performance.now() - startedMs);
      if (logId !== undefined) result.logId = logId;
    }
    return result;
  }

  /**
   * The ranking, stage by stage: retrieve and fuse candidates (derived events dropped), add the task's key events,
   * score them with the task modifier, read the head's full text (exact matches, coverage, excerpts), order by
   * novelty (MMR), pack under the budget and quotas, list the packed hits by score, judge the match, render.
   */
  private async rank(query: string, o: ResolvedOptions, excluded: ReadonlySet<string> = new Set()): Promise<RecallResult> {
    const parsed = parseQuery(query);
    const filter = toFilter(o);
    const candidateLimit = Math.max(MIN_CANDIDATES, o.k * CANDIDATES_PER_HIT);
    const { retriever, embedder } = await this.chooseRetriever(o.retriever);
    // The candidates' events, loaded once: derived ones are dropped as soon as they are found (withoutDerived).
    const events: LoadedEvents = new Map();
    const fused = await this.retrieveCandidates(query, parsed, filter, candidateLimit, retriever, embedder, o, events);
    const keyIds = new Set<string>(o.taskState?.keyEvents ?? []);
    const { pool, candidates } = await this.withKeyEvents(fused, keyIds, filter, events);
    if (pool.length === 0) return this.render(query, retriever, [], candidates, o.budgetTokens, false);

    const scored = await this.score(pool, keyIds, o, query);
    const detailed = ownMatchesOnly(await this.detailHead(scored, query, parsed, o), parsed, retriever);
    const ordered = await this.orderByNovelty(detailed, embedder, o);
    const out = this.pack(query, ordered, excluded, candidates, o);
    // In a batch, what an earlier query returned is left out here: when that was all that matched, the result says so.
    const matchedEarlier = excluded.size > 0 ? recallMatch(ordered.filter((d) => excluded.has(d.event.id) && !(d.isKeyEvent && d.relevance === 0))) : 'none';
    return this.render(query, retriever, out, candidates, o.budgetTokens, out.length < candidates, matchedEarlier);
  }

  /**
   * `hits` without derived events: Engram's own output come back in a transcript (a recall result, a brief; tagged
   * DERIVED_EVENT_TAG at ingest) quotes the evidence, and is never evidence itself (issue #29, item 6). Their events
   * are loaded into `events` (null for an id that no longer loads: withKeyEvents counts it, as before).
   */
  private async withoutDerived<T extends { eventId: string }>(hits: readonly T[], events: LoadedEvents): Promise<T[]> {
    const missing = [...new Set(hits.map((h) => h.eventId).filter((id) => !events.has(id)))];
    if (missing.length > 0) {
      for (const id of missing) events.set(id, null);
      for (const e of await this.store.getEvents(missing as EventId[])) events.set(e.id, e);
    }
    return hits.filter((h) => !isDerived(events.get(h.eventId)));
  }

  /**
   * The query's full-text search without derived events. When they took some of the `limit` places, the search runs
   * once more with that many more, so they do not push evidence out of the candidates.
   */
  private async searchOwnText(parsed: ParsedQuery, filter: EventFilter, limit: number, o: ResolvedOptions, events: LoadedEvents): Promise<TextHit[]> {
    const contextWeight = o.contextWeight !== undefined ? { contextWeight: o.contextWeight } : {};
    const found = await this.store.searchText({ terms: parsed.terms, filter, limit, ...contextWeight });
    const kept = await this.withoutDerived(found, events);
    if (kept.length === found.length || found.length < limit) return kept;
    const more = await this.store.searchText({ terms: parsed.terms, filter, limit: limit + found.length - kept.length, ...contextWeight });
    return (await this.withoutDerived(more, events)).slice(0, limit);
  }

  /** Full-text and vector candidates, fused into one relevance per event (in the order they were found). */
  private async retrieveCandidates(
    query: string,
    parsed: ParsedQuery,
    filter: EventFilter,
    candidateLimit: number,
    retriever: Retriever,
    embedder: Embedder | null,
    o: ResolvedOptions,
    events: LoadedEvents,
  ): Promise<Map<string, { relevance: number; similarity: number | undefined }>> {
    const contextWeight = o.contextWeight !== undefined ? { contextWeight: o.contextWeight } : {};
    const hasIdentifiers = parsed.identifiers.length > 0;
    // A fixed vector depth, so an event's normalised similarity does not depend on k (bench/results/locomo.md:
    // depth max(40, 4k) cost 1.3 recall@10 and 3.6 @5 against depth 100).
    const vectorLimit = Math.max(MIN_VECTOR_CANDIDATES, candidateLimit);
    // The query's embedding and vector search start before the full-text search and are awaited after it, so a
    // backend that searches vectors off this thread (a worker, another connection) or an embedder that waits on
    // the network overlaps them with the full-text search instead of adding to it.
    const vectorSearch = embedder ? this.searchQueryVector(query, embedder, filter, vectorLimit) : undefined;
    // Awaited below; a full-text failure must not leave its rejection unhandled meanwhile.
    vectorSearch?.catch(() => undefined);
    // One turn of the event loop, so an embedder that answers at once (the built-in one) hands the vector search to
    // the backend before the full-text search, which better-sqlite3 runs on this thread, takes it: the SQLite code
    // index posts its scan to a worker thread then (code-scanner.ts). Without it the scan was posted only after the
    // full-text search had run, and nothing overlapped.
    if (vectorSearch && retriever !== 'vector') await yieldToEventLoop();
    let hits = retriever !== 'vector' && parsed.terms.length > 0 ? await this.searchOwnText(parsed, filter, candidateLimit, o, events) : [];
    // A question asking for exact strings is not widened: its answer holds them.
    if (o.secondHopWeight > 0 && hits.length > 0 && !hasIdentifiers && (o.secondHopTrigger === 'always' || looksMultiHop(query))) {
      hits = await this.secondHop(query, parsed, hits, filter, candidateLimit, o);
    }
    if (o.rm3Weight > 0 && hits.length > 0 && !hasIdentifiers) hits = await this.rm3(parsed, hits, filter, candidateLimit, o);
    if (o.expansionWeight > 0 && embedder?.similarTerms && retriever !== 'vector' && !hasIdentifiers && parsed.terms.length > 0) {
      const similarTerms = embedder.similarTerms.bind(embedder);
      const search = { filter, limit: candidateLimit, weight: o.expansionWeight, ...(o.contextWeight !== undefined ? { contextWeight: o.contextWeight } : {}) };
      hits = await expandHits(this.store, query, parsed, hits, similarTerms, search);
    }
    if (o.categoryWeight > 0 && this.categoryMembers && retriever !== 'vector' && !hasIdentifiers && parsed.terms.length > 0) {
      const search = { filter, limit: candidateLimit, weight: o.categoryWeight, ...(o.contextWeight !== undefined ? { contextWeight: o.contextWeight } : {}) };
      hits = await categoryHits(this.store, query, parsed, hits, this.categoryMembers, search);
    }
    // The widening searches above may bring derived events back.
    hits = await this.withoutDerived(hits, events);
    const { queryVector, hits: firstVectorHits } = vectorSearch ? await vectorSearch : { queryVector: undefined, hits: [] };
    let vectorHits = await this.withoutDerived(admitVectorHits(firstVectorHits, hits, retriever, hasIdentifiers), events);
    // A query naming identifiers keeps its fixed, lower weight (fuseRelevance).
    const vectorWeight = o.vectorWeight ?? (hasIdentifiers ? undefined : vectorShare(o.vectorShare, HYBRID_VECTOR_WEIGHT, query, hits, firstVectorHits));
    let fused = fuseRelevance(hits, vectorHits, retriever, hasIdentifiers, vectorWeight, o.fusion);
    if (embedder && queryVector && o.vectorFeedbackWeight > 0 && !hasIdentifiers && fused.size > 0) {
      const best = [...fused].sort((a, b) => b[1].relevance - a[1].relevance).slice(0, VECTOR_FEEDBACK_SOURCES).map(([id]) => id as EventId);
      const sources = [...(await this.store.getVectors(embedder.name, best)).values()];
      if (sources.length > 0) {
        const vector = feedbackVector(queryVector, sources, o.vectorFeedbackWeight);
        vectorHits = await this.store.searchVectors({ vector, model: embedder.name, filter, limit: vectorLimit });
        vectorHits = await this.withoutDerived(admitVectorHits(vectorHits, hits, retriever, hasIdentifiers), events);
        fused = fuseRelevance(hits, vectorHits, retriever, hasIdentifiers, vectorWeight, o.fusion);
      }
    }
    return fused;
  }

  /** The query's embedding, then the vector search with it. */
  private async searchQueryVector(
    query: string,
    embedder: Embedder,
    filter: EventFilter,
    limit: number,
  ): Promise<{ queryVector: Float32Array; hits: VectorHit[] }> {
    const queryVector = (await embedder.embed([query]))[0]!;
    return { queryVector, hits: await this.store.searchVectors({ vector: queryVector, model: embedder.name, filter, limit }) };
  }

  /**
   * The second hop (second-hop.ts): the query's terms plus the words of its first full-text hits, searched again
   * and fused into the first list. Speakers' names are left out of the added words: every turn of theirs holds them.
   */
  private async secondHop(query: string, parsed: ParsedQuery, first: TextHit[], filter: EventFilter, limit: number, o: ResolvedOptions): Promise<TextHit[]> {
    // `distinctive` reads the first pass's candidates too, to weigh each word by its rarity among them.
    const read = o.secondHopTerms === 'distinctive' ? first.slice(0, MIN_CANDIDATES) : first.slice(0, SECOND_HOP_SOURCES);
    const sources = await this.store.getEvents(read.map((h) => h.eventId));
    const byId = new Map(sources.map((e) => [e.id as string, e]));
    const ordered = first.slice(0, SECOND_HOP_SOURCES).flatMap((h) => byId.get(h.eventId) ?? []);
    const speakers = new Set(ordered.flatMap((e) => speakerOf(e)?.split(/\s+/) ?? []));
    const candidates = o.secondHopTerms === 'distinctive' ? read.flatMap((h) => byId.get(h.eventId) ?? []).map((e) => maskPrivate(e.content)) : undefined;
    const added = secondHopTerms(parsed.terms, ordered.map((e) => maskPrivate(e.content)), speakers, SECOND_HOP_TERMS, candidates);
    if (added.length === 0) return first;
    const terms = [...parsed.terms, ...added.map((text) => ({ text }))].slice(0, MAX_QUERY_TERMS);
    const second = await this.store.searchText({ terms, filter, limit, ...(o.contextWeight !== undefined ? { contextWeight: o.contextWeight } : {}) });
    return fuseSecondHop(first, second, o.secondHopWeight);
  }

  /** RM3 feedback (rm3-feedback.ts): the best hits' words, rare among the first candidates, searched again and fused in. */
  private async rm3(parsed: ParsedQuery, first: TextHit[], filter: EventFilter, limit: number, o: ResolvedOptions): Promise<TextHit[]> {
    const ranked = [...first].sort((a, b) => b.relevance - a.relevance).slice(0, MIN_CANDIDATES);
    const byId = new Map((await this.store.getEvents(ranked.map((h) => h.eventId as EventId))).map((e) => [e.id as string, e]));
    const sources = ranked.flatMap((h) => {
      const e = byId.get(h.eventId);
      return e ? [{ text: maskPrivate(e.content), relevance: h.relevance, speaker: speakerOf(e) }] : [];
    });
    const queryWords = new Set(parsed.terms.flatMap((t) => t.text.toLowerCase().split(/[^\p{L}\p{N}]+/u)));
    const speakers = new Set(sources.flatMap((s) => s.speaker?.split(/\s+/) ?? []));
    const added = rm3Terms(queryWords, sources, speakers);
    if (added.length === 0) return first;
    const terms = [...parsed.terms, ...added.map((text) => ({ text }))].slice(0, MAX_QUERY_TERMS);
    const second = await this.store.searchText({ terms, filter, limit, ...(o.contextWeight !== undefined ? { contextWeight: o.contextWeight } : {}) });
    return fuseSecondHop(first, second, o.rm3Weight);
  }

  /**
   * The fused candidates' events plus the task's key events the query did not find; `candidates` counts both
   * (the events of fused candidates that no longer load are counted but not pooled).
   */
  private async withKeyEvents(
    fused: ReadonlyMap<string, { relevance: number; similarity: number | undefined }>,
    keyIds: ReadonlySet<string>,
    filter: EventFilter,
    events: LoadedEvents,
  ): Promise<{ pool: Candidate[]; candidates: number }> {
    // Key events join the candidates whether or not the query matched them (Annex A.2b, C_ptr), so the
    // events the task depends on stay retrievable (§5.5); they obey the caller's filters like any other,
    // and a derived one is no more evidence for being pinned.
    const extraKeyIds = [...keyIds].filter((id) => !fused.has(id));
    await this.withoutDerived([...fused.keys(), ...extraKeyIds].map((eventId) => ({ eventId })), events);
    const keyEvents = extraKeyIds.flatMap((id) => {
      const event = events.get(id);
      return event && !isDerived(event) && matchesFilter(event, filter) ? [event] : [];
    });
    const keyOnly = (await this.visibleOnly(keyEvents, filter.visibleToProject)).map((event) => ({ event, relevance: 0, similarity: undefined }));
    const pool = [
      ...[...fused].flatMap(([id, f]) => {
        const event = events.get(id);
        return event ? [{ event, relevance: f.relevance, similarity: f.similarity }] : [];
      }),
      ...keyOnly,
    ];
    return { pool, candidates: fused.size + keyOnly.length };
  }

  /**
   * Base score (relevance, recency; no exact-match boost yet) times the task-conditioned modifier, best first.
   * A modifier of 0 drops the candidate.
   */
  private async score(pool: readonly Candidate[], keyIds: ReadonlySet<string>, o: ResolvedOptions, query: string): Promise<Ranked[]> {
    const words = queryWords(query);
    // One store query tells which candidates a later event superseded (Annex A.3, sup(e)).
    const superseding = await this.store.findSuperseding(pool.map((c) => c.event.id));
    const newestMs = Math.max(...pool.map((c) => Date.parse(c.event.ts)));
    const modifierOptions: ModifierOptions = { ...o.modifierOptions, ...(o.disableFactors ? { disable: o.disableFactors } : {}) };
    // Speakers the query names, among the candidates' (query-terms.ts keeps names as ordinary words).
    const named = new Set(pool.map((c) => speakerOf(c.event)).filter((s): s is string => s !== undefined && words.has(s)));
    const otherSpeaker = 1 / (1 + o.speakerBoost);
    // Dates the query names, when some candidates were said then (date-expressions.ts); a preference like the speaker's.
    const ranges = o.dateBoost > 0 ? parseDateRanges(query) : [];
    const saidThen = ranges.length > 0 ? new Set(pool.filter((c) => eventMeetsDates(c.event, ranges, o.relativeDates)).map((c) => c.event.id as string)) : new Set<string>();
    const dated = saidThen.size > 0;
    const otherDate = 1 / (1 + o.dateBoost);
    const scored = pool.flatMap((c) => {
      const supersededBy = superseding.get(c.event.id);
      const tm = taskModifier(c.event, o.taskState, { isSuperseded: supersededBy !== undefined }, modifierOptions);
      // A modifier of 0 (a factor tuned to 0) removes the event, as A.3 line 2 does for unrelated tasks.
      if (tm.modifier <= 0) return [];
      const speaker = named.size > 0 ? speakerOf(c.event) : undefined;
      const bySpeaker = named.size > 0 && !(speaker !== undefined && named.has(speaker)) ? c.relevance * otherSpeaker : c.relevance;
      const relevance = dated && !saidThen.has(c.event.id) ? bySpeaker * otherDate : bySpeaker;
      const recency = Math.pow(2, -(newestMs - Date.parse(c.event.ts)) / o.recencyHalfLifeMs);
      const baseScore = combine(relevance, 0, recency, o.recencyWeight);
      return [
        {
          event: c.event,
          relevance,
          similarity: c.similarity,
          recency,
          baseScore,
          modifier: tm.modifier,
          factors: tm.factors,
          supersededBy,
          isKeyEvent: keyIds.has(c.event.id),
          score: baseScore * tm.modifier,
        },
      ];
    });
    scored.sort(byScore);
    return scored;
  }

  /** The head of the ranking with its full text read: the exact-identifier boost applied and excerpts cut, best first. */
  private async detailHead(scored: readonly Ranked[], query: string, parsed: ParsedQuery, o: ResolvedOptions): Promise<Scored[]> {
    // Exact-match check, coverage and excerpts need the full text; load it only for the head of the ranking.
    const head = scored.slice(0, Math.min(scored.length, o.k * (o.useMmr ? DETAIL_PER_HIT_MMR : DETAIL_PER_HIT)));
    const needles = parsed.terms.map((t) => t.text);
    const exactNeedlesOfQuery = exactNeedles(query, parsed);
    const terms = coverageTerms(parsed);
    const detailed: Scored[] = await Promise.all(
      head.map(async (s) => {
        const text = await this.fullText(s.event);
        const { isExactMatch, holdsIdentifier, exactFraction, coverage } = ownMatch(s.event, text, exactNeedlesOfQuery, terms);
        const baseScore = combine(s.relevance, exactFraction, s.recency, o.recencyWeight);
        return {
          ...s,
          holdsIdentifier,
          isExactMatch,
          coverage,
          baseScore,
          score: baseScore * s.modifier,
          excerpt: cutExcerpt(text, needles, parsed.identifiers, { maxChars: o.maxExcerptChars }),
        };
      }),
    );
    detailed.sort(byScore);
    return detailed;
  }

  /**
   * MMR on what the reader will see: near-identical excerpts (the same log repeated) are dropped and
   * similar ones wait behind different evidence (§5.2). Novelty is measured on the events' vectors when
   * the store has them, else on the excerpts' words. Without MMR, the order is the score's.
   */
  private async orderByNovelty(detailed: Scored[], embedder: Embedder | null, o: ResolvedOptions): Promise<Scored[]> {
    const vectors = o.useMmr && embedder && o.noveltyOn === 'vectors' ? await this.store.getVectors(embedder.name, detailed.map((d) => d.event.id)) : new Map<EventId, Float32Array>();
    return o.useMmr
      ? mmrSelect(
          detailed.map((d) => {
            const vector = vectors.get(d.event.id);
            return { id: d.event.id, score: d.score, text: d.excerpt, d, ...(vector ? { vector } : {}) };
          }),
          detailed.length,
          { lambda: o.lambda },
        ).map((c) => c.d)
      : detailed;
  }

  /** Greedy packing under the token budget, at most k hits, within the per-kind quotas; events in `excluded` are skipped. */
  private pack(query: string, ordered: readonly Scored[], excluded: ReadonlySet<string>, candidates: number, o: ResolvedOptions): RecallHit[] {
    // Reserve the header with the largest numbers it can show, so the final header always fits.
    const fresh = excluded.size > 0 ? ordered.filter((d) => !excluded.has(d.event.id)) : ordered;
    const { packed } = packUnderBudget(fresh, {
      budgetTokens: o.budgetTokens,
      usedTokens: this.tokenizer.count(reservedHeader(query, o.k, candidates)),
      maxItems: o.k,
      quotas: o.typeQuotas,
      kindOf: (d) => d.event.kind,
      measure: (d, position) => this.tokenizer.count(renderHit(toHit(d), position)),
    });
    // MMR (and the quotas' second pass) chose which hits fill the pack; they are listed by the score each prints, so
    // the order read is the order of the scores shown (issue #29). Each hit was measured at the widest position, so
    // its count holds wherever it lands.
    return [...packed].sort((a, b) => byScore(a.item, b.item)).map(({ item, tokens }) => ({ ...toHit(item), tokens }));
  }

  /** The events of sessions `project` may read (all of them without a project). */
  private async visibleOnly(events: EventRecord[], project: string | undefined): Promise<EventRecord[]> {
    if (project === undefined || events.length === 0) return events;
    const access = await this.store.getSessionAccess(events.map((e) => e.sessionId));
    return events.filter((e) => {
      const a = access.get(e.sessionId);
      return a !== undefined && (a.project === project || a.sharedWith.includes(project));
    });
  }

  /** The retriever a call uses: the one asked for, or the best available; an unavailable one is refused. */
  private async chooseRetriever(asked: Retriever | undefined): Promise<{ retriever: Retriever; embedder: Embedder | null }> {
    if (asked === 'fts') return { retriever: 'fts', embedder: null };
    const source = this.vectorSource ? await this.vectorSource() : { embedder: null, reason: 'no embedder is configured (see --embedder)' };
    if (source.embedder) return { retriever: asked ?? 'hybrid', embedder: source.embedder };
    if (asked === undefined) return { retriever: 'fts', embedder: null };
    throw new EngramError('INVALID_INPUT', `retriever: "${asked}" needs vectors, but ${source.reason}`, { field: 'retriever' });
  }

  /** Writes the recall log row; a store that refuses the write (read-only) leaves the recall unlogged. */
  private async log(query: string, given: RecallOptions, o: ResolvedOptions, result: RecallResult, durationMs: number): Promise<number | undefined> {
    const sessionId = o.askingSessionId ?? (o.sessionIds?.length === 1 ? o.sessionIds[0] : undefined);
    const taskId = o.taskState?.taskId ?? o.taskId;
    const entry: RecallLogInput = {
      tsMs: Date.now(),
      query,
      options: stripUndefined(given) as Record<string, unknown>,
      results: result.hits.map((h) => ({ eventId: h.eventId as EventId, score: h.score, baseScore: h.baseScore, modifier: h.modifier })),
      durationMs: Math.round(durationMs * 1000) / 1000,
      ...(sessionId !== undefined ? { sessionId } : {}),
      ...(o.visibleToProject !== undefined ? { project: o.visibleToProject } : {}),
      ...(taskId !== undefined ? { taskId } : {}),
    };
    try {
      // A secret pasted into a query is no more kept in the log than in an event.
      if (this.logRedaction) {
        entry.query = await this.logRedaction.redactQuery(entry.query);
        entry.options = await this.logRedaction.redactValue(entry.options);
      }
      return await this.store.logRecall(entry);
    } catch (err) {
      if (isEngramError(err, 'STORAGE_ERROR')) return undefined;
      throw err;
    }
  }

  /** The text excerpts are cut from and exact matches checked in: private spans hidden (private-spans.ts). */
  private async fullText(event: EventRecord): Promise<string> {
    if (!event.artifact || !isTextMedia(event.artifact.mediaType)) return maskPrivate(event.content);
    // The part the full-text index holds (its head and tail, ingest.ts) is where a match was found: reading only it
    // bounds the excerpt's work (an 8 MiB log cost two copies of 8 MiB per candidate: bench/results/adversarial.md).
    return capForIndex(maskPrivate(await this.readArtifactText(event.artifact.id)), MAX_ARTIFACT_INDEXED_CHARS);
  }

  /**
   * The result: its match judged on the packed hits (recall-match.ts), and its text. When nothing matches, the hits
   * are dropped but for the task card's key events (pinned, not matched), and the text says no event matches.
   */
  private render(
    query: string,
    retriever: Retriever,
    packed: RecallHit[],
    candidates: number,
    budgetTokens: number,
    isTruncated: boolean,
    matchedEarlier: RecallMatch = 'none',
  ): RecallResult {
    const found = recallMatch(packed.filter((h) => !(h.isKeyEvent && h.relevance === 0)));
    const hits = found === 'none' ? packed.filter((h) => h.isKeyEvent) : packed;
    const match = found === 'none' ? matchedEarlier : found;
    const holding = hits.filter((h) => h.isExactMatch || h.coverage > 0).length;
    const exact = hits.filter((h) => h.isExactMatch).length;
    const header =
      found !== 'none'
        ? packHeader(query, { hits: hits.length, candidates, holding, exact })
        : matchedEarlier !== 'none'
          ? returnedEarlierHeader(query, hits.length)
          : noMatchHeader(query, hits.length);
    const text = [header, ...hits.map((h, i) => renderHit(h, i + 1))].join('\n');
    // The parts were counted while packing; BPE never merges across a newline, so the sum of the parts
    // plus one token per separator bounds the whole from above (counting the text again cost ~10 % of recall).
    const usedTokens = this.tokenizer.count(header) + hits.reduce((sum, h) => sum + h.tokens + 1, 0);
    return { query, retriever, match, hits, candidates, budgetTokens, usedTokens, isTruncated: found !== 'none' && isTruncated, text };
  }
}

/**
 * Which vector candidates may enter a hybrid ranking. Vector search always returns neighbours, related or not,
 * and a pack padded with them costs tokens and precision. So a vector-only candidate needs a cosine of at least
 * {@link MIN_VECTOR_SIMILARITY}; and when the query names identifiers that full-text found, the question is
 * about those exact strings, and only candidates that contain them (full-text hits) are kept. Vectors still
 * rerank the full-text hits they also found.
 */
function admitVectorHits<T extends { eventId: string; similarity: number }>(
  vector: readonly T[],
  text: ReadonlyArray<{ eventId: string }>,
  retriever: Retriever,
  hasIdentifiers: boolean,
): T[] {
  // Asked for vectors alone, the caller gets the nearest ones, whatever their similarity.
  if (retriever === 'vector') return [...vector];
  const found = new Set(text.map((h) => h.eventId));
  if (hasIdentifiers && found.size > 0) return vector.filter((h) => found.has(h.eventId));
  return vector.filter((h) => h.similarity >= MIN_VECTOR_SIMILARITY || found.has(h.eventId));
}

/**
 * Relevance in 0..1 per candidate: full-text scores over the best one, vector similarities min-max
 * normalised over the vector candidates, fused by {@link HYBRID_VECTOR_WEIGHT}. Candidates keep the order
 * they were found in (full-text first), which only matters for ties.
 */
export function fuseRelevance(
  text: ReadonlyArray<{ eventId: string; relevance: number }>,
  vector: ReadonlyArray<{ eventId: string; similarity: number }>,
  retriever: Retriever,
  hasIdentifiers: boolean,
  vectorWeight?: number,
  rule: FusionRule = FUSION_RULE,
): Map<string, { relevance: number; similarity: number | undefined }> {
  const hybrid = vectorWeight ?? (hasIdentifiers ? HYBRID_VECTOR_WEIGHT_WITH_IDENTIFIERS : HYBRID_VECTOR_WEIGHT);
  const w = retriever === 'fts' ? 0 : retriever === 'vector' ? 1 : hybrid;
  const out = retriever === 'hybrid' ? fuseByRule(rule, text, vector, w) : fuseScores(text, vector, w);
  // The best candidate scores 1, as with full-text alone, so the recency weight means the same under every
  // retriever (a fused best of 0.7 would have let recency count for more).
  const best = Math.max(...[...out.values()].map((v) => v.relevance), Number.EPSILON);
  for (const v of out.values()) v.relevance /= best;
  return out;
}

/**
 * The fusion of {@link fuseRelevance} at vector weight `w` (0..1), before the best is scaled to 1:
 * (1 - w) x full-text score / best full-text score + w x min-max normalised similarity. The LoCoMo benchmark
 * fuses its comparison rankings with it.
 */
export function fuseScores(
  text: ReadonlyArray<{ eventId: string; relevance: number }>,
  vector: ReadonlyArray<{ eventId: string; similarity: number }>,
  w: number,
): Map<string, { relevance: number; similarity: number | undefined }> {
  return fuseByRule('weighted', text, vector, w);
}

/**
 * Who said an event, lower-cased: `meta.speaker` when the writer recorded it (multi-party transcripts), else
 * `meta.name`, the participant name of OpenAI chat messages (the openai importer keeps it there); undefined
 * otherwise.
 */
export function speakerOf(e: EventRecord): string | undefined {
  for (const key of ['speaker', 'name']) {
    const s = e.meta?.[key];
    if (typeof s === 'string' && s.trim().length > 0) return s.trim().toLowerCase();
  }
  return undefined;
}

/** The query's words and two-word runs, lower-cased, to match speakers ("Melanie", "Dr Smith") against. */
function queryWords(query: string): Set<string> {
  const words = query.toLowerCase().split(/[^\p{L}\p{N}'-]+/u).filter(Boolean).map((w) => w.replace(/'s$/, ''));
  return new Set([...words, ...words.slice(1).map((w, i) => `${words[i]} ${w}`)]);
}

/** Events loaded for one call, by id; null for an id that no longer loads. */
type LoadedEvents = Map<string, EventRecord | null>;

/** Whether an event is Engram's own output come back in a transcript (DERIVED_EVENT_TAG): never evidence. */
function isDerived(e: EventRecord | null | undefined): boolean {
  return e !== null && e !== undefined && e.tags.includes(DERIVED_EVENT_TAG);
}

/**
 * What an event's own text (`text`, as recall reads it, plus its tool name and tags; its speaker for coverage) holds of
 * the query: whether it is an exact match (exact-match.ts), whether it holds one of the identifiers, the exact-match
 * boost's fraction (1 for an exact match, else the share of identifiers held: the same whole-token rule) and the
 * coverage of the query's terms (term-coverage.ts).
 */
function ownMatch(
  event: EventRecord,
  text: string,
  needles: ExactNeedles,
  terms: readonly CoverageTerm[],
): { isExactMatch: boolean; holdsIdentifier: boolean; exactFraction: number; coverage: number } {
  // A tool name or tag is the event's own too (indexed with its labels), unlike the context of earlier events.
  const { isExactMatch, identifiersPresent } = exactMatch(needles, [text, event.toolName ?? '', ...event.tags]);
  const ids = needles.identifiers.length;
  return {
    isExactMatch,
    holdsIdentifier: identifiersPresent > 0,
    exactFraction: isExactMatch ? 1 : ids > 0 ? identifiersPresent / ids : 0,
    coverage: termCoverage(terms, ownTextParts(event, text)),
  };
}

function combine(relevance: number, exactFraction: number, recency: number, recencyWeight: number): number {
  const boosted = (relevance * (1 + EXACT_MATCH_BOOST * exactFraction)) / (1 + EXACT_MATCH_BOOST);
  return (1 - recencyWeight) * boosted + recencyWeight * recency;
}

/** A candidate event with its fused relevance (0 for a key event the query did not find). */
interface Candidate {
  event: EventRecord;
  relevance: number;
  similarity: number | undefined;
}

/** A scored candidate before its full text is read. */
type Ranked = Omit<Scored, 'isExactMatch' | 'holdsIdentifier' | 'coverage' | 'excerpt'>;

interface Scored {
  event: EventRecord;
  relevance: number;
  similarity: number | undefined;
  recency: number;
  baseScore: number;
  modifier: number;
  factors: ModifierFactors;
  supersededBy: EventId | undefined;
  isKeyEvent: boolean;
  score: number;
  isExactMatch: boolean;
  /** The event's own text holds at least one of the query's identifiers. */
  holdsIdentifier: boolean;
  /** Share of the query's content terms in the event's own text (term-coverage.ts). */
  coverage: number;
  excerpt: string;
}

/**
 * A query of nothing but identifiers (a hash, a flag, an error code) asks for the events that hold those exact
 * strings (in their text, tool name or tags). When some candidates do, the others are padding and are dropped;
 * when none does, the nearest spellings by vector stay (`ECONNRESET` for `ECONNREFUSED`), but not events that
 * full-text found only through the context of the events before them. The task's key events always stay.
 * Other queries keep every candidate, context matches included; so does a call that asked for vectors alone
 * (it gets the nearest ones, as admitVectorHits says).
 */
function ownMatchesOnly(detailed: Scored[], parsed: ParsedQuery, retriever: Retriever): Scored[] {
  if (retriever === 'vector') return detailed;
  const ids = new Set(parsed.identifiers);
  const isIdentifierOnly = ids.size > 0 && parsed.terms.every((t) => ids.has(t.text));
  if (!isIdentifierOnly) return detailed;
  const anyHolds = detailed.some((d) => d.holdsIdentifier);
  return detailed.filter((d) => d.isKeyEvent || (anyHolds ? d.holdsIdentifier : d.similarity !== undefined));
}

function byScore(a: { score: number; event: EventRecord }, b: { score: number; event: EventRecord }): number {
  // Ties: newer first, then by id, so results are deterministic.
  return b.score - a.score || Date.parse(b.event.ts) - Date.parse(a.event.ts) || (a.event.id < b.event.id ? -1 : 1);
}

function toHit(d: Scored): RecallHit {
  const e = d.event;
  const hit: RecallHit = {
    eventId: e.id,
    sessionId: e.sessionId,
    turn: e.turn,
    kind: e.kind,
    ts: e.ts,
    score: round(d.score),
    baseScore: round(d.baseScore),
    modifier: round(d.modifier),
    factors: d.factors,
    relevance: round(d.relevance),
    ...(d.similarity !== undefined ? { similarity: round(d.similarity) } : {}),
    isExactMatch: d.isExactMatch,
    coverage: round(d.coverage),
    excerpt: d.excerpt,
    tokens: 0,
    isKeyEvent: d.isKeyEvent,
  };
  if (e.toolName) hit.toolName = e.toolName;
  if (e.artifact) hit.artifactId = e.artifact.id;
  if (d.supersededBy) hit.supersededBy = d.supersededBy;
  return hit;
}

/** One hit: a provenance line, then every excerpt line quoted with `> `. */
export function renderHit(h: RecallHit, index: number): string {
  const what = h.toolName ? `${h.kind} ${h.toolName}` : h.kind;
  const provenance = [`[${index}] ${h.eventId}`, `session ${h.sessionId}`, `turn ${h.turn}`, what, h.ts, `score ${h.score.toFixed(2)}`];
  if (h.artifactId) provenance.push(`artifact ${h.artifactId}`);
  // The reader must not take an obsolete version for the live one; the pointer is the 2-hop path to it.
  if (h.supersededBy) provenance.push(`superseded by ${h.supersededBy}`);
  const quoted = h.excerpt.split('\n').map((line) => `> ${line}`);
  return [provenance.join(' | '), ...quoted].join('\n');
}

function isTextMedia(mediaType: string): boolean {
  return mediaType.startsWith('text/') || mediaType.includes('json') || mediaType.includes('xml') || mediaType.includes('csv');
}

function matchesFilter(e: EventRecord, f: EventFilter): boolean {
  const ms = Date.parse(e.ts);
  if (f.sessionIds && !f.sessionIds.includes(e.sessionId)) return false;
  if (f.kinds && !f.kinds.includes(e.kind)) return false;
  if (f.fromMs !== undefined && ms < f.fromMs) return false;
  if (f.toMs !== undefined && ms > f.toMs) return false;
  return f.taskId === undefined || e.taskId === f.taskId;
}

function toFilter(o: RecallOptions): EventFilter {
  const f: EventFilter = {};
  if (o.sessionIds && o.sessionIds.length > 0) f.sessionIds = o.sessionIds as SessionId[];
  if (o.visibleToProject !== undefined) f.visibleToProject = o.visibleToProject;
  if (o.kinds && o.kinds.length > 0) f.kinds = o.kinds;
  if (o.fromMs !== undefined) f.fromMs = o.fromMs;
  if (o.toMs !== undefined) f.toMs = o.toMs;
  if (o.taskId !== undefined) f.taskId = o.taskId;
  return f;
}

function validateOptions(query: string, o: ResolvedOptions): void {
  const bad = (field: string, message: string): never => {
    throw new EngramError('INVALID_INPUT', `${field}: ${message}`, { field });
  };
  if (typeof query !== 'string' || query.trim().length === 0) bad('query', 'must be a non-empty string');
  checkQuery(query, 'query');
  if (!Number.isInteger(o.k) || o.k < 1 || o.k > 1000) bad('k', 'must be an integer from 1 to 1000');
  if (!Number.isInteger(o.budgetTokens) || o.budgetTokens < MIN_RECALL_BUDGET_TOKENS) {
    bad('budgetTokens', `must be an integer of at least ${MIN_RECALL_BUDGET_TOKENS}`);
  }
  if (!(o.recencyWeight >= 0 && o.recencyWeight <= 1)) bad('recencyWeight', 'must be between 0 and 1');
  if (!(o.recencyHalfLifeMs > 0)) bad('recencyHalfLifeMs', 'must be positive');
  if (!(o.maxExcerptChars >= 40)) bad('maxExcerptChars', 'must be at least 40');
  for (const kind of o.kinds ?? []) {
    if (!(STORED_EVENT_KINDS as readonly string[]).includes(kind)) {
      bad('kinds', `unknown event kind "${kind}"; expected one of ${STORED_EVENT_KINDS.join(', ')}`);
    }
  }
  if (o.fromMs !== undefined && o.toMs !== undefined && o.fromMs > o.toMs) bad('fromMs', 'must not be after toMs');
  if (o.retriever !== undefined && !(RETRIEVERS as readonly string[]).includes(o.retriever)) {
    bad('retriever', `unknown retriever "${String(o.retriever)}"; expected one of ${RETRIEVERS.join(', ')}`);
  }
  if (o.taskState !== undefined) {
    const parsed = taskStateSchema.safeParse(o.taskState);
    if (!parsed.success) throw invalidInputFromZod(parsed.error.issues, 'taskState');
  }
  for (const f of o.disableFactors ?? []) {
    if (!(MODIFIER_FACTORS as readonly string[]).includes(f)) bad('disableFactors', `unknown factor "${f}"; expected one of ${MODIFIER_FACTORS.join(', ')}`);
  }
  for (const [name, value] of Object.entries(o.modifierOptions ?? {})) {
    if (name === 'phaseSalience') continue;
    if (typeof value !== 'number' || !(value >= 0) || !Number.isFinite(value)) bad(`modifierOptions.${name}`, 'must be a finite number of at least 0');
  }
  if (!(o.lambda >= 0 && o.lambda <= 1)) bad('lambda', 'must be between 0 and 1');
  if (o.vectorWeight !== undefined && !(o.vectorWeight >= 0 && o.vectorWeight <= 1)) bad('vectorWeight', 'must be between 0 and 1');
  if (o.contextWeight !== undefined && !(o.contextWeight >= 0 && o.contextWeight <= 1)) bad('contextWeight', 'must be between 0 and 1');
  if (!(o.speakerBoost >= 0 && Number.isFinite(o.speakerBoost))) bad('speakerBoost', 'must be a finite number of at least 0');
  if (!(o.dateBoost >= 0 && Number.isFinite(o.dateBoost))) bad('dateBoost', 'must be a finite number of at least 0');
  if (!(o.secondHopWeight >= 0 && o.secondHopWeight <= 1)) bad('secondHopWeight', 'must be between 0 and 1');
  if (!(o.vectorFeedbackWeight >= 0 && o.vectorFeedbackWeight <= 1)) bad('vectorFeedbackWeight', 'must be between 0 and 1');
  if (!(o.rm3Weight >= 0 && o.rm3Weight <= 1)) bad('rm3Weight', 'must be between 0 and 1');
  if (!(o.expansionWeight >= 0 && o.expansionWeight <= 1)) bad('expansionWeight', 'must be between 0 and 1');
  if (!(o.categoryWeight >= 0 && o.categoryWeight <= 1)) bad('categoryWeight', 'must be between 0 and 1');
  if (!(SECOND_HOP_TERM_RANKINGS as readonly string[]).includes(o.secondHopTerms)) {
    bad('secondHopTerms', `unknown ranking "${String(o.secondHopTerms)}"; expected one of ${SECOND_HOP_TERM_RANKINGS.join(', ')}`);
  }
  if (!(NOVELTY_SOURCES as readonly string[]).includes(o.noveltyOn)) bad('noveltyOn', `unknown source "${String(o.noveltyOn)}"; expected one of ${NOVELTY_SOURCES.join(', ')}`);
  if (!(FUSION_RULES as readonly string[]).includes(o.fusion)) bad('fusion', `unknown rule "${String(o.fusion)}"; expected one of ${FUSION_RULES.join(', ')}`);
  if (!(VECTOR_SHARE_RULES as readonly string[]).includes(o.vectorShare)) {
    bad('vectorShare', `unknown rule "${String(o.vectorShare)}"; expected one of ${VECTOR_SHARE_RULES.join(', ')}`);
  }
  if (!(SECOND_HOP_TRIGGERS as readonly string[]).includes(o.secondHopTrigger)) {
    bad('secondHopTrigger', `unknown trigger "${String(o.secondHopTrigger)}"; expected one of ${SECOND_HOP_TRIGGERS.join(', ')}`);
  }
  validateTypeQuotas(o.typeQuotas);
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function round(n: number): number {
  return Math.round(n * 10000) / 10000;
}
