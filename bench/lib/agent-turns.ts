import type { EventInput } from '../../src/model/event.js';
import type { TaskPhase, TaskStateUpdate } from '../../src/model/task-state.js';
import { ERRORS, MODULES, path, sentence, toolCall, toolResult } from './agent-trace.js';
import { Prng } from './prng.js';

/**
 * A seeded multi-turn coding-agent session, turn by turn, for replaying through ingest and context assembly.
 * A turn is what happens between two user messages: the user's message, zero to four tool rounds (the
 * assistant sometimes says what it is about to do, then one or two parallel calls and their results) and the
 * assistant's reply. The agent keeps a task card and updates it on about 40 % of turns (ENGRAM §4.3:
 * agents touch the card on 40-60 % of turns). Deterministic for a seed; the content comes from
 * `agent-trace.ts` (same vocabulary, tool calls and tool outputs).
 */
export interface AgentTurn {
  /** 1-based. */
  index: number;
  /** The user's message: the query of the pack built for this turn, then the turn's first event. */
  userMessage: string;
  /** The turn's events in order: the user message, the tool rounds, the assistant's reply. */
  events: EventInput[];
  /** The card update the agent makes at the end of the turn, on about `cardUpdateShare` of turns. */
  cardUpdate?: TaskStateUpdate;
}

export interface AgentTurnOptions {
  /** Default 42. */
  seed?: number;
  /** Share of turns that end with a card update. Default 0.4. */
  cardUpdateShare?: number;
  /** Share of tool results large enough to become artifacts (150-600 lines). Default 0.02. */
  largeShare?: number;
  /** Timestamp of the first event, epoch ms. Default 2026-02-01T09:00:00Z. */
  startMs?: number;
}

/** Tool rounds per turn and how often: a quarter of turns are plain dialogue, a few are long investigations. */
const ROUNDS_CDF: ReadonlyArray<[rounds: number, cumulative: number]> = [
  [0, 0.25],
  [1, 0.55],
  [2, 0.8],
  [3, 0.92],
  [4, 1],
];
const PHASES: readonly TaskPhase[] = ['planning', 'implementing', 'debugging', 'testing', 'implementing', 'reviewing'];
/**
 * List lengths of the card: small enough that its rendering stays under the task_state budget of an 8K window
 * (2 % = 163 tokens); the generator's test checks that bound.
 */
const MAX_OPEN_LOOPS = 2;
const MAX_NEXT_ACTIONS = 2;

/** The card the session starts with (stored before the first turn). */
export function initialCard(seed = 42): TaskStateUpdate {
  const rng = new Prng(seed ^ 0x5eed);
  const module = rng.pick(MODULES);
  return {
    taskId: `task-${module}`,
    goals: [`fix flaky ${module} requests`],
    constraints: ['no schema changes'],
    openLoops: [cardItem(rng)],
    nextActions: [cardItem(rng)],
    phase: 'planning',
  };
}

export function* agentTurns(count: number, options: AgentTurnOptions = {}): Generator<AgentTurn> {
  const seed = options.seed ?? 42;
  const rng = new Prng(seed);
  const cardShare = options.cardUpdateShare ?? 0.4;
  const largeShare = options.largeShare ?? 0.02;
  const start = initialCard(seed);
  let openLoops = [...(start.openLoops ?? [])];
  let nextActions = [...(start.nextActions ?? [])];
  let phaseIndex = 0;
  let ms = options.startMs ?? Date.parse('2026-02-01T09:00:00Z');
  const tick = (minSec: number, maxSec: number): number => (ms += rng.int(minSec, maxSec) * 1000);

  for (let index = 1; index <= count; index++) {
    const userMessage = sentence(rng, rng.int(8, 60));
    const events: EventInput[] = [{ kind: 'user', content: userMessage, ts: tick(30, 300) }];
    const rounds = pickRounds(rng.next());
    let call = 0;
    for (let r = 0; r < rounds; r++) {
      if (rng.chance(0.3)) events.push({ kind: 'assistant', content: sentence(rng, rng.int(8, 30)), ts: tick(2, 10) });
      const parallel = rng.chance(0.2) ? 2 : 1;
      const ids: Array<{ id: string; tool: string }> = [];
      for (let p = 0; p < parallel; p++) {
        const tool = rng.pick(['Bash', 'Read', 'Grep', 'Edit', 'Bash']);
        const id = `call_${index}_${++call}`;
        ids.push({ id, tool });
        events.push({ kind: 'tool_call', toolName: tool, toolCallId: id, content: toolCall(rng, tool), ts: tick(1, 5) });
      }
      for (const { id, tool } of ids) {
        events.push({ kind: 'tool_result', toolName: tool, toolCallId: id, content: toolResult(rng, rng.chance(largeShare)), ts: tick(1, 20) });
      }
    }
    events.push({ kind: 'assistant', content: sentence(rng, rng.int(20, 120)), ts: tick(3, 30) });

    let cardUpdate: TaskStateUpdate | undefined;
    if (rng.chance(cardShare)) {
      const what = rng.next();
      if (what < 0.5) {
        nextActions = Array.from({ length: rng.int(1, MAX_NEXT_ACTIONS) }, () => cardItem(rng));
        cardUpdate = { nextActions };
      } else if (what < 0.8) {
        // Close the oldest loop or open a new one.
        openLoops = openLoops.length >= MAX_OPEN_LOOPS || (openLoops.length > 0 && rng.chance(0.4)) ? openLoops.slice(1) : [...openLoops, cardItem(rng)];
        cardUpdate = { openLoops };
      } else {
        phaseIndex = (phaseIndex + 1) % PHASES.length;
        nextActions = [cardItem(rng)];
        cardUpdate = { phase: PHASES[phaseIndex]!, nextActions };
      }
    }
    yield { index, userMessage, events, ...(cardUpdate ? { cardUpdate } : {}) };
  }
}

function pickRounds(u: number): number {
  for (const [rounds, cumulative] of ROUNDS_CDF) if (u < cumulative) return rounds;
  return 0;
}

/** A short card entry: "check ETIMEDOUT in src/db/pool.ts" or a few words of prose. */
function cardItem(rng: Prng): string {
  if (rng.chance(0.4)) return `${rng.pick(['check', 'fix', 'retry', 'trace'])} ${rng.pick(ERRORS)} in ${path(rng)}`;
  return sentence(rng, rng.int(3, 6)).replace(/\.$/, '');
}
