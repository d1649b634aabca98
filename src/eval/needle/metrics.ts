/**
 * From probe outcomes to the report's figures (ENGRAM §10A.2-10A.6): exact-match recall per hop, false
 * recall, precision@k, pull frequency, recall by needle type, tokens and latency, each rate with its
 * cluster-bootstrap 95 % interval (bootstrap.ts).
 */
import { bootstrapInterval, pooledRatio, type BootstrapOptions, type Cluster } from './bootstrap.js';
import { NEEDLE_TYPES, type HopOutcome, type NeedleType } from './needle-types.js';

export const CONDITIONS = ['engram', 'engram-fts', 'truncation', 'narrative', 'dag'] as const;
export type ConditionName = (typeof CONDITIONS)[number];

/** One probe answered by one condition at one checkpoint. */
export interface ProbeRecord {
  seed: number;
  trace: number;
  probeId: string;
  type: NeedleType;
  question: string;
  value: string;
  condition: ConditionName;
  /** The checkpoint (cycles asked for) and the cycles the condition had actually run when probed. */
  checkpoint: number;
  cycles: number;
  /** Hops 0, 1 and 2. A condition without retrieval answers every hop from the same context. */
  hops: [HopOutcome, HopOutcome, HopOutcome];
  precision?: { at5: number; at10: number; at20: number };
  relevantEvents?: number;
  /** Engram: top-5 hits outside the episode, from another needle's episode or from the rest of the trace. */
  top5Misses?: { otherEpisode: number; other: number };
  recallMs?: number;
  /** Engram: the first recall's top hits (turn, kind, whether in the needle's episode). */
  firstHits?: Array<{ turn: number; kind: string; isRelevant: boolean }>;
}

/** A rate with its 95 % interval and the probes behind it. */
export interface Rate {
  value: number;
  ci: [number, number];
  n: number;
}

export interface CycleSummary {
  checkpoint: number;
  /** Mean cycles actually run when probed (a turn can run more than one). */
  cycles: number;
  probes: number;
  zeroHop: Rate;
  oneHop: Rate;
  twoHop: Rate;
  /** The value was somewhere in what the agent read (what a perfect reader could answer), per hop. */
  presentZeroHop: Rate;
  presentOneHop: Rate;
  presentTwoHop: Rate;
  /** A wrong needle-like value was the answer after one pull (the first answer, for conditions without pulls). */
  falseRecall: Rate;
  /** ... and still after the second hop. */
  falseRecallTwoHop: Rate;
  /** Probes the push pack alone could not answer (1 - zeroHop), for conditions that can pull. */
  pullFrequency: Rate | null;
  precisionAt5: Rate | null;
  precisionAt10: Rate | null;
  precisionAt20: Rate | null;
  /** The best precision@k attainable given the number of relevant events per probe. */
  idealPrecisionAt5: number | null;
  /** Mean top-5 hits outside the episode per probe: from other needles' episodes, and from the rest of the trace. */
  top5Misses: { otherEpisode: number; other: number } | null;
  /** Recall by needle type: 1-hop and 2-hop. */
  byType: Record<NeedleType, { probes: number; oneHop: number; twoHop: number }>;
  /** Mean tokens read per probe: the window (hop 0) and each pull. */
  contextTokens: number;
  pullTokensOneHop: number;
  recallMsP50: number | null;
  recallMsP95: number | null;
}

/**
 * Summarizes the records of one condition at one checkpoint. The bootstrap resamples traces (`clusterBy:
 * 'trace'`, the default) or, for a single replayed transcript, probes.
 */
export function summarizeCycle(records: readonly ProbeRecord[], options: BootstrapOptions & { clusterBy?: 'trace' | 'probe' } = {}): CycleSummary {
  if (records.length === 0) throw new RangeError('summarizeCycle: no records');
  const traces = new Map<string, ProbeRecord[]>();
  const keyOf = (r: ProbeRecord): string => (options.clusterBy === 'probe' ? `${r.seed}:${r.trace}:${r.probeId}` : `${r.seed}:${r.trace}`);
  for (const r of records) traces.set(keyOf(r), [...(traces.get(keyOf(r)) ?? []), r]);
  const groups = [...traces.values()];
  const rate = (pick: (r: ProbeRecord) => number | undefined): Rate => {
    const clusters: Cluster[] = groups.map((g) => {
      const values = g.map(pick).filter((v): v is number => v !== undefined);
      return { num: values.reduce((s, v) => s + v, 0), den: values.length };
    });
    return { value: pooledRatio(clusters), ci: bootstrapInterval(clusters, options), n: clusters.reduce((s, c) => s + c.den, 0) };
  };
  const exact = (h: number) => (r: ProbeRecord) => (r.hops[h]!.isExact ? 1 : 0);
  const present = (h: number) => (r: ProbeRecord) => (r.hops[h]!.isPresent ? 1 : 0);
  const wrong = (h: number) => (r: ProbeRecord) => (r.hops[h]!.answer !== null && !r.hops[h]!.isExact ? 1 : 0);
  const canPull = records[0]!.condition === 'engram' || records[0]!.condition === 'engram-fts' || records[0]!.condition === 'dag';
  const ranked = records.filter((r) => r.precision);
  const byType = Object.fromEntries(
    NEEDLE_TYPES.map((t) => {
      const of = records.filter((r) => r.type === t);
      const share = (h: number): number => (of.length === 0 ? Number.NaN : of.filter((r) => r.hops[h]!.isExact).length / of.length);
      return [t, { probes: of.length, oneHop: share(1), twoHop: share(2) }];
    }),
  ) as CycleSummary['byType'];
  const times = records.flatMap((r) => (r.recallMs === undefined ? [] : [r.recallMs])).sort((a, b) => a - b);
  const mean = (values: number[]): number => values.reduce((s, v) => s + v, 0) / Math.max(1, values.length);
  return {
    checkpoint: records[0]!.checkpoint,
    cycles: mean(records.map((r) => r.cycles)),
    probes: records.length,
    zeroHop: rate(exact(0)),
    oneHop: rate(exact(1)),
    twoHop: rate(exact(2)),
    presentZeroHop: rate(present(0)),
    presentOneHop: rate(present(1)),
    presentTwoHop: rate(present(2)),
    falseRecall: rate(wrong(1)),
    falseRecallTwoHop: rate(wrong(2)),
    pullFrequency: canPull ? rate((r) => (r.hops[0]!.isExact ? 0 : 1)) : null,
    precisionAt5: ranked.length > 0 ? rate((r) => r.precision?.at5) : null,
    precisionAt10: ranked.length > 0 ? rate((r) => r.precision?.at10) : null,
    precisionAt20: ranked.length > 0 ? rate((r) => r.precision?.at20) : null,
    idealPrecisionAt5: ranked.length > 0 ? mean(ranked.map((r) => Math.min(5, r.relevantEvents ?? 0) / 5)) : null,
    top5Misses:
      ranked.length > 0
        ? { otherEpisode: mean(ranked.map((r) => r.top5Misses?.otherEpisode ?? 0)), other: mean(ranked.map((r) => r.top5Misses?.other ?? 0)) }
        : null,
    byType,
    contextTokens: mean(records.map((r) => r.hops[0]!.tokens)),
    pullTokensOneHop: canPull ? mean(records.map((r) => r.hops[1]!.tokens)) : 0,
    recallMsP50: times.length > 0 ? nearestRank(times, 50) : null,
    recallMsP95: times.length > 0 ? nearestRank(times, 95) : null,
  };
}

/** Percentile by nearest rank over sorted samples. */
export function nearestRank(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Precision@k of a ranking against a relevant set: relevant among the first k, over k. */
export function precisionAtK(ranked: readonly string[], relevant: ReadonlySet<string>, k: number): number {
  return ranked.slice(0, k).filter((id) => relevant.has(id)).length / k;
}
