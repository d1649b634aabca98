import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import { z } from 'zod';
import type { Engram } from '../../engine.js';
import { EngramError, invalidInputFromZod } from '../../errors.js';
import type { ImportReport } from '../../memory/import-runner.js';
import { validateSessionId } from '../../memory/ingest.js';
import { projectForDirectory, type ProjectIdentity } from '../../memory/project-identity.js';
import { CLAUDE_CODE_HOOK_EVENTS, type HookEventName } from './claude-settings.js';
import { importTranscriptSince } from './transcript-cursor.js';
import type { CarryOverOptions } from '../../context/carry-over.js';
import type { ChatModel } from '../../providers/llm/chat-model.js';

/**
 * What `engram hooks run <event>` does with the JSON Claude Code writes to a hook's stdin. Every event first
 * imports the session's transcript (`transcript_path`, a Claude Code JSONL file that grows by a few lines per
 * turn) into the session's project (memory/project-identity.ts, from the hook's `cwd`): the import is idempotent by
 * record, so each run stores only what is new. Then (docs/memory-across-sessions.md):
 *
 * - SessionStart `startup` or `clear` (a new session): records the start (memory/host-sessions.ts: the MCP server
 *   finds the session by it), summarizes the project's earlier sessions that grew since their last summary, and
 *   answers the project's brief (context/project-brief.ts) as `hookSpecificOutput.additionalContext`.
 * - SessionStart `resume` or `compact` (the same session goes on): records the start and answers the session's push
 *   pack, what `engram context` prints for it. After a compaction this is what Engram kept of the turns Claude Code
 *   just summarised away.
 * - UserPromptSubmit: answers evidence for the prompt from the project's earlier sessions (memory/prompt-recall.ts)
 *   when some clears the confidence floor, else nothing. Claude Code adds the context to the prompt.
 * - Stop: summarizes the session once it has grown by {@link STOP_SUMMARY_EVERY} events since its last summary
 *   (consolidate/work-log.ts without a model), so the next session needs no separate `engram consolidate`.
 * - SessionEnd: summarizes the session's last turns.
 * - PreCompact: a `system` event recording the compaction (trigger and instructions).
 *
 * What a hook injects is also stored in the session, tagged derived (never recalled as evidence), with the ids it
 * cited: a later prompt of the session is not given them again.
 */

/** The fields of Claude Code's hook input Engram reads; the rest is ignored. */
const hookInputSchema = z
  .object({
    session_id: z.string(),
    // Codex sends null when the session has no transcript (yet).
    transcript_path: z.string().nullish(),
    cwd: z.string().optional(),
    hook_event_name: z.string().optional(),
    /** SessionStart: startup, resume, clear or compact. */
    source: z.string().optional(),
    /** UserPromptSubmit: what the user typed. */
    prompt: z.string().optional(),
    /** PreCompact: manual or auto. */
    trigger: z.string().optional(),
    /** PreCompact: what the user typed after /compact. */
    custom_instructions: z.string().nullish(),
    /** SessionEnd: clear, logout, prompt_input_exit, other. */
    reason: z.string().optional(),
  })
  .loose();
export type ClaudeCodeHookInput = z.infer<typeof hookInputSchema>;

/**
 * Size of the pack injected at a resume or compact start. Claude Code keeps hook context short (it moves longer hook
 * output to a file and injects a preview), so the pack is built for a small window and capped in characters.
 */
export const DEFAULT_HOOK_WINDOW_TOKENS = 4000;
export const DEFAULT_HOOK_MAX_CHARS = 9000;
/** Longest `/compact` instruction text kept in the compaction event's content; meta keeps up to 16 KiB (its cap is 64 KiB of JSON). */
const MAX_INSTRUCTIONS_IN_CONTENT = 2000;
const MAX_INSTRUCTIONS_IN_META = 16 * 1024;
/** The host name start records and injected context carry. */
export const CLAUDE_CODE_HOST = 'claude-code';

/**
 * An agent host whose hooks speak Claude Code's protocol (JSON on stdin with `session_id`, `transcript_path`, `cwd`,
 * `source`, `prompt`; `hookSpecificOutput.additionalContext` on stdout): Claude Code itself, and Codex, whose hooks
 * (SessionStart, UserPromptSubmit, Stop) take and answer the same fields. Only the transcript format differs.
 */
export interface HookHost {
  /** `claude-code`, `codex`: the name start records and injected context carry. */
  name: string;
  /** The importer of the host's transcript. */
  transcriptFormat: 'claude-code' | 'codex';
}
export const HOOK_HOSTS: Record<string, HookHost> = {
  'claude-code': { name: CLAUDE_CODE_HOST, transcriptFormat: 'claude-code' },
  codex: { name: 'codex', transcriptFormat: 'codex' },
};

export interface HookRunOptions extends CarryOverOptions {
  /** Resume/compact starts: the window the pack is built for, in tokens. Default {@link DEFAULT_HOOK_WINDOW_TOKENS}. */
  windowTokens?: number;
  /** Resume/compact starts: the pack's character cap. Default {@link DEFAULT_HOOK_MAX_CHARS}. */
  maxChars?: number;
  /** The host's process ids (memory/host-sessions.ts `hostProcessIds`); default none recorded. */
  hostPids?: number[];
  /** The project, when the caller resolved it; default from the input's `cwd` (memory/project-identity.ts). */
  project?: ProjectIdentity;
  /** The model that writes session summaries (`--llm`); default none (consolidate/work-log.ts). */
  llm?: ChatModel | null;
  /** The host whose hook this is; default Claude Code. */
  host?: HookHost;
}

export interface HookOutcome {
  /** What to print on stdout for Claude Code (a JSON object), if anything. */
  stdout?: string;
  /** The transcript import, when there was a transcript to read. */
  imported?: ImportReport;
  /** PreCompact: the compaction event, and whether it was new. */
  recorded?: { eventId: string; isDuplicate: boolean };
  /** The project the session belongs to. */
  project?: string;
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
  const identity = options.project ?? projectForDirectory(input.cwd ?? process.cwd());
  const host = options.host ?? HOOK_HOSTS['claude-code']!;
  const session = { sessionId: input.session_id, project: identity.project, host: host.name };
  const imported = await importTranscript(mem, input, identity.project, host);
  const outcome: HookOutcome = { ...(imported ? { imported } : {}), project: identity.project };
  const carry = mem.carryOver({ llm: options.llm ?? null });
  if (event === 'session-start') {
    const source = input.source ?? 'startup';
    const start = { ...session, source, cwd: input.cwd ?? identity.root, hostPids: options.hostPids ?? [] };
    let context: string | undefined;
    if (source === 'startup' || source === 'clear') context = await carry.sessionStarted(start, options);
    else {
      await carry.recordStart(start);
      context = await resumePack(mem, input, options);
    }
    if (context) outcome.stdout = additionalContext('SessionStart', context);
  } else if (event === 'user-prompt-submit') {
    const context = input.prompt ? await carry.promptSubmitted(session, input.prompt, options) : undefined;
    if (context) outcome.stdout = additionalContext('UserPromptSubmit', context);
  } else if (event === 'stop') {
    await carry.turnEnded(session, options);
  } else if (event === 'session-end') {
    await carry.sessionEnded(session, options);
  } else if (event === 'pre-compact') {
    outcome.recorded = await recordCompaction(mem, input, identity.project);
  }
  return outcome;
}

function additionalContext(hookEventName: 'SessionStart' | 'UserPromptSubmit', text: string): string {
  return JSON.stringify({ hookSpecificOutput: { hookEventName, additionalContext: text } });
}

/**
 * Imports the transcript into the hook's session. Invalid lines are left out rather than failing the hook; a last
 * line still being written is left for the next hook. A transcript that does not exist yet or is empty (a session's
 * first SessionStart) is nothing to import.
 */
async function importTranscript(mem: Engram, input: ClaudeCodeHookInput, project: string, host: HookHost): Promise<ImportReport | undefined> {
  const path = input.transcript_path;
  if (!path) return undefined;
  // Claude Code's transcript: only what it gained since the last hook (transcript-cursor.ts). Another host's whole file.
  if (host.transcriptFormat === 'claude-code') return importTranscriptSince(mem, path, { sessionId: input.session_id, project });
  if (transcriptBytes(path) === 0) return undefined;
  return mem.importFile({ path, displayName: path }, { format: host.transcriptFormat, sessionId: input.session_id, project, skipInvalid: true });
}

/** A resumed or compacted session: its own push pack (what `engram context` prints). */
async function resumePack(mem: Engram, input: ClaudeCodeHookInput, options: HookRunOptions): Promise<string | undefined> {
  const { pack } = await mem.context.pack(input.session_id, {
    windowTokens: options.windowTokens ?? DEFAULT_HOOK_WINDOW_TOKENS,
    maxTotalChars: options.maxChars ?? DEFAULT_HOOK_MAX_CHARS,
  });
  const text = mem.context.format(pack, 'text');
  if (typeof text !== 'string' || text.trim() === '') return undefined;
  const preface =
    `Engram memory of this session (${input.session_id}${input.source ? `, ${input.source}` : ''}): verified facts, markers of earlier turns and the recent tail, ` +
    'quoted from the store. Everything is kept verbatim: the engram MCP tools recall (search) and expand (an id in full) bring back any detail.';
  return `${preface}\n\n${text}`;
}

/**
 * A `system` event saying Claude Code compacted the conversation. Keyed by the transcript's size and the
 * request, so the same compaction reported twice (Claude Code may run PreCompact more than once for one
 * /compact) is stored once, and each later compaction (the transcript has grown) gets its own event.
 */
async function recordCompaction(mem: Engram, input: ClaudeCodeHookInput, project: string): Promise<{ eventId: string; isDuplicate: boolean }> {
  const trigger = input.trigger ?? 'unknown';
  const instructions = input.custom_instructions ?? '';
  const bytes = input.transcript_path ? transcriptBytes(input.transcript_path) : 0;
  const digest = createHash('sha256').update(`${trigger}\0${instructions}`).digest('hex').slice(0, 16);
  const shown = instructions.length > MAX_INSTRUCTIONS_IN_CONTENT ? `${instructions.slice(0, MAX_INSTRUCTIONS_IN_CONTENT)}...` : instructions;
  const [stored] = await mem.append(
    input.session_id,
    {
      kind: 'system',
      content: `Claude Code compacted the conversation (${trigger === 'manual' ? '/compact' : `trigger: ${trigger}`})${shown ? `; instructions: ${shown}` : ''}. Every turn before it is stored in Engram.`,
      key: `cc:compact:${bytes}:${digest}`,
      tags: ['claude-code', 'compaction'],
      meta: { source: 'claude-code', hook: 'PreCompact', trigger, transcriptBytes: bytes, ...(instructions ? { customInstructions: instructions.slice(0, MAX_INSTRUCTIONS_IN_META) } : {}) },
    },
    { project },
  );
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
