/**
 * What the identifier index costs at append, and what its catch-up costs after (issue #14): the same agent trace
 * appended in batches of 500 per session (as bench/scale.ts's ingest part) by this tree, whose appends leave the
 * identifier index to the catch-up (`mem.maintainTextIndex()`, timed after the last append), and by a baseline tree
 * whose appends wrote the index's keys themselves (an extracted copy of an earlier commit, `--baseline-tree`), on
 * SQLite and PostgreSQL, alternating baseline and current so both see the same machine load. Each run is a child
 * process on a new store; the report gives wall time and the child's CPU time (user + system: on 2 shared cores the
 * CPU time moves less with other work than the wall time), medians over the rounds, with load averages.
 *
 *   npm run bench -- identifier-append-cost --baseline-tree DIR [--events 20000] [--backends sqlite,postgres] [--rounds 3]
 *
 * DIR: `mkdir DIR && git archive <commit> | tar -x -C DIR && ln -s $PWD/node_modules DIR/node_modules`.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { agentTrace, appendTraceInBatches } from './lib/agent-trace.js';
import { benchPgUrl } from './lib/bench-stores.js';
import { machineLine, round } from './lib/stats.js';

const BATCH = 500;
const SEED = 42;
const REPO_ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface IdentifierAppendCostArgs {
  baselineTree: string;
  events: number;
  backends: Array<'sqlite' | 'postgres'>;
  rounds: number;
}

/** One child run: appends, then the catch-up. Seconds; CPU is the child's user + system time. */
interface RunResult {
  appendWallS: number;
  appendCpuS: number;
  catchUpWallS: number;
  catchUpCpuS: number;
  /** The store's identifier index after the catch-up (the baseline's is complete at once). */
  state: string;
}

interface Row {
  backend: string;
  tree: 'baseline' | 'current';
  runs: RunResult[];
  loadAverages: number[][];
}

export async function runIdentifierAppendCost(args: IdentifierAppendCostArgs): Promise<void> {
  const rows: Row[] = [];
  for (const backend of args.backends) {
    const byTree = { baseline: { backend, tree: 'baseline', runs: [], loadAverages: [] } as Row, current: { backend, tree: 'current', runs: [], loadAverages: [] } as Row };
    for (let r = 0; r < args.rounds; r++) {
      // Alternating, the baseline first in even rounds and second in odd ones.
      const order: Array<'baseline' | 'current'> = r % 2 === 0 ? ['baseline', 'current'] : ['current', 'baseline'];
      for (const tree of order) {
        const result = await runChild(tree === 'baseline' ? resolve(args.baselineTree) : REPO_ROOT, backend, args.events);
        byTree[tree].runs.push(result);
        byTree[tree].loadAverages.push(loadavg().map((l) => round(l, 2)));
        console.error(`${backend} ${tree} round ${r + 1}: ${JSON.stringify(result)}`);
      }
    }
    rows.push(byTree.baseline, byTree.current);
  }
  writeReport(args, rows);
}

function runChild(tree: string, backend: 'sqlite' | 'postgres', events: number): Promise<RunResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--child', tree, backend, String(events)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('exit', (code) => (code === 0 ? resolvePromise(JSON.parse(out.trim().split('\n').at(-1)!) as RunResult) : reject(new Error(`child exited ${code}`))));
  });
}

/** The child: opens the engine of `tree`, appends the trace to a new store, then runs the catch-up. */
async function child(tree: string, backend: 'sqlite' | 'postgres', events: number): Promise<void> {
  const engine = (await import(pathToFileURL(join(tree, 'src/engine.ts')).href)) as typeof import('../src/engine.js');
  const dir = mkdtempSync(join(tmpdir(), 'engram-idcost-'));
  const schema = `engram_idcost_${process.pid}`;
  const pgUrl = backend === 'postgres' ? benchPgUrl() : '';
  const location = backend === 'sqlite' ? { db: join(dir, 'engram.db') } : { pg: `${pgUrl}${pgUrl.includes('?') ? '&' : '?'}schema=${schema}` };
  const mem = await engine.openEngram(location);
  try {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await appendTraceInBatches((s, list) => mem.append(s, list), agentTrace(events, { seed: SEED }), BATCH);
    const appendWallS = (performance.now() - t0) / 1000;
    const cpu1 = process.cpuUsage(cpu0);
    const t1 = performance.now();
    const done = (await mem.maintainTextIndex()) as { state: string };
    const catchUpWallS = (performance.now() - t1) / 1000;
    const cpu2 = process.cpuUsage(cpu0);
    const cpuS = (c: NodeJS.CpuUsage): number => (c.user + c.system) / 1e6;
    const result: RunResult = {
      appendWallS: round(appendWallS, 2),
      appendCpuS: round(cpuS(cpu1), 2),
      catchUpWallS: round(catchUpWallS, 2),
      catchUpCpuS: round(cpuS(cpu2) - cpuS(cpu1), 2),
      state: done.state,
    };
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    await mem.close();
    rmSync(dir, { recursive: true, force: true });
    if (backend === 'postgres') {
      const pg = (await import('pg')).default;
      const c = new pg.Client({ connectionString: pgUrl });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await c.end();
    }
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

function writeReport(args: IdentifierAppendCostArgs, rows: Row[]): void {
  const when = new Date().toISOString();
  const command = `npm run bench -- identifier-append-cost --baseline-tree ${args.baselineTree} --events ${args.events} --backends ${args.backends.join(',')} --rounds ${args.rounds}`;
  const line = (r: Row): string => {
    const m = (k: keyof Omit<RunResult, 'state'>): number => round(median(r.runs.map((x) => x[k])), 2);
    const rate = (s: number): string => Math.round(args.events / s).toLocaleString('en');
    return `| ${r.backend} | ${r.tree} | ${m('appendWallS')} (${rate(m('appendWallS'))}/s) | ${m('appendCpuS')} | ${m('catchUpWallS')} | ${m('catchUpCpuS')} | ${round(m('appendWallS') + m('catchUpWallS'), 2)} (${rate(m('appendWallS') + m('catchUpWallS'))}/s) | ${r.loadAverages.map((l) => l[0]).join(', ')} |`;
  };
  const md = `# Identifier index: cost at append and catch-up (issue #14)

Last written by \`${command}\` on ${when} (${machineLine()}).
${args.events.toLocaleString('en')} agent-trace events (bench/lib/agent-trace.ts, seed ${SEED}) appended in batches of ${BATCH} per session to a new
store, then \`mem.maintainTextIndex()\`. Baseline: the tree in \`--baseline-tree\`, whose appends computed and wrote the
identifier index's keys in the append's transaction. Current: this tree, whose appends leave them to the catch-up
(SQLite: past a watermark; PostgreSQL: a queue row per event). Medians of ${args.rounds} runs each, alternating;
seconds; CPU = the Node process's user + system time (PostgreSQL's own server work is not in it, only in the wall time).

| backend | tree | appends wall s (events/s) | appends CPU s | catch-up wall s | catch-up CPU s | appends + catch-up wall s (events/s) | load average (1 min) per run |
| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |
${rows.map(line).join('\n')}
`;
  writeFileSync(join(REPO_ROOT, 'bench/results/identifier-append-cost.md'), md);
  writeFileSync(join(REPO_ROOT, 'bench/results/identifier-append-cost.json'), `${JSON.stringify({ when, command, machine: machineLine(), args, rows }, null, 2)}\n`);
  console.log(md);
}

if (process.argv[2] === '--child') {
  await child(process.argv[3]!, process.argv[4] as 'sqlite' | 'postgres', Number(process.argv[5]));
}
