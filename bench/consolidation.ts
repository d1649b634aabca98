/**
 * `npm run bench -- consolidation [--seed 42] [--quick]`: the summary DAG over a generated long multi-session trace
 * (SYNTHETIC: one made-up project worked on for four months, dozens of sessions over simulated weeks, with decisions,
 * error codes and long tool logs). Three classes of questions, each answered within the same evidence budget:
 *
 * - strategic ("What did we decide about storage in March?"): answer-bearing = a decision of that theme made in that
 *   month is quoted in the evidence;
 * - thematic ("How did the work on storage go overall?"): answer-bearing = the share of that theme's decisions quoted;
 * - exact ("Which file fixed ERR_STORAGE_1042?"): answer-bearing = the file path named with the error is quoted.
 *
 * Evidence comes from raw recall over events (no summaries), from summary search at one depth (0 session, 1 arc,
 * 2 epoch) or at any depth, and from both (half the budget each). Also measured: consolidation time and tokens per
 * session, arc and epoch at each level (deterministic here; an LLM only when ENGRAM_LLM_URL is set) and the share
 * of sessions the significance gate skipped. Writes bench/results/consolidation.{md,json}.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { openEngram, type Engram } from '../src/engine.js';
import type { ChatModel } from '../src/providers/llm/chat-model.js';
import type { EventInput } from '../src/model/event.js';
import type { SummaryDepth } from '../src/model/summary.js';
import { machineLine } from './lib/stats.js';
import { Prng } from './lib/prng.js';

export const THEMES: Record<string, string[]> = {
  storage: ['move the team server to PostgreSQL 16', 'keep SQLite in WAL mode on laptops', 'partition the events table by month', 'compress artifacts with zstd level 9', 'never delete raw events, only tombstone them', 'cap the full-text index at 64 KiB per event'],
  auth: ['issue one bearer token per agent', 'hash tokens with sha256 before storing them', 'rotate admin tokens every 90 days', 'refuse tokens over plain HTTP beyond loopback', 'scope every token to one project', 'log every failed login with its address'],
  deploy: ['ship a single static binary per platform', 'run canaries on 5 percent of traffic for an hour', 'pin Node to version 20 LTS', 'build images with distroless bases', 'tag releases from the main branch only', 'keep two previous releases for rollback'],
  search: ['rank with BM25 before vectors', 'fuse full-text and vectors with reciprocal rank fusion', 'boost exact identifier matches three times', 'embed with a 384 dimension local model', 'probe a third of the IVF lists', 'drop stop words only for English queries'],
  billing: ['charge per seat, not per token', 'invoice on the first business day of the month', 'keep prices in integer cents', 'retry failed card charges three times over a week', 'send receipts from the ledger service', 'freeze accounts after 30 days unpaid'],
  observability: ['export traces over OTLP', 'sample one trace in fifty in production', 'keep logs for 14 days', 'alert on p95 latency above 300 ms', 'name metrics with the engram_ prefix', 'put a request id on every log line'],
};
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const BUDGET_TOKENS = 1000;
const DAY = 86_400_000;

/** The shared mulberry32 (lib/prng.ts) as a function: the same sequence for the same seed. */
function rng(seed: number): () => number {
  const prng = new Prng(seed);
  return () => prng.next();
}

export interface Decision {
  theme: string;
  month: string;
  phrase: string;
  sessionId: string;
}
export interface Needle {
  code: string;
  file: string;
}
export interface Trace {
  sessions: Array<{ id: string; theme: string; events: EventInput[]; isTrivial: boolean }>;
  decisions: Decision[];
  needles: Needle[];
}

export function generate(seed: number, sessionsCount: number): Trace {
  const random = rng(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
  const themes = Object.keys(THEMES);
  const used = new Map<string, number>();
  const trace: Trace = { sessions: [], decisions: [], needles: [] };
  const start = Date.UTC(2026, 0, 5, 9);
  const words = ['batch', 'worker', 'queue', 'cache', 'retry', 'shard', 'index', 'flush', 'lease', 'pool', 'socket', 'buffer', 'commit', 'snapshot', 'replica'];
  for (let i = 0; i < sessionsCount; i++) {
    const theme = pick(themes);
    const id = `w${String(i).padStart(3, '0')}-${theme}`;
    let t = start + Math.floor((i * 112 * DAY) / sessionsCount) + Math.floor(random() * 4) * 3_600_000;
    const month = MONTHS[new Date(t).getUTCMonth()]!;
    const events: EventInput[] = [];
    const isTrivial = random() < 0.15;
    if (isTrivial) {
      events.push({ kind: 'user', ts: t, content: `quick check: is the ${theme} dashboard green?` });
      events.push({ kind: 'assistant', ts: t + 20_000, content: 'Yes, all green.' });
      trace.sessions.push({ id, theme, events, isTrivial });
      continue;
    }
    const steps = 6 + Math.floor(random() * 7);
    const needleStep = Math.floor(random() * steps);
    const hasDecision = random() < 0.55;
    const decisionStep = Math.floor(random() * steps);
    for (let s = 0; s < steps; s++) {
      const w = pick(words);
      events.push({ kind: 'user', ts: t, content: `Next on ${theme}: the ${w} path is slow or failing in step ${s}; look into it and fix what you find.` });
      t += 40_000;
      events.push({ kind: 'tool_call', ts: t, toolName: 'bash', content: `npm run ${theme}:check -- --${w}` });
      t += 20_000;
      const log: string[] = [];
      for (let l = 0; l < 25; l++) log.push(`INFO ${pick(words)}-${Math.floor(random() * 9)} processed ${pick(words)} ${Math.floor(random() * 10_000)} in ${Math.floor(random() * 90)}ms`);
      if (s === needleStep) {
        const code = `ERR_${theme.toUpperCase()}_${1000 + i * 13 + s}`;
        const file = `src/${theme}/${w}-${i}.ts`;
        log.push(`ERROR ${code} raised in ${w} handler`);
        trace.needles.push({ code, file });
        events.push({ kind: 'tool_result', ts: t, toolName: 'bash', content: log.join('\n') });
        t += 30_000;
        events.push({ kind: 'assistant', ts: t, content: `${code} came from the ${w} handler; I fixed it in ${file} and the check passes now.` });
      } else {
        events.push({ kind: 'tool_result', ts: t, toolName: 'bash', content: log.join('\n') });
        t += 30_000;
        events.push({ kind: 'assistant', ts: t, content: `The ${w} step of ${theme} looks fine after a small change; the check passes.` });
      }
      t += 60_000;
      if (hasDecision && s === decisionStep) {
        const k = used.get(theme) ?? 0;
        const phrases = THEMES[theme]!;
        if (k < phrases.length) {
          used.set(theme, k + 1);
          const phrase = phrases[k]!;
          events.push({ kind: 'decision', ts: t, content: `Decision on ${theme}: ${phrase}.` });
          trace.decisions.push({ theme, month, phrase, sessionId: id });
          t += 30_000;
        }
      }
    }
    trace.sessions.push({ id, theme, events, isTrivial });
  }
  return trace;
}

type Mode = 'raw' | 'summary-d0' | 'summary-d1' | 'summary-d2' | 'summary-any' | 'raw+summaries';
const MODES: Mode[] = ['raw', 'summary-d0', 'summary-d1', 'summary-d2', 'summary-any', 'raw+summaries'];

async function evidence(mem: Engram, question: string, mode: Mode): Promise<string> {
  const raw = async (budget: number) => (await mem.recall(question, { budgetTokens: budget, k: 25 })).text;
  const sums = async (depth: SummaryDepth | undefined, budget: number) => {
    const hits = await mem.summaries.search(question, { limit: 20, ...(depth !== undefined ? { depth } : {}) });
    let used = 0;
    const parts: string[] = [];
    for (const h of hits) {
      const n = mem.tokenizer.count(h.summary.text);
      if (used + n > budget) continue;
      parts.push(h.summary.text);
      used += n;
    }
    return parts.join('\n\n');
  };
  switch (mode) {
    case 'raw':
      return raw(BUDGET_TOKENS);
    case 'summary-d0':
      return sums(0, BUDGET_TOKENS);
    case 'summary-d1':
      return sums(1, BUDGET_TOKENS);
    case 'summary-d2':
      return sums(2, BUDGET_TOKENS);
    case 'summary-any':
      return sums(undefined, BUDGET_TOKENS);
    case 'raw+summaries':
      return `${await sums(undefined, BUDGET_TOKENS / 2)}\n\n${await raw(BUDGET_TOKENS / 2)}`;
  }
}

interface Scores {
  strategic: Record<Mode, number>;
  thematic: Record<Mode, number>;
  exact: Record<Mode, number>;
  questions: { strategic: number; thematic: number; exact: number };
}

async function evaluate(mem: Engram, trace: Trace, maxExact: number): Promise<Scores> {
  const zero = () => Object.fromEntries(MODES.map((m) => [m, 0])) as Record<Mode, number>;
  const scores: Scores = { strategic: zero(), thematic: zero(), exact: zero(), questions: { strategic: 0, thematic: 0, exact: 0 } };
  const has = (text: string, phrase: string) => text.toLowerCase().includes(phrase.toLowerCase());
  const byThemeMonth = new Map<string, Decision[]>();
  for (const d of trace.decisions) {
    const key = `${d.theme}|${d.month}`;
    byThemeMonth.set(key, [...(byThemeMonth.get(key) ?? []), d]);
  }
  for (const [key, ds] of byThemeMonth) {
    const [theme, month] = key.split('|') as [string, string];
    scores.questions.strategic++;
    for (const m of MODES) {
      const text = await evidence(mem, `What did we decide about ${theme} in ${month}?`, m);
      if (ds.some((d) => has(text, d.phrase))) scores.strategic[m]++;
    }
  }
  for (const theme of Object.keys(THEMES)) {
    const ds = trace.decisions.filter((d) => d.theme === theme);
    if (ds.length === 0) continue;
    scores.questions.thematic++;
    for (const m of MODES) {
      const text = await evidence(mem, `How did the work on ${theme} go overall, and which ${theme} decisions are in force?`, m);
      scores.thematic[m] += ds.filter((d) => has(text, d.phrase)).length / ds.length;
    }
  }
  for (const n of trace.needles.slice(0, maxExact)) {
    scores.questions.exact++;
    for (const m of MODES) {
      const text = await evidence(mem, `Which file fixed ${n.code}?`, m);
      if (has(text, n.file)) scores.exact[m]++;
    }
  }
  for (const cls of ['strategic', 'thematic', 'exact'] as const) {
    for (const m of MODES) scores[cls][m] = scores.questions[cls] > 0 ? scores[cls][m] / scores.questions[cls] : 0;
  }
  return scores;
}

interface Cost {
  level: string;
  sessions: number;
  summarized: number;
  skipped: number;
  skippedTrivial: number;
  trivial: number;
  episodes: number;
  arcs: number;
  epochs: number;
  msPerSession: number;
  msPerArc: number;
  msPerEpoch: number;
  sourceTokensPerSession: number;
  summaryTokens: Record<'0' | '1' | '2', number>;
  modelTokensPerSession: { input: number; output: number };
  levels: Record<string, number>;
}

async function consolidate(mem: Engram, trace: Trace, llm: ChatModel | null): Promise<Cost> {
  const c = mem.consolidator({ llm });
  let sessionMs = 0;
  let summarized = 0;
  let skipped = 0;
  let skippedTrivial = 0;
  let episodes = 0;
  let sourceTokens = 0;
  const model = { input: 0, output: 0 };
  for (const s of trace.sessions) {
    const t0 = performance.now();
    const out = await c.consolidateSession(s.id);
    sessionMs += performance.now() - t0;
    if (out.status === 'skipped') {
      skipped++;
      if (s.isTrivial) skippedTrivial++;
    }
    if (out.status === 'summarized') {
      summarized++;
      episodes += out.summaries.length;
      for (const e of s.events) sourceTokens += mem.tokenizer.count(e.content);
    }
    model.input += out.usage.inputTokens;
    model.output += out.usage.outputTokens;
  }
  const t1 = performance.now();
  const up = await c.rollUp('bench');
  const rollMs = performance.now() - t1;
  model.input += up.usage.inputTokens;
  model.output += up.usage.outputTokens;
  const all = await mem.summaries.list({ limit: 1000 });
  const mean = (d: number) => {
    const xs = all.filter((s) => s.depth === d);
    return xs.length ? Math.round(xs.reduce((n, s) => n + s.tokens, 0) / xs.length) : 0;
  };
  const levels: Record<string, number> = {};
  for (const s of all) levels[s.level] = (levels[s.level] ?? 0) + 1;
  const rolled = up.arcs.length + up.epochs.length;
  return {
    level: llm ? llm.name : 'deterministic',
    sessions: trace.sessions.length,
    summarized,
    skipped,
    skippedTrivial,
    trivial: trace.sessions.filter((s) => s.isTrivial).length,
    episodes,
    arcs: up.arcs.length,
    epochs: up.epochs.length,
    msPerSession: round(sessionMs / Math.max(1, summarized + skipped)),
    // Roll-up time split by summaries made (arcs and epochs cost alike at the deterministic level).
    msPerArc: round(rolled ? rollMs / rolled : 0),
    msPerEpoch: round(rolled ? rollMs / rolled : 0),
    sourceTokensPerSession: Math.round(sourceTokens / Math.max(1, summarized)),
    summaryTokens: { '0': mean(0), '1': mean(1), '2': mean(2) },
    modelTokensPerSession: { input: Math.round(model.input / Math.max(1, summarized)), output: Math.round(model.output / Math.max(1, summarized)) },
    levels,
  };
}

function round(x: number): number {
  return Math.round(x * 10) / 10;
}

async function runOnce(trace: Trace, llm: ChatModel | null, maxExact: number): Promise<{ cost: Cost; scores: Scores; events: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'engram-bench-consolidation-'));
  const mem = await openEngram({ db: join(dir, 'bench.db') });
  try {
    let events = 0;
    for (const s of trace.sessions) {
      await mem.append(s.id, s.events, { project: 'bench' });
      events += s.events.length;
    }
    const cost = await consolidate(mem, trace, llm);
    const scores = await evaluate(mem, trace, maxExact);
    return { cost, scores, events };
  } finally {
    await mem.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function runConsolidationBench(args: { seed: number; quick: boolean }): Promise<void> {
  const sessionsCount = args.quick ? 24 : 64;
  const trace = generate(args.seed, sessionsCount);
  const maxExact = args.quick ? 12 : 40;
  const runs: Array<Awaited<ReturnType<typeof runOnce>>> = [await runOnce(trace, null, maxExact)];
  if (process.env.ENGRAM_LLM_URL) {
    const { createChatModelFromSpec, resolveLlmSpec } = await import('../src/providers/llm/llm-spec.js');
    runs.push(await runOnce(trace, await createChatModelFromSpec(resolveLlmSpec(undefined)), maxExact));
  }
  const pct = (x: number) => `${(x * 100).toFixed(0)} %`;
  const lines: string[] = [
    '# Consolidation: the summary DAG over a long multi-session trace (SYNTHETIC)',
    '',
    `\`npm run bench -- consolidation --seed ${args.seed}${args.quick ? ' --quick' : ''}\` (bench/consolidation.ts). ${machineLine()}`,
    '',
    `**Synthetic data**: one made-up project (6 themes) worked on for 16 simulated weeks from 5 January 2026: ${trace.sessions.length} sessions, ` +
      `${runs[0]!.events} events (long tool logs around each step), ${trace.decisions.length} decisions, ${trace.needles.length} error codes with the file that fixed them, ` +
      `and ${trace.sessions.filter((s) => s.isTrivial).length} trivial sessions ("is the dashboard green?"). Every answer gets the same evidence budget, ${BUDGET_TOKENS} tokens. ` +
      'Default DAG: arcs of 8 sessions, epochs of 4 arcs; the gate with its default thresholds and no known terms.',
    '',
    '## Answer-bearing evidence found, by source',
    '',
    'raw = recall over events (no summaries); summary-dN = full-text search over summaries of depth N only (0 session, 1 arc, 2 epoch); ' +
      'summary-any = all depths; raw+summaries = half the budget each. Strategic and exact: share of questions whose evidence quotes an answer; ' +
      "thematic: mean share of the theme's decisions quoted. Event ids are random ULIDs and decision lines carry them, so which " +
      'sentences fit an arc or epoch budget varies a little: depth 1 and 2 figures move by a few points between runs of the same seed.',
    '',
  ];
  for (const run of runs) {
    const s = run.scores;
    lines.push(`### ${run.cost.level}`, '', `| question class (count) | ${MODES.join(' | ')} |`, `| --- | ${MODES.map(() => '---:').join(' | ')} |`);
    for (const cls of ['strategic', 'thematic', 'exact'] as const) {
      lines.push(`| ${cls} (${s.questions[cls]}) | ${MODES.map((m) => pct(s[cls][m])).join(' | ')} |`);
    }
    lines.push('');
  }
  lines.push('## Consolidation cost', '', '| level | sessions summarized | episodes | arcs | epochs | ms per session | ms per arc/epoch | source tokens per session | summary tokens d0 / d1 / d2 | model tokens per session (in / out) | made at |', '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |');
  for (const { cost: c } of runs) {
    lines.push(
      `| ${c.level} | ${c.summarized} of ${c.sessions} | ${c.episodes} | ${c.arcs} | ${c.epochs} | ${c.msPerSession} | ${c.msPerArc} | ${c.sourceTokensPerSession} | ${c.summaryTokens['0']} / ${c.summaryTokens['1']} / ${c.summaryTokens['2']} | ${c.modelTokensPerSession.input} / ${c.modelTokensPerSession.output} | ${Object.entries(c.levels).map(([k, v]) => `${k} ${v}`).join(', ')} |`,
    );
  }
  const c0 = runs[0]!.cost;
  lines.push(
    '',
    '## The significance gate',
    '',
    `${c0.skipped} of ${c0.sessions} sessions skipped (${pct(c0.skipped / c0.sessions)}): ${c0.skippedTrivial} of the ${c0.trivial} trivial ones, ` +
      `${c0.skipped - c0.skippedTrivial} others. Their events stay stored and searchable; \`engram consolidate --backfill-skipped\` summarizes them.`,
    '',
    runs.length === 1 ? 'No LLM run: ENGRAM_LLM_URL was not set (the deterministic level is what a store without a model gets).' : '',
  );
  const md = `${lines.join('\n')}\n`;
  const out = join(import.meta.dirname, 'results');
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'consolidation.md'), md);
  writeFileSync(join(out, 'consolidation.json'), JSON.stringify({ seed: args.seed, quick: args.quick, runs }, null, 2) + '\n');
  process.stdout.write(md);
}
