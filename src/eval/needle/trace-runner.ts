/**
 * Runs one trace through every condition in lockstep (ENGRAM Annex A.8): each turn is appended to Engram's
 * store and to each simulated window; a condition is probed right after the turn in which its compaction
 * count reaches a checkpoint (1, 3, 5 cycles by default), and drops out once past its last checkpoint. The
 * trace ends when every condition is done, so all of them saw the same turns up to their own checkpoints.
 */
import { performance } from 'node:perf_hooks';
import { EngramError } from '../../errors.js';
import type { Embedder } from '../../providers/embedder.js';
import type { Tokenizer } from '../../providers/tokenizer.js';
import { EngramRun } from './engram-run.js';
import type { ConditionName, ProbeRecord } from './metrics.js';
import type { HopOutcome, Needle, NeedleTraceSource, Probe } from './needle-types.js';
import { cueTerms, isPresent, readAnswer } from './reader.js';
import type { Summarizer } from './summarizer.js';
import { SimulatedWindow, type SimPolicy } from './window-sim.js';
import { PULL_BUDGET_TOKENS } from './engram-run.js';

export interface TraceRunOptions {
  seed: number;
  trace: number;
  sessionId: string;
  windowTokens: number;
  /** The window's history budget: the baselines' window and Engram's high-water mark. */
  historyBudgetTokens: number;
  cycles: readonly number[];
  conditions: readonly ConditionName[];
  embedder: Embedder | null;
  summarizer: Summarizer;
  tokenizer: Tokenizer;
  /** Engram consolidates the session before each checkpoint's probes and reads matching summaries (engram-run.ts). */
  consolidate?: boolean;
  /** Turns after which the trace stops even if a checkpoint was not reached. Default 5000. */
  maxTurns?: number;
}

export interface ConditionTraceStats {
  /** Turn after which each checkpoint was probed; null when the trace ended first. */
  turnAtCheckpoint: Record<number, number | null>;
  /** Mean tokens in the window after each turn, up to the last checkpoint. */
  tokensPerTurn: number;
  /** Mean wall time of the per-turn compaction check (Engram: the engine's compact call). */
  compactMsMean: number;
}

export interface TraceStats {
  seed: number;
  trace: number;
  name: string;
  turns: number;
  events: number;
  durationMs: number;
  conditions: Partial<Record<ConditionName, ConditionTraceStats>>;
  /** With consolidation on: summaries made and pulls that read summaries (engram-run.ts). */
  consolidation?: { summaries: number; pullsWithSummaries: number; pulls: number };
}

interface Lane {
  name: 'engram' | SimPolicy;
  pending: number[];
  turnAt: Record<number, number | null>;
  tokenSum: number;
  turnsSeen: number;
  compactMs: number;
}

/** Runs the trace; returns one record per probe, condition and checkpoint reached. */
export async function runTrace(source: NeedleTraceSource, options: TraceRunOptions): Promise<{ records: ProbeRecord[]; stats: TraceStats }> {
  const started = performance.now();
  const cycles = [...options.cycles].sort((a, b) => a - b);
  const wants = (c: ConditionName): boolean => options.conditions.includes(c);
  const lanes: Lane[] = [];
  const newLane = (name: Lane['name']): Lane => ({ name, pending: [...cycles], turnAt: Object.fromEntries(cycles.map((c) => [c, null])), tokenSum: 0, turnsSeen: 0, compactMs: 0 });
  const engram = wants('engram') || wants('engram-fts')
    ? await EngramRun.open(options.sessionId, {
        windowTokens: options.windowTokens,
        embedder: wants('engram') ? options.embedder : null,
        retrievers: [...(wants('engram') && options.embedder ? ['hybrid' as const] : []), ...(wants('engram-fts') ? ['fts' as const] : [])],
        ...(options.consolidate ? { consolidate: true } : {}),
      })
    : null;
  if (wants('engram') && !options.embedder && !wants('engram-fts')) throw new EngramError('INVALID_INPUT', 'conditions: engram (hybrid) needs an embedder', { field: 'conditions' });
  if (engram) lanes.push(newLane('engram'));
  const sims = new Map<SimPolicy, SimulatedWindow>();
  for (const policy of ['truncation', 'narrative', 'dag'] as const) {
    if (!wants(policy)) continue;
    sims.set(policy, new SimulatedWindow(policy, { budgetTokens: options.historyBudgetTokens, tokenizer: options.tokenizer, summarizer: options.summarizer }));
    lanes.push(newLane(policy));
  }

  const records: ProbeRecord[] = [];
  const record = (condition: ConditionName, probe: Probe, needle: Needle, checkpoint: number, count: number, hops: HopOutcome[], extra: Partial<ProbeRecord> = {}): void => {
    records.push({
      seed: options.seed,
      trace: options.trace,
      probeId: probe.id,
      type: probe.type,
      question: probe.question,
      value: needle.value,
      condition,
      checkpoint,
      cycles: count,
      hops: [hops[0]!, hops[1] ?? hops[0]!, hops[2] ?? hops[1] ?? hops[0]!],
      ...extra,
    });
  };
  const needleOf = (p: Probe): Needle => source.needles.find((n) => n.id === p.needleId)!;

  let turns = 0;
  let events = 0;
  const maxTurns = options.maxTurns ?? 5000;
  try {
    for (const turn of source.turns()) {
      if (lanes.every((l) => l.pending.length === 0) || turns >= maxTurns) break;
      turns++;
      events += turn.events.length;
      for (const lane of lanes) {
        if (lane.pending.length === 0) continue;
        const t0 = performance.now();
        let count: number;
        if (lane.name === 'engram') {
          await engram!.append(turn);
          count = engram!.compactions;
          lane.tokenSum += engram!.windowTokens;
        } else {
          const sim = sims.get(lane.name)!;
          await sim.append(turn.events);
          count = sim.compactions;
          lane.tokenSum += sim.tokens;
        }
        lane.compactMs += performance.now() - t0;
        lane.turnsSeen++;
        const due = lane.pending.filter((c) => c <= count);
        if (due.length === 0) continue;
        lane.pending = lane.pending.filter((c) => c > count);
        for (const c of due) lane.turnAt[c] = turns;
        if (lane.name === 'engram') {
          const { outcomes } = await engram!.probe(source.needles, source.probes);
          for (const o of outcomes) {
            const probe = source.probes.find((p) => p.id === o.probeId)!;
            for (const c of due) {
              record(o.retriever === 'fts' ? 'engram-fts' : 'engram', probe, needleOf(probe), c, count, o.hops, {
                precision: o.precision,
                relevantEvents: o.relevantEvents,
                top5Misses: o.top5Misses,
                recallMs: o.recallMs,
                firstHits: o.firstHits,
              });
            }
          }
        } else {
          const sim = sims.get(lane.name)!;
          for (const probe of source.probes) {
            const hops = probeSimulated(sim, probe, needleOf(probe), options.tokenizer);
            for (const c of due) record(lane.name, probe, needleOf(probe), c, count, hops);
          }
        }
      }
    }
  } finally {
    await engram?.close();
  }

  const conditions: TraceStats['conditions'] = {};
  for (const lane of lanes) {
    const stats: ConditionTraceStats = {
      turnAtCheckpoint: lane.turnAt,
      tokensPerTurn: lane.tokenSum / Math.max(1, lane.turnsSeen),
      compactMsMean: lane.compactMs / Math.max(1, lane.turnsSeen),
    };
    if (lane.name === 'engram') {
      if (wants('engram') && options.embedder) conditions.engram = stats;
      if (wants('engram-fts')) conditions['engram-fts'] = stats;
    } else {
      conditions[lane.name] = stats;
    }
  }
  const consolidation = engram && options.consolidate ? { consolidation: { ...engram.consolidation } } : {};
  return { records, stats: { seed: options.seed, trace: options.trace, name: source.name, turns, events, durationMs: performance.now() - started, conditions, ...consolidation } };
}

/**
 * A baseline answers from its window. Truncation and narrative have nothing to pull (every hop is the
 * same); the DAG greps its raw store: hop 1 for the probe's longest word, hop 2 for the next one (the
 * agent picks the most specific-looking word first).
 */
function probeSimulated(sim: SimulatedWindow, probe: Probe, needle: Needle, tokenizer: Tokenizer): HopOutcome[] {
  const windowText = sim.text();
  const hop = (segments: string[], tokens: number): HopOutcome => {
    const { answer } = readAnswer(probe.type, probe.question, segments);
    return { answer, isExact: answer === needle.value, isPresent: isPresent(needle.value, segments), tokens };
  };
  const zero = hop([windowText], sim.tokens);
  if (sim.policy !== 'dag') return [zero];
  const keywords = grepKeywords(probe.question);
  if (keywords.length === 0) return [zero];
  const first = sim.grep(keywords[0]!, PULL_BUDGET_TOKENS);
  const one = hop([first, windowText], tokenizer.count(first));
  if (one.isExact || keywords.length < 2) return [zero, one, one];
  const second = sim.grep(keywords[1]!, PULL_BUDGET_TOKENS);
  return [zero, one, hop([second, first, windowText], tokenizer.count(second))];
}

/** The probe's words an agent would grep for: longest first (ties in question order). */
export function grepKeywords(question: string): string[] {
  return cueTerms(question)
    .map((w, i) => ({ w, i }))
    .sort((a, b) => b.w.length - a.w.length || a.i - b.i)
    .map((x) => x.w);
}
