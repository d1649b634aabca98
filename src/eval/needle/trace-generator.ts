/**
 * The synthetic needle trace (ENGRAM §10.1, Annex A.8), deterministic for (seed, index): a seed phase of
 * one episode per needle (the five types, `needlesPerType` of each, in shuffled order), then an endless
 * flood of tool output with near misses (flood.ts). The runner reads turns until every condition has been
 * compacted as often as the last checkpoint asks, so the flood's length follows the window size.
 */
import { EngramError } from '../../errors.js';
import type { EventInput } from '../../model/event.js';
import { floodTurns, type FloodOptions } from './flood.js';
import { NEEDLE_TYPES, type Needle, type NeedleTraceSource, type Probe, type TraceTurn } from './needle-types.js';
import { isNeedleShaped } from './needle-patterns.js';
import { deriveSeed, Prng } from '../../util/prng.js';
import { SCENARIOS, type DraftEvent, type ScenarioContext } from './scenarios.js';
import { COMPONENTS } from './vocabulary.js';

export interface NeedleTraceOptions {
  seed: number;
  /** Which trace of the seed (each has its own needles and flood). Default 0. */
  index?: number;
  /** Needles of each of the five types. Default 2 (10 needles). */
  needlesPerType?: number;
  flood?: FloodOptions;
  /** Flood turns after which the trace ends even if a condition still waits for a checkpoint. Default 5000. */
  maxFloodTurns?: number;
}

export interface NeedleTrace extends NeedleTraceSource {
  seed: number;
  index: number;
  /** The session the trace is appended to. */
  sessionId: string;
  /** The seed phase alone, for tests and reports. */
  seedTurns: TraceTurn[];
}

export const MAX_NEEDLES_PER_TYPE = 4;
const START_MS = Date.UTC(2026, 2, 4, 8, 0, 0);
/** Seconds between two events of a trace. */
const EVENT_SPACING_S = 20;

/** Builds the trace for (seed, index): needles, probes and the turns. */
export function createNeedleTrace(options: NeedleTraceOptions): NeedleTrace {
  const index = options.index ?? 0;
  const perType = options.needlesPerType ?? 2;
  if (!Number.isInteger(perType) || perType < 1 || perType > MAX_NEEDLES_PER_TYPE) {
    throw new EngramError('INVALID_INPUT', `needlesPerType: must be an integer from 1 to ${MAX_NEEDLES_PER_TYPE}`, { field: 'needlesPerType' });
  }
  if (!Number.isInteger(options.seed) || options.seed < 0) throw new EngramError('INVALID_INPUT', 'seed: must be a whole number', { field: 'seed' });
  const name = `seed ${options.seed} #${index}`;
  const sessionId = `needle-${options.seed}-${index}`;
  const rng = new Prng(deriveSeed(options.seed, `trace:${index}`));
  let calls = 0;
  const callId = (): string => `toolu_${options.seed}_${index}_${(++calls).toString(36)}`;
  const taken = new Set<string>();

  const types = rng.shuffle(NEEDLE_TYPES.flatMap((t) => Array.from({ length: perType }, () => t)));
  const components = rng.shuffle(COMPONENTS);
  const needles: Needle[] = [];
  const probes: Probe[] = [];
  const drafts: Array<{ label: string; turns: DraftEvent[][] }> = [];
  types.forEach((type, i) => {
    const id = `n${i + 1}`;
    const ctx: ScenarioContext = {
      rng,
      component: components[i % components.length]!,
      callId,
      isTaken: (v) => taken.has(v),
      fresh: (make) => {
        for (let attempt = 0; attempt < 100; attempt++) {
          const v = make();
          if (!taken.has(v) && isNeedleShaped(v, type)) return v;
        }
        throw new EngramError('INTERNAL', `needle ${id}: no unused ${type} value in 100 draws`);
      },
    };
    const draft = rng.pick(SCENARIOS[type])(ctx);
    if (!isNeedleShaped(draft.value, type)) throw new EngramError('INTERNAL', `needle ${id}: "${draft.value}" is not a well-formed ${type}`);
    taken.add(draft.value);
    const labels = draft.turns.flatMap((turn, t) => turn.map((_, e) => `${id}:${t}.${e}`));
    needles.push({ id, type, value: draft.value, subject: draft.subject, episodeLabels: labels });
    probes.push({ id: `p${i + 1}`, needleId: id, type, question: rng.pick(draft.questions) });
    drafts.push({ label: id, turns: draft.turns });
  });

  let clock = 0;
  const stamp = (label: string, e: DraftEvent): { label: string; event: EventInput } => ({
    label,
    event: { ...e, ts: new Date(START_MS + EVENT_SPACING_S * 1000 * clock++).toISOString(), key: `${sessionId}:${label}` },
  });
  const seedTurns: TraceTurn[] = drafts.flatMap((d) => d.turns.map((turn, t) => ({ phase: 'seed' as const, events: turn.map((e, k) => stamp(`${d.label}:${t}.${k}`, e)) })));
  const seedClock = clock;
  const floodNeedles = needles.map((n, i) => ({ type: n.type, value: n.value, component: components[i % components.length]! }));
  const maxFloodTurns = options.maxFloodTurns ?? 5000;

  return {
    name,
    seed: options.seed,
    index,
    sessionId,
    needles,
    probes,
    seedTurns,
    *turns() {
      yield* seedTurns;
      // The flood has its own stream, so flood options never change the seed phase; its clock restarts
      // after the seed phase on every iteration, so iterating twice yields the same trace.
      const floodRng = new Prng(deriveSeed(options.seed, `flood:${index}`));
      let floodCalls = 0;
      const floodCallId = (): string => `toolu_${options.seed}_${index}_f${(++floodCalls).toString(36)}`;
      clock = seedClock;
      let label = 0;
      for (let t = 0; t < maxFloodTurns; ) {
        for (const turn of floodTurns(floodRng, floodNeedles, floodCallId, options.flood)) {
          yield { phase: 'flood' as const, events: turn.map((e) => stamp(`f${++label}`, e)) };
          t++;
        }
      }
    },
  };
}
