/**
 * Where one CLI command's time goes, from the V8 CPU profile `node --cpu-prof` writes: each sample is charged to the
 * phase of the innermost frame on its stack that names one (loading the word vectors, the token table, opening the
 * store, the search, module loading...), so a reader of bench/results/scale.md sees what a CLI recall spends its
 * start on. Node's own start before the profile begins is not in it (bench/scale.ts times `node -e 0` for that).
 */
import type { CpuProfile } from './cpu-profile.js';
import { round } from './stats.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

/** A phase and the test a stack frame passes to belong to it, innermost frame first. */
const PHASES: ReadonlyArray<{ phase: string; matches: (fn: string, url: string) => boolean }> = [
  { phase: 'token table (gpt-tokenizer o200k cache)', matches: (fn, url) => (fn === 'encoder' && url.endsWith('/gpt-tokenizer.js')) || url.endsWith('/bpe-cache.js') },
  { phase: 'word vectors (built-in embedder load)', matches: (fn, url) => fn === 'createBuiltinEmbedder' || url.includes('/providers/glove/glove-cache') || (fn === 'SentenceEncoder' && url.includes('/glove/')) },
  { phase: 'query embedding', matches: (fn, url) => fn === 'embed' && url.includes('/providers/') },
  { phase: 'embedding backlog check', matches: (fn, url) => fn === 'drainQueue' && url.includes('/cli/') },
  { phase: 'store open (connection, migrations check)', matches: (fn, url) => (fn === 'open' && url.includes('/store/sqlite/sqlite-backend.js')) || fn === 'openSqliteConnection' },
  { phase: 'search (full-text, vectors)', matches: (fn, url) => (fn === 'searchText' || fn === 'searchVectors') && url.includes('/store/') },
  { phase: 'token counting', matches: (fn, url) => fn === 'count' && (url.endsWith('/gpt-tokenizer.js') || url.endsWith('/bpe-encoder.js')) },
  { phase: 'recall: ranking, excerpts, packing', matches: (fn, url) => url.includes('/memory/recall') || url.includes('/memory/excerpt.js') },
  { phase: 'output', matches: (fn, url) => url.endsWith('/cli/output.js') || url.endsWith('/commands/recall.js') },
  {
    phase: 'module loading (resolve, read, compile, link, top-level code)',
    matches: (fn, url, line?: number) =>
      url.startsWith('node:internal/modules/') ||
      fn === 'compileSourceTextModule' ||
      (fn === '' && line === 0 && url.startsWith('file:')) ||
      // The bundle compiled through vm.Script with V8's code cache (bin/engram.js, src/interfaces/cli/code-cache.ts).
      (fn === 'Script' && url === 'node:vm') ||
      url.endsWith('/interfaces/cli/code-cache.js'),
  },
];

export interface PhaseTime {
  phase: string;
  ms: number;
  share: number;
}

/** Self time of the profile by phase, largest first; GC and time no phase names are their own rows. */
export function cliPhases(profile: CpuProfile): { totalMs: number; phases: PhaseTime[] } {
  const nodes = profile.nodes as ProfileNode[];
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const phaseOf = new Map<number, string>();
  const classify = (id: number): string => {
    const known = phaseOf.get(id);
    if (known !== undefined) return known;
    const { functionName: fn, url, lineNumber } = byId.get(id)!.callFrame;
    let phase: string | undefined;
    if (fn === '(garbage collector)') phase = 'garbage collection';
    else if (fn === '(idle)') phase = 'idle (waiting on I/O)';
    else {
      for (const p of PHASES) {
        if ((p.matches as (fn: string, url: string, line: number) => boolean)(fn, url, lineNumber)) {
          phase = p.phase;
          break;
        }
      }
    }
    if (phase === undefined) {
      const up = parent.get(id);
      phase = up === undefined ? 'other (Node internals, commander, engine setup)' : classify(up);
    }
    phaseOf.set(id, phase);
    return phase;
  };
  const us = new Map<string, number>();
  let total = 0;
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  samples.forEach((id, i) => {
    const d = Math.max(0, deltas[i] ?? 0);
    total += d;
    const phase = classify(id);
    us.set(phase, (us.get(phase) ?? 0) + d);
  });
  const phases = [...us.entries()]
    .map(([phase, t]) => ({ phase, ms: round(t / 1000, 1), share: total === 0 ? 0 : round(t / total, 3) }))
    .sort((a, b) => b.ms - a.ms);
  return { totalMs: round(total / 1000, 1), phases };
}
