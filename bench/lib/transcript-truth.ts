/**
 * Ground truth about a coding session taken mechanically from its tool calls, per transcript format: the files it
 * wrote or edited, the commands that failed and their first error line, and every file path it touched. Used by
 * the session-summaries and carry-over benches to check what a summary or a brief kept.
 *
 * - Claude Code: Write/Edit/MultiEdit/NotebookEdit `file_path`/`notebook_path` of calls that did not fail; a
 *   failure is a `tool_result` with `is_error: true`, except the host's "The user doesn't want to ..." rejections
 *   (nothing ran). Touched files: `file_path`/`notebook_path` of any call.
 * - Codex CLI: `apply_patch` paths (`*** Add/Update/Delete File:`, `*** Move to:`); a failure is a call output with
 *   a non-zero `exit_code` (or `success: false` in the legacy format).
 * - SWE-agent: `str_replace_editor create|str_replace|insert PATH`; the format records no exit status.
 * - OpenHands: `edit` actions with `create`/`str_replace`/`insert` and `write` actions; a failure is an `error`
 *   observation or a `run` observation with a non-zero `exit_code`.
 */
import { readFileSync } from 'node:fs';

export interface Failure {
  /** The command line (Bash, shell), or `<tool> <path>` for other tools. */
  command: string;
  /** The first error-looking line of the result, else its first non-empty line; '' when the result is empty. */
  error: string;
}

export interface SessionTruth {
  format: 'claude-code' | 'codex' | 'swe-agent' | 'openhands';
  /** The project directory the transcript records, when it records one. */
  projectRoot?: string;
  filesEdited: string[];
  failures: Failure[];
  filesTouched: string[];
}

const EDIT_TOOLS = new Set(['Write', 'Edit', 'MultiEdit', 'NotebookEdit']);
const ERROR_LINE = /error|exception|failed|failure|fatal|traceback|not found|denied|cannot|invalid/i;

/** The first error-looking line of a tool result, else its first non-empty line, with Claude Code's tags removed. */
export function firstErrorLine(text: string): string {
  const lines = text
    .replace(/<\/?tool_use_error>/g, '')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
  return (lines.find((l) => ERROR_LINE.test(l)) ?? lines[0] ?? '').slice(0, 300);
}

function blockText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((b) => (typeof b === 'object' && b !== null && typeof (b as { text?: unknown }).text === 'string' ? (b as { text: string }).text : '')).join('\n');
  return '';
}

const unique = (items: string[]): string[] => [...new Set(items.filter((s) => s !== ''))];

/** Parses JSONL text, skipping lines that are not JSON objects. */
export function jsonLines(text: string): Array<Record<string, any>> {
  const out: Array<Record<string, any>> = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const value: unknown = JSON.parse(line);
      if (typeof value === 'object' && value !== null && !Array.isArray(value)) out.push(value as Record<string, any>);
    } catch {
      // A torn last line, as a live transcript may have.
    }
  }
  return out;
}

/** Truth of a Claude Code session from its records. */
export function claudeCodeTruth(records: Array<Record<string, any>>): SessionTruth {
  const calls = new Map<string, { name: string; input: Record<string, any> }>();
  const failedIds = new Set<string>();
  const failures: Failure[] = [];
  const touched: string[] = [];
  let projectRoot: string | undefined;
  for (const r of records) {
    if (projectRoot === undefined && typeof r.cwd === 'string') projectRoot = r.cwd;
    const content = r.message?.content;
    if (!Array.isArray(content)) continue;
    for (const b of content) {
      if (b?.type === 'tool_use' && typeof b.id === 'string') {
        const input = (typeof b.input === 'object' && b.input !== null ? b.input : {}) as Record<string, any>;
        calls.set(b.id, { name: String(b.name), input });
        for (const key of ['file_path', 'notebook_path']) if (typeof input[key] === 'string') touched.push(input[key]);
      } else if (b?.type === 'tool_result' && b.is_error === true) {
        const text = blockText(b.content);
        if (/^\s*The user doesn't want to/.test(text)) continue;
        failedIds.add(b.tool_use_id);
        const call = calls.get(b.tool_use_id);
        const command = call === undefined ? 'unknown tool' : call.name === 'Bash' ? String(call.input.command ?? '') : `${call.name} ${call.input.file_path ?? call.input.notebook_path ?? call.input.path ?? call.input.pattern ?? ''}`.trim();
        failures.push({ command, error: firstErrorLine(text) });
      }
    }
  }
  const filesEdited: string[] = [];
  for (const [id, call] of calls) {
    if (!EDIT_TOOLS.has(call.name) || failedIds.has(id)) continue;
    const path = call.input.file_path ?? call.input.notebook_path;
    if (typeof path === 'string') filesEdited.push(path);
  }
  return { format: 'claude-code', ...(projectRoot !== undefined ? { projectRoot } : {}), filesEdited: unique(filesEdited), failures, filesTouched: unique(touched) };
}

/** Paths an apply_patch body names. */
export function patchPaths(patch: string): string[] {
  return [...patch.matchAll(/^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$/gm)].map((m) => (m[1] ?? m[2]!).trim());
}

/** Truth of a Codex CLI rollout (current `response_item` lines or the legacy bare items). */
export function codexTruth(records: Array<Record<string, any>>): SessionTruth {
  const calls = new Map<string, { command: string; patch?: string }>();
  const failures: Failure[] = [];
  const edited: string[] = [];
  let projectRoot: string | undefined;
  const failedCalls = new Set<string>();
  for (const r of records) {
    if (r.type === 'session_meta' && typeof r.payload?.cwd === 'string') projectRoot = r.payload.cwd;
    const item = (r.type === 'response_item' ? r.payload : r) as Record<string, any>;
    if (item === undefined || item === null) continue;
    if (item.type === 'function_call' || item.type === 'local_shell_call' || item.type === 'custom_tool_call') {
      let command = '';
      let patch: string | undefined;
      if (item.type === 'custom_tool_call') {
        command = String(item.name);
        if (item.name === 'apply_patch') patch = String(item.input ?? '');
      } else {
        let args: Record<string, any> = item.action ?? {};
        if (typeof item.arguments === 'string') {
          try {
            args = JSON.parse(item.arguments) as Record<string, any>;
          } catch {
            args = {};
          }
        }
        const argv = Array.isArray(args.command) ? (args.command as string[]) : [];
        command = argv.length >= 3 && /^(ba|z)?sh$/.test(argv[0]!) ? argv.slice(2).join(' ') : argv.join(' ');
        if (item.name === 'apply_patch') patch = String(args.input ?? '');
        else if (argv[0] === 'apply_patch') patch = argv[1];
      }
      calls.set(String(item.call_id), { command, ...(patch !== undefined ? { patch } : {}) });
    } else if (item.type === 'function_call_output' || item.type === 'custom_tool_call_output') {
      const call = calls.get(String(item.call_id));
      let output = '';
      let failed = false;
      if (typeof item.output === 'string') {
        try {
          const parsed = JSON.parse(item.output) as Record<string, any>;
          output = String(parsed.output ?? '');
          failed = typeof parsed.metadata?.exit_code === 'number' && parsed.metadata.exit_code !== 0;
        } catch {
          output = item.output;
        }
      } else if (typeof item.output === 'object' && item.output !== null) {
        output = String(item.output.content ?? '');
        failed = item.output.success === false;
      }
      if (failed) {
        failedCalls.add(String(item.call_id));
        failures.push({ command: call?.command ?? 'unknown call', error: firstErrorLine(output) });
      }
    }
  }
  for (const [id, call] of calls) if (call.patch !== undefined && !failedCalls.has(id)) edited.push(...patchPaths(call.patch));
  return { format: 'codex', ...(projectRoot !== undefined ? { projectRoot } : {}), filesEdited: unique(edited), failures, filesTouched: unique(edited) };
}

/** Truth of a SWE-agent trajectory (`.traj`). */
export function sweAgentTruth(traj: Record<string, any>): SessionTruth {
  const edited: string[] = [];
  const touched: string[] = [];
  let projectRoot: string | undefined;
  for (const step of (traj.trajectory ?? []) as Array<Record<string, any>>) {
    if (projectRoot === undefined && typeof step.state?.working_dir === 'string') projectRoot = step.state.working_dir;
    const m = /^str_replace_editor\s+(\w+)\s+(\S+)/.exec(String(step.action ?? '').trim());
    if (!m) continue;
    touched.push(m[2]!);
    if (m[1] === 'create' || m[1] === 'str_replace' || m[1] === 'insert') edited.push(m[2]!);
  }
  return { format: 'swe-agent', ...(projectRoot !== undefined ? { projectRoot } : {}), filesEdited: unique(edited), failures: [], filesTouched: unique(touched) };
}

/** Truth of an OpenHands event stream (a JSON list or JSONL of events). */
export function openHandsTruth(events: Array<Record<string, any>>): SessionTruth {
  const byId = new Map<number, Record<string, any>>();
  const edited: string[] = [];
  const touched: string[] = [];
  const failures: Failure[] = [];
  for (const e of events) {
    if (typeof e.id === 'number') byId.set(e.id, e);
    const args = (e.args ?? {}) as Record<string, any>;
    if (typeof e.action === 'string' && typeof args.path === 'string') {
      touched.push(args.path);
      if ((e.action === 'edit' && ['create', 'str_replace', 'insert'].includes(String(args.command))) || e.action === 'write') edited.push(args.path);
    }
    const exitCode = e.extras?.metadata?.exit_code;
    if (e.observation === 'error' || (e.observation === 'run' && typeof exitCode === 'number' && exitCode !== 0)) {
      const cause = typeof e.cause === 'number' ? byId.get(e.cause) : undefined;
      const command = e.observation === 'run' ? String(e.extras?.command ?? '') : cause ? `${cause.action} ${cause.args?.path ?? cause.args?.command ?? ''}`.trim() : 'unknown action';
      failures.push({ command, error: firstErrorLine(String(e.content ?? '')) });
    }
  }
  return { format: 'openhands', projectRoot: '/workspace', filesEdited: unique(edited), failures, filesTouched: unique(touched) };
}

/** Reads a transcript file and takes its truth by format. */
export function truthOfFile(path: string, format: SessionTruth['format']): SessionTruth {
  const text = readFileSync(path, 'utf8');
  switch (format) {
    case 'claude-code':
      return claudeCodeTruth(jsonLines(text));
    case 'codex':
      return codexTruth(jsonLines(text));
    case 'swe-agent':
      return sweAgentTruth(JSON.parse(text) as Record<string, any>);
    case 'openhands': {
      const trimmed = text.trimStart();
      return openHandsTruth(trimmed.startsWith('[') ? (JSON.parse(text) as Array<Record<string, any>>) : jsonLines(text));
    }
  }
}
