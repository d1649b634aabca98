/**
 * The phrase class of bench/scale.ts on PostgreSQL, this tree against a baseline tree (issue #14): recall of the
 * same quoted phrases (`recall(q, { retriever: 'fts' })`, k 10, the recall log off) on the kept scale store
 * (schema `engram_scale_<events>`, built by `npm run bench -- scale`; only read), each round a child process per
 * tree (so the planner's count cache starts empty, as in the scale run), alternating which tree goes first, so both
 * see the same machine load. Written for the planner change that stopped counting a lone phrase
 * (src/store/postgres/tsquery-planner.ts, `NOT_COUNTED`): the baseline is the commit before it.
 *
 *   npx tsx bench/pg-phrase-recall-ab.ts --baseline-tree DIR [--events 100000] [--queries 25] [--rounds 3]
 *
 * DIR: `mkdir DIR && git archive <commit> | tar -x -C DIR && ln -s $PWD/node_modules DIR/node_modules`.
 * Writes bench/results/pg-phrase-recall-ab.{md,json}.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { benchPgUrl } from './lib/bench-stores.js';
import { machineLine, round, summarize } from './lib/stats.js';
import { scalePhraseQueries } from './scale.js';

const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));
const WARM_UP = 3;

interface RunResult {
  p50: number;
  p95: number;
  totalMs: number;
  hits: number;
}

interface TreeRows {
  tree: 'baseline' | 'current';
  runs: RunResult[];
  loadAverages: number[][];
}

function runChild(tree: string, events: number, queries: string[]): Promise<RunResult> {
  return new Promise((done, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--child', tree, String(events), JSON.stringify(queries)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('exit', (code) => (code === 0 ? done(JSON.parse(out.trim().split('\n').at(-1)!) as RunResult) : reject(new Error(`child exited ${code}`))));
  });
}

/** The child: the tree's engine on the kept store, the warm-up queries, then each phrase timed once. */
async function child(tree: string, events: number, queries: string[]): Promise<void> {
  const engine = (await import(pathToFileURL(join(tree, 'src/engine.ts')).href)) as typeof import('../src/engine.js');
  const url = benchPgUrl();
  const mem = await engine.openEngram({ pg: `${url}${url.includes('?') ? '&' : '?'}schema=engram_scale_${events}` });
  try {
    for (const q of queries.slice(queries.length - WARM_UP)) await mem.recall(q, { retriever: 'fts', logRecall: false });
    const ms: number[] = [];
    let hits = 0;
    for (const q of queries.slice(0, queries.length - WARM_UP)) {
      const t = performance.now();
      const r = await mem.recall(q, { retriever: 'fts', logRecall: false });
      ms.push(performance.now() - t);
      hits += r.hits.length;
    }
    const s = summarize(ms);
    process.stdout.write(`${JSON.stringify({ p50: round(s.p50, 1), p95: round(s.p95, 1), totalMs: round(ms.reduce((a, b) => a + b, 0), 0), hits })}\n`);
  } finally {
    await mem.close();
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { 'baseline-tree': { type: 'string' }, events: { type: 'string', default: '100000' }, queries: { type: 'string', default: '25' }, rounds: { type: 'string', default: '3' } },
  });
  if (values['baseline-tree'] === undefined) throw new Error('--baseline-tree DIR is required');
  const events = Number(values.events);
  const count = Number(values.queries);
  const rounds = Number(values.rounds);
  // The scale run's phrases, and WARM_UP more from a larger draw for the warm-up (so the timed ones are not warmed).
  const timed = scalePhraseQueries(events, count);
  const warm = scalePhraseQueries(events, count * 2).filter((q) => !timed.includes(q)).slice(0, WARM_UP);
  const queries = [...timed, ...warm];
  const rows: Record<'baseline' | 'current', TreeRows> = {
    baseline: { tree: 'baseline', runs: [], loadAverages: [] },
    current: { tree: 'current', runs: [], loadAverages: [] },
  };
  for (let r = 0; r < rounds; r++) {
    const order: Array<'baseline' | 'current'> = r % 2 === 0 ? ['baseline', 'current'] : ['current', 'baseline'];
    for (const tree of order) {
      const result = await runChild(tree === 'baseline' ? resolve(values['baseline-tree']) : REPO_ROOT, events, queries);
      rows[tree].runs.push(result);
      rows[tree].loadAverages.push(loadavg().map((l) => round(l, 2)));
      console.error(`${tree} round ${r + 1}: ${JSON.stringify(result)}, load ${loadavg()[0]!.toFixed(2)}`);
    }
  }
  const when = new Date().toISOString();
  const command = `npx tsx bench/pg-phrase-recall-ab.ts --baseline-tree ${values['baseline-tree']} --events ${events} --queries ${count} --rounds ${rounds}`;
  const line = (t: TreeRows): string =>
    `| ${t.tree} | ${median(t.runs.map((x) => x.p50))} | ${median(t.runs.map((x) => x.p95))} | ${median(t.runs.map((x) => x.totalMs))} | ${t.runs.map((x) => `${x.p50} / ${x.p95}`).join(', ')} | ${t.runs.map((x) => x.hits).join(', ')} | ${t.loadAverages.map((l) => l[0]).join(', ')} |`;
  const md = `# PostgreSQL phrase recall: this tree against a baseline (issue #14)

Last written by \`${command}\` on ${when} (${machineLine()}).
${count} quoted phrases of bench/scale.ts's phrase class (three consecutive words of sampled dialogue events), recall
with the full-text retriever (k 10) on the kept scale store \`engram_scale_${events}\`, after ${WARM_UP} warm-up
phrases; one child process per tree and round (the planner's count cache empty at its start, as in a scale run),
alternating. Medians over ${rounds} rounds; ms.

| tree | recall p50 | recall p95 | all ${count} recalls | p50 / p95 per round | hits per round | load average (1 min) per run |
| --- | ---: | ---: | ---: | --- | --- | --- |
${line(rows.baseline)}
${line(rows.current)}
`;
  writeFileSync('bench/results/pg-phrase-recall-ab.md', md);
  writeFileSync('bench/results/pg-phrase-recall-ab.json', `${JSON.stringify({ when, command, machine: machineLine(), events, queries: timed, rows }, null, 2)}\n`);
  console.log(md);
}

if (process.argv[2] === '--child') await child(process.argv[3]!, Number(process.argv[4]), JSON.parse(process.argv[5]!) as string[]);
else await main();
