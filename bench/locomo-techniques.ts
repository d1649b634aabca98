/**
 * The recall techniques of issue #13 measured one at a time on the LoCoMo development split, through the product
 * path (`evaluateLocomo`, the code behind `engram bench locomo`): every conversation separately, an ablation of each
 * technique against the default, and leave-one-conversation-out cross-validation of each tuned constant (for each
 * conversation, the value that scores best on the others, and what it scores on the one left out). Used by
 * `npm run bench -- locomo --ablation`; the report is part of bench/results/locomo.md.
 */
import { closeSync, existsSync, openSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LocomoConversation } from '../src/eval/locomo-data.js';
import { evaluateLocomo, type LocomoEvalOptions, type LocomoQuestionResult } from '../src/eval/locomo-eval.js';
import { DATE_BOOST, HYBRID_VECTOR_WEIGHT, SECOND_HOP_WEIGHT, SPEAKER_BOOST, type Retriever } from '../src/memory/recall.js';
import { SECOND_HOP_SOURCES, SECOND_HOP_TERMS } from '../src/memory/second-hop.js';
import { TURN_CONTEXT_EVENTS, TURN_CONTEXT_WORDS } from '../src/memory/turn-context.js';
import { DEFAULT_CONTEXT_WEIGHT } from '../src/store/backend.js';
import type { Embedder } from '../src/providers/embedder.js';

/** One configuration of the pipeline: the default with some options changed. */
export interface TechniqueSetting {
  name: string;
  retriever: Retriever;
  options?: Pick<LocomoEvalOptions, 'turnContextEvents' | 'recordSpeakers' | 'recallOptions' | 'relativeDates'>;
}

/** Recall@k over all five categories per conversation and overall, plus per question for paired comparisons. */
export interface SettingResult {
  name: string;
  retriever: Retriever;
  /** k -> mean recall over every question with evidence (all five categories). */
  all: Record<number, number>;
  /** sample id -> k -> mean recall. */
  byConversation: Record<string, Record<number, number>>;
  /** category -> mean recall@10. */
  byCategoryAt10: Record<number, number>;
  /** Per question recall@10 (questions with evidence, in order): for paired differences. */
  at10: number[];
  /** sample id -> multi-hop recall@10 (absent in results written before it was measured). */
  multiHopByConversation?: Record<string, number>;
  /** Recall call p50 and p95 in ms over every call of the setting (evaluateLocomo's timings; noisy under load). */
  queryMs?: { p50: number; p95: number };
}

/** A tuned constant and the grid it is cross-validated over. */
export interface CrossValidated {
  constant: string;
  defaultValue: number;
  grid: Array<{ value: number; setting: TechniqueSetting }>;
  /** Names of the grid's values, when they stand for settings rather than numbers. */
  labels?: Record<number, string>;
}

export interface CrossValidationRow {
  constant: string;
  defaultValue: number;
  labels?: Record<number, string>;
  /** Per held-out conversation: the value chosen on the others, and the held-out recall@10 at it and at the default. */
  folds: Array<{ sampleId: string; chosen: number; heldOut: number; atDefault: number }>;
  /** Mean over folds of held-out recall@10 at the chosen values. */
  meanHeldOut: number;
  /** Lowest and highest held-out recall@10 over folds. */
  spread: [number, number];
}

/** The settings measured: the default, each technique switched off or varied, and the pipeline before #13. */
export function techniqueSettings(): { settings: TechniqueSetting[]; crossValidated: CrossValidated[] } {
  const hybrid = (name: string, options: TechniqueSetting['options'] = {}): TechniqueSetting => ({ name, retriever: 'hybrid', options });
  const fts = (name: string, options: TechniqueSetting['options'] = {}): TechniqueSetting => ({ name, retriever: 'fts', options });
  const vectorWeights = [0, 0.1, 0.2, 0.3, 0.4, 0.5].map((value) => ({
    value,
    setting: value === HYBRID_VECTOR_WEIGHT ? hybrid('default') : hybrid(`vector weight ${value}`, { recallOptions: { vectorWeight: value } }),
  }));
  const contextWeights = [0.25, 0.35, 0.5, 0.7, 1].map((value) => ({
    value,
    setting: value === DEFAULT_CONTEXT_WEIGHT ? hybrid('default') : hybrid(`context weight ${value}`, { recallOptions: { contextWeight: value } }),
  }));
  const speakerBoosts = [0, 0.25, 0.5, 1].map((value) => ({
    value,
    setting: value === SPEAKER_BOOST ? hybrid('default') : hybrid(`speaker boost ${value}`, { recallOptions: { speakerBoost: value } }),
  }));
  const contextEvents = [0, 1, 2, 3].map((value) => ({
    value,
    setting: value === TURN_CONTEXT_EVENTS ? hybrid('default') : hybrid(`turn context ${value} event(s)`, { turnContextEvents: value }),
  }));
  const secondHops = [0, 0.3, 0.5, 1].map((value) => ({
    value,
    setting: value === SECOND_HOP_WEIGHT ? hybrid('default') : hybrid(`second hop ${value}`, { recallOptions: { secondHopWeight: value } }),
  }));
  const dateBoosts = [0, 0.25, 0.5, 1].map((value) => ({
    value,
    setting: value === DATE_BOOST ? hybrid('default') : hybrid(`date boost ${value}`, { recallOptions: { dateBoost: value } }),
  }));
  const before = {
    turnContextEvents: 0,
    recallOptions: { contextWeight: 0.25, recencyWeight: 0.15, speakerBoost: 0, vectorWeight: 0.5, secondHopWeight: 0, dateBoost: 0 },
  };
  const settings: TechniqueSetting[] = [
    fts('default'),
    hybrid('default'),
    fts('before #13', before),
    hybrid('before #13', before),
    fts('no turn context', { turnContextEvents: 0 }),
    fts('no second hop', { recallOptions: { secondHopWeight: 0 } }),
    ...[...contextEvents, ...contextWeights, ...speakerBoosts, ...vectorWeights, ...secondHops, ...dateBoosts].map((g) => g.setting),
    hybrid('second hop on every question', { recallOptions: { secondHopTrigger: 'always' } }),
    hybrid('recency weight 0.15 (before #13)', { recallOptions: { recencyWeight: 0.15 } }),
    hybrid('recency weight 0', { recallOptions: { recencyWeight: 0 } }),
    hybrid('speakers not recorded', { recordSpeakers: false }),
    hybrid('no relative dates', { relativeDates: false }),
    fts('no relative dates', { relativeDates: false }),
    hybrid('no MMR', { recallOptions: { useMmr: false } }),
    fts('no MMR', { recallOptions: { useMmr: false } }),
  ];
  const unique = new Map(settings.map((s) => [key(s), s]));
  return {
    settings: [...unique.values()],
    crossValidated: [
      { constant: 'HYBRID_VECTOR_WEIGHT (recall.ts)', defaultValue: HYBRID_VECTOR_WEIGHT, grid: vectorWeights },
      { constant: 'DEFAULT_CONTEXT_WEIGHT (store/backend.ts)', defaultValue: DEFAULT_CONTEXT_WEIGHT, grid: contextWeights },
      { constant: 'SPEAKER_BOOST (recall.ts)', defaultValue: SPEAKER_BOOST, grid: speakerBoosts },
      { constant: 'TURN_CONTEXT_EVENTS (turn-context.ts)', defaultValue: TURN_CONTEXT_EVENTS, grid: contextEvents },
      { constant: 'SECOND_HOP_WEIGHT (recall.ts)', defaultValue: SECOND_HOP_WEIGHT, grid: secondHops },
      { constant: 'DATE_BOOST (recall.ts)', defaultValue: DATE_BOOST, grid: dateBoosts },
    ],
  };
}

export function key(s: TechniqueSetting): string {
  return `${s.retriever}:${s.name}`;
}

/** Runs every setting once over all conversations (one temporary store per conversation and setting). */
export async function runTechniques(
  conversations: readonly LocomoConversation[],
  settings: readonly TechniqueSetting[],
  embedder: Embedder,
  ks: readonly number[],
  log: (message: string) => void,
): Promise<Map<string, SettingResult>> {
  const out = new Map<string, SettingResult>();
  // Several processes may share the settings (LOCOMO_TECHNIQUES_DIR, a fresh directory per build): each claims a
  // setting by creating its claim file, writes its result, and reads the others' results when they are written.
  const shared = process.env.LOCOMO_TECHNIQUES_DIR;
  const fileOf = (s: TechniqueSetting): string => join(shared!, `${key(s).replace(/[^\w.-]+/g, '_')}.json`);
  const pending: TechniqueSetting[] = [];
  for (const s of settings) {
    if (shared) {
      if (existsSync(fileOf(s))) {
        out.set(key(s), JSON.parse(readFileSync(fileOf(s), 'utf8')) as SettingResult);
        continue;
      }
      try {
        closeSync(openSync(`${fileOf(s)}.claim`, 'wx'));
      } catch {
        pending.push(s);
        continue;
      }
    }
    const report = await evaluateLocomo(conversations, {
      ks,
      retriever: s.retriever,
      embedder: s.retriever === 'fts' ? null : embedder,
      keepQuestions: true,
      ...s.options,
    });
    const result = { ...summarize(s, report.questionResults!, ks), queryMs: { p50: report.timingsMs.queryP50, p95: report.timingsMs.queryP95 } };
    out.set(key(s), result);
    if (shared) {
      writeFileSync(`${fileOf(s)}.tmp`, JSON.stringify(result));
      renameSync(`${fileOf(s)}.tmp`, fileOf(s));
    }
    log(`techniques: ${s.retriever} ${s.name}: @10 ${(result.all[10]! * 100).toFixed(1)}`);
  }
  for (const s of pending) {
    while (!existsSync(fileOf(s))) await new Promise((resolve) => setTimeout(resolve, 5000));
    out.set(key(s), JSON.parse(readFileSync(fileOf(s), 'utf8')) as SettingResult);
    log(`techniques: ${s.retriever} ${s.name}: measured by another process`);
  }
  return out;
}

function summarize(s: TechniqueSetting, questions: readonly LocomoQuestionResult[], ks: readonly number[]): SettingResult {
  const scored = questions.filter((q) => q.evidence.length > 0);
  const mean = (qs: readonly LocomoQuestionResult[], k: number): number => qs.reduce((sum, q) => sum + (q.recall[k] ?? 0), 0) / Math.max(1, qs.length);
  const byConversation: SettingResult['byConversation'] = {};
  for (const id of [...new Set(scored.map((q) => q.sampleId))]) {
    const mine = scored.filter((q) => q.sampleId === id);
    byConversation[id] = Object.fromEntries(ks.map((k) => [k, mean(mine, k)]));
  }
  const multiHopByConversation: Record<string, number> = {};
  for (const id of Object.keys(byConversation)) multiHopByConversation[id] = mean(scored.filter((q) => q.sampleId === id && q.category === 1), 10);
  const byCategoryAt10: Record<number, number> = {};
  for (const c of [1, 2, 3, 4, 5]) byCategoryAt10[c] = mean(scored.filter((q) => q.category === c), 10);
  return {
    name: s.name,
    retriever: s.retriever,
    all: Object.fromEntries(ks.map((k) => [k, mean(scored, k)])),
    byConversation,
    byCategoryAt10,
    at10: scored.map((q) => q.recall[10] ?? 0),
    multiHopByConversation,
  };
}

/**
 * Leave-one-conversation-out: for each conversation, the grid value with the best mean recall@10 over the other
 * conversations (ties to the default, then to the smaller value), and the recall@10 it gets on the one left out.
 */
export function crossValidate(cv: CrossValidated, results: ReadonlyMap<string, SettingResult>, conversations: readonly string[]): CrossValidationRow {
  const at = (value: number, sampleId: string): number => results.get(key(cv.grid.find((g) => g.value === value)!.setting))!.byConversation[sampleId]![10]!;
  const folds = conversations.map((heldOut) => {
    const others = conversations.filter((c) => c !== heldOut);
    const trained = (value: number): number => others.reduce((sum, c) => sum + at(value, c), 0) / others.length;
    const ranked = [...cv.grid].sort(
      (a, b) => trained(b.value) - trained(a.value) || Number(b.value === cv.defaultValue) - Number(a.value === cv.defaultValue) || a.value - b.value,
    );
    const chosen = ranked[0]!.value;
    return { sampleId: heldOut, chosen, heldOut: at(chosen, heldOut), atDefault: at(cv.defaultValue, heldOut) };
  });
  const heldOut = folds.map((f) => f.heldOut);
  return {
    constant: cv.constant,
    defaultValue: cv.defaultValue,
    ...(cv.labels ? { labels: cv.labels } : {}),
    folds,
    meanHeldOut: heldOut.reduce((a, b) => a + b, 0) / heldOut.length,
    spread: [Math.min(...heldOut), Math.max(...heldOut)],
  };
}

/** Mean paired difference and its standard error (same questions), in recall units. */
export function pairedDifference(a: readonly number[], b: readonly number[]): { mean: number; standardError: number } {
  const d = a.map((x, i) => x - b[i]!);
  const mean = d.reduce((s, x) => s + x, 0) / Math.max(1, d.length);
  const variance = d.reduce((s, x) => s + (x - mean) ** 2, 0) / Math.max(1, d.length - 1);
  return { mean, standardError: Math.sqrt(variance / Math.max(1, d.length)) };
}

/** The report section: per conversation, the ablation, the cross-validation. */
export function renderTechniques(
  results: ReadonlyMap<string, SettingResult>,
  settings: readonly TechniqueSetting[],
  cv: readonly CrossValidationRow[],
  conversations: readonly string[],
  ks: readonly number[],
): string {
  const pct = (n: number | undefined): string => (n === undefined || Number.isNaN(n) ? '-' : (n * 100).toFixed(1));
  const signed = (d: { mean: number; standardError: number }): string => `${d.mean >= 0 ? '+' : ''}${(d.mean * 100).toFixed(1)} ± ${(d.standardError * 100).toFixed(1)}`;
  const defaults = { fts: results.get('fts:default')!, hybrid: results.get('hybrid:default')! };

  const perConversation = (['fts', 'hybrid'] as const)
    .flatMap((r) =>
      conversations.map((c) => `| ${r} | ${c} | ${ks.map((k) => pct(defaults[r].byConversation[c]?.[k])).join(' | ')} |`),
    )
    .join('\n');
  const before = { fts: results.get('fts:before #13')!, hybrid: results.get('hybrid:before #13')! };
  const beforeRows = (['fts', 'hybrid'] as const)
    .flatMap((r) => conversations.map((c) => `| ${r}, before #13 | ${c} | ${ks.map((k) => pct(before[r].byConversation[c]?.[k])).join(' | ')} |`))
    .join('\n');

  const ablation = settings
    .map((s) => {
      const r = results.get(key(s))!;
      const base = defaults[s.retriever === 'fts' ? 'fts' : 'hybrid'];
      const d = r === base ? '' : signed(pairedDifference(r.at10, base.at10));
      const perConv = conversations.map((c) => pct(r.byConversation[c]?.[10])).join(' / ');
      const ms = r.queryMs ? `${r.queryMs.p50.toFixed(1)} / ${r.queryMs.p95.toFixed(1)}` : '-';
      return `| ${s.retriever} | ${s.name} | ${ks.map((k) => pct(r.all[k])).join(' | ')} | ${d} | ${perConv} | ${pct(r.byCategoryAt10[1])} | ${pct(r.byCategoryAt10[5])} | ${ms} |`;
    })
    .join('\n');

  const cvRows = cv
    .map(
      (row) =>
        `| ${row.constant} | ${row.labels?.[row.defaultValue] ?? row.defaultValue} | ${row.folds.map((f) => `${f.sampleId}: ${row.labels?.[f.chosen] ?? f.chosen} → ${pct(f.heldOut)} (default ${pct(f.atDefault)})`).join('; ')} | ${pct(row.meanHeldOut)} | ${pct(row.spread[0])}-${pct(row.spread[1])} |`,
    )
    .join('\n');

  // Hybrid against full-text (issue #13: never below it at any k): every conversation and k, for the settings that
  // change how the two are combined.
  const combined = settings.filter((s) => s.retriever === 'hybrid' && /^(default|vector weight |no MMR)/.test(s.name));
  const margin = (r: SettingResult, c: string, k: number): number => (r.byConversation[c]?.[k] ?? NaN) - (defaults.fts.byConversation[c]?.[k] ?? NaN);
  const margins = combined
    .map((s) => {
      const r = results.get(key(s))!;
      const cells = conversations.map((c) => {
        const worst = Math.min(...ks.map((k) => margin(r, c, k)));
        return `${worst >= 0 ? '+' : ''}${(worst * 100).toFixed(1)} (@${ks.find((k) => margin(r, c, k) === worst)})`;
      });
      const below = conversations.reduce((n, c) => n + ks.filter((k) => margin(r, c, k) < 0).length, 0);
      return `| ${s.name} | ${cells.join(' | ')} | ${below} of ${conversations.length * ks.length} |`;
    })
    .join('\n');
  const multiHopSettings = [
    ...settings.filter((s) => s.retriever === 'fts' && /^default/.test(s.name)),
    ...combined,
    ...settings.filter((s) => s.retriever === 'hybrid' && /^second hop/.test(s.name) && !combined.includes(s)),
  ];
  const multiHop = multiHopSettings
    .map((s) => {
      const r = results.get(key(s))!;
      return `| ${s.retriever} | ${s.name} | ${conversations.map((c) => pct(r.multiHopByConversation?.[c])).join(' | ')} | ${pct(r.byCategoryAt10[1])} |`;
    })
    .join('\n');

  return `
## Recall techniques (issue #13), development split

Each row is the full product pipeline (\`evaluateLocomo\`) with one thing changed, over all five categories.
Δ@10: paired difference from the default of the same retriever over the same questions, ± one standard error.
Recall p50 / p95: every recall call of the setting (all k), measured while other settings ran beside it: compare
rows run together, not with a quiet machine's figure.
These are **development figures**: the constants were chosen on these conversations (below, by cross-validation
among them); held-out conversations are how the project is judged.

The techniques, as built:
- **turn context**: every event is indexed with the distinct content words of the ${TURN_CONTEXT_EVENTS} events before it in
  its session (at most ${TURN_CONTEXT_WORDS}) in the low-weight column (src/memory/turn-context.ts); results still point at the exact turn.
- **context weight**: that column's weight against the event's own words (${DEFAULT_CONTEXT_WEIGHT}; it was 0.25 when it held only kind, tool and tags).
- **speaker boost**: when a question names the speaker of some candidates (\`meta.speaker\`, recorded by this
  benchmark as a chat import would), the others' relevance is divided by 1 + ${SPEAKER_BOOST}.
- **recency weight**: 0.05 (0.15 before); relevance decides, recency only breaks near-ties.
- **vector weight**: the built-in embedder's share of hybrid relevance, ${HYBRID_VECTOR_WEIGHT} (0.5 before).
- **second hop**: the question's terms plus the ${SECOND_HOP_TERMS} content words most shared among its first ${SECOND_HOP_SOURCES} full-text
  hits (entities first; not the question's words nor speakers' names) searched again in the same call and fused
  into the first list at weight ${SECOND_HOP_WEIGHT} (src/memory/second-hop.ts), for questions that look multi-hop (a plural category
  word, "and", two names), or for every question.
- **date boost**: when a question names an absolute date ("in June 2022", "on 9 November, 2022") and some candidates
  were said then (that day ± 1, or that month), the others' relevance is divided by 1 + ${DATE_BOOST} (src/memory/date-expressions.ts).
- **relative dates**: a turn's "yesterday", "last Friday", "two weeks ago", "last month", "next year"... resolved
  against its own time and indexed as words ("14 may 2023", "april 2023", "2022") in the context column
  (src/memory/relative-dates.ts).
- **before #13**: the previous defaults together (no turn context, context weight 0.25, recency 0.15, no speaker boost,
  vector weight 0.5, no second hop, no date boost): the pipeline this issue started from.

### Every conversation separately (all five categories)

| retriever | conversation | ${ks.map((k) => `@${k}`).join(' | ')} |
| --- | --- | ${ks.map(() => '---:').join(' | ')} |
${perConversation}
${beforeRows}

### Ablation

| retriever | setting | ${ks.map((k) => `@${k}`).join(' | ')} | Δ@10 | @10 per conversation (${conversations.join(' / ')}) | multi-hop @10 | adversarial @10 | recall p50 / p95 ms |
| --- | --- | ${ks.map(() => '---:').join(' | ')} | ---: | --- | ---: | ---: | ---: |
${ablation}

### Hybrid against full-text, every conversation and k

Per conversation, the lowest difference from full-text (the \`fts\` default) over k = ${ks.join(', ')}, and the k where it
falls; the last column counts the (conversation, k) cells where hybrid is below full-text. A conversation holds
105-260 questions, so one question moves its figure by 0.4-1 point.

| hybrid setting | ${conversations.join(' | ')} | cells below full-text |
| --- | ${conversations.map(() => '---:').join(' | ')} | ---: |
${margins}

### Multi-hop recall@10 per conversation

A dash: the setting's result was measured before this table existed (reused from a shared LOCOMO_TECHNIQUES_DIR).

| retriever | setting | ${conversations.join(' | ')} | all |
| --- | --- | ${conversations.map(() => '---:').join(' | ')} | ---: |
${multiHop}

### Leave-one-conversation-out cross-validation (hybrid, recall@10, all five categories)

For each conversation left out, the grid value that scores best on the other conversations is chosen and scored on
the one left out. The spread is the lowest and highest held-out score over the folds.

| constant | default | per held-out conversation: value chosen on the others → held-out @10 | mean held-out @10 | spread |
| --- | ---: | --- | ---: | ---: |
${cvRows}
`;
}
