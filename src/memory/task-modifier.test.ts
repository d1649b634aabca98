import { describe, expect, it } from 'vitest';
import type { EventRecord } from '../model/event.js';
import type { TaskState } from '../model/task-state.js';
import { EMPTY_TASK_STATE, TASK_PHASES } from '../model/task-state.js';
import { DEFAULT_PHASE_SALIENCE, MODIFIER_FACTORS, phaseSalience, taskModifier as modifierWithDefaults } from './task-modifier.js';
import type { ModifierOptions } from './task-modifier.js';

/**
 * Most tests here pin the mechanism (the phase table, the constraint floor) at full strength; the dampened
 * defaults that recall uses are tested on their own at the end.
 */
const FULL_STRENGTH: ModifierOptions = { phaseStrength: 1, constraintFloor: 3 };
const taskModifier = (...[event, state, context, options]: Parameters<typeof modifierWithDefaults>) =>
  modifierWithDefaults(event, state, context, { ...FULL_STRENGTH, ...options });

type Ev = Pick<EventRecord, 'kind' | 'taskId' | 'premiseRef' | 'tags'>;
const ev = (over: Partial<Ev> = {}): Ev => ({ kind: 'note', tags: [], ...over });
const card = (over: Partial<TaskState> = {}): TaskState => ({ ...EMPTY_TASK_STATE, phase: 'other', ...over });
const live = { isSuperseded: false };

describe('taskModifier', () => {
  it('is 1 with every factor neutral when there is no task state', () => {
    const m = taskModifier(ev({ kind: 'tool_result', taskId: 'a', premiseRef: 'p', tags: ['constraint'] }), undefined, { isSuperseded: true });
    expect(m).toEqual({
      modifier: 1,
      factors: { premise: 1, phase: 1, supersession: 1, taskRelevance: 1, selfAssessment: 1, constraintFloor: false },
    });
  });

  it('discounts another task by the cross-task factor and leaves events without a task alone', () => {
    const state = card({ taskId: 'billing' });
    expect(taskModifier(ev({ taskId: 'auth' }), state, live).factors.taskRelevance).toBe(0.3);
    expect(taskModifier(ev({ taskId: 'billing' }), state, live).factors.taskRelevance).toBe(1);
    expect(taskModifier(ev(), state, live).factors.taskRelevance).toBe(1);
    expect(taskModifier(ev({ taskId: 'auth' }), card(), live).factors.taskRelevance).toBe(1);
    expect(taskModifier(ev({ taskId: 'auth' }), state, live, { crossTaskFactor: 0.5 }).modifier).toBe(0.5);
  });

  it('discounts a superseded event unless the card asks for history', () => {
    expect(taskModifier(ev(), card(), { isSuperseded: true }).modifier).toBeCloseTo(0.1);
    expect(taskModifier(ev(), card({ requestHistorical: true }), { isSuperseded: true }).modifier).toBe(1);
  });

  it('discounts an event made under a premise the card no longer lists', () => {
    const state = card({ premises: ['db:postgres'] });
    expect(taskModifier(ev({ premiseRef: 'db:mysql' }), state, live).factors.premise).toBe(0.2);
    expect(taskModifier(ev({ premiseRef: 'db:postgres' }), state, live).factors.premise).toBe(1);
    expect(taskModifier(ev(), state, live).factors.premise).toBe(1);
  });

  it('weighs kinds by phase: tool output in debugging, decisions in planning', () => {
    expect(taskModifier(ev({ kind: 'tool_result' }), card({ phase: 'debugging' }), live).modifier).toBe(2);
    expect(taskModifier(ev({ kind: 'tool_result' }), card({ phase: 'planning' }), live).modifier).toBe(0.4);
    expect(taskModifier(ev({ kind: 'decision' }), card({ phase: 'planning' }), live).modifier).toBe(2);
    expect(taskModifier(ev({ kind: 'decision' }), card({ phase: 'debugging' }), live).modifier).toBe(0.8);
  });

  it('keeps every phase weight within [0.1, 2.0] and weighs stored cards low in every phase', () => {
    for (const phase of TASK_PHASES) {
      for (const w of Object.values(DEFAULT_PHASE_SALIENCE[phase])) {
        expect(w).toBeGreaterThanOrEqual(0.1);
        expect(w).toBeLessThanOrEqual(2);
      }
      expect(phaseSalience(phase, 'task_state')).toBe(0.3);
    }
    expect(phaseSalience('debugging', 'some_future_kind')).toBe(1);
    expect(phaseSalience('debugging', 'note', { debugging: { note: 9 } })).toBe(2);
  });

  it('doubles mistakes, successes and lessons when the task ends with a self-assessment', () => {
    const state = card({ requiresSelfAssessment: true });
    for (const tag of ['mistake', 'Success', 'lesson']) expect(taskModifier(ev({ tags: [tag] }), state, live).modifier).toBe(2);
    expect(taskModifier(ev({ tags: ['todo'] }), state, live).modifier).toBe(1);
    expect(taskModifier(ev({ tags: ['mistake'] }), card(), live).modifier).toBe(1);
  });

  it('lifts a live constraint to the floor over a low phase weight', () => {
    const m = taskModifier(ev({ kind: 'tool_result', tags: ['constraint'] }), card({ phase: 'planning' }), live);
    expect(m.modifier).toBe(3);
    expect(m.factors.constraintFloor).toBe(true);
    expect(m.factors.phase).toBe(0.4);
  });

  it('does not floor a constraint that was superseded, belongs to another task or to an old premise', () => {
    const state = card({ taskId: 'billing', premises: ['p2'] });
    const constraint = ev({ tags: ['constraint'] });
    expect(taskModifier(constraint, state, { isSuperseded: true }).modifier).toBeCloseTo(0.3);
    expect(taskModifier({ ...constraint, taskId: 'auth' }, state, live).modifier).toBeCloseTo(0.9);
    expect(taskModifier({ ...constraint, premiseRef: 'p1' }, state, live).modifier).toBeCloseTo(0.6);
  });

  it('leaves the floor unused when the product is already higher, and clamps to the maximum', () => {
    const both = ev({ kind: 'tool_result', tags: ['constraint', 'mistake'] });
    const state = card({ phase: 'debugging', requiresSelfAssessment: true });
    const m = taskModifier(both, state, live);
    expect(m.modifier).toBe(4);
    expect(m.factors.constraintFloor).toBe(false);
    expect(taskModifier(both, state, live, { maxModifier: 2.5 }).modifier).toBe(2.5);
  });

  it('sets each switched-off factor to 1 and all of them off gives 1', () => {
    const e = ev({ kind: 'tool_result', taskId: 'auth', premiseRef: 'old', tags: ['mistake', 'constraint'] });
    const state = card({ taskId: 'billing', premises: ['new'], phase: 'planning', requiresSelfAssessment: true });
    const on = taskModifier(e, state, { isSuperseded: true });
    expect(on.factors).toMatchObject({ premise: 0.2, phase: 0.4, supersession: 0.1, taskRelevance: 0.3, selfAssessment: 2 });
    for (const f of MODIFIER_FACTORS) {
      const off = taskModifier(e, state, { isSuperseded: true }, { disable: [f] });
      if (f === 'constraintFloor') expect(off.factors.constraintFloor).toBe(false);
      else expect(off.factors[f]).toBe(1);
    }
    expect(taskModifier(e, state, { isSuperseded: true }, { disable: [...MODIFIER_FACTORS] }).modifier).toBe(1);
  });

  it('dampens phase salience and the constraint floor by default, so they break near-ties rather than overturn relevance', () => {
    const live = { isSuperseded: false };
    expect(modifierWithDefaults(ev({ kind: 'tool_result' }), card({ phase: 'debugging' }), live).modifier).toBeCloseTo(1.35);
    expect(modifierWithDefaults(ev({ kind: 'tool_result' }), card({ phase: 'planning' }), live).modifier).toBeCloseTo(0.79);
    expect(modifierWithDefaults(ev({ kind: 'note', tags: ['constraint'] }), card({ phase: 'debugging' }), live).modifier).toBeCloseTo(1.5);
  });
});
