/**
 * Escalation for structured objects (decision records, entity lists): the model answers JSON that a zod schema
 * validates (near-JSON repaired, see `completeStructured`), the caller's check bounds it (how many records per
 * chunk, how long each), and a deterministic step makes the object without a model when both levels fail.
 */
import type { z } from 'zod';
import type { ChatMessage, ChatModel } from '../providers/llm/chat-model.js';
import { completeStructured } from '../providers/llm/structured-output.js';
import { escalate, type BoundCheck, type EscalationLevel, type Escalated, type EscalationTelemetry, type LlmLevel } from './escalation.js';

export interface StructuredEscalationRequest<S extends z.ZodType> {
  schema: S;
  /**
   * The messages of a level. The aggressive level's should be stricter (Pattern 2: "extract only decisions,
   * constraints and persistent facts; at most N per chunk") and ask for half as much.
   */
  messages: (level: LlmLevel) => ChatMessage[];
  /** Bounds of a level's object (counts, lengths); the deterministic object must pass it too. */
  check: (value: z.output<S>, level: EscalationLevel) => BoundCheck;
  /** The object without a model (e.g. the session's decision events as they are, capped). */
  deterministic: () => z.output<S>;
  /** `max_tokens` of a level's answer. Default 1,024 (normal) and 512 (aggressive). */
  maxTokens?: (level: LlmLevel) => number;
  /** Copied into the call log as `<purpose>:<level>`. Default `structured`. */
  purpose?: string;
  /** Calls per level when an answer is not valid JSON for the schema (see `completeStructured`). Default 2. */
  attemptsPerLevel?: number;
}

export interface StructuredEscalationDeps {
  llm: ChatModel | null;
  telemetry?: EscalationTelemetry;
}

/** {@link Escalated} plus the model's name (absent at the deterministic level) and its tokens over all calls. */
export type StructuredEscalated<T> = Escalated<T> & { model?: string; usage: { inputTokens: number; outputTokens: number } };

/** Derives a structured object through the three levels; never fails because of the model. */
export async function deriveWithEscalation<S extends z.ZodType>(
  request: StructuredEscalationRequest<S>,
  deps: StructuredEscalationDeps,
): Promise<StructuredEscalated<z.output<S>>> {
  const usage = { inputTokens: 0, outputTokens: 0 };
  const { llm } = deps;
  const result = await escalate<z.output<S>>(
    {
      ...(llm
        ? {
            llm: async (level: LlmLevel) => {
              const out = await completeStructured(
                llm,
                {
                  messages: request.messages(level),
                  maxTokens: request.maxTokens?.(level) ?? (level === 'normal' ? 1024 : 512),
                  purpose: `${request.purpose ?? 'structured'}:${level}`,
                },
                request.schema,
                { maxAttempts: request.attemptsPerLevel ?? 2 },
              );
              usage.inputTokens += out.usage.inputTokens;
              usage.outputTokens += out.usage.outputTokens;
              return out.value;
            },
          }
        : {}),
      check: request.check,
      deterministic: request.deterministic,
    },
    deps.telemetry,
  );
  return { ...result, ...(llm && result.level !== 'deterministic' ? { model: llm.name } : {}), usage };
}
