import { describe, expect, it } from 'vitest';
import { taskStateSchema } from '../../src/model/task-state.js';
import { modifierTrace, PROBE_TYPE_NAMES, type LabelledEvent, type ModifierTraceStep, type Probe } from './modifier-trace.js';

const steps = [...modifierTrace({ seed: 9, probesPerType: 6 })];
const probes = steps.flatMap((s) => (s.type === 'probe' ? [s.probe] : []));

/** Each probe with the labelled events (and their sessions) appended before it. */
function replay(all: ModifierTraceStep[]): Array<{ probe: Probe; seen: Map<string, LabelledEvent & { sessionId: string }>; card: unknown }> {
  const seen = new Map<string, LabelledEvent & { sessionId: string }>();
  const cards = new Map<string, unknown>();
  const out: Array<{ probe: Probe; seen: Map<string, LabelledEvent & { sessionId: string }>; card: unknown }> = [];
  for (const step of all) {
    if (step.type === 'append') {
      for (const l of step.events) {
        if (l.supersedesLabel) expect(seen.has(l.supersedesLabel)).toBe(true);
        if (l.label) {
          expect(seen.has(l.label)).toBe(false);
          seen.set(l.label, { ...l, sessionId: step.sessionId });
        }
      }
    } else if (step.type === 'card') cards.set(step.sessionId, step.card);
    else out.push({ probe: step.probe, seen: new Map(seen), card: cards.get(step.probe.sessionId) });
  }
  return out;
}

describe('modifierTrace', () => {
  it('gives the same trace for the same seed and another for a different seed', () => {
    expect([...modifierTrace({ seed: 9, probesPerType: 6 })]).toEqual(steps);
    expect(JSON.stringify([...modifierTrace({ seed: 10, probesPerType: 6 })])).not.toBe(JSON.stringify(steps));
  });

  it('asks probesPerType probes of every type, each after its answer and with the card stored at that moment', () => {
    for (const type of PROBE_TYPE_NAMES) expect(probes.filter((p) => p.type === type)).toHaveLength(6);
    for (const { probe, seen, card } of replay(steps)) {
      const answer = seen.get(probe.expectedLabel);
      expect(answer, probe.id).toBeDefined();
      expect(card).toEqual(probe.card);
      expect(taskStateSchema.safeParse(probe.card).success).toBe(true);
      // Phrased as a question, not a copy of the answer.
      expect(answer!.event.content.toLowerCase()).not.toContain(probe.query.toLowerCase());
    }
  });

  it('sets up each probe type with the metadata its factor reads', () => {
    for (const { probe, seen } of replay(steps)) {
      const answer = seen.get(probe.expectedLabel)!;
      const superseding = [...seen.values()].filter((l) => l.supersedesLabel === probe.expectedLabel);
      switch (probe.type) {
        case 'superseded':
          expect(answer.supersedesLabel).toBeDefined();
          expect(probe.card.requestHistorical).toBe(false);
          break;
        case 'historical':
          expect(superseding).toHaveLength(1);
          expect(probe.card.requestHistorical).toBe(true);
          break;
        case 'premise':
        case 'premiseLegacy':
          expect(probe.card.premises).toContain(answer.event.premiseRef);
          break;
        case 'crossTask':
          expect(answer.event.taskId).toBe(probe.card.taskId);
          break;
        case 'otherTask':
          expect(answer.event.taskId).not.toBe(probe.card.taskId);
          break;
        case 'constraint':
          expect(answer.event.tags).toContain('constraint');
          break;
        case 'phaseDebugging':
          expect([probe.card.phase, answer.event.kind]).toEqual(['debugging', 'tool_result']);
          break;
        case 'phasePlanning':
        case 'phaseMismatch':
          expect([probe.card.phase, answer.event.kind]).toEqual([probe.type === 'phasePlanning' ? 'planning' : 'debugging', 'decision']);
          break;
        case 'selfAssessment':
          expect(probe.card.requiresSelfAssessment).toBe(true);
          expect(answer.event.tags!.some((t) => t === 'mistake' || t === 'lesson')).toBe(true);
          break;
        case 'plain':
          break;
      }
    }
  });

  it('resets the probe-only flags after each probe', () => {
    const cards = steps.flatMap((s) => (s.type === 'card' ? [s.card] : []));
    expect(cards.at(-1)!.requestHistorical).toBe(false);
    expect(cards.at(-1)!.requiresSelfAssessment).toBe(false);
  });

  it('rejects more probes per type than it has subjects for', () => {
    expect(() => [...modifierTrace({ probesPerType: 17 })]).toThrow(/probesPerType/);
  });
});
