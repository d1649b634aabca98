/**
 * `npm run bench -- artifact-lifecycle [--backends sqlite,postgres] [--quick]`: the artifact lifecycle (memory/
 * artifact-lifecycle.ts) on a realistic mix of large tool outputs taken from this repository (REAL files, cut like
 * agents read them): TypeScript sources (Read), JSON documents (bench reports, package.json, tsconfig), tool logs
 * (`git log --stat` in 32 KiB pieces) and a few PNG screenshots (already compressed). Measured per backend: bytes
 * as stored at ingest (brotli quality 1) against the cold copies (quality 11, 16 MiB window), per kind; the time
 * the move takes; and the latency of reading an artifact back (Engram.readArtifact) hot and cold.
 * Writes bench/results/artifact-lifecycle.{md,json}.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { openEngram } from '../src/engine.js';
import { runArtifactLifecycle } from '../src/memory/artifact-lifecycle.js';
import type { EventInput } from '../src/model/event.js';
import { createBenchStore, type BenchBackend } from './lib/bench-stores.js';
import { machineLine, summarize } from './lib/stats.js';

type Kind = 'source' | 'json' | 'log' | 'binary';

interface Sample {
  kind: Kind;
  name: string;
  bytes: Buffer;
}

/** Files under `dir` (recursively) whose names end with `suffix`, sorted. */
function filesUnder(dir: string, suffix: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(path, suffix));
    else if (entry.name.endsWith(suffix)) out.push(path);
  }
  return out.sort();
}

/** The mix: every artifact is over the 4 KiB cut, so each becomes an artifact at ingest. */
function artifactMix(quick: boolean): Sample[] {
  const n = quick ? 10 : 80;
  const big = (path: string) => statSync(path).size > 4096;
  const sources = filesUnder('src', '.ts').filter((p) => !p.endsWith('.test.ts') && big(p)).slice(0, n);
  const json = [...filesUnder('bench/results', '.json'), 'package.json', 'tsconfig.json'].filter(big).slice(0, Math.ceil(n / 3));
  const gitLog = execFileSync('git', ['log', '--stat', '-n', quick ? '200' : '1500'], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  const logs: Sample[] = [];
  for (let i = 0; i < gitLog.length && logs.length < Math.ceil(n / 2); i += 32 * 1024) {
    logs.push({ kind: 'log', name: `git log --stat [${i}..]`, bytes: Buffer.from(gitLog.slice(i, i + 32 * 1024)) });
  }
  const images = filesUnder('docs', '.png').filter(big).slice(0, quick ? 1 : 4);
  return [
    ...sources.map((p) => ({ kind: 'source' as const, name: p, bytes: readFileSync(p) })),
    ...json.map((p) => ({ kind: 'json' as const, name: p, bytes: readFileSync(p) })),
    ...logs,
    ...images.map((p) => ({ kind: 'binary' as const, name: p, bytes: readFileSync(p) })),
  ];
}

function toEvent(s: Sample): EventInput {
  if (s.kind === 'binary') return { kind: 'tool_result', toolName: 'Screenshot', content: s.name, binary: { base64: s.bytes.toString('base64'), mediaType: 'image/png' } };
  return { kind: 'tool_result', toolName: s.kind === 'log' ? 'Bash' : 'Read', content: s.bytes.toString('utf8') };
}

interface BackendResult {
  backend: BenchBackend;
  artifacts: number;
  byKind: Record<string, { artifacts: number; originalBytes: number; hotBytes: number; coldBytes: number }>;
  originalBytes: number;
  hotBytes: number;
  coldBytes: number;
  moveMs: number;
  readHotMs: ReturnType<typeof summarize>;
  readColdMs: ReturnType<typeof summarize>;
  loadAverage: number[];
}

async function runBackend(backend: BenchBackend, mix: Sample[], reads: number): Promise<BackendResult> {
  const store = await createBenchStore(backend);
  const mem = await openEngram(store.location);
  try {
    const kindOf = new Map<string, Kind>();
    const ids: string[] = [];
    for (let i = 0; i < mix.length; i += 20) {
      const out = await mem.append(`bench-${i}`, mix.slice(i, i + 20).map(toEvent));
      for (const [j, o] of out.entries()) {
        const id = o.record.artifact?.id;
        if (id !== undefined && !kindOf.has(id)) {
          kindOf.set(id, mix[i + j]!.kind);
          ids.push(id);
        }
      }
    }
    const hotSizes = new Map<string, number>();
    for (const id of ids) hotSizes.set(id, (await mem.store.getArtifact(id as never))!.record.storedBytes);
    const timeReads = async (): Promise<number[]> => {
      const samples: number[] = [];
      for (let r = 0; r < reads; r++) {
        for (const id of ids) {
          const t = performance.now();
          await mem.readArtifact(id);
          samples.push(performance.now() - t);
        }
      }
      return samples;
    };
    // One untimed pass first: the first reads pay for JIT and cold caches, which would be charged to the hot tier.
    for (const id of ids) await mem.readArtifact(id);
    const readHot = await timeReads();
    const t0 = performance.now();
    const report = await runArtifactLifecycle(mem.store, { olderThanMs: 0, nowMs: Date.now() + 1000 });
    const moveMs = performance.now() - t0;
    if (report.failures.length > 0 || report.moved !== ids.length) throw new Error(`lifecycle moved ${report.moved} of ${ids.length}: ${JSON.stringify(report.failures)}`);
    const readCold = await timeReads();
    const byKind: BackendResult['byKind'] = {};
    for (const id of ids) {
      const cold = (await mem.store.getArtifact(id as never))!;
      const k = (byKind[kindOf.get(id)!] ??= { artifacts: 0, originalBytes: 0, hotBytes: 0, coldBytes: 0 });
      k.artifacts++;
      k.originalBytes += cold.record.sizeBytes;
      k.hotBytes += hotSizes.get(id)!;
      k.coldBytes += cold.record.storedBytes;
    }
    return {
      backend,
      artifacts: ids.length,
      byKind,
      originalBytes: report.originalBytes,
      hotBytes: report.hotBytes,
      coldBytes: report.coldBytes,
      moveMs,
      readHotMs: summarize(readHot),
      readColdMs: summarize(readCold),
      loadAverage: loadavg().map((l) => Math.round(l * 100) / 100),
    };
  } finally {
    await mem.close();
    await store.cleanup();
  }
}

const kb = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
const pct = (a: number, b: number) => `${((100 * a) / b).toFixed(1)} %`;

export async function runArtifactLifecycleBench(options: { backends: BenchBackend[]; quick: boolean }): Promise<void> {
  const mix = artifactMix(options.quick);
  const reads = options.quick ? 2 : 5;
  const results: BackendResult[] = [];
  for (const backend of options.backends) {
    results.push(await runBackend(backend, mix, reads));
    console.log(`artifact-lifecycle: ${backend} done`);
  }
  const lines = [
    '# Artifact lifecycle: bytes and rehydration',
    '',
    `\`npm run bench -- artifact-lifecycle${options.quick ? ' --quick' : ''} --backends ${options.backends.join(',')}\`; ${machineLine()}; ${new Date().toISOString().slice(0, 10)}.`,
    '',
    `The mix (REAL content from this repository, cut as agents read it): ${mix.length} tool outputs, ${kb(mix.reduce((n, s) => n + s.bytes.byteLength, 0))}: TypeScript sources, JSON documents, \`git log --stat\` in 32 KiB pieces, PNG screenshots. ` +
      'Hot = as stored at ingest (brotli quality 1, or as-is when that does not shrink it); cold = the lifecycle\'s copy (brotli quality 11, 16 MiB window, or as-is). ' +
      `Reads: \`Engram.readArtifact\` of every artifact, ${reads} times each after one untimed pass, before and after the move (decompression and, cold, the digest checks included).`,
    '',
  ];
  for (const r of results) {
    lines.push(`## ${r.backend} (load average ${r.loadAverage.join(' / ')} on 2 cores)`, '');
    lines.push('| kind | artifacts | original | hot | cold | cold / hot |', '| --- | ---: | ---: | ---: | ---: | ---: |');
    for (const [kind, k] of Object.entries(r.byKind)) lines.push(`| ${kind} | ${k.artifacts} | ${kb(k.originalBytes)} | ${kb(k.hotBytes)} | ${kb(k.coldBytes)} | ${pct(k.coldBytes, k.hotBytes)} |`);
    lines.push(`| **all** | ${r.artifacts} | ${kb(r.originalBytes)} | ${kb(r.hotBytes)} | ${kb(r.coldBytes)} | ${pct(r.coldBytes, r.hotBytes)} |`, '');
    lines.push(
      `Move: ${(r.moveMs / 1000).toFixed(1)} s for ${r.artifacts} artifacts (${((r.originalBytes / 1024 / 1024) / (r.moveMs / 1000)).toFixed(2)} MB/s of original bytes, compression on the thread pool included).`,
      '',
      '| read | p50 ms | p95 ms | mean ms |',
      '| --- | ---: | ---: | ---: |',
      `| hot | ${r.readHotMs.p50.toFixed(2)} | ${r.readHotMs.p95.toFixed(2)} | ${r.readHotMs.mean.toFixed(2)} |`,
      `| cold | ${r.readColdMs.p50.toFixed(2)} | ${r.readColdMs.p95.toFixed(2)} | ${r.readColdMs.mean.toFixed(2)} |`,
      '',
    );
  }
  writeFileSync('bench/results/artifact-lifecycle.md', `${lines.join('\n')}\n`);
  writeFileSync('bench/results/artifact-lifecycle.json', `${JSON.stringify({ date: new Date().toISOString(), machine: machineLine(), quick: options.quick, results }, null, 2)}\n`);
  console.log(lines.join('\n'));
}
