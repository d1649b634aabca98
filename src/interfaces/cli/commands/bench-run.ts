/**
 * What `engram bench locomo` and `engram bench needle` run (bench.ts registers them and loads this module only
 * when one runs: the evaluation code is a tenth of the CLI's modules, and every other command starts without it).
 */
import { EngramError } from '../../../errors.js';
import { loadLocomo, LOCOMO_CATEGORIES } from '../../../eval/locomo-data.js';
import { DEFAULT_LOCOMO_KS, evaluateLocomo, MAX_LOCOMO_K, type LocomoReport, type RecallAtK } from '../../../eval/locomo-eval.js';
import type { Retriever } from '../../../memory/recall.js';
import { createEmbedderFromSpec, DEFAULT_EMBEDDER_SPEC, parseEmbedderSpec } from '../../../providers/embedder-spec.js';
import { EXIT } from '../exit-codes.js';
import type { Io } from '../output.js';
import { printJson } from '../output.js';
import { createProgress } from '../progress.js';
import { formatNeedleSummary, formatReplaySummary, planNeedleRun, type NeedleCliArgs } from '../../../eval/needle/cli-options.js';
import { runNeedleBench } from '../../../eval/needle/needle-bench.js';
import { runNeedleReplay } from '../../../eval/needle/replay.js';
import { writeReplayReport } from '../../../eval/needle/replay-report.js';
import { writeNeedleReport } from '../../../eval/needle/report.js';
import { summarizerFromEnv } from '../../../eval/needle/summarizer.js';
import { createGptTokenizer } from '../../../providers/gpt-tokenizer.js';

export interface BenchLocomoArgs {
  data: string;
  /** Comma-separated depths, e.g. `5,10,25,50` or `10`. */
  k?: string;
  retriever?: Retriever;
  /** The global `--embedder` spec. */
  embedder?: string;
  json?: boolean;
}

/**
 * `engram bench locomo --data FILE`: LoCoMo evidence recall@k of Engram's recall on any file of that shape,
 * overall and per category (see src/eval/locomo-eval.ts). `--json` prints the report.
 */
export async function benchLocomoCommand(args: BenchLocomoArgs, io: Io): Promise<number> {
  const ks = args.k === undefined ? [...DEFAULT_LOCOMO_KS] : parseKs(args.k);
  const spec = parseEmbedderSpec(args.embedder || process.env.ENGRAM_EMBEDDER || DEFAULT_EMBEDDER_SPEC);
  const retriever: Retriever = args.retriever ?? (spec.provider === 'none' ? 'fts' : 'hybrid');
  if (retriever !== 'fts' && spec.provider === 'none') {
    throw new EngramError('INVALID_INPUT', `--retriever: "${retriever}" needs vectors, but --embedder is none; use --retriever fts or another embedder`, {
      field: 'retriever',
    });
  }
  // The file is read before the embedder loads, so a wrong path fails at once.
  const conversations = loadLocomo(args.data);
  const embedder = retriever === 'fts' ? null : await createEmbedderFromSpec(spec);
  const progress = createProgress(io);
  try {
    const report = await evaluateLocomo(conversations, {
      ks,
      retriever,
      embedder,
      onProgress: (p) => progress.update(p.done, p.total, 'locomo', p.done, 'events'),
    });
    progress.stop();
    if (args.json) printJson(io, report);
    else io.out(formatReport(report));
    return EXIT.OK;
  } finally {
    progress.stop();
    await embedder?.close?.();
  }
}

/** `5,10,25,50` -> [5, 10, 25, 50]. */
function parseKs(text: string): number[] {
  const parts = text.split(',').map((s) => s.trim());
  if (parts.some((s) => !/^\d+$/.test(s) || Number(s) < 1 || Number(s) > MAX_LOCOMO_K)) {
    throw new EngramError('INVALID_INPUT', `--k: "${text}" is not a comma-separated list of whole numbers from 1 to ${MAX_LOCOMO_K}`, { field: 'k' });
  }
  return parts.map(Number);
}

/** A table of recall@k in percent: the categories, then the usual set (1-4) and all five. */
export function formatReport(r: LocomoReport): string {
  const pct = (v: number | null | undefined): string => (typeof v === 'number' ? (v * 100).toFixed(1) : '-');
  const rows: Array<[string, RecallAtK]> = [
    ...Object.keys(LOCOMO_CATEGORIES).map((id): [string, RecallAtK] => [`${id} ${r.byCategory[id]!.name}`, r.byCategory[id]!]),
    ['categories 1-4', r.overall],
    ['all five', r.allCategories],
  ];
  const header = ['recall %', ...r.ks.map((k) => `@${k}`), 'questions'];
  const cells = rows.map(([name, s]) => [name, ...r.ks.map((k) => pct(s[`recallAt${k}`])), String(s.questions)]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]): string => c.map((v, i) => (i === 0 ? v.padEnd(widths[i]!) : v.padStart(widths[i]!))).join('  ');
  const t = r.timingsMs;
  return [
    `LoCoMo evidence recall, retriever ${r.retriever}${r.embedder ? ` (${r.embedder})` : ''}: ${count(r.conversations.length, 'conversation')}, ` +
      `${count(r.turns, 'turn')}, ${count(r.questions, 'question')}${r.questionsWithoutEvidence > 0 ? ` (${r.questionsWithoutEvidence} without evidence, left out)` : ''}`,
    '',
    line(header),
    ...cells.slice(0, -2).map(line),
    '-'.repeat(line(header).length),
    ...cells.slice(-2).map(line),
    '',
    `time: append ${t.append} ms, embed ${t.embed} ms, recall p50 ${t.queryP50} ms / p95 ${t.queryP95} ms, total ${(t.total / 1000).toFixed(1)} s`,
  ].join('\n');
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

export interface BenchNeedleArgs extends NeedleCliArgs {
  /** The global `--embedder` spec: Engram's hybrid recall uses it (`none`: full-text only). */
  embedder?: string;
  json?: boolean;
}

/**
 * `engram bench needle`: needle recall under forced compaction for Engram and the paper's baselines
 * (src/eval/needle/), or with `--replay FILE` a recorded transcript replayed and probed. Writes the report
 * (markdown, JSON, SVG) to `--out` (default bench/results/); `--json` prints the report.
 */
export async function benchNeedleCommand(args: BenchNeedleArgs, io: Io): Promise<number> {
  const plan = planNeedleRun(args);
  const tokenizer = createGptTokenizer();
  const summarizer = summarizerFromEnv(tokenizer);
  const embedder = await createEmbedderFromSpec(parseEmbedderSpec(args.embedder || process.env.ENGRAM_EMBEDDER || DEFAULT_EMBEDDER_SPEC));
  const progress = createProgress(io);
  try {
    if (plan.kind === 'replay') {
      const report = await runNeedleReplay({ ...plan, embedder, summarizer, tokenizer });
      const files = writeReplayReport(report, plan.outDir, plan.reportName);
      if (args.json) printJson(io, report);
      else io.out(formatReplaySummary(report, files));
      return EXIT.OK;
    }
    const report = await runNeedleBench({
      ...plan,
      embedder,
      summarizer,
      tokenizer,
      onProgress: (p) => progress.update(p.done, p.total, 'needle', p.done, 'events'),
    });
    progress.stop();
    const files = writeNeedleReport(report, plan.outDir, plan.reportName);
    if (args.json) printJson(io, report);
    else io.out(formatNeedleSummary(report, files));
    return EXIT.OK;
  } finally {
    progress.stop();
    await embedder?.close?.();
  }
}
