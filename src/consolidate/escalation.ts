/**
 * Three-level escalation (Lossless Context Patterns, Pattern 2) for every object a model derives: the normal
 * prompt first; if its output is out of bounds or the model fails, an aggressive prompt at half the budget; if that
 * fails too, a deterministic step with no model that converges by construction. The level and its confidence
 * travel with the result, so a derived object always says how it was made. Core code: the model is a
 * `ChatModel` the caller passes in, or none, and then the deterministic level runs at once.
 */
import { EngramError } from '../errors.js';

export const ESCALATION_LEVELS = ['normal', 'aggressive', 'deterministic'] as const;
export type EscalationLevel = (typeof ESCALATION_LEVELS)[number];
/** The levels that ask a model. */
export type LlmLevel = Exclude<EscalationLevel, 'deterministic'>;

/**
 * Confidence of an object made at each level (Pattern 2): a stricter prompt means lower certainty, and the
 * deterministic level, which only selects, the lowest, so derived objects made that way weigh least until confirmed.
 */
export const LEVEL_CONFIDENCE: Readonly<Record<EscalationLevel, number>> = { normal: 0.7, aggressive: 0.5, deterministic: 0.3 };

/** Why a level did not give the result: `over_budget` and `invalid` are the model's output, `failed` the call itself. */
export type AttemptOutcome = 'ok' | 'over_budget' | 'invalid' | 'failed' | 'no_model';

export interface LevelAttempt {
  level: EscalationLevel;
  outcome: AttemptOutcome;
  /** What was wrong, for logs: the token count against the budget, the schema issue, the provider error. */
  reason?: string;
}

export interface Escalated<T> {
  value: T;
  level: EscalationLevel;
  /** {@link LEVEL_CONFIDENCE} of `level`. */
  confidence: number;
  /** Every level tried, in order, the last one being `level` with outcome `ok`. */
  attempts: LevelAttempt[];
}

/** The verdict of a bound check on a level's output. */
export type BoundCheck = { ok: true } | { ok: false; outcome: 'over_budget' | 'invalid'; reason: string };

export interface EscalationSteps<T> {
  /**
   * Asks the model at a level; absent when no model is configured. A throw escalates: as `invalid` for
   * PROVIDER_ERROR `invalid_output` (see `completeStructured`), else as `failed`.
   */
  llm?: (level: LlmLevel) => Promise<T>;
  /** Whether a value is within the level's bounds (budget, caps, schema). The deterministic value must pass too. */
  check: (value: T, level: EscalationLevel) => BoundCheck;
  /** The level that always converges: no model, output within bounds by construction. */
  deterministic: () => T;
}

/** Escalation counts for telemetry: how often each level gave the result, and why levels were left. */
export interface EscalationStats {
  /** Results by the level that made them. */
  results: Record<EscalationLevel, number>;
  /** Levels left, by outcome (`over_budget`, `invalid`, `failed`, `no_model`). */
  escalations: Record<Exclude<AttemptOutcome, 'ok'>, number>;
}

/** Receives each finished escalation; {@link createEscalationCounter} is the in-memory one. */
export interface EscalationTelemetry {
  record(attempts: readonly LevelAttempt[]): void;
}

/** An in-memory {@link EscalationTelemetry} whose `stats()` gives the counts so far. */
export function createEscalationCounter(): EscalationTelemetry & { stats(): EscalationStats } {
  const stats: EscalationStats = {
    results: { normal: 0, aggressive: 0, deterministic: 0 },
    escalations: { over_budget: 0, invalid: 0, failed: 0, no_model: 0 },
  };
  return {
    record(attempts) {
      for (const a of attempts) {
        if (a.outcome === 'ok') stats.results[a.level]++;
        else stats.escalations[a.outcome]++;
      }
    },
    stats: () => structuredClone(stats),
  };
}

/**
 * Runs the levels in order and returns the first value within bounds. Never throws for a model's failure or
 * output: those escalate; the deterministic level ends it. A deterministic value out of bounds is a bug
 * (INTERNAL), since that level promises convergence.
 */
export async function escalate<T>(steps: EscalationSteps<T>, telemetry?: EscalationTelemetry): Promise<Escalated<T>> {
  const attempts: LevelAttempt[] = [];
  const done = (value: T, level: EscalationLevel): Escalated<T> => {
    attempts.push({ level, outcome: 'ok' });
    telemetry?.record(attempts);
    return { value, level, confidence: LEVEL_CONFIDENCE[level], attempts };
  };
  for (const level of ['normal', 'aggressive'] as const) {
    if (!steps.llm) {
      // Recorded once: without a model there is one reason to be deterministic, not two.
      attempts.push({ level, outcome: 'no_model' });
      break;
    }
    let value: T;
    try {
      value = await steps.llm(level);
    } catch (err) {
      // A model that answered, but never with a valid object (structured output after its re-asks), is `invalid`.
      const isInvalid = err instanceof EngramError && err.data.reason === 'invalid_output';
      attempts.push({ level, outcome: isInvalid ? 'invalid' : 'failed', reason: err instanceof Error ? err.message : String(err) });
      continue;
    }
    const verdict = steps.check(value, level);
    if (verdict.ok) return done(value, level);
    attempts.push({ level, outcome: verdict.outcome, reason: verdict.reason });
  }
  const value = steps.deterministic();
  const verdict = steps.check(value, 'deterministic');
  if (!verdict.ok) throw new EngramError('INTERNAL', `the deterministic level produced an object out of bounds: ${verdict.reason}`, { reason: verdict.reason });
  return done(value, 'deterministic');
}
