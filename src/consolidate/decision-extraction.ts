/**
 * Decisions a model finds in a session's other events (a user's "let's go with X", an agent's "we keep Y because Z"),
 * when an LLM is configured: three-level escalation of a structured object (structured-escalation.ts), chunk by
 * chunk. Each decision must name the event that states it (one of the chunk's, not a `decision` event: those are
 * recorded verbatim anyway) and a short subject. The deterministic level finds none: without a model, decision
 * records come from `decision` events only. The records carry the level and its confidence (0.7 / 0.5), so a guess
 * never replaces a decision stated in a `decision` event (decision-records.ts).
 */
import { z } from 'zod';
import type { EventRecord } from '../model/event.js';
import type { ChatMessage, ChatModel } from '../providers/llm/chat-model.js';
import type { Tokenizer } from '../providers/tokenizer.js';
import type { BoundCheck, EscalationLevel, EscalationTelemetry } from './escalation.js';
import { sourceItemsFromEvents } from './source-items.js';
import { deriveWithEscalation } from './structured-escalation.js';

/** A decision as a model proposed it, checked against its chunk. */
export interface ExtractedDecision {
  text: string;
  subject: string | null;
  eventId: string;
  level: 'normal' | 'aggressive';
  confidence: number;
  model: string;
}

export interface DecisionExtractionOptions {
  llm: ChatModel | null;
  tokenizer: Tokenizer;
  telemetry?: EscalationTelemetry;
  /** Tokens of sources one call reads (default 6,000) and of one source (default 1,000: a long tool result is cut). */
  maxChunkInputTokens?: number;
  maxItemTokens?: number;
}

/** Most decisions per chunk: Pattern 2's per-chunk cap, halved at the aggressive level. */
export const DECISIONS_PER_CHUNK: Readonly<Record<EscalationLevel, number>> = { normal: 5, aggressive: 2, deterministic: 0 };
const MAX_DECISION_CHARS = 600;

const schema = z.object({
  decisions: z.array(
    z.object({
      decision: z.string().min(1),
      subject: z.string().optional().nullable(),
      event: z.string().min(1),
    }),
  ),
});
type Answer = z.output<typeof schema>;

const INSTRUCTIONS: Record<'normal' | 'aggressive', string> = {
  normal:
    'You read part of a coding agent session. List the decisions made in it: choices the user or the agent settled on that later work must respect ' +
    '(a technology, a design, a convention, an option rejected and why). Only decisions the text states; none when there are none. ' +
    `At most ${DECISIONS_PER_CHUNK.normal}. For each: "decision" (one sentence, keep names, paths and numbers exactly as written, with the reason if given), ` +
    '"subject" (a short noun phrase naming what it is about, e.g. "storage backend"), "event" (the id in brackets of the event that states it). ' +
    'Answer JSON only: {"decisions": [{"decision": "...", "subject": "...", "event": "evt_..."}]}',
  aggressive:
    `Only lasting decisions (architecture, constraints), at most ${DECISIONS_PER_CHUNK.aggressive}, each one short sentence. ` +
    'Answer JSON only: {"decisions": [{"decision": "...", "subject": "...", "event": "evt_..."}]}; {"decisions": []} when there is none.',
};

/** The decisions a model finds in `events` (none without a model), chunk by chunk, each checked against its chunk. */
export async function extractDecisions(events: readonly EventRecord[], o: DecisionExtractionOptions): Promise<{ decisions: ExtractedDecision[]; usage: { inputTokens: number; outputTokens: number } }> {
  const usage = { inputTokens: 0, outputTokens: 0 };
  if (o.llm === null) return { decisions: [], usage };
  const tok = o.tokenizer;
  const maxItem = o.maxItemTokens ?? 1_000;
  const maxChunk = o.maxChunkInputTokens ?? 6_000;
  const items = sourceItemsFromEvents(events.filter((e) => e.kind !== 'decision')).map((i) => {
    const text = tok.count(i.text) > maxItem ? `${tok.truncate(i.text, maxItem)}…` : i.text;
    return `[${i.id}] ${i.kind}: ${text}`;
  });
  const chunks: string[][] = [];
  let used = 0;
  for (const line of items) {
    const cost = tok.count(line) + 1;
    if (chunks.length === 0 || used + cost > maxChunk) {
      chunks.push([]);
      used = 0;
    }
    chunks[chunks.length - 1]!.push(line);
    used += cost;
  }
  const out: ExtractedDecision[] = [];
  for (const chunk of chunks) {
    const ids = new Set(chunk.map((l) => l.slice(1, l.indexOf(']'))));
    const check = (value: Answer, level: EscalationLevel): BoundCheck => {
      if (value.decisions.length > DECISIONS_PER_CHUNK[level]) return { ok: false, outcome: 'over_budget', reason: `${value.decisions.length} decisions, cap ${DECISIONS_PER_CHUNK[level]}` };
      const stray = value.decisions.find((d) => !ids.has(d.event.trim()));
      if (stray) return { ok: false, outcome: 'invalid', reason: `event ${JSON.stringify(stray.event.slice(0, 40))} is not one of the chunk's` };
      return { ok: true };
    };
    const messages = (level: 'normal' | 'aggressive'): ChatMessage[] => [
      { role: 'system', content: INSTRUCTIONS[level] },
      { role: 'user', content: chunk.join('\n') },
    ];
    const made = await deriveWithEscalation(
      { schema, messages, check, deterministic: (): Answer => ({ decisions: [] }), purpose: 'decisions' },
      { llm: o.llm, ...(o.telemetry ? { telemetry: o.telemetry } : {}) },
    );
    usage.inputTokens += made.usage.inputTokens;
    usage.outputTokens += made.usage.outputTokens;
    if (made.level === 'deterministic') continue;
    for (const d of made.value.decisions) {
      const text = d.decision.replace(/\s+/g, ' ').trim().slice(0, MAX_DECISION_CHARS);
      if (text === '') continue;
      const subject = d.subject?.replace(/\s+/g, ' ').trim().toLowerCase() || null;
      out.push({ text, subject, eventId: d.event.trim(), level: made.level, confidence: made.confidence, model: made.model ?? o.llm.name });
    }
  }
  return { decisions: out, usage };
}
