/**
 * Replays a recorded Claude Code transcript through the installed hooks as the session grows: SessionStart
 * (startup), then for each prompt typed by the user UserPromptSubmit, the prompt's record and everything up to
 * the next prompt appended to the transcript, and Stop; SessionEnd at the end.
 */
import { readdirSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { ClaudeSession, type HookRun } from './claude-hooks.js';
import { jsonLines } from './transcript-truth.js';
import { readFileSync } from 'node:fs';

export type ClaudeRecord = Record<string, any>;

/** The text of a prompt the user typed, or undefined when the record is not one (tool results, meta, sub-agents). */
export function promptText(record: ClaudeRecord): string | undefined {
  if (record.type !== 'user' || record.isSidechain === true || record.isMeta === true) return undefined;
  const content = record.message?.content;
  if (typeof content === 'string') return content;
  if (!Array.isArray(content) || content.some((b) => b?.type === 'tool_result')) return undefined;
  const text = content.filter((b) => b?.type === 'text' && typeof b.text === 'string').map((b) => b.text as string).join('\n');
  return text === '' ? undefined : text;
}

/** The records split at each prompt: records before the first prompt, then one group per prompt. */
export function splitAtPrompts(records: ClaudeRecord[]): { preamble: ClaudeRecord[]; turns: Array<{ prompt: string; records: ClaudeRecord[] }> } {
  const preamble: ClaudeRecord[] = [];
  const turns: Array<{ prompt: string; records: ClaudeRecord[] }> = [];
  for (const r of records) {
    const prompt = promptText(r);
    if (prompt !== undefined) turns.push({ prompt, records: [r] });
    else if (turns.length > 0) turns[turns.length - 1]!.records.push(r);
    else preamble.push(r);
  }
  return { preamble, turns };
}

export interface RecordedSession {
  file: string;
  sessionId: string;
  /** Epoch ms of the first timestamped record. */
  startMs: number;
  records: ClaudeRecord[];
}

/**
 * The main sessions of a Claude Code project folder (`~/.claude/projects/<project>/`), oldest first: empty files
 * and `agent-*.jsonl` (sub-agent sessions, which Claude Code runs inside a main session and whose work the main
 * transcript reports in its Task result) are left out.
 */
export function projectSessions(dir: string): RecordedSession[] {
  const out: RecordedSession[] = [];
  for (const name of readdirSync(dir)) {
    const file = join(dir, name);
    if (!name.endsWith('.jsonl') || name.startsWith('agent-') || !statSync(file).isFile() || statSync(file).size === 0) continue;
    const records = jsonLines(readFileSync(file, 'utf8'));
    const stamps = records.map((r) => Date.parse(String(r.timestamp ?? ''))).filter((t) => Number.isFinite(t));
    if (records.length === 0) continue;
    out.push({ file, sessionId: basename(name, '.jsonl'), startMs: stamps.length > 0 ? Math.min(...stamps) : 0, records });
  }
  return out.sort((a, b) => a.startMs - b.startMs || a.sessionId.localeCompare(b.sessionId));
}

/** The records with `cwd` moved to `cwd` (the replay's project directory); everything else as recorded. */
export function withCwd(records: ClaudeRecord[], cwd: string): ClaudeRecord[] {
  return records.map((r) => (typeof r.cwd === 'string' ? { ...r, cwd } : r));
}

export interface ReplayOutcome {
  /** SessionStart's injection at the start. */
  startInjected: string;
  /** UserPromptSubmit's injection for the first prompt ('' when the session has none). */
  firstPromptInjected: string;
  runs: HookRun[];
}

/** Replays `records` into `session` turn by turn (see the file comment). */
export async function replayRecorded(session: ClaudeSession, records: ClaudeRecord[]): Promise<ReplayOutcome> {
  const { preamble, turns } = splitAtPrompts(records);
  const start = await session.start('startup');
  session.append(preamble);
  let firstPromptInjected = '';
  for (const [i, turn] of turns.entries()) {
    const run = await session.prompt(turn.prompt);
    if (i === 0) firstPromptInjected = run?.injected ?? '';
    session.append(turn.records);
    await session.stop();
  }
  if (turns.length === 0 && preamble.length > 0) await session.stop();
  await session.end();
  return { startInjected: start?.injected ?? '', firstPromptInjected, runs: session.runs };
}
