/**
 * `npm run bench -- granular [--seed 42] [--quick]`: does `recall --granularity auto` (view/granular-recall.ts) find
 * more answer-bearing evidence than flat event recall, and at what cost in tokens? Over the long multi-session trace
 * of the consolidation bench (SYNTHETIC: one made-up project, dozens of sessions over 16 simulated weeks, decisions,
 * error codes fixed in files, long tool logs), with bug storylines added for entity questions (an error code that
 * touches 2-4 services: a retry flood naming one of them in one session, the others named once in other sessions,
 * as in bench/knowledge.ts). The store is consolidated (deterministic level) and its graph built, as a user would
 * have it, then each question is asked both ways with the same k and event budget:
 *
 * - flat: `recall(question, { k, budgetTokens })`, the events' text;
 * - auto: `recallGranular(question, { k, budgetTokens, granularity: 'auto' })`, the derived layers it chose
 *   (summaries, entities, an expansion) above the same raw events, as `engram recall --granularity auto` prints.
 *
 * Question classes: exact ("Which file fixed ERR_...?": the file is quoted), exact by the bare code ("ERR_..."),
 * thematic ("How did the work on storage go overall...?": share of the theme's decisions quoted) and entity
 * ("which services did ERR_... touch?": per touched service, an event naming the error and the service is returned
 * or cited). Also: the tokens returned and the layer auto chose. Writes bench/results/granular.{md,json}.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { openEngram, type Engram } from '../src/engine.js';
import type { EventInput } from '../src/model/event.js';
import { granularText } from '../src/view/granular-recall.js';
import { generate, THEMES, type Trace } from './consolidation.js';
import { machineLine } from './lib/stats.js';
import { Prng } from './lib/prng.js';

const SERVICES = ['payments', 'ledger', 'checkout', 'billing', 'gateway', 'inventory', 'shipping', 'catalog', 'notifications', 'pricing', 'refunds', 'fraud'];
const BUDGET_TOKENS = 1000;
/** Events asked for: the answer-bearing evidence must be found within the first k. */
const KS = [5, 10] as const;

interface Bug {
  code: string;
  services: string[];
  /** Per touched service: the events naming the error and it (filled in once appended). */
  bearing: Map<string, Set<string>>;
}

type Cls = 'exact' | 'exactBare' | 'thematic' | 'entity';
const CLASSES: Cls[] = ['exact', 'exactBare', 'thematic', 'entity'];
const CLASS_LABEL: Record<Cls, string> = {
  exact: 'exact ("Which file fixed ERR_…?")',
  exactBare: 'exact, the bare code ("ERR_…")',
  thematic: 'thematic ("How did the work on T go overall…?")',
  entity: 'entity ("which services did ERR_… touch?")',
};

interface ModeScore {
  /** Sum of per-question scores (0-1 each). */
  found: number;
  tokens: number;
  ms: number;
}

interface ClassScore {
  k: number;
  questions: number;
  flat: ModeScore;
  auto: ModeScore;
  /** How often auto chose each layer. */
  chosen: Record<string, number>;
}

/** The shared mulberry32 (lib/prng.ts) as a function: the same sequence for the same seed. */
function rng(seed: number): () => number {
  const prng = new Prng(seed);
  return () => prng.next();
}

/** Adds bug storylines to the trace's sessions; returns the bugs and, per event added, its bug and service. */
function addBugs(trace: Trace, seed: number, count: number): { bugs: Bug[]; marks: Map<EventInput, { bug: Bug; service: string }> } {
  const random = rng(seed ^ 0x5eed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
  const sessions = trace.sessions.filter((s) => !s.isTrivial);
  const marks = new Map<EventInput, { bug: Bug; service: string }>();
  const insert = (events: EventInput[], e: EventInput) => {
    // After a random event, at its time: timestamps stay in order.
    const at = 1 + Math.floor(random() * events.length);
    events.splice(at, 0, { ...e, ts: events[at - 1]!.ts! });
    return events[at]!;
  };
  const bugs: Bug[] = [];
  for (let i = 0; i < count; i++) {
    const services = new Set<string>();
    const want = 2 + Math.floor(random() * 3);
    while (services.size < want) services.add(pick(SERVICES));
    const word = pick(['DECLINED', 'TIMEOUT', 'MISMATCH', 'OVERFLOW', 'STALE', 'DUPLICATE', 'MISSING', 'LOCKED']);
    const bug: Bug = { code: `ERR_${word}_${500 + i}`, services: [...services], bearing: new Map() };
    bugs.push(bug);
    const [flood, ...rest] = bug.services;
    const home = pick(sessions).events;
    const floods = 8 + Math.floor(random() * 8);
    for (let j = 0; j < floods; j++) {
      marks.set(insert(home, { kind: 'tool_result', toolName: 'bash', content: `${flood}-service: ${bug.code} retrying request ${j + 1}/${floods} (upstream answered 502)` }), { bug, service: flood! });
    }
    for (const svc of rest) {
      marks.set(insert(pick(sessions).events, { kind: 'assistant', content: `Found it: the ${svc} service also logs ${bug.code} when the batch job runs; that is the same root cause.` }), { bug, service: svc });
    }
    for (let j = 0; j < 3; j++) insert(pick(sessions).events, { kind: 'user', content: `Still seeing ${bug.code} this morning, any news on it?` });
  }
  return { bugs, marks };
}

interface Asked {
  text: string;
  ids: Set<string>;
  tokens: number;
  ms: number;
  chosen?: string;
}

async function ask(mem: Engram, question: string, mode: 'flat' | 'auto', k: number): Promise<Asked> {
  const t0 = performance.now();
  if (mode === 'flat') {
    const r = await mem.recall(question, { k, budgetTokens: BUDGET_TOKENS, logRecall: false });
    const ms = performance.now() - t0;
    return { text: r.text, ids: new Set(r.hits.map((h) => h.eventId)), tokens: mem.tokenizer.count(r.text), ms };
  }
  const r = await mem.recallGranular(question, { k, budgetTokens: BUDGET_TOKENS, granularity: 'auto', logRecall: false });
  const ms = performance.now() - t0;
  const text = granularText(r.granular, r.text);
  // Evidence ids: the events returned and every event id the derived layers cite.
  const ids = new Set([...r.hits.map((h) => h.eventId), ...(text.match(/evt_[0-9A-Za-z]+/g) ?? [])]);
  return { text, ids, tokens: mem.tokenizer.count(text), ms, chosen: r.granular.granularity };
}

export async function runGranularBench(args: { seed: number; quick: boolean }): Promise<void> {
  // Timings are noisy on a shared machine: the load average is reported beside them.
  const loadAtStart = loadavg().map((x) => x.toFixed(2)).join(' / ');
  const trace = generate(args.seed, args.quick ? 24 : 64);
  const { bugs, marks } = addBugs(trace, args.seed, args.quick ? 8 : 24);
  const maxExact = args.quick ? 12 : 40;
  const dir = mkdtempSync(join(tmpdir(), 'engram-bench-granular-'));
  const mem = await openEngram({ db: join(dir, 'bench.db') });
  try {
    let events = 0;
    for (const s of trace.sessions) {
      const out = await mem.append(s.id, s.events, { project: 'bench' });
      events += out.length;
      out.forEach((o, i) => {
        const mark = marks.get(s.events[i]!);
        if (mark) mark.bug.bearing.set(mark.service, (mark.bug.bearing.get(mark.service) ?? new Set()).add(o.record.id));
      });
    }
    const t0 = performance.now();
    const consolidator = mem.consolidator({ llm: null });
    for (const s of trace.sessions) await consolidator.consolidateSession(s.id);
    await consolidator.rollUp('bench');
    const consolidateMs = performance.now() - t0;
    const t1 = performance.now();
    await mem.graphBuilder().buildFromSessions();
    const buildMs = performance.now() - t1;

    const zero = (): ModeScore => ({ found: 0, tokens: 0, ms: 0 });
    const scores = KS.map((k) => Object.fromEntries(CLASSES.map((c) => [c, { k, questions: 0, flat: zero(), auto: zero(), chosen: {} }])) as Record<Cls, ClassScore>);
    const has = (text: string, phrase: string) => text.toLowerCase().includes(phrase.toLowerCase());
    const run = async (cls: Cls, question: string, score: (a: Asked) => number) => {
      for (const [i, k] of KS.entries()) {
        const c = scores[i]![cls];
        c.questions++;
        for (const mode of ['flat', 'auto'] as const) {
          const a = await ask(mem, question, mode, k);
          c[mode].found += score(a);
          c[mode].tokens += a.tokens;
          c[mode].ms += a.ms;
          if (a.chosen) c.chosen[a.chosen] = (c.chosen[a.chosen] ?? 0) + 1;
        }
      }
    };
    for (const n of trace.needles.slice(0, maxExact)) {
      await run('exact', `Which file fixed ${n.code}?`, (a) => (has(a.text, n.file) ? 1 : 0));
      await run('exactBare', n.code, (a) => (has(a.text, n.file) ? 1 : 0));
    }
    for (const theme of Object.keys(THEMES)) {
      const ds = trace.decisions.filter((d) => d.theme === theme);
      if (ds.length === 0) continue;
      await run('thematic', `How did the work on ${theme} go overall, and which ${theme} decisions are in force?`, (a) => ds.filter((d) => has(a.text, d.phrase)).length / ds.length);
    }
    for (const bug of bugs) {
      // Per touched service: an event naming the error and the service is among those returned or cited.
      await run('entity', `which services did ${bug.code} touch?`, (a) => bug.services.filter((s) => [...(bug.bearing.get(s) ?? [])].some((id) => a.ids.has(id))).length / bug.services.length);
    }

    const pct = (x: number, n: number) => (n === 0 ? '-' : `${((100 * x) / n).toFixed(1)} %`);
    const mean = (x: number, n: number) => (n === 0 ? '-' : String(Math.round(x / n)));
    const counts = await mem.store.graph.counts();
    const summaries = await mem.summaries.counts();
    const report = {
      synthetic: true,
      seed: args.seed,
      quick: args.quick,
      sessions: trace.sessions.length,
      events,
      bugs: bugs.length,
      ks: KS,
      budgetTokens: BUDGET_TOKENS,
      graph: counts,
      summaries: summaries.byDepth,
      consolidateMs: Math.round(consolidateMs),
      buildMs: Math.round(buildMs),
      scores,
      machine: machineLine(),
      loadAverage: { atStart: loadAtStart, atEnd: loadavg().map((x) => x.toFixed(2)).join(' / ') },
    };
    const lines = [
      '# Multi-granularity recall: `--granularity auto` against flat event recall (SYNTHETIC trace)',
      '',
      `\`npm run bench -- granular --seed ${args.seed}${args.quick ? ' --quick' : ''}\` (bench/granular.ts). ${report.machine}, SQLite; load average (1 / 5 / 15 min) ${report.loadAverage.atStart} at the start, ${report.loadAverage.atEnd} at the end (times are noisy).`,
      '',
      `**Synthetic data**: the trace of the consolidation bench (${trace.sessions.length} sessions over 16 simulated weeks, ${trace.decisions.length} decisions, ` +
        `${trace.needles.length} error codes each fixed in a file) plus ${bugs.length} bug storylines for entity questions (an error code touching 2-4 of ` +
        `${SERVICES.length} services: 8-15 retry lines naming one in one session, the others named once in other sessions, three questions about it naming none): ` +
        `${events} events. The store is consolidated (deterministic level: ${summaries.byDepth[0]} session, ${summaries.byDepth[1]} arc, ${summaries.byDepth[2]} epoch summaries, ` +
        `${Math.round(consolidateMs)} ms) and its graph built (${counts.entities} entities, ${counts.edges} edges, ${Math.round(buildMs)} ms).`,
      '',
      `Each question is asked both ways with k events (${KS.join(' and ')}) and a ${BUDGET_TOKENS}-token event budget: **flat** = \`recall\` (the events' text); ` +
        '**auto** = `recall --granularity auto` (the layers the rule chose, then the same raw events: what the CLI prints). Found: exact, the ' +
        "file that fixed the code is quoted; thematic, the share of the theme's decisions quoted; entity, the share of touched services for which an " +
        'event naming the error and the service is returned or cited (an `evt_` id in the answer). Tokens: everything returned, by the store tokenizer.',
      ...scores.flatMap((byClass, i) => [
        '',
        `### k = ${KS[i]}`,
        '',
        '| question class (count) | found: flat | found: auto | mean tokens: flat | mean tokens: auto | mean ms: flat / auto | auto chose |',
        '| --- | ---: | ---: | ---: | ---: | ---: | --- |',
        ...CLASSES.map((cls) => {
          const c = byClass[cls];
          const chose = Object.entries(c.chosen).map(([k, v]) => `${k} ${v}`).join(', ');
          return `| ${CLASS_LABEL[cls]} (${c.questions}) | ${pct(c.flat.found, c.questions)} | ${pct(c.auto.found, c.questions)} | ${mean(c.flat.tokens, c.questions)} | ${mean(c.auto.tokens, c.questions)} | ${(c.flat.ms / Math.max(1, c.questions)).toFixed(1)} / ${(c.auto.ms / Math.max(1, c.questions)).toFixed(1)} | ${chose} |`;
        }),
      ]),
      '',
    ];
    const md = `${lines.join('\n')}\n`;
    const out = join(import.meta.dirname, 'results');
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, 'granular.md'), md);
    writeFileSync(join(out, 'granular.json'), JSON.stringify(report, null, 2) + '\n');
    process.stdout.write(md);
  } finally {
    await mem.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
