/**
 * Evidence recall on LoCoMo: for each question, the share of its gold evidence turns among the top k turns a
 * retriever returns from the question's own conversation (the corpus is every turn of it). The `fts`, `vector`
 * and `hybrid` rows are Engram's own recall (src/eval/locomo-eval.ts, the code behind `engram bench locomo`);
 * rows marked "bench" are comparisons computed here: brute-force cosine, and two fusions of the engine's
 * full-text top 100 with the cosine top 100. Writes bench/results/<out>.{md,json}.
 *
 *   npm run bench -- locomo [--data FILE] [--k 5,10,25,50] [--retriever fts,vector,hybrid] [--json]
 *                           [--ablation] [--out locomo] [--questions FILE]
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import { LOCOMO_CATEGORIES, loadLocomo, turnText, type LocomoCategory, type LocomoConversation } from '../src/eval/locomo-data.js';
import { evaluateLocomo, evidenceRecall, summarizeRecall, type LocomoQuestionResult, type LocomoReport, type RecallAtK } from '../src/eval/locomo-eval.js';
import { fuseScores, HYBRID_VECTOR_WEIGHT, HYBRID_VECTOR_WEIGHT_WITH_IDENTIFIERS } from '../src/memory/recall.js';
import { TURN_CONTEXT_EVENTS } from '../src/memory/turn-context.js';
import { BUILTIN_EMBEDDER_NAME, createBuiltinEmbedder, type BuiltinEmbedder } from '../src/providers/builtin-embedder.js';
import { openGloveTables } from '../src/providers/glove/glove-cache.js';
import type { GloveTables } from '../src/providers/glove/glove-tables.js';
import { computeCommonComponent, DEFAULT_ENCODER_CONFIG, SentenceEncoder, type EncoderConfig } from '../src/providers/glove/sentence-encoder.js';
import { machineLine, round } from './lib/stats.js';
import { crossValidate, renderTechniques, runTechniques, techniqueSettings } from './locomo-techniques.js';

export const LOCOMO_RETRIEVERS = ['fts', 'vector', 'hybrid'] as const;
export type LocomoRetriever = (typeof LOCOMO_RETRIEVERS)[number];

export interface LocomoArgs {
  data: string;
  ks: number[];
  retrievers: LocomoRetriever[];
  /** Print the JSON report to stdout. */
  json: boolean;
  /** Also compare encoder variants (vector and hybrid recall per variant). */
  ablation: boolean;
  /** Report name under bench/results/. */
  out: string;
  /**
   * Also write every question's outcome per engine retriever to this file (JSON): its recall per k and the rank of
   * each evidence turn in each k's list, to see which questions a change wins or loses. It holds the dataset's
   * questions, so it belongs outside the repository (the LoCoMo licence forbids copying it into the project).
   */
  questions?: string;
}

/** Reciprocal rank fusion constant (Cormack et al. 2009; the usual default, not tuned here). */
export const RRF_K = 60;
/** Weighted score fusion: share of the full-text score, the engine's (equal weights). */
export const FUSION_FTS_WEIGHT = 1 - HYBRID_VECTOR_WEIGHT;
/** Depth of each ranking fed to a fusion computed here. */
const FUSION_DEPTH = 100;

/** One ranked candidate: a turn id and the retriever's score. */
interface Scored {
  id: string;
  score: number;
}

/** Per question, ranked turn ids (best first), in conversation order then question order. */
type Rankings = Scored[][];

/** One question's recall per k (null without evidence), in conversation order then question order. */
type QuestionRecall = { category: LocomoCategory; recall: Record<number, number | null> };

type RecallScores = RecallAtK;

export interface LocomoResult extends RecallScores {
  retriever: string;
  /** Who ranked: Engram's recall (`engine`), or a comparison computed in the benchmark (`bench`). */
  source: 'engine' | 'bench';
  /** What the row is, in a few words. */
  label: string;
  k: number[];
  /** The scores above are over categories 1-4 (the usual scored set); these over all five. */
  allCategories: RecallScores;
  byCategory: Record<string, RecallScores & { name: string }>;
  /** Paired difference from `fts` per k over the same questions (categories 1-4), with its standard error. */
  vsFts?: Record<string, { mean: number; standardError: number }>;
}

interface AblationRow {
  variant: string;
  config: EncoderConfig;
  vector: RecallScores;
  hybrid: RecallScores;
  /** Paired difference of recall@10 from the first variant (the default), categories 1-4. */
  vectorDelta: { mean: number; standardError: number };
  hybridDelta: { mean: number; standardError: number };
}

export async function runLocomo(args: LocomoArgs): Promise<LocomoResult[]> {
  const conversations = loadLocomo(args.data);
  const ks = args.ks;
  const wants = (r: LocomoRetriever): boolean => args.retrievers.includes(r);
  // The comparisons fuse the engine's full-text ranking (top 100) with brute-force cosine.
  const needsFtsDeep = wants('hybrid') || args.ablation;
  const needsEmbedder = wants('vector') || wants('hybrid');
  const questions = conversations.flatMap((c) => c.questions);
  const unanswerable = questions.filter((q) => q.evidence.length === 0).length;
  log(`${conversations.length} conversations, ${conversations.reduce((n, c) => n + c.turns.length, 0)} turns, ${questions.length} questions`);

  const results: LocomoResult[] = [];
  const recallsOf = new Map<string, QuestionRecall[]>();
  const timings: Record<string, number> = {};
  const engineTimings: Record<string, LocomoReport['timingsMs']> = {};
  const engineQuestions = new Map<string, LocomoQuestionResult[]>();
  const add = (retriever: string, source: LocomoResult['source'], label: string, recalls: QuestionRecall[]): void => {
    if (source === 'engine') engineQuestions.set(retriever, recalls as LocomoQuestionResult[]);
    recallsOf.set(retriever, recalls);
    results.push(toResult(retriever, source, label, recalls, ks));
  };

  let ftsDeep: Rankings | undefined;
  if (wants('fts') || needsFtsDeep) {
    const depthKs = needsFtsDeep ? [...ks, FUSION_DEPTH] : ks;
    const report = await evaluateLocomo(conversations, { ks: depthKs, retriever: 'fts', embedder: null, keepQuestions: true, onProgress: progress('fts') });
    // Its timings include the k = 100 calls when the comparisons need them.
    engineTimings[needsFtsDeep ? `fts (and k = ${FUSION_DEPTH})` : 'fts'] = report.timingsMs;
    const qs = report.questionResults!;
    if (needsFtsDeep) ftsDeep = qs.map((q) => q.ranked[FUSION_DEPTH]!.map((h) => ({ id: h.diaId, score: h.score })));
    if (wants('fts')) add('fts', 'engine', 'Engram recall, retriever fts: BM25 + exact-match boost + recency, MMR order', qs);
  }

  let embedder: BuiltinEmbedder | undefined;
  let cacheNote = '';
  if (needsEmbedder) {
    const t0 = performance.now();
    embedder = await createBuiltinEmbedder();
    timings.embedderOpenMs = performance.now() - t0;
    cacheNote = embedder.cache.isBuilt ? `cache built (${embedder.cache.buildReason})` : 'cache loaded';
  }
  if (embedder && wants('vector')) {
    const report = await evaluateLocomo(conversations, { ks, retriever: 'vector', embedder, keepQuestions: true, onProgress: progress('vector') });
    engineTimings.vector = report.timingsMs;
    add('vector', 'engine', `Engram recall, retriever vector: ${BUILTIN_EMBEDDER_NAME} vectors in sqlite-vec, recency, MMR order`, report.questionResults!);
  }
  if (embedder && wants('hybrid')) {
    const report = await evaluateLocomo(conversations, { ks, retriever: 'hybrid', embedder, keepQuestions: true, onProgress: progress('hybrid') });
    engineTimings.hybrid = report.timingsMs;
    add(
      'hybrid',
      'engine',
      `Engram recall, retriever hybrid: ${1 - HYBRID_VECTOR_WEIGHT} x fts / best fts + ${HYBRID_VECTOR_WEIGHT} x min-max cosine, then exact-match boost, recency, MMR order`,
      report.questionResults!,
    );
  }

  // Comparisons computed here, as before the engine had vectors: brute-force cosine and two fusions of it.
  let brute: Rankings | undefined;
  if (embedder) {
    const t1 = performance.now();
    brute = await vectorRankings(conversations, Math.max(...ks, FUSION_DEPTH), (texts) => embedder!.embed(texts));
    timings.bruteForceVectorMs = performance.now() - t1;
    if (wants('vector')) add('vector-brute', 'bench', `bench: ${BUILTIN_EMBEDDER_NAME}, brute-force cosine over every turn`, rankingRecalls(conversations, brute, ks));
  }
  if (brute && ftsDeep && wants('hybrid')) {
    add(
      'hybrid-bench',
      'bench',
      `bench: ${FUSION_FTS_WEIGHT} x fts score / best fts score + ${1 - FUSION_FTS_WEIGHT} x min-max cosine, over the engine's fts top ${FUSION_DEPTH} and the brute-force cosine top ${FUSION_DEPTH}`,
      rankingRecalls(conversations, fuseWeighted(ftsDeep, brute, FUSION_FTS_WEIGHT), ks),
    );
    add('hybrid-rrf', 'bench', `bench: reciprocal rank fusion (k = ${RRF_K}) of the same two rankings`, rankingRecalls(conversations, fuseRrf(ftsDeep, brute), ks));
  }

  // Paired comparison with full-text recall: the same questions, so question difficulty cancels out.
  const ftsRecalls = recallsOf.get('fts');
  if (ftsRecalls) {
    for (const r of results) {
      if (r.retriever === 'fts') continue;
      const mine = recallsOf.get(r.retriever)!;
      r.vsFts = Object.fromEntries(ks.map((k) => [`recallAt${k}`, pairedDelta(scoredRecalls(mine, k), scoredRecalls(ftsRecalls, k))]));
    }
  }

  // The recall techniques one at a time, per conversation, and the cross-validation of their constants.
  let techniques = '';
  if (embedder && ks.includes(10)) {
    const { settings, crossValidated } = techniqueSettings();
    const measured = await runTechniques(conversations, settings, embedder, ks, log);
    const ids = conversations.map((c) => c.sampleId);
    techniques = renderTechniques(measured, settings, crossValidated.map((cv) => crossValidate(cv, measured, ids)), ids, ks);
  }

  let ablation: AblationRow[] = [];
  if (args.ablation && ftsDeep) {
    const { tables } = await openGloveTables();
    ablation = await runAblation(conversations, tables, ftsDeep, Math.max(...ks, FUSION_DEPTH), ks);
  }

  const report = {
    when: new Date().toISOString(),
    engram: engramVersion(),
    machine: machineLine(),
    cpus: cpus().length,
    data: relative(process.cwd(), args.data),
    conversations: conversations.map((c) => c.sampleId),
    questionsWithoutEvidence: unanswerable,
    embedder: embedder ? { name: BUILTIN_EMBEDDER_NAME, config: DEFAULT_ENCODER_CONFIG, cache: cacheNote } : undefined,
    timingsMs: Object.fromEntries(Object.entries(timings).map(([k, v]) => [k, round(v, 0)])),
    engineTimingsMs: engineTimings,
    results,
    ablation,
  };
  mkdirSync('bench/results', { recursive: true });
  writeFileSync(`bench/results/${args.out}.json`, JSON.stringify(report, null, 2) + '\n');
  const md = renderMarkdown(report, args) + techniques;
  writeFileSync(`bench/results/${args.out}.md`, md);
  if (args.questions) writeFileSync(args.questions, JSON.stringify(questionOutcomes(engineQuestions), null, 1) + '\n');
  if (args.json) process.stdout.write(JSON.stringify(results, null, 2) + '\n');
  else process.stdout.write(md);
  return results;
}

/**
 * Per engine retriever, every question's outcome: recall per k, and per k the rank (from 1) of each evidence turn in
 * the list that call returned, null when it was not there.
 */
export function questionOutcomes(runs: ReadonlyMap<string, readonly LocomoQuestionResult[]>): Record<string, unknown[]> {
  return Object.fromEntries(
    [...runs].map(([retriever, qs]) => [
      retriever,
      qs.map((q) => ({
        sampleId: q.sampleId,
        question: q.question,
        category: q.category,
        evidence: q.evidence,
        recall: q.recall,
        ranks: Object.fromEntries(
          Object.entries(q.ranked).map(([k, list]) => {
            const at = new Map(list.map((h, i) => [h.diaId, i + 1]));
            return [k, q.evidence.map((e) => at.get(e) ?? null)];
          }),
        ),
      })),
    ]),
  );
}

/** Logs an engine run's progress on stderr, every 400 steps (turns embedded, recall calls). */
function progress(name: string): (p: { done: number; total: number }) => void {
  let last = 0;
  return (p) => {
    if (p.done - last < 400 && p.done < p.total) return;
    last = p.done;
    log(`${name}: ${p.done}/${p.total}`);
  };
}

/** Brute-force cosine of each question against every turn of its conversation. */
async function vectorRankings(conversations: LocomoConversation[], depth: number, embed: (texts: string[]) => Promise<Float32Array[]>): Promise<Rankings> {
  const out: Rankings = [];
  for (const conv of conversations) {
    const turnVectors = await embed(conv.turns.map(turnText));
    const questionVectors = await embed(conv.questions.map((q) => q.question));
    for (const qv of questionVectors) {
      const scored = turnVectors.map((tv, i) => ({ id: conv.turns[i]!.diaId, score: cosine(qv, tv), i }));
      // Ties (e.g. two zero vectors) keep conversation order, so the ranking is deterministic.
      scored.sort((a, b) => b.score - a.score || a.i - b.i);
      out.push(scored.slice(0, depth).map(({ id, score }) => ({ id, score })));
    }
  }
  return out;
}

/** Reciprocal rank fusion: sum over rankings of 1 / (RRF_K + rank), rank from 1. */
export function fuseRrf(...rankings: Rankings[]): Rankings {
  return rankings[0]!.map((_, q) => {
    const scores = new Map<string, number>();
    for (const ranking of rankings) ranking[q]!.forEach((s, i) => scores.set(s.id, (scores.get(s.id) ?? 0) + 1 / (RRF_K + i + 1)));
    return sortScores(scores);
  });
}

/**
 * Weighted score fusion, the engine's own (`fuseScores` of src/memory/recall.ts): the full-text score divided by
 * the question's best (absent = 0) and the cosine min-max normalised over the vector ranking's depth, mixed
 * with weight `ftsWeight`.
 */
export function fuseWeighted(fts: Rankings, vector: Rankings, ftsWeight: number): Rankings {
  return fts.map((ftsList, q) => {
    const fused = fuseScores(
      ftsList.map((s) => ({ eventId: s.id, relevance: s.score })),
      vector[q]!.map((s) => ({ eventId: s.id, similarity: s.score })),
      1 - ftsWeight,
    );
    return sortScores(new Map([...fused].map(([id, f]) => [id, f.relevance])));
  });
}

function sortScores(scores: Map<string, number>): Scored[] {
  // Ties by id, so the fused ranking does not depend on insertion order.
  return [...scores].map(([id, score]) => ({ id, score })).sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** Recall per question and k of a ranking computed here (its top k). */
function rankingRecalls(conversations: LocomoConversation[], rankings: Rankings, ks: number[]): QuestionRecall[] {
  const out: QuestionRecall[] = [];
  let i = 0;
  for (const conv of conversations) {
    for (const q of conv.questions) {
      const ranked = rankings[i++]!;
      out.push({ category: q.category, recall: Object.fromEntries(ks.map((k) => [k, evidenceRecall(q.evidence, ranked.slice(0, k).map((s) => s.id))])) });
    }
  }
  return out;
}

function toResult(retriever: string, source: LocomoResult['source'], label: string, recalls: QuestionRecall[], ks: number[]): LocomoResult {
  const summarize = (keep: (c: LocomoCategory) => boolean): RecallScores => summarizeRecall(recalls.filter((r) => keep(r.category)), ks);
  const byCategory: LocomoResult['byCategory'] = {};
  for (const [id, name] of Object.entries(LOCOMO_CATEGORIES)) byCategory[id] = { name, ...summarize((c) => c === Number(id)) };
  return { retriever, source, label, k: ks, ...summarize((c) => c <= 4), allCategories: summarize(() => true), byCategory };
}

/**
 * Encoder variants: the literature baselines, and the built-in default with one knob turned, so the report
 * shows what each part contributes.
 */
function ablationVariants(): Array<{ variant: string; config: EncoderConfig }> {
  const base: EncoderConfig = { ...DEFAULT_ENCODER_CONFIG };
  const noGrams: Partial<EncoderConfig> = { ngramDims: 0, removeWordComponents: 0 };
  return [
    { variant: 'built-in default', config: base },
    // Literature baselines: GloVe alone, no post-processing, no n-grams.
    { variant: 'plain average of word vectors', config: { ...base, ...noGrams, sifA: 1e9 } },
    { variant: 'SIF weights (a = 1e-3)', config: { ...base, ...noGrams } },
    { variant: 'classic SIF: weights + common component', config: { ...base, ...noGrams, removeCommonComponent: true } },
    // The default with one knob turned.
    { variant: 'default + common component', config: { ...base, removeCommonComponent: true } },
    { variant: 'default, no word-direction removal (nor centring)', config: { ...base, removeWordComponents: 0 } },
    { variant: 'default, top-2 word directions removed', config: { ...base, removeWordComponents: 2 } },
    { variant: 'default, SIF a = 1e-4', config: { ...base, sifA: 1e-4 } },
    { variant: 'default, n-grams of identifiers and unknown words only', config: { ...base, ngramScope: 'identifiers' } },
    { variant: 'default, n-gram weight 0.5', config: { ...base, ngramWeight: 0.5 } },
    { variant: 'default, 284 n-gram dimensions (384 in all)', config: { ...base, ngramDims: 284 } },
  ];
}

async function runAblation(conversations: LocomoConversation[], tables: GloveTables, ftsDeep: Rankings, depth: number, ks: number[]): Promise<AblationRow[]> {
  const rows: AblationRow[] = [];
  let baseline: { vector: number[]; hybrid: number[] } | undefined;
  for (const { variant, config } of ablationVariants()) {
    const common = config.removeCommonComponent ? computeCommonComponent(tables, config) : undefined;
    const encoder = new SentenceEncoder(tables, config, common);
    const vector = await vectorRankings(conversations, depth, async (texts) => texts.map((t) => encoder.embed(t)));
    const hybrid = fuseWeighted(ftsDeep, vector, FUSION_FTS_WEIGHT);
    const vectorRecalls = rankingRecalls(conversations, vector, ks);
    const hybridRecalls = rankingRecalls(conversations, hybrid, ks);
    const scores = (recalls: QuestionRecall[]): RecallScores => summarizeRecall(recalls.filter((r) => r.category <= 4), ks);
    const v = scores(vectorRecalls);
    const h = scores(hybridRecalls);
    const perQuestion = { vector: scoredRecalls(vectorRecalls, ABLATION_DELTA_K), hybrid: scoredRecalls(hybridRecalls, ABLATION_DELTA_K) };
    baseline ??= perQuestion;
    rows.push({
      variant,
      config,
      vector: v,
      hybrid: h,
      vectorDelta: pairedDelta(perQuestion.vector, baseline.vector),
      hybridDelta: pairedDelta(perQuestion.hybrid, baseline.hybrid),
    });
    log(`ablation: ${variant}: vector@10 ${v.recallAt10}, hybrid@10 ${h.recallAt10}`);
  }
  return rows;
}

/** The k at which ablation variants are compared question by question with the default. */
const ABLATION_DELTA_K = 10;

/** Recall@k of each question of categories 1-4 that has evidence, in order. */
function scoredRecalls(recalls: QuestionRecall[], k: number): number[] {
  return recalls.flatMap((r) => {
    const v = r.recall[k];
    return r.category <= 4 && typeof v === 'number' ? [v] : [];
  });
}

/** Mean paired difference and its standard error (same questions), in recall units. */
function pairedDelta(a: number[], b: number[]): { mean: number; standardError: number } {
  const d = a.map((x, i) => x - b[i]!);
  const mean = d.reduce((s, x) => s + x, 0) / d.length;
  const variance = d.reduce((s, x) => s + (x - mean) ** 2, 0) / Math.max(1, d.length - 1);
  return { mean: round(mean, 4), standardError: round(Math.sqrt(variance / d.length), 4) };
}

function renderMarkdown(
  report: {
    when: string;
    engram: string;
    machine: string;
    cpus: number;
    data: string;
    conversations: string[];
    questionsWithoutEvidence: number;
    timingsMs: Record<string, number>;
    engineTimingsMs: Record<string, LocomoReport['timingsMs']>;
    results: LocomoResult[];
    ablation: AblationRow[];
  },
  args: LocomoArgs,
): string {
  const ks = args.ks;
  const pct = (n: number | null | undefined): string => (typeof n !== 'number' || Number.isNaN(n) ? '-' : (n * 100).toFixed(1));
  const head = (first: string): string => `| ${first} | ${ks.map((k) => `@${k}`).join(' | ')} | questions |\n| --- | ${ks.map(() => '---:').join(' | ')} | ---: |`;
  const row = (name: string, s: RecallScores): string => `| ${name} | ${ks.map((k) => pct(s[`recallAt${k}`])).join(' | ')} | ${s.questions} |`;
  const delta = (d: { mean: number; standardError: number } | undefined): string =>
    d ? `${d.mean >= 0 ? '+' : ''}${(d.mean * 100).toFixed(1)} ± ${(d.standardError * 100).toFixed(1)}` : '';
  const hasDeltas = report.results.some((r) => r.vsFts);
  const main = hasDeltas
    ? `| retriever | ${ks.map((k) => `@${k}`).join(' | ')} | ${ks.map((k) => `Δ@${k} vs fts`).join(' | ')} | questions |\n| --- | ${ks.map(() => '---:').join(' | ')} | ${ks.map(() => '---:').join(' | ')} | ---: |\n` +
      report.results.map((r) => `| ${r.retriever} | ${ks.map((k) => pct(r[`recallAt${k}`])).join(' | ')} | ${ks.map((k) => delta(r.vsFts?.[`recallAt${k}`])).join(' | ')} | ${r.questions} |`).join('\n')
    : `${head('retriever')}\n${report.results.map((r) => row(r.retriever, r)).join('\n')}`;
  const all = report.results.map((r) => row(`${r.retriever}`, r.allCategories)).join('\n');
  const blanks = hasDeltas ? ks.map(() => '').join(' | ') + ' | ' : '';
  const anchors = [
    ks.includes(10) ? `| BM25 over turns (README anchor, cats 1-4) | ${ks.map((k) => (k === 10 ? '~48' : '')).join(' | ')} | ${blanks}|` : '',
  ].filter(Boolean);
  const dragon: Record<number, string> = { 5: '56.7', 10: '66.2', 25: '76.7', 50: '82.7' };
  const categories = Object.entries(LOCOMO_CATEGORIES)
    .map(([id, name]) => {
      const header = `\n**${id} ${name}**\n\n${head('retriever')}\n`;
      return header + report.results.map((r) => row(r.retriever, r.byCategory[id]!)).join('\n');
    })
    .join('\n');
  const labels = report.results.map((r) => `- \`${r.retriever}\`: ${r.label}`).join('\n');
  const ablation =
    report.ablation.length === 0
      ? ''
      : `\n## Encoder ablation (categories 1-4; brute-force cosine, and hybrid = the bench's weighted fusion with the engine's fts top ${FUSION_DEPTH})\n\n` +
        `Δ@${ABLATION_DELTA_K}: paired difference from the default over the same questions, ± one standard error; differences within about two\n` +
        `standard errors are noise at this size.\n\n` +
        `| variant | vector ${ks.map((k) => `@${k}`).join(' | ')} | Δ@${ABLATION_DELTA_K} | hybrid ${ks.map((k) => `@${k}`).join(' | ')} | Δ@${ABLATION_DELTA_K} |\n` +
        `| --- | ${ks.map(() => '---:').join(' | ')} | ---: | ${ks.map(() => '---:').join(' | ')} | ---: |\n` +
        report.ablation
          .map((a) => `| ${a.variant} | ${ks.map((k) => pct(a.vector[`recallAt${k}`])).join(' | ')} | ${delta(a.vectorDelta)} | ${ks.map((k) => pct(a.hybrid[`recallAt${k}`])).join(' | ')} | ${delta(a.hybridDelta)} |`)
          .join('\n') +
        '\n';
  return `# LoCoMo evidence recall

Generated by \`npm run bench -- locomo${args.ablation ? ' --ablation' : ''}\` on ${report.when} (Engram ${report.engram}; ${report.machine}, ${report.cpus} cores) from
\`${report.data}\` (${report.conversations.join(', ')}). Recall@k = share of a question's gold evidence turns among the
top k turns retrieved from its own conversation, averaged over questions, in percent. ${report.questionsWithoutEvidence}
question(s) without evidence are left out. Every turn is stored as \`speaker: text\`, plus \`[image: caption]\`
when an image was shared, with its speaker in \`meta.speaker\`.

The \`fts\`, \`vector\` and \`hybrid\` rows are Engram's own recall, the product path: \`evaluateLocomo\`
(src/eval/locomo-eval.ts, the code behind \`engram bench locomo\`) opens one temporary SQLite store per conversation,
appends one event per turn (session times as timestamps), embeds the turns through the engine's indexer into
sqlite-vec, and asks every question through \`recall\` with default ranking options, once per k. The rows whose
label starts with "bench" are comparisons computed here, as this report did before the engine had vectors:
brute-force cosine over every turn, and fusions of the engine's full-text top ${FUSION_DEPTH} with the cosine top
${FUSION_DEPTH}, with untuned constants. Where \`hybrid\` and \`hybrid-bench\` differ, the causes are the engine's
candidate depth (max(40, 4k) per side, so the cosine's min-max range depends on k; the bench fuses 100 of each),
recency and the exact-match boost (the engine applies them to every fused candidate's score; the bench has them
only inside the full-text score, at about half the weight) and MMR order. The fusion formula is the same, except
that the engine gives vectors a weight of ${HYBRID_VECTOR_WEIGHT_WITH_IDENTIFIERS} instead of ${HYBRID_VECTOR_WEIGHT} when a question names identifiers.
The \`fts\` rows and the bench's comparisons share the engine's full-text index, which holds every turn's context
(the ${TURN_CONTEXT_EVENTS} turns before it), and its speaker boost (see the techniques section at the end).

${labels}

No local ONNX row: this machine has no sentence-embedding model on disk and cannot download one from a model hub. With one,
\`engram bench locomo --data FILE --embedder onnx:<model directory>\` measures it the same way.

## Categories 1-4 (the usual scored set)

Δ vs fts: paired difference from full-text recall over the same questions, ± one standard error.

${main}
${anchors.join('\n')}

## All five categories (the LoCoMo paper's DRAGON figures are over all five)

Like with like only in metric and categories: DRAGON was measured on all ten LoCoMo conversations, these numbers on
the ${report.conversations.length} of the file above.

${head('retriever')}
${all}
| DRAGON dense retriever (LoCoMo paper, Table 3) | ${ks.map((k) => dragon[k] ?? '').join(' | ')} | |

## By category
${categories}
${ablation}
Timings (ms, noisy: other work shares the 2 cores): ${Object.entries(report.timingsMs).map(([k, v]) => `${k} ${v}`).join(', ')}.
${Object.entries(report.engineTimingsMs)
  .map(([name, t]) => `Engine \`${name}\`: append ${t.append}, embed ${t.embed}, recall call p50 ${t.queryP50} / p95 ${t.queryP95}, total ${t.total}.`)
  .join('\n')}
`;
}

/** The commit measured, and whether recall's code differed from it (other work in progress). */
function engramVersion(): string {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return dirty ? `${commit} + uncommitted changes under src/` : commit;
  } catch {
    return 'unknown (not a git checkout)';
  }
}

function cosine(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

function log(message: string): void {
  process.stderr.write(`${message}\n`);
}
