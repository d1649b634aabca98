/**
 * Where consolidation's telemetry goes: the bus's telemetry log (`mem.bus.log`, stored by both backends and read
 * with `mem.bus.events({ types: [...] })`). One `llm.call` event per model call (tokens, latency, outcome) and
 * one `consolidation.escalation` event per derived object (the level it was made at, the levels it left and why).
 */
import type { LlmCallRecord } from '../providers/llm/chat-model.js';
import type { EscalationTelemetry, LevelAttempt } from './escalation.js';

/** What the sinks need of the bus: its buffered `log` (see bus/telemetry-buffer.ts). */
export interface TelemetrySink {
  log(event: { tsMs: number; type: string; data: Record<string, unknown> }): void;
}

export const LLM_CALL_EVENT = 'llm.call';
export const ESCALATION_EVENT = 'consolidation.escalation';

/** An `onCall` hook for a guarded model that logs each call as an `llm.call` event. */
export function logLlmCallsTo(sink: TelemetrySink): (record: LlmCallRecord) => void {
  return (record) => sink.log({ tsMs: record.startedAtMs, type: LLM_CALL_EVENT, data: { ...record } });
}

/**
 * Escalation telemetry that logs a `consolidation.escalation` event per finished escalation: `level` (where it
 * ended), `escalations` (levels left) and `attempts`. `purpose` names the kind of object (e.g. `summary:session`).
 */
export function logEscalationsTo(sink: TelemetrySink, purpose: string, now: () => number = Date.now): EscalationTelemetry {
  return {
    record(attempts: readonly LevelAttempt[]) {
      const final = attempts.at(-1);
      sink.log({
        tsMs: now(),
        type: ESCALATION_EVENT,
        data: { purpose, level: final?.level, escalations: attempts.length - 1, attempts: attempts.map((a) => ({ ...a })) },
      });
    },
  };
}
