/**
 * LoCoMo evidence recall measured through Engram's own recall: for each question, the share of its gold
 * evidence turns among the top k events `recall` returns from the question's conversation (the corpus is every
 * turn of it). The metric is the one of ../shared/bench-data/locomo/README.md; `engram bench locomo` and
 * `npm run bench -- locomo` both call {@link evaluateLocomo}, so the numbers they print are the product's.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { openEngram } from '../engine.js';
import { EngramError } from '../errors.js';
import { MAX_APPEND_EVENTS } from '../model/limits.js';
import { RETRIEVERS, type RecallOptions, type Retriever } from '../memory/recall.js';
import type { Embedder } from '../providers/embedder.js';
import type { StoreLocation } from '../store/open-store.js';
import { LOCOMO_CATEGORIES, turnText, type LocomoCategory, type LocomoConversation } from './locomo-data.js';

/** The depths the LoCoMo paper reports (Table 3). */
export const DEFAULT_LOCOMO_KS: readonly number[] = [5, 10, 25, 50];
/** The usual scored set: multi-hop, temporal, open-domain, single-hop (5, adversarial, is reported apart). */
export const SCORED_LOCOMO_CATEGORIES: readonly LocomoCategory[] = [1, 2, 3, 4];
/** Largest k accepted: recall's own limit. */
export const MAX_LOCOMO_K = 1000;
/** A budget no pack of k turns reaches, so only k limits what recall returns. */
const UNLIMITED_BUDGET_TOKENS = 1_000_000;
/** Every conversation gets its own store, so one session name serves all (sample ids need not be valid session ids). */
const SESSION_ID = 'locomo';

/** Mean recall@k over a set of questions; `null` when the set is empty. */
export interface RecallAtK {
  /** Questions with evidence in the set (those without are left out of every score). */
  questions: number;
  [recallAtK: `recallAt${number}`]: number | null;
}

export interface LocomoEvalOptions {
  /** Depths measured; each is its own recall call, as an agent asking for k hits would make. Default 5, 10, 25, 50. */
  ks?: readonly number[];
  /** Default `hybrid` with an embedder, `fts` without. `vector` and `hybrid` need an embedder. */
  retriever?: Retriever;
  /**
   * Embeds the turns for `vector` and `hybrid` (unused by `fts`). The caller owns it: it is shared by the
   * conversations' stores and not closed here.
   */
  embedder: Embedder | null;
  /** Ranking options given to every recall call (an ablation's or a cross-validation's settings). Default none. */
  recallOptions?: Pick<
    RecallOptions,
    'vectorWeight' | 'contextWeight' | 'speakerBoost' | 'recencyWeight' | 'useMmr' | 'secondHopWeight' | 'secondHopTrigger' | 'dateBoost'
  >;
  /** Earlier turns each turn is indexed with (IngestOptions.turnContextEvents). Default the engine's. */
  turnContextEvents?: number;
  /**
   * Relative dates ("yesterday", "last month") resolved against each turn's time and indexed with the turn
   * (IngestOptions.relativeDates). Default: the engine's (indexed).
   */
  relativeDates?: boolean;
  /** Record each turn's speaker in `meta.speaker`, as a chat import would. Default true. */
  recordSpeakers?: boolean;
  /** Keep every question's ranked turns and recall in the report (`questionResults`). Default false. */
  keepQuestions?: boolean;
  /** Options of each conversation's SQLite store (e.g. its vector index: bench/vectors-report.ts). Default none. */
  sqlite?: StoreLocation['sqlite'];
  /** Called as turns are embedded and questions asked; `done` and `total` count both, over all conversations. */
  onProgress?: (p: LocomoProgress) => void;
}

export interface LocomoProgress {
  phase: 'embed' | 'recall';
  sampleId: string;
  done: number;
  total: number;
}

export interface LocomoQuestionResult {
  sampleId: string;
  question: string;
  category: LocomoCategory;
  evidence: string[];
  /** Per k: the turns recall returned (dia ids, best first) with their scores. */
  ranked: Record<number, Array<{ diaId: string; score: number }>>;
  /** Per k: recall of the evidence; `null` for a question without evidence. */
  recall: Record<number, number | null>;
}

export interface LocomoReport {
  retriever: Retriever;
  /** The embedder's name (`builtin-glove-100d@1`, ...), or null for full-text recall. */
  embedder: string | null;
  ks: number[];
  conversations: string[];
  turns: number;
  questions: number;
  /** Questions without gold evidence: left out of every score. */
  questionsWithoutEvidence: number;
  /** Categories 1-4, the usual scored set. */
  overall: RecallAtK;
  /** All five categories (the LoCoMo paper's retrieval table is over all five). */
  allCategories: RecallAtK;
  byCategory: Record<string, RecallAtK & { name: string }>;
  /** Wall-clock times, ms: appending the turns, embedding them, and each recall call (percentiles by nearest rank). */
  timingsMs: { append: number; embed: number; queryP50: number; queryP95: number; total: number };
  questionResults?: LocomoQuestionResult[];
}

/**
 * Runs the evaluation: per conversation a temporary SQLite store (removed afterwards) holding one `user`
 * event per turn (`speaker: text`, plus `[image: caption]`; session start plus one second per turn as its
 * time), the embedding queue drained, then every question asked through `recall` once per k with default
 * ranking options, a budget only k limits, and no recall log.
 */
export async function evaluateLocomo(conversations: readonly LocomoConversation[], options: LocomoEvalOptions): Promise<LocomoReport> {
  const startedMs = performance.now();
  const ks = validateKs(options.ks ?? DEFAULT_LOCOMO_KS);
  const retriever = options.retriever ?? (options.embedder ? 'hybrid' : 'fts');
  if (!(RETRIEVERS as readonly string[]).includes(retriever)) {
    throw new EngramError('INVALID_INPUT', `retriever: unknown "${String(retriever)}"; expected one of ${RETRIEVERS.join(', ')}`, { field: 'retriever' });
  }
  // Checked before any store is built: the engine would refuse the first question anyway.
  if (retriever !== 'fts' && !options.embedder) {
    throw new EngramError('INVALID_INPUT', `retriever: "${retriever}" needs an embedder (builtin, onnx:<model>, ...), and none is given`, {
      field: 'retriever',
    });
  }
  // Full-text recall never reads vectors, so its stores are not embedded at all.
  const embedder = retriever === 'fts' ? null : options.embedder;
  const borrowed = embedder ? borrow(embedder) : null;

  const turns = conversations.reduce((n, c) => n + c.turns.length, 0);
  const questions = conversations.reduce((n, c) => n + c.questions.length, 0);
  const total = (borrowed ? turns : 0) + questions * ks.length;
  let done = 0;
  const timings = { append: 0, embed: 0 };
  const queryMs: number[] = [];
  const results: LocomoQuestionResult[] = [];

  for (const conv of conversations) {
    const dir = mkdtempSync(join(tmpdir(), 'engram-locomo-'));
    try {
      const mem = await openEngram({
        db: join(dir, 'locomo.db'),
        ...(options.sqlite ? { sqlite: options.sqlite } : {}),
        ...(options.turnContextEvents !== undefined || options.relativeDates !== undefined
          ? {
              ingest: {
                ...(options.turnContextEvents !== undefined ? { turnContextEvents: options.turnContextEvents } : {}),
                ...(options.relativeDates !== undefined ? { relativeDates: options.relativeDates } : {}),
              },
            }
          : {}),
        ...(borrowed ? { embedder: borrowed, indexing: { background: false } } : {}),
      });
      try {
        const t0 = performance.now();
        const recordSpeakers = options.recordSpeakers ?? true;
        const drafts = conv.turns.map((t) => ({
          kind: 'user' as const,
          content: turnText(t),
          key: t.diaId,
          ts: t.tsMs,
          meta: recordSpeakers ? { diaId: t.diaId, speaker: t.speaker } : { diaId: t.diaId },
        }));
        // In batches an append accepts (MAX_APPEND_EVENTS): a conversation may hold more turns than one append.
        const outcomes = [];
        for (let i = 0; i < drafts.length; i += MAX_APPEND_EVENTS) outcomes.push(...(await mem.append(SESSION_ID, drafts.slice(i, i + MAX_APPEND_EVENTS))));
        timings.append += performance.now() - t0;
        const diaIdOf = new Map(outcomes.map((o, i) => [o.record.id as string, conv.turns[i]!.diaId]));

        if (mem.indexer) {
          const t1 = performance.now();
          const before = done;
          const indexed = await mem.indexer.drain((p) => options.onProgress?.({ phase: 'embed', sampleId: conv.sampleId, done: before + p.embedded + p.skipped, total }));
          timings.embed += performance.now() - t1;
          // A partly embedded conversation would understate the retriever without saying so.
          if (indexed.failed > 0 || indexed.remaining > 0) {
            throw new EngramError('PROVIDER_ERROR', `embedder ${embedder!.name}: ${indexed.failed} turns of ${conv.sampleId} failed to embed (${mem.indexer.error ?? 'no reason given'})`, {
              retryable: false,
            });
          }
          // The approximate index, when the store's options ask for it (the vectors-at-scale check): maintenance, as after an import.
          await mem.maintainVectorIndex();
          done = before + conv.turns.length;
        }

        for (const q of conv.questions) {
          const ranked: LocomoQuestionResult['ranked'] = {};
          const recall: LocomoQuestionResult['recall'] = {};
          for (const k of ks) {
            const t2 = performance.now();
            const result = await mem.recall(q.question, { ...options.recallOptions, retriever, k, budgetTokens: UNLIMITED_BUDGET_TOKENS, logRecall: false, sessionIds: [SESSION_ID] });
            queryMs.push(performance.now() - t2);
            ranked[k] = result.hits.map((h) => ({ diaId: diaIdOf.get(h.eventId)!, score: h.score }));
            recall[k] = evidenceRecall(q.evidence, ranked[k].map((h) => h.diaId));
          }
          done += ks.length;
          options.onProgress?.({ phase: 'recall', sampleId: conv.sampleId, done, total });
          results.push({ sampleId: conv.sampleId, question: q.question, category: q.category, evidence: q.evidence, ranked, recall });
        }
      } finally {
        await mem.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  const summarize = (keep: (c: LocomoCategory) => boolean): RecallAtK => summarizeRecall(results.filter((r) => keep(r.category)), ks);
  const byCategory: LocomoReport['byCategory'] = {};
  for (const [id, name] of Object.entries(LOCOMO_CATEGORIES)) byCategory[id] = { name, ...summarize((c) => c === Number(id)) };
  return {
    retriever,
    embedder: embedder?.name ?? null,
    ks,
    conversations: conversations.map((c) => c.sampleId),
    turns,
    questions,
    questionsWithoutEvidence: results.filter((r) => r.evidence.length === 0).length,
    overall: summarize((c) => SCORED_LOCOMO_CATEGORIES.includes(c)),
    allCategories: summarize(() => true),
    byCategory,
    timingsMs: {
      append: round(timings.append, 1),
      embed: round(timings.embed, 1),
      queryP50: round(percentile(queryMs, 50), 2),
      queryP95: round(percentile(queryMs, 95), 2),
      total: round(performance.now() - startedMs, 1),
    },
    ...(options.keepQuestions ? { questionResults: results } : {}),
  };
}

/** Share of the evidence among the retrieved turn ids; null without evidence (nothing to recall). */
export function evidenceRecall(evidence: readonly string[], retrieved: readonly string[]): number | null {
  if (evidence.length === 0) return null;
  const top = new Set(retrieved);
  return evidence.filter((e) => top.has(e)).length / evidence.length;
}

/** Mean recall per k over the questions that have evidence, rounded to 4 decimals. */
export function summarizeRecall(results: ReadonlyArray<Pick<LocomoQuestionResult, 'recall'>>, ks: readonly number[]): RecallAtK {
  const out: RecallAtK = { questions: 0 };
  for (const k of ks) {
    const scores = results.map((r) => r.recall[k]).filter((v): v is number => typeof v === 'number');
    out.questions = scores.length;
    out[`recallAt${k}`] = scores.length === 0 ? null : round(scores.reduce((s, v) => s + v, 0) / scores.length, 4);
  }
  return out;
}

function validateKs(ks: readonly number[]): number[] {
  if (ks.length === 0) throw new EngramError('INVALID_INPUT', 'ks: give at least one k', { field: 'ks' });
  for (const k of ks) {
    if (!Number.isInteger(k) || k < 1 || k > MAX_LOCOMO_K) throw new EngramError('INVALID_INPUT', `ks: ${k} is not an integer from 1 to ${MAX_LOCOMO_K}`, { field: 'ks' });
  }
  return [...new Set(ks)].sort((a, b) => a - b);
}

/** The caller's embedder without `close`: each store's engine closes its embedder, and this one is shared. */
function borrow(embedder: Embedder): Embedder {
  return { name: embedder.name, dimensions: embedder.dimensions, embed: (texts) => embedder.embed(texts) };
}

function percentile(samples: number[], p: number): number {
  if (samples.length === 0) return 0;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

function round(n: number, digits: number): number {
  return Math.round(n * 10 ** digits) / 10 ** digits;
}
