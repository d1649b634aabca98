/**
 * Evidence recall on LoCoMo: for each question, the share of its gold evidence turns among the top k turns a
 * retriever returns from the question's own conversation (the corpus is every turn of it). Compares Engram's
 * full-text recall, the built-in embedder, and their fusion. Writes bench/results/<out>.{md,json}.
 *
 *   npm run bench -- locomo [--data FILE] [--k 5,10,25,50] [--retriever fts,vector,hybrid] [--json]
 *                           [--ablation] [--out locomo]
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import { openEngram } from '../src/engine.js';
import { BUILTIN_EMBEDDER_NAME, createBuiltinEmbedder } from '../src/providers/builtin-embedder.js';
import { openGloveTables } from '../src/providers/glove/glove-cache.js';
import type { GloveTables } from '../src/providers/glove/glove-tables.js';
import { computeCommonComponent, DEFAULT_ENCODER_CONFIG, SentenceEncoder, type EncoderConfig } from '../src/providers/glove/sentence-encoder.js';
import { LOCOMO_CATEGORIES, loadLocomo, turnText, type LocomoCategory, type LocomoConversation } from './lib/locomo-data.js';
import { machineLine, round } from './lib/stats.js';

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
}

/** Reciprocal rank fusion constant (Cormack et al. 2009; the usual default, not tuned here). */
export const RRF_K = 60;
/** Weighted score fusion: share of the full-text score; equal weights, not tuned here. */
export const FUSION_FTS_WEIGHT = 0.5;
/** Depth of each ranking fed to a fusion. */
const FUSION_DEPTH = 100;
/** Budget large enough that only k limits recall's hits. */
const UNLIMITED_BUDGET_TOKENS = 1_000_000;

/** One ranked candidate: a turn id and the retriever's score. */
interface Scored {
  id: string;
  score: number;
}

/** Per question, ranked turn ids (best first), in conversation order then question order. */
type Rankings = Scored[][];

interface RecallScores {
  questions: number;
  [recallAtK: `recallAt${number}`]: number;
}

export interface LocomoResult extends RecallScores {
  retriever: string;
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
  const maxK = Math.max(...args.ks);
  const depth = Math.max(maxK, FUSION_DEPTH);
  const needsFts = args.retrievers.includes('fts') || args.retrievers.includes('hybrid') || args.ablation;
  const needsVector = args.retrievers.includes('vector') || args.retrievers.includes('hybrid');
  const questions = conversations.flatMap((c) => c.questions);
  const unanswerable = questions.filter((q) => q.evidence.length === 0).length;
  log(`${conversations.length} conversations, ${conversations.reduce((n, c) => n + c.turns.length, 0)} turns, ${questions.length} questions`);

  const results: LocomoResult[] = [];
  const rankingsOf = new Map<string, Rankings>();
  const timings: Record<string, number> = {};
  let fts: { atK: Map<number, Rankings>; deep: Rankings } | undefined;
  if (needsFts) {
    const t0 = performance.now();
    fts = await ftsRankings(conversations, args.ks, depth);
    timings.ftsMs = performance.now() - t0;
    if (args.retrievers.includes('fts')) {
      results.push(score('fts', "Engram full-text recall (BM25 + exact-match boost + recency; each k its own call)", conversations, args.ks, (k) => fts!.atK.get(k)!));
    }
  }
  let vector: Rankings | undefined;
  let cacheNote = '';
  if (needsVector) {
    const t0 = performance.now();
    const embedder = await createBuiltinEmbedder();
    timings.embedderOpenMs = performance.now() - t0;
    cacheNote = embedder.cache.isBuilt ? `cache built (${embedder.cache.buildReason})` : 'cache loaded';
    const t1 = performance.now();
    vector = await vectorRankings(conversations, depth, (texts) => embedder.embed(texts));
    timings.vectorMs = performance.now() - t1;
    rankingsOf.set('vector', vector);
    if (args.retrievers.includes('vector')) {
      results.push(score('vector', `${BUILTIN_EMBEDDER_NAME}, brute-force cosine`, conversations, args.ks, () => vector!));
    }
  }
  if (args.retrievers.includes('hybrid') && fts && vector) {
    const rrf = fuseRrf(fts.deep, vector);
    const weighted = fuseWeighted(fts.deep, vector, FUSION_FTS_WEIGHT);
    rankingsOf.set('hybrid', weighted);
    rankingsOf.set('hybrid-rrf', rrf);
    results.push(
      score('hybrid', `weighted score fusion: ${FUSION_FTS_WEIGHT} x fts score / best fts score + ${1 - FUSION_FTS_WEIGHT} x min-max normalised cosine`, conversations, args.ks, () => weighted),
    );
    results.push(score('hybrid-rrf', `reciprocal rank fusion of fts and vector (k = ${RRF_K})`, conversations, args.ks, () => rrf));
  }

  // Paired comparison with full-text recall: the same questions, so question difficulty cancels out.
  const ftsResult = results.find((r) => r.retriever === 'fts');
  if (ftsResult && fts) {
    for (const r of results) {
      if (r === ftsResult) continue;
      const rankings = rankingsOf.get(r.retriever)!;
      r.vsFts = Object.fromEntries(
        args.ks.map((k) => [`recallAt${k}`, pairedDelta(scoredRecalls(conversations, rankings, k), scoredRecalls(conversations, fts!.atK.get(k)!, k))]),
      );
    }
  }

  let ablation: AblationRow[] = [];
  if (args.ablation && fts) {
    const { tables } = await openGloveTables();
    ablation = await runAblation(conversations, tables, fts.deep, depth, args.ks);
  }

  const report = {
    when: new Date().toISOString(),
    engram: engramVersion(),
    machine: machineLine(),
    cpus: cpus().length,
    data: relative(process.cwd(), args.data),
    conversations: conversations.map((c) => c.sampleId),
    questionsWithoutEvidence: unanswerable,
    embedder: needsVector ? { name: BUILTIN_EMBEDDER_NAME, config: DEFAULT_ENCODER_CONFIG, cache: cacheNote } : undefined,
    timingsMs: Object.fromEntries(Object.entries(timings).map(([k, v]) => [k, round(v, 0)])),
    results,
    ablation,
  };
  mkdirSync('bench/results', { recursive: true });
  writeFileSync(`bench/results/${args.out}.json`, JSON.stringify(report, null, 2) + '\n');
  const md = renderMarkdown(report, args);
  writeFileSync(`bench/results/${args.out}.md`, md);
  if (args.json) process.stdout.write(JSON.stringify(results, null, 2) + '\n');
  else process.stdout.write(md);
  return results;
}

/** Engram's real recall over a temporary SQLite store per conversation: one event per turn. */
async function ftsRankings(conversations: LocomoConversation[], ks: number[], depth: number): Promise<{ atK: Map<number, Rankings>; deep: Rankings }> {
  const atK = new Map<number, Rankings>(ks.map((k) => [k, []]));
  const deep: Rankings = [];
  for (const conv of conversations) {
    const dir = mkdtempSync(join(tmpdir(), 'engram-locomo-'));
    const mem = await openEngram({ db: join(dir, 'locomo.db') });
    try {
      const outcomes = await mem.append(
        conv.sampleId,
        conv.turns.map((t) => ({ kind: 'user' as const, content: turnText(t), key: t.diaId, ts: t.tsMs, meta: { diaId: t.diaId } })),
      );
      const diaIdOf = new Map(outcomes.map((o) => [o.record.id as string, o.record.key!]));
      const ranked = async (question: string, k: number): Promise<Scored[]> => {
        const result = await mem.recall(question, { k, budgetTokens: UNLIMITED_BUDGET_TOKENS });
        return result.hits.map((h) => ({ id: diaIdOf.get(h.eventId)!, score: h.score }));
      };
      for (const q of conv.questions) {
        for (const k of ks) atK.get(k)!.push(await ranked(q.question, k));
        deep.push(await ranked(q.question, depth));
      }
    } finally {
      await mem.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return { atK, deep };
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
 * Weighted score fusion: the full-text score divided by the question's best (absent = 0) and the cosine
 * min-max normalised over the vector ranking's depth, mixed with weight `ftsWeight`.
 */
export function fuseWeighted(fts: Rankings, vector: Rankings, ftsWeight: number): Rankings {
  return fts.map((ftsList, q) => {
    const scores = new Map<string, number>();
    const best = Math.max(Number.EPSILON, ...ftsList.map((s) => s.score));
    for (const s of ftsList) scores.set(s.id, (ftsWeight * s.score) / best);
    const vec = vector[q]!;
    const hi = Math.max(...vec.map((s) => s.score));
    const lo = Math.min(...vec.map((s) => s.score));
    for (const s of vec) scores.set(s.id, (scores.get(s.id) ?? 0) + ((1 - ftsWeight) * (s.score - lo)) / Math.max(hi - lo, Number.EPSILON));
    return sortScores(scores);
  });
}

function sortScores(scores: Map<string, number>): Scored[] {
  // Ties by id, so the fused ranking does not depend on insertion order.
  return [...scores].map(([id, score]) => ({ id, score })).sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

function score(retriever: string, label: string, conversations: LocomoConversation[], ks: number[], rankingsAt: (k: number) => Rankings): LocomoResult {
  const perQuestion = (k: number): Array<{ category: LocomoCategory; recall: number }> => {
    const rankings = rankingsAt(k);
    const rows: Array<{ category: LocomoCategory; recall: number }> = [];
    let i = 0;
    for (const conv of conversations) {
      for (const q of conv.questions) {
        const top = new Set(rankings[i++]!.slice(0, k).map((s) => s.id));
        // A question without evidence has no recall to measure; it is counted in the report, not here.
        if (q.evidence.length === 0) continue;
        rows.push({ category: q.category, recall: q.evidence.filter((e) => top.has(e)).length / q.evidence.length });
      }
    }
    return rows;
  };
  const rowsAt = new Map(ks.map((k) => [k, perQuestion(k)]));
  const summarize = (keep: (c: LocomoCategory) => boolean): RecallScores => {
    const out: RecallScores = { questions: 0 };
    for (const k of ks) {
      const rows = rowsAt.get(k)!.filter((r) => keep(r.category));
      out.questions = rows.length;
      out[`recallAt${k}`] = rows.length === 0 ? Number.NaN : round(rows.reduce((s, r) => s + r.recall, 0) / rows.length, 4);
    }
    return out;
  };
  const byCategory: LocomoResult['byCategory'] = {};
  for (const [id, name] of Object.entries(LOCOMO_CATEGORIES)) byCategory[id] = { name, ...summarize((c) => c === Number(id)) };
  return { retriever, label, k: ks, ...summarize((c) => c <= 4), allCategories: summarize(() => true), byCategory };
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
    const v = score('vector', variant, conversations, ks, () => vector);
    const h = score('hybrid', variant, conversations, ks, () => hybrid);
    const perQuestion = { vector: scoredRecalls(conversations, vector, ABLATION_DELTA_K), hybrid: scoredRecalls(conversations, hybrid, ABLATION_DELTA_K) };
    baseline ??= perQuestion;
    rows.push({
      variant,
      config,
      vector: pickScores(v),
      hybrid: pickScores(h),
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
function scoredRecalls(conversations: LocomoConversation[], rankings: Rankings, k: number): number[] {
  const out: number[] = [];
  let i = 0;
  for (const conv of conversations) {
    for (const q of conv.questions) {
      const top = new Set(rankings[i++]!.slice(0, k).map((s) => s.id));
      if (q.evidence.length === 0 || q.category > 4) continue;
      out.push(q.evidence.filter((e) => top.has(e)).length / q.evidence.length);
    }
  }
  return out;
}

/** Mean paired difference and its standard error (same questions), in recall units. */
function pairedDelta(a: number[], b: number[]): { mean: number; standardError: number } {
  const d = a.map((x, i) => x - b[i]!);
  const mean = d.reduce((s, x) => s + x, 0) / d.length;
  const variance = d.reduce((s, x) => s + (x - mean) ** 2, 0) / Math.max(1, d.length - 1);
  return { mean: round(mean, 4), standardError: round(Math.sqrt(variance / d.length), 4) };
}

function pickScores(r: LocomoResult): RecallScores {
  const out: RecallScores = { questions: r.questions };
  for (const k of r.k) out[`recallAt${k}`] = r[`recallAt${k}`]!;
  return out;
}

function renderMarkdown(
  report: { when: string; engram: string; machine: string; cpus: number; data: string; conversations: string[]; questionsWithoutEvidence: number; timingsMs: Record<string, number>; results: LocomoResult[]; ablation: AblationRow[] },
  args: LocomoArgs,
): string {
  const ks = args.ks;
  const pct = (n: number | undefined): string => (n === undefined || Number.isNaN(n) ? '-' : (n * 100).toFixed(1));
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
      : `\n## Encoder ablation (categories 1-4; hybrid = weighted fusion with fts)\n\n` +
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
question(s) without evidence are left out. Every turn is indexed as \`speaker: text\`, plus \`[image: caption]\`
when an image was shared. \`fts\` is Engram's recall as it stands in the tree measured (one temporary SQLite store per
conversation, one event per turn, session times as timestamps, default options); the fusions run here, in the
benchmark, over its top ${FUSION_DEPTH} and the vector top ${FUSION_DEPTH}, with untuned constants.

${labels}

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
