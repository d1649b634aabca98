import { z } from 'zod';
import type { EventId, SessionId } from './ids.js';
import { jsonValueProblem, MAX_META_JSON_CHARS, stringProblem } from './limits.js';

/**
 * Phases of work. Phase salience (ENGRAM §5.2) is a lookup table over (phase, event kind), so the set is
 * closed; `other` covers work that fits none.
 */
export const TASK_PHASES = ['planning', 'implementing', 'debugging', 'testing', 'reviewing', 'deploying', 'done', 'other'] as const;
export type TaskPhase = (typeof TASK_PHASES)[number];

/** Most items per list: the card is pushed into every context pack, so it must stay small (~500-800 tokens). */
export const TASK_STATE_LIMITS = {
  goals: 20,
  constraints: 30,
  openLoops: 30,
  nextActions: 20,
  keyEvents: 50,
  premises: 20,
  itemChars: 500,
} as const;

/** Valid Unicode without NUL: the card is rendered into every pack and stored as JSON on both backends. */
const validText = (schema: z.ZodString) =>
  schema.superRefine((v, ctx) => {
    const problem = stringProblem(v, false);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });
const item = validText(z.string().min(1).max(TASK_STATE_LIMITS.itemChars));

/** Plain JSON within the limits of `meta` (model/limits.ts): depth, entries, valid Unicode, serialized size. */
const extensionsSchema = z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
  const problem = jsonValueProblem(value);
  if (problem) {
    ctx.addIssue({ code: 'custom', path: problem.path, message: problem.message, ...(problem.params ? { params: { ...problem.params } } : {}) });
    return;
  }
  const chars = JSON.stringify(value).length;
  if (chars > MAX_META_JSON_CHARS) {
    ctx.addIssue({
      code: 'custom',
      message: `serializes to ${chars} characters, over the limit of ${MAX_META_JSON_CHARS} (MAX_META_JSON_CHARS); the card goes into every pack, keep it small`,
      params: { limit: 'MAX_META_JSON_CHARS', max: MAX_META_JSON_CHARS, actual: chars },
    });
  }
});
const list = (max: number) => z.array(item).max(max);
const eventIdSchema = z.string().regex(/^evt_[0-9a-z]{26}$/, 'must be an event id (evt_...)');

/** Fields of the card (ENGRAM §4.3): the core is fixed; domain state goes in registered `extensions`. */
const taskStateFields = {
  /** The task this session works on now; events bound to other tasks are discounted in recall. */
  taskId: validText(z.string().min(1).max(200)).optional(),
  goals: list(TASK_STATE_LIMITS.goals),
  /** Hard rules; never crowded out of recall (the constraint floor of Annex A.3). */
  constraints: list(TASK_STATE_LIMITS.constraints),
  openLoops: list(TASK_STATE_LIMITS.openLoops),
  nextActions: list(TASK_STATE_LIMITS.nextActions),
  /** Events the task depends on; recall keeps them 2-hop retrievable (§5.5). */
  keyEvents: z.array(eventIdSchema).max(TASK_STATE_LIMITS.keyEvents),
  /** Premises that currently hold; events made under other premises are discounted (§5.2). */
  premises: list(TASK_STATE_LIMITS.premises),
  phase: z.enum(TASK_PHASES),
  /** The task ends with a self-assessment: mistakes and successes are kept salient (Annex A.3). */
  requiresSelfAssessment: z.boolean(),
  /** Ask recall for superseded versions too (a post-mortem, a history question). */
  requestHistorical: z.boolean(),
  extensions: extensionsSchema,
};

export const taskStateSchema = z.object(taskStateFields).strict();
export type TaskState = z.output<typeof taskStateSchema>;

/**
 * A partial update: given fields replace the stored ones (lists are replaced whole); `extensions` merge by
 * key, and an extension set to null is removed.
 */
export const taskStateUpdateSchema = z
  .object({
    ...taskStateFields,
    taskId: validText(z.string().min(1).max(200)).nullable().optional(),
    extensions: extensionsSchema,
  })
  .partial()
  .strict();
export type TaskStateUpdate = z.input<typeof taskStateUpdateSchema>;

export const EMPTY_TASK_STATE: TaskState = Object.freeze({
  goals: [],
  constraints: [],
  openLoops: [],
  nextActions: [],
  keyEvents: [],
  premises: [],
  phase: 'planning',
  requiresSelfAssessment: false,
  requestHistorical: false,
  extensions: {},
}) as TaskState;

/** One stored version of a session's card. */
export interface TaskStateVersion {
  sessionId: SessionId;
  /** 1 for the first card of a session, then +1 per update. */
  version: number;
  state: TaskState;
  /** The event that stores this version (kind `task_state`). */
  eventId: EventId;
  /** The turn whose work produced the update (provenance, ENGRAM §4.3). */
  producedByTurn: number;
  ts: string;
}
