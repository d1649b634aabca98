import { jsonrepair } from 'jsonrepair';
import type { z } from 'zod';
import { EngramError } from '../../errors.js';
import type { ChatMessage, ChatModel, ChatRequest, ChatResult } from './chat-model.js';

/**
 * The JSON value in a model's answer. Small local models wrap it in code fences, put prose before or after it,
 * leave trailing commas, quote with single quotes or leave keys bare: the fences and the prose are cut (the value
 * is the span from the first `{` or `[` to the last matching closer), and what remains is parsed, or repaired
 * with `jsonrepair` when it is not strict JSON. Returns `{ ok: false }` when nothing JSON-like is there.
 */
export function extractJson(text: string): { ok: true; value: unknown; repaired: boolean } | { ok: false; message: string } {
  const fenced = /```(?:json|JSON)?\s*\n?([\s\S]*?)```/.exec(text);
  const inner = fenced ? fenced[1]! : text;
  // The value starts at the first `{` or the first `[`: prose may hold a bracket ("[note]") before the object,
  // so both are tried, earliest first, strict JSON before repair.
  const starts = [inner.indexOf('{'), inner.indexOf('[')].filter((i) => i >= 0).sort((a, b) => a - b);
  if (starts.length === 0) return { ok: false, message: 'the answer holds no JSON object' };
  const candidates = starts.map((start) => {
    const end = inner.lastIndexOf(inner[start] === '{' ? '}' : ']');
    // An answer cut off before its closer (max_tokens) is passed on whole: jsonrepair closes what is open.
    return end > start ? inner.slice(start, end + 1) : inner.slice(start);
  });
  for (const candidate of candidates) {
    try {
      return { ok: true, value: JSON.parse(candidate) as unknown, repaired: false };
    } catch {
      // near-JSON: repaired below
    }
  }
  let problem = '';
  for (const candidate of candidates) {
    try {
      return { ok: true, value: JSON.parse(jsonrepair(candidate)) as unknown, repaired: true };
    } catch (err) {
      problem ||= (err as Error).message.slice(0, 120);
    }
  }
  return { ok: false, message: `the answer is not JSON and could not be repaired (${problem})` };
}

export interface StructuredOptions {
  /** Calls in all: after an answer that is not valid, the model is asked again with the problem stated. Default 2. */
  maxAttempts?: number;
}

export interface StructuredResult<T> {
  value: T;
  /** The last answer, whose text held the value. */
  result: ChatResult;
  /** Model calls made (1 when the first answer was valid). */
  calls: number;
  /** True when the value was repaired from near-JSON. */
  repaired: boolean;
  /** Input and output tokens over all calls. */
  usage: { inputTokens: number; outputTokens: number };
}

/**
 * Asks for JSON and validates the answer against a zod schema. An answer that holds no JSON, or JSON the schema
 * rejects, is sent back with the reason, up to `maxAttempts` calls; then PROVIDER_ERROR with `data.reason`
 * `invalid_output`, `data.issue` (the first problem) and `data.text` (the start of the last answer).
 */
export async function completeStructured<S extends z.ZodType>(
  model: ChatModel,
  request: ChatRequest,
  schema: S,
  options: StructuredOptions = {},
): Promise<StructuredResult<z.output<S>>> {
  const maxAttempts = Math.max(1, options.maxAttempts ?? 2);
  const messages: ChatMessage[] = [...request.messages];
  const usage = { inputTokens: 0, outputTokens: 0 };
  let problem = '';
  let lastText = '';
  for (let call = 1; call <= maxAttempts; call++) {
    const result = await model.complete({ ...request, messages, json: true });
    usage.inputTokens += result.usage.inputTokens;
    usage.outputTokens += result.usage.outputTokens;
    lastText = result.text;
    const parsed = extractJson(result.text);
    if (parsed.ok) {
      const checked = schema.safeParse(parsed.value);
      if (checked.success) return { value: checked.data as z.output<S>, result, calls: call, repaired: parsed.repaired, usage };
      const issue = checked.error.issues[0]!;
      problem = `${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}`;
    } else {
      problem = parsed.message;
    }
    messages.push(
      { role: 'assistant', content: result.text },
      { role: 'user', content: `That answer is not valid (${problem}). Reply with the JSON object only, no prose and no code fence.` },
    );
  }
  throw new EngramError('PROVIDER_ERROR', `${model.name}: no valid JSON after ${maxAttempts} calls (${problem})`, {
    retryable: false,
    reason: 'invalid_output',
    issue: problem,
    text: lastText.slice(0, 200),
  });
}
