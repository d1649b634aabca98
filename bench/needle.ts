/**
 * Needle recall under forced compaction (ENGRAM §10, §10A, Annex A.8), for Engram and the paper's baselines.
 * A thin wrapper: the harness is src/eval/needle/ (the code behind `engram bench needle`), so the committed
 * report and the product's command measure the same thing. Writes bench/results/needle.{md,json} and
 * needle-recall.svg, needle-false-recall.svg (quick and custom runs write needle-quick.*, needle-custom.*).
 *
 *   npm run bench -- needle [--quick] [--seed 1,2] [--window 32000] [--cycles 1,3,5] [--json] [--out DIR]
 *                           [--replay FILE [--format F] [--session S]] [--traces N] [--needles-per-type N] [--consolidate]
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { formatNeedleSummary, formatReplaySummary, planNeedleRun } from '../src/eval/needle/cli-options.js';
import { runNeedleBench } from '../src/eval/needle/needle-bench.js';
import { runNeedleReplay } from '../src/eval/needle/replay.js';
import { writeReplayReport } from '../src/eval/needle/replay-report.js';
import { writeNeedleReport } from '../src/eval/needle/report.js';
import { summarizerFromEnv } from '../src/eval/needle/summarizer.js';
import { createBuiltinEmbedder } from '../src/providers/builtin-embedder.js';
import { createGptTokenizer } from '../src/providers/gpt-tokenizer.js';

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Parses the needle flags of `npm run bench -- needle ...` and runs it. */
export async function runNeedleCli(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean' },
      seed: { type: 'string' },
      window: { type: 'string' },
      cycles: { type: 'string' },
      out: { type: 'string' },
      json: { type: 'boolean' },
      replay: { type: 'string' },
      format: { type: 'string' },
      session: { type: 'string' },
      traces: { type: 'string' },
      'needles-per-type': { type: 'string' },
      consolidate: { type: 'boolean' },
    },
  });
  const { 'needles-per-type': needlesPerType, json, ...rest } = values;
  const plan = planNeedleRun({ ...rest, ...(needlesPerType !== undefined ? { needlesPerType } : {}) }, REPO_ROOT);
  const tokenizer = createGptTokenizer();
  const summarizer = summarizerFromEnv(tokenizer);
  const embedder = await createBuiltinEmbedder();
  try {
    if (plan.kind === 'replay') {
      const report = await runNeedleReplay({ ...plan, embedder, summarizer, tokenizer });
      const files = writeReplayReport(report, plan.outDir, plan.reportName);
      console.log(json ? JSON.stringify(report, null, 2) : formatReplaySummary(report, files));
      return;
    }
    const report = await runNeedleBench({
      ...plan,
      embedder,
      summarizer,
      tokenizer,
      onProgress: (p) => {
        // One line per ten traces in a log; a counter in place on a terminal.
        if (process.stderr.isTTY) process.stderr.write(`\rneedle: seed ${p.seed} trace ${p.trace + 1} (${p.done}/${p.total})   `);
        else if (p.done % 10 === 0 || p.done === p.total) process.stderr.write(`needle: ${p.done}/${p.total} traces\n`);
      },
    });
    if (process.stderr.isTTY) process.stderr.write('\n');
    const files = writeNeedleReport(report, plan.outDir, plan.reportName);
    console.log(json ? JSON.stringify(report, null, 2) : formatNeedleSummary(report, files));
  } finally {
    await embedder.close?.();
  }
}
