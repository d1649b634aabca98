/**
 * CLI start with each code cache (src/interfaces/cli/code-cache.ts): Node's own compile cache (`node`, Node 22.1+),
 * the hand-written V8 cache (`vm`) and none (`off`), chosen with ENGRAM_CODE_CACHE, on one Node binary.
 *
 *   node --import tsx bench/cli-compile-cache.ts [--node /path/to/node] [--engram /path/to/bin/engram.js] [--runs 30] [--out NAME]
 *
 * `--engram` defaults to this checkout's launcher; for another Node version, point it at an install whose
 * better-sqlite3 is built for that Node (e.g. the packed package installed into a folder, `npm rebuild better-sqlite3
 * --nodedir=<that Node's headers>`). Each command runs once per cache kind first (a cold start that writes the cache),
 * then `--runs` rounds in which the kinds take turns, so a change in the machine's load hits them alike. Wall time of
 * the whole process, spawn to exit, and its CPU time (read by a `--import` hook at exit; the same hook for every kind). Writes bench/results/<out>.md and .json (default out: cli-compile-cache).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({
  options: {
    node: { type: 'string', default: process.execPath },
    engram: { type: 'string', default: join(REPO, 'bin/engram.js') },
    runs: { type: 'string', default: '30' },
    out: { type: 'string', default: 'cli-compile-cache' },
  },
});
const node = resolve(values.node);
const engram = resolve(values.engram);
const runs = Number(values.runs);

const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
const hasNodeCache = spawnSync(node, ['-p', "typeof require('node:module').enableCompileCache"], { encoding: 'utf8' }).stdout.trim() === 'function';
const kinds = hasNodeCache ? (['node', 'vm', 'off'] as const) : (['vm', 'off'] as const);
type Kind = (typeof kinds)[number];

const dir = mkdtempSync(join(tmpdir(), 'engram-cc-bench-'));
const db = join(dir, 'store.db');
const env = (kind: Kind): NodeJS.ProcessEnv => ({
  ...process.env,
  ENGRAM_CACHE_DIR: join(dir, `cache-${kind}`),
  ENGRAM_CODE_CACHE: kind === 'off' ? '0' : kind,
  ENGRAM_EMBEDDER: 'none',
  ENGRAM_DB: '',
  ENGRAM_PG_URL: '',
});

/**
 * Prints the process's CPU time (user + system, all threads, µs) to stderr when it exits: on 2 shared cores under a
 * load average far above 2, wall time mostly measures the wait for a core, CPU time what the start itself costs.
 */
const CPU_HOOK = `data:text/javascript,process.on('exit',()=>{const u=process.cpuUsage();process.stderr.write('\\nENGRAM_BENCH_CPU '+(u.user+u.system)+'\\n')})`;

/** Runs `engram ARGS`; its wall time and CPU time in ms. */
function time(kind: Kind, args: string[]): { wallMs: number; cpuMs: number } {
  const started = performance.now();
  const r = spawnSync(node, ['--import', CPU_HOOK, engram, '--db', db, ...args], { cwd: dir, env: env(kind), encoding: 'utf8' });
  const wallMs = performance.now() - started;
  if (r.status !== 0) throw new Error(`engram ${args.join(' ')} (${kind}) exited ${String(r.status)}: ${r.stderr}`);
  const cpu = /ENGRAM_BENCH_CPU (\d+)/.exec(r.stderr);
  if (!cpu) throw new Error(`engram ${args.join(' ')} (${kind}) printed no CPU time: ${r.stderr}`);
  return { wallMs, cpuMs: Number(cpu[1]) / 1000 };
}

const commands: Record<string, string[]> = {
  '--version': ['--version'],
  'recall (full-text, demo store)': ['recall', 'ECONNREFUSED', '--retriever', 'fts'],
};

try {
  const ingest = spawnSync(node, [engram, '--db', db, 'ingest', join(REPO, 'examples/demo-session.jsonl')], { cwd: dir, env: env('off'), encoding: 'utf8' });
  if (ingest.status !== 0) throw new Error(`ingest failed: ${ingest.stderr}`);
  const loadBefore = loadavg().map((l) => Math.round(l * 100) / 100);
  type Row = { command: string; kind: Kind; cold: { wallMs: number; cpuMs: number }; wall: Quantiles; cpu: Quantiles };
  const rows: Row[] = [];
  for (const [label, args] of Object.entries(commands)) {
    const cold = Object.fromEntries(kinds.map((k) => [k, time(k, args)])) as Record<Kind, { wallMs: number; cpuMs: number }>;
    const samples = Object.fromEntries(kinds.map((k) => [k, [] as Array<{ wallMs: number; cpuMs: number }>])) as Record<Kind, Array<{ wallMs: number; cpuMs: number }>>;
    for (let i = 0; i < runs; i++) for (const k of kinds) samples[k].push(time(k, args));
    for (const k of kinds) {
      rows.push({
        command: label,
        kind: k,
        cold: { wallMs: round(cold[k].wallMs), cpuMs: round(cold[k].cpuMs) },
        wall: quantiles(samples[k].map((x) => x.wallMs)),
        cpu: quantiles(samples[k].map((x) => x.cpuMs)),
      });
    }
  }
  const loadAfter = loadavg().map((l) => Math.round(l * 100) / 100);
  const command = `node --import tsx bench/cli-compile-cache.ts --node <node ${version}> --runs ${runs}`;
  const report = {
    when: new Date().toISOString(),
    node: version,
    engram,
    runs,
    command,
    loadAverage: { before: loadBefore, after: loadAfter },
    rows,
  };
  const md = `# CLI start by code cache (${version})

\`${command}\` (${runs} rounds after one cold start each; the kinds take turns; ms: wall time spawn to exit, and the process's
CPU time, user + system, read at its exit). Load
average ${loadBefore.join(' / ')} before, ${loadAfter.join(' / ')} after, on 2 shared cores. \`node\`: Node's compile
cache (\`module.enableCompileCache\`), \`vm\`: the hand-written V8 cache, \`off\`: \`ENGRAM_CODE_CACHE=0\`.

| command | cache | cold: wall / CPU | CPU p50 | CPU p90 | CPU min | wall p50 | wall p90 | wall min |
| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
${rows.map((r) => `| ${r.command} | ${r.kind} | ${r.cold.wallMs} / ${r.cold.cpuMs} | ${r.cpu.p50} | ${r.cpu.p90} | ${r.cpu.min} | ${r.wall.p50} | ${r.wall.p90} | ${r.wall.min} |`).join('\n')}
`;
  const base = resolve(REPO, 'bench/results', values.out);
  writeFileSync(`${base}.json`, JSON.stringify(report, null, 2) + '\n');
  writeFileSync(`${base}.md`, md);
  console.log(md);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

interface Quantiles {
  p50: number;
  p90: number;
  min: number;
}

function quantiles(values: number[]): Quantiles {
  const s = [...values].sort((a, b) => a - b);
  const at = (q: number) => round(s[Math.min(s.length - 1, Math.floor(q * s.length))]!);
  return { p50: at(0.5), p90: at(0.9), min: round(s[0]!) };
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}
