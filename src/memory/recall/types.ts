/**
 * The public shapes of recall (options, hits, results) and the state the pipeline's stages pass along
 * (pipeline.ts). No logic here.
 */
import type { EventKind, EventRecord } from '../../model/event.js';
import type { ArtifactId, EventId } from '../../model/ids.js';
import type { TaskState } from '../../model/task-state.js';
import type { Embedder } from '../../providers/embedder.js';
import type { Tokenizer } from '../../providers/tokenizer.js';
import type { StorageBackend } from '../../store/backend.js';
import type { RedactionPolicy } from '../event-redaction.js';
import type { RecallMatch } from '../recall-match.js';
import type { ModifierFactor, ModifierFactors, ModifierOptions } from '../task-modifier.js';
import type { TypeQuotas } from '../type-quotas.js';

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
   * When the query names an absolute date ("in June 2022", "on 9 November, 2022": date-expressions.ts) and some
   * candidates' times fall in it, the others' relevance is divided by 1 + this. Default {@link DATE_BOOST}; 0 switches it off.
   */
  dateBoost?: number;
}

export const SECOND_HOP_TRIGGERS = ['multi-hop', 'always'] as const;
export type SecondHopTrigger = (typeof SECOND_HOP_TRIGGERS)[number];

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

/** What the stages read from outside the call: the store, the tokenizer, artifacts, the log's redaction. */
export interface RecallDeps {
  store: StorageBackend;
  tokenizer: Tokenizer;
  readArtifactText: ArtifactTextReader;
  /** Redacts credentials in a query and its options before they are logged (the ingestor's policy). */
  logRedaction?: Pick<RedactionPolicy, 'redactQuery' | 'redactValue'> | undefined;
}

/** Events loaded for one call, by id; null for an id that no longer loads. */
export type LoadedEvents = Map<string, EventRecord | null>;

/** One candidate's fused relevance (0..1) and its cosine similarity when the vector side ranked it. */
export interface FusedRelevance {
  relevance: number;
  similarity: number | undefined;
}

/** A candidate event with its fused relevance (0 for a key event the query did not find). */
export interface Candidate {
  event: EventRecord;
  relevance: number;
  similarity: number | undefined;
}

/** A scored candidate before its full text is read. */
export type Ranked = Omit<Scored, 'isExactMatch' | 'holdsIdentifier' | 'coverage' | 'excerpt'>;

/** A scored candidate with its full text read (exact match, coverage, excerpt). */
export interface Scored {
  event: EventRecord;
  /** The event's time, epoch ms (parsed once: the ranking's ties compare it). */
  tsMs: number;
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

/** The embedder a call may use with the retriever it runs (chooseRetriever). */
export interface RetrieverChoice {
  retriever: Retriever;
  embedder: Embedder | null;
}
