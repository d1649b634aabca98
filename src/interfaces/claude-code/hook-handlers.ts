import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import { z } from 'zod';
import type { Engram } from '../../engine.js';
import { EngramError, invalidInputFromZod } from '../../errors.js';
import type { ImportReport } from '../../memory/import-runner.js';
import { validateSessionId } from '../../memory/ingest.js';
import { CLAUDE_CODE_HOOK_EVENTS, type HookEventName } from './claude-settings.js';

/**
 * What `engram hooks run <event>` does with the JSON Claude Code writes to a hook's stdin. Every event first
 * imports the session's transcript (`transcript_path`, a Claude Code JSONL file that grows by a few lines per
 * turn): the import is idempotent by record, so each run stores only what is new.
 *
 * - SessionStart (`startup`, `resume`, `clear`, `compact`): answers the push pack, what `engram context` prints
 *   for the session, as `hookSpecificOutput.additionalContext`. After a compaction this is what Engram kept of
 *   the turns Claude Code just summarised away.
 * - UserPromptSubmit, Stop: import only. Nothing is printed: Claude Code adds a UserPromptSubmit hook's stdout
 *   to the prompt.
 * - PreCompact: import, then a `system` event recording the compaction (trigger and instructions).
 */

/** The fields of Claude Code's hook input Engram reads; the rest is ignored. */
const hookInputSchema = z
  .object({
    session_id: z.string(),
    transcript_path: z.string().optional(),
    cwd: z.string().optional(),
    hook_event_name: z.string().optional(),
    /** SessionStart: startup, resume, clear or compact. */
    source: z.string().optional(),
    /** PreCompact: manual or auto. */
    trigger: z.string().optional(),
    /** PreCompact: what the user typed after /compact. */
    custom_instructions: z.string().nullish(),
  })
  .loose();
export type ClaudeCodeHookInput = z.infer<typeof hookInputSchema>;

/**
 * Size of the pack injected at SessionStart. Claude Code keeps hook context short (it moves longer hook
 * output to a file and injects a preview), so the pack is built for a small window and capped in characters.
 */
export const DEFAULT_HOOK_WINDOW_TOKENS = 4000;
export const DEFAULT_HOOK_MAX_CHARS = 9000;
/** Longest `/compact` instruction text kept in the compaction event's content; meta keeps up to 16 KiB (its cap is 64 KiB of JSON). */
const MAX_INSTRUCTIONS_IN_CONTENT = 2000;
const MAX_INSTRUCTIONS_IN_META = 16 * 1024;

export interface HookRunOptions {
  /** SessionStart: the window the pack is built for, in tokens. Default {@link DEFAULT_HOOK_WINDOW_TOKENS}. */
  windowTokens?: number;
  /** SessionStart: the pack's character cap. Default {@link DEFAULT_HOOK_MAX_CHARS}. */
  maxChars?: number;
}

export interface HookOutcome {
  /** What to print on stdout for Claude Code (a JSON object), if anything. */
  stdout?: string;
  /** The transcript import, when there was a transcript to read. */
  imported?: ImportReport;
  /** PreCompact: the compaction event, and whether it was new. */
  recorded?: { eventId: string; isDuplicate: boolean };
}

/** Parses the hook's stdin JSON; INVALID_INPUT names the field. */
export function parseHookInput(text: string): ClaudeCodeHookInput {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new EngramError('INVALID_INPUT', `hook input: not valid JSON (${(err as Error).message}); Claude Code writes a JSON object to the hook's stdin`, { field: 'stdin' });
  }
  const parsed = hookInputSchema.safeParse(value);
  if (!parsed.success) throw invalidInputFromZod(parsed.error.issues, 'stdin');
  validateSessionId(parsed.data.session_id, 'session_id');
  return parsed.data;
}

/** Runs the handler of `event` for one hook invocation. */
export async function runClaudeCodeHook(mem: Engram, event: HookEventName, input: ClaudeCodeHookInput, options: HookRunOptions = {}): Promise<HookOutcome> {
  const expected = CLAUDE_CODE_HOOK_EVENTS[event];
  if (input.hook_event_name !== undefined && input.hook_event_name !== expected) {
    throw new EngramError('INVALID_INPUT', `hook_event_name: "${input.hook_event_name}" was sent to the ${event} hook (${expected}); check the hook's command in Claude Code's settings`, {
      field: 'hook_event_name',
    });
  }
  const imported = await importTranscript(mem, input);
  const outcome: HookOutcome = imported ? { imported } : {};
  if (event === 'session-start') {
    const stdout = await sessionStartOutput(mem, input, options);
    if (stdout !== undefined) outcome.stdout = stdout;
  } else if (event === 'pre-compact') {
    outcome.recorded = await recordCompaction(mem, input);
  }
  return outcome;
}

/**
 * Imports the transcript into the hook's session. Invalid lines are left out rather than failing the hook (the
 * last line may still be being written; it is complete at the next hook and imported then). A transcript that
 * does not exist yet or is empty (a session's first SessionStart) is nothing to import.
 */
async function importTranscript(mem: Engram, input: ClaudeCodeHookInput): Promise<ImportReport | undefined> {
  const path = input.transcript_path;
  if (!path || transcriptBytes(path) === 0) return undefined;
  return mem.importFile({ path, displayName: path }, { format: 'claude-code', sessionId: input.session_id, skipInvalid: true });
}

async function sessionStartOutput(mem: Engram, input: ClaudeCodeHookInput, options: HookRunOptions): Promise<string | undefined> {
  const { pack } = await mem.context.pack(input.session_id, {
    windowTokens: options.windowTokens ?? DEFAULT_HOOK_WINDOW_TOKENS,
    maxTotalChars: options.maxChars ?? DEFAULT_HOOK_MAX_CHARS,
  });
  const text = mem.context.format(pack, 'text');
  if (typeof text !== 'string' || text.trim() === '') return undefined;
  const preface =
    `Engram memory of this session (${input.session_id}${input.source ? `, ${input.source}` : ''}): verified facts, markers of earlier turns and the recent tail, ` +
    'quoted from the store. Everything is kept verbatim: the engram MCP tools recall (search) and expand (an id in full) bring back any detail.';
  return JSON.stringify({ hookSpecificOutput: { hookEventName: 'SessionStart', additionalContext: `${preface}\n\n${text}` } });
}

/**
 * A `system` event saying Claude Code compacted the conversation. Keyed by the transcript's size and the
 * request, so the same compaction reported twice (Claude Code may run PreCompact more than once for one
 * /compact) is stored once, and each later compaction (the transcript has grown) gets its own event.
 */
async function recordCompaction(mem: Engram, input: ClaudeCodeHookInput): Promise<{ eventId: string; isDuplicate: boolean }> {
  const trigger = input.trigger ?? 'unknown';
  const instructions = input.custom_instructions ?? '';
  const bytes = input.transcript_path ? transcriptBytes(input.transcript_path) : 0;
  const digest = createHash('sha256').update(`${trigger}\0${instructions}`).digest('hex').slice(0, 16);
  const shown = instructions.length > MAX_INSTRUCTIONS_IN_CONTENT ? `${instructions.slice(0, MAX_INSTRUCTIONS_IN_CONTENT)}...` : instructions;
  const [stored] = await mem.append(input.session_id, {
    kind: 'system',
    content: `Claude Code compacted the conversation (${trigger === 'manual' ? '/compact' : `trigger: ${trigger}`})${shown ? `; instructions: ${shown}` : ''}. Every turn before it is stored in Engram.`,
    key: `cc:compact:${bytes}:${digest}`,
    tags: ['claude-code', 'compaction'],
    meta: { source: 'claude-code', hook: 'PreCompact', trigger, transcriptBytes: bytes, ...(instructions ? { customInstructions: instructions.slice(0, MAX_INSTRUCTIONS_IN_META) } : {}) },
  });
  return { eventId: stored!.record.id, isDuplicate: stored!.isDuplicate };
}

/** Size of the transcript in bytes; 0 when it does not exist (yet). */
function transcriptBytes(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}
