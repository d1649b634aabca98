/**
 * A server's CPU profile by area: each sample is charged to the request step its call stack is in (recall,
 * append, ...), and recall's share split by what it was doing, so a report can say where a request's time goes
 * without reading a flame graph. Pure; reads the same `.cpuprofile` JSON as cpu-profile.ts.
 */
import { RECALL_STAGES } from '../../src/memory/recall/pipeline.js';
import type { CpuProfile } from './cpu-profile.js';

export interface AreaShare {
  area: string;
  ms: number;
  /** Share of the profile's sampled time, 0..1. */
  share: number;
}

export interface ProfileAreas {
  totalMs: number;
  areas: AreaShare[];
  /** Recall's time split by step; shares are of the whole profile. */
  recall: AreaShare[];
}

type Frame = { fn: string; url: string };

/** Areas in priority order: a sample goes to the first whose test matches a frame anywhere in its stack. */
const AREAS: Array<[string, (f: Frame) => boolean]> = [
  ['recall (POST /v1/recall)', (f) => f.url.includes('src/memory/recall') || (f.url.includes('src/view/engram-view.ts') && f.fn.startsWith('recall'))],
  ['append (POST /v1/events): validation, redaction, turn context, drafts', (f) => f.url.includes('src/memory/ingest.ts')],
  ['append: the group commit (SQLite inserts, FTS5, WAL)', (f) => f.url.includes('group-commit.ts')],
  ['identifier index catch-up (background)', (f) => f.url.includes('identifier-catch-up')],
  ['token authentication', (f) => f.url.includes('agent-registry.ts')],
  ['request schema validation (zod)', (f) => f.url.includes('node_modules/zod')],
  ['JSON body read and parse', (f) => f.fn === 'readJson'],
  ['HTTP: response write to the socket', (f) => f.fn === 'responseViaCache' || f.fn === 'responseViaResponseObject'],
  ['PostgreSQL client (pg: sending queries, parsing results)', (f) => /node_modules\/pg(-[a-z]+)?\//.test(f.url)],
  ['HTTP: request parsing and routing (node:http, Hono)', (f) => f.url.startsWith('node:_http') || f.url.includes('node_modules/hono') || f.url.includes('@hono/node-server')],
  ['module loading (start-up)', (f) => f.url.startsWith('node:internal/modules') || f.url.includes('node_modules/tsx')],
  ['garbage collection', (f) => f.fn === '(garbage collector)'],
  ['idle (waiting for requests or I/O)', (f) => f.fn === '(idle)'],
];

/**
 * Recall's time by pipeline stage (src/memory/recall/pipeline.ts). The store's full-text search, token counting and
 * the log write are named apart; any other sample goes to the outermost stage file on its stack (the stage the
 * pipeline called: a helper of another stage's file, called from it, counts for the caller).
 */
const RECALL_STEPS: Array<[string, (f: Frame) => boolean]> = [
  ['log: recall log write', (f) => f.url.includes('src/memory/recall/log.ts')],
  ['candidates: full-text search (FTS5 matching, bm25, visibility)', (f) => f.fn === 'searchText'],
  ['pack and render: token counting', (f) => f.url.includes('bpe-encoder') || f.url.includes('gpt-tokenizer')],
];
const STAGE_FILES = RECALL_STAGES.map(({ name, file }) => ({ name, path: `src/memory/recall/${file}` }));

/** The recall step a sample's stack (leaf first) is charged to. */
function recallStep(stack: readonly Frame[]): string {
  const named = RECALL_STEPS.find(([, test]) => stack.some(test))?.[0];
  if (named) return named;
  for (let i = stack.length - 1; i >= 0; i--) {
    const stage = STAGE_FILES.find((s) => stack[i]!.url.includes(s.path));
    if (stage) return stage.name;
  }
  return stack.some((f) => f.url.includes('src/memory/recall/options.ts')) ? 'options and validation' : 'the rest (orchestration, HTTP handler, view)';
}

export function profileAreas(profile: CpuProfile): ProfileAreas {
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of (n as { children?: number[] }).children ?? []) parent.set(c, n.id);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const us = new Map<number, number>();
  (profile.samples ?? []).forEach((id, i) => us.set(id, (us.get(id) ?? 0) + Math.max(0, profile.timeDeltas?.[i] ?? 0)));
  const areaUs = new Map<string, number>();
  const stepUs = new Map<string, number>();
  let total = 0;
  for (const [id, t] of us) {
    total += t;
    const stack: Frame[] = [];
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur)!.callFrame;
      stack.push({ fn: f.functionName, url: f.url.replace(/^file:\/\//, '') });
    }
    const area = AREAS.find(([, test]) => stack.some(test))?.[0] ?? 'other';
    areaUs.set(area, (areaUs.get(area) ?? 0) + t);
    if (area === AREAS[0]![0]) {
      const step = recallStep(stack);
      stepUs.set(step, (stepUs.get(step) ?? 0) + t);
    }
  }
  const list = (m: Map<string, number>): AreaShare[] =>
    [...m].sort((a, b) => b[1] - a[1]).map(([area, t]) => ({ area, ms: Math.round(t / 1000), share: total === 0 ? 0 : Math.round((t / total) * 1000) / 1000 }));
  return { totalMs: Math.round(total / 1000), areas: list(areaUs), recall: list(stepUs) };
}
