import type { EventKind, EventRecord } from '../model/event.js';
import type { TaskPhase, TaskState } from '../model/task-state.js';

/**
 * The task-conditioned modifier m(e, τ) of ENGRAM §5.2 / Annex A.3: how useful an event is for the task
 * the session works on now, independent of how well it matches the query. Recall multiplies its query
 * relevance by this number. Pure: everything it needs is on the event, the card and `context`.
 */

/** Factors of the modifier; each can be switched off (set to 1) for ablation. */
export const MODIFIER_FACTORS = ['premise', 'phase', 'supersession', 'taskRelevance', 'selfAssessment', 'constraintFloor'] as const;
export type ModifierFactor = (typeof MODIFIER_FACTORS)[number];

/** Weight per phase and stored event kind (`task_state` included: the card's stored versions). */
export type PhaseSalienceTable = Record<TaskPhase, Record<EventKind, number>>;

/**
 * Phase salience, phase × kind → weight in [0.1, 2.0] (§5.2: "during planning, decision records have high
 * marginal utility; during debugging, tool outputs do"). Rows, in words:
 * - planning: what was decided and asked for shapes a plan (decision 2.0, user 1.5, note 1.5); old tool
 *   output is mostly the "debug noise" §5.1 warns about (tool_result 0.4, tool_call 0.5).
 * - implementing: decisions constrain the code (1.5), requirements still matter (user 1.2); tool traffic is
 *   neutral-to-low (commands 1.0, output 0.8).
 * - debugging: the evidence is in tool output (tool_result 2.0) and the commands that produced it (1.5);
 *   earlier explanations by the assistant are often the wrong hypotheses (0.8), as are plans (decision 0.8).
 * - testing: like debugging, slightly less extreme (tool_result 1.8, tool_call 1.5).
 * - reviewing: decisions and their rationale (2.0) and what the assistant claimed it did (1.5) are what a
 *   review checks; raw tool traffic is background (0.6).
 * - deploying: commands and their output (1.5) plus configuration decisions (1.5); system messages carry
 *   environment facts more often here (1.2).
 * - done: a retrospective wants decisions and notes (1.5), less raw traffic (0.5).
 * - other: no evidence to prefer any kind: all 1.0.
 * `task_state` is 0.3 in every phase: the current card is already in the context pack, and an old card is a
 * summary; recall should surface the evidence behind it, not earlier cards, before anything else. System
 * messages stay at 1.0 (neutral) except in deployment.
 * The numbers are priors to be calibrated by the evaluation harness (§5.7 bounds the cost of a bad prior by
 * the false-suppression rate), not measurements.
 */
export const DEFAULT_PHASE_SALIENCE: PhaseSalienceTable = {
  planning: { user: 1.5, assistant: 1.0, system: 1.0, tool_call: 0.5, tool_result: 0.4, decision: 2.0, note: 1.5, task_state: 0.3 },
  implementing: { user: 1.2, assistant: 1.0, system: 1.0, tool_call: 1.0, tool_result: 0.8, decision: 1.5, note: 1.2, task_state: 0.3 },
  debugging: { user: 1.0, assistant: 0.8, system: 1.0, tool_call: 1.5, tool_result: 2.0, decision: 0.8, note: 1.0, task_state: 0.3 },
  testing: { user: 1.0, assistant: 0.8, system: 1.0, tool_call: 1.5, tool_result: 1.8, decision: 1.0, note: 1.0, task_state: 0.3 },
  reviewing: { user: 1.2, assistant: 1.5, system: 1.0, tool_call: 0.6, tool_result: 0.6, decision: 2.0, note: 1.3, task_state: 0.3 },
  deploying: { user: 1.0, assistant: 0.8, system: 1.2, tool_call: 1.5, tool_result: 1.5, decision: 1.5, note: 1.2, task_state: 0.3 },
  done: { user: 1.2, assistant: 1.2, system: 1.0, tool_call: 0.5, tool_result: 0.5, decision: 1.5, note: 1.5, task_state: 0.3 },
  other: { user: 1.0, assistant: 1.0, system: 1.0, tool_call: 1.0, tool_result: 1.0, decision: 1.0, note: 1.0, task_state: 0.3 },
};

/** Phase salience is clamped to this range (§5.2), also for a caller's own table. */
export const PHASE_SALIENCE_MIN = 0.1;
export const PHASE_SALIENCE_MAX = 2.0;

/** Tags that mark the outcomes a closing self-assessment will need (Annex A.3 line 11). */
export const SELF_ASSESSMENT_TAGS: readonly string[] = ['mistake', 'success', 'lesson'];
/** Tag that marks a hard rule; such events get the constraint floor (Annex A.3 line 14). */
export const CONSTRAINT_TAG = 'constraint';

export const MODIFIER_DEFAULTS = {
  /**
   * Events of another task. A.3 returns 0 "unless cross-task allowed"; recall is a pull the agent asks for,
   * so an explicit question about another task ("how did we fix this in the auth task?") must still be
   * answerable, and task ids are set by callers with uneven care: 0 would make such events invisible, a
   * Type I error (§5.7) no query can repair. 0.3 keeps them findable when they match clearly better: a strong
   * match of another task (1.0 × 0.3) still beats a weak one of this task (< 0.3).
   */
  crossTaskFactor: 0.3,
  /** Superseded events (A.3 line 6): the superseding event subsumes their content. */
  supersededFactor: 0.1,
  /**
   * Events made under a premise the card no longer lists (§5.2: "they describe a world that no longer
   * holds"). Not 0: premise references are caller metadata and can be wrong (ε_meta in §5.7).
   */
  incompatiblePremiseFactor: 0.2,
  /** Boost of mistakes, successes and lessons when the task ends with a self-assessment (A.3 line 12). */
  selfAssessmentBoost: 2.0,
  /**
   * Lowest modifier of a live constraint (A.3 line 15 says 3.0). At 3.0 a constraint that shares one word
   * with the question outranked the exact answer (bench/results/context.md ablation: plain lookups gained
   * 21 points of precision@1 with the floor off); 1.5 keeps constraints ahead of equally relevant chatter.
   */
  constraintFloor: 1.5,
  /**
   * How far phase salience moves a score: the table's weight w becomes 1 + strength x (w - 1). At full
   * strength a tool result at half the best relevance (x 2.0 while debugging) beat the exact answer, and the
   * factor cost 21-43 points of precision@1 on several probe types; at 0.35 the table spans ~0.75-1.35, a
   * preference that breaks near-ties instead of overturning relevance.
   */
  phaseStrength: 0.35,
  /**
   * Largest modifier (M_MAX of A.3). The largest product of the other defaults is phase 2.0 × self-assessment
   * 2.0 = 4, so with the defaults the clamp never reorders anything; it bounds custom settings, so that no
   * task factor can bury the query relevance it multiplies.
   */
  maxModifier: 5.0,
} as const;

export interface ModifierOptions {
  /** Factors forced to 1 (ablation). Default none. */
  disable?: readonly ModifierFactor[];
  /** Default {@link MODIFIER_DEFAULTS.crossTaskFactor} (0.3). */
  crossTaskFactor?: number;
  /** Default 0.1. */
  supersededFactor?: number;
  /** Default 0.2. */
  incompatiblePremiseFactor?: number;
  /** Default 2.0. */
  selfAssessmentBoost?: number;
  /** Default 1.5. */
  constraintFloor?: number;
  /** Default 0.35 (1 = the table's weights as they are). */
  phaseStrength?: number;
  /** Default 5.0. */
  maxModifier?: number;
  /** Default {@link DEFAULT_PHASE_SALIENCE}. Kinds it lacks weigh 1. */
  phaseSalience?: Partial<Record<TaskPhase, Partial<Record<string, number>>>>;
}

export interface ModifierFactors {
  premise: number;
  phase: number;
  supersession: number;
  taskRelevance: number;
  selfAssessment: number;
  /** Whether the constraint floor raised the modifier. */
  constraintFloor: boolean;
}

export interface TaskModifier {
  /** The product of the factors, floored for live constraints, clamped to [0, maxModifier]. */
  modifier: number;
  factors: ModifierFactors;
}

export interface ModifierContext {
  /** Some later event's `supersedes` points at this event. */
  isSuperseded: boolean;
}

const NEUTRAL: TaskModifier = Object.freeze({
  modifier: 1,
  factors: Object.freeze({ premise: 1, phase: 1, supersession: 1, taskRelevance: 1, selfAssessment: 1, constraintFloor: false }),
}) as TaskModifier;

/**
 * Computes m(e, τ) (Annex A.3). Without a task state every factor is 1: nothing is known about the task.
 *
 * One deliberate difference from A.3: the constraint floor scales with the factors that say whether the
 * constraint still holds (premise, supersession, task relevance) and overrides only phase salience. A.3
 * floors a superseded constraint at 3.0 too, which would tie a revised rule with the rule it replaced.
 */
export function taskModifier(
  event: Pick<EventRecord, 'kind' | 'taskId' | 'premiseRef' | 'tags'>,
  state: TaskState | undefined,
  context: ModifierContext,
  options: ModifierOptions = {},
): TaskModifier {
  if (!state) return { modifier: NEUTRAL.modifier, factors: { ...NEUTRAL.factors } };
  const o = { ...MODIFIER_DEFAULTS, ...definedOnly(options) };
  const off = new Set(options.disable ?? []);
  const on = (f: ModifierFactor): boolean => !off.has(f);

  const taskRelevance = on('taskRelevance') && event.taskId !== undefined && state.taskId !== undefined && event.taskId !== state.taskId
    ? o.crossTaskFactor
    : 1;
  const supersession = on('supersession') && context.isSuperseded && !state.requestHistorical ? o.supersededFactor : 1;
  const premise = on('premise') && event.premiseRef !== undefined && !state.premises.includes(event.premiseRef) ? o.incompatiblePremiseFactor : 1;
  const phase = on('phase') ? 1 + o.phaseStrength * (phaseSalience(state.phase, event.kind, options.phaseSalience) - 1) : 1;
  const tags = event.tags.map((t) => t.toLowerCase());
  const selfAssessment =
    on('selfAssessment') && state.requiresSelfAssessment && tags.some((t) => SELF_ASSESSMENT_TAGS.includes(t)) ? o.selfAssessmentBoost : 1;

  let m = taskRelevance * supersession * premise * phase * selfAssessment;
  let isFloored = false;
  if (on('constraintFloor') && tags.includes(CONSTRAINT_TAG)) {
    const floor = o.constraintFloor * taskRelevance * supersession * premise;
    if (floor > m) {
      m = floor;
      isFloored = true;
    }
  }
  return {
    modifier: Math.min(Math.max(m, 0), o.maxModifier),
    factors: { premise, phase, supersession, taskRelevance, selfAssessment, constraintFloor: isFloored },
  };
}

/** The phase table's weight for a kind, clamped to [0.1, 2.0]; a kind the table lacks weighs 1. */
export function phaseSalience(phase: TaskPhase, kind: string, table?: ModifierOptions['phaseSalience']): number {
  const custom = table?.[phase]?.[kind];
  const w = custom ?? (DEFAULT_PHASE_SALIENCE[phase] as Record<string, number> | undefined)?.[kind] ?? 1;
  return Math.min(Math.max(w, PHASE_SALIENCE_MIN), PHASE_SALIENCE_MAX);
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
