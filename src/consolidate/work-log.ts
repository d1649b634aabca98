/**
 * What a coding session did, read off its tool calls and results, with no model (issue #29, item 4): the requests
 * the user made, the files written or edited, the commands run with their exit status, the errors hit and whether a
 * later run fixed them, the test runs, the decisions stated and what was left open. Every item names the event it
 * comes from, so a summary line can cite it and `expand` opens the original.
 *
 * Agent hosts name their tools differently; the rules below read the documented shapes of each:
 * - Claude Code: `Write`/`Edit`/`MultiEdit` (`file_path`), `NotebookEdit` (`notebook_path`), `Bash` (`command`);
 *   a failed result has `is_error` (the importer's `meta.isError`); `TodoWrite` (`todos[].status`) and
 *   `TaskCreate`/`TaskUpdate` carry the plan.
 * - Codex CLI: `apply_patch` (a patch whose `*** Add|Update|Delete File:` lines name the files), `shell`
 *   (`command` as an argv array, `bash -lc <script>` unwrapped) and `exec_command` (`cmd`); results are JSON
 *   `{output, metadata: {exit_code}}`; `update_plan` (`plan[].status`).
 * - SWE-agent and OpenHands: `str_replace_editor` (`create`, `str_replace`, `insert`, `undo_edit` write; `view`
 *   reads), as a command line or as JSON arguments (`path`, `command`); `bash` / `execute_bash`; OpenHands
 *   results carry `meta.exitCode`.
 * - Gemini CLI and others: a tool whose name says it writes (`write_file`, `replace`, `edit`, `create`...) with a
 *   path argument, or runs a command (`run_shell_command`, `terminal`...) with a `command`.
 */
import { DERIVED_EVENT_TAG, type EventRecord } from '../model/event.js';

export type FileAction = 'created' | 'edited' | 'deleted';

export interface WorkLogFile {
  /** As the tool named it, made relative to the session's root when it lies under it. */
  path: string;
  action: FileAction;
  /** Successful writes of this file. */
  writes: number;
  /** The last successful write (or the last attempt when none succeeded). */
  eventId: string;
  /** Every write of this file failed (the tool refused or errored). */
  isFailed: boolean;
}

export interface WorkLogCommand {
  command: string;
  /** `ok`, `failed` (non-zero exit, an error result), or `unknown` (the format records no status). */
  status: 'ok' | 'failed' | 'unknown';
  exitCode?: number;
  /** The first error line of a failed run's output. */
  error?: string;
  /** Whether it runs a test suite. */
  isTest: boolean;
  /** The tool call. */
  eventId: string;
  /** A failed run: the event of a later successful run of the same command, when there is one. */
  fixedBy?: string;
}

export interface WorkLogItem {
  text: string;
  eventId: string;
}

export interface WorkLog {
  /** The directory paths are made relative to: the events' `meta.cwd` (the first one recorded). */
  root?: string;
  /** What the user asked, in order (prompts, not tool results or the host's own messages). */
  requests: WorkLogItem[];
  files: WorkLogFile[];
  commands: WorkLogCommand[];
  /**
   * Failed tool results other than commands (an edit refused, a file not found), with their first error line and,
   * for a write the tool refused, the file it was to write.
   */
  errors: Array<WorkLogItem & { tool: string; path?: string }>;
  /** `decision` events and the user's stated decisions ("let's use...", "from now on..."). */
  decisions: WorkLogItem[];
  /** Plan items not completed at the session's end, and commands whose last run failed. */
  open: WorkLogItem[];
  /** The agent's last words: its final answer. */
  outcome?: WorkLogItem;
  /** Tool calls in all, for the significance gate and the summary's header. */
  toolCalls: number;
}

/** Tool names that write the file named by their path argument. */
const WRITE_TOOLS = /^(?:write|edit|multiedit|notebookedit|write_file|create_file|edit_file|replace|str_replace|str_replace_based_edit_tool|insert|append_file|patch|apply_diff|search_replace)$/i;
/** Tool names that run a shell command. */
const SHELL_TOOLS = /^(?:bash|shell|exec_command|execute_bash|run_shell_command|run_command|terminal|local_shell|container\.exec|cmd|sh|powershell|run_terminal_cmd)$/i;
/** str_replace_editor sub-commands that change a file (`view` only reads). */
const EDITOR_WRITES = new Set(['create', 'str_replace', 'insert', 'undo_edit', 'write', 'edit', 'append']);
/** Commands that run a test suite. */
const TEST_COMMAND =
  /(?:^|[\s;&|(])(?:(?:npm|pnpm|yarn|bun)(?:\s+run)?\s+test\b|npx\s+(?:vitest|jest|mocha|playwright\s+test)|vitest\b|jest\b|mocha\b|pytest\b|py\.test\b|python3?\s+-m\s+(?:pytest|unittest)\b|go\s+test\b|cargo\s+(?:test|nextest)\b|mvn\b.*\btest\b|gradlew?\s+test\b|make\s+(?:test|check)\b|rspec\b|phpunit\b|tox\b|nox\b|dotnet\s+test\b|deno\s+test\b|ctest\b|bats\b)/i;
/** A line that says something failed. */
const ERROR_LINE = /\b(?:\w*errors?|\w*exception|traceback|failed|failure|fatal|panic|cannot|can't|could not|not found|no such|denied|refused|invalid|undefined|ERR!|assert(?:ion)?)\b|^E\s{2,}|✗|✘/i;
/** A tool result that is the user declining the call, not an error of the work. */
const REJECTED = /^(?:the user doesn't want to (?:proceed|take this action)|user rejected|\[Request interrupted by user)/i;
/** User messages that are the host's own (slash commands, their output, caveats), not requests. */
const HOST_MESSAGE = /^\s*(?:<command-(?:name|message|args)>|<local-command-(?:stdout|stderr)>|Caveat: The messages below|\[Request interrupted by user|<user-memory-input>)/;
/**
 * Blocks a host adds to a user message around (or instead of) what the user typed: Claude Code's IDE notes and
 * reminders, Codex's environment context and instructions. Removed before a message is read as a request.
 */
const HOST_BLOCK = /<(ide_opened_file|ide_selection|ide_diagnostics|system-reminder|environment_context|user_instructions|turn_aborted)>[\s\S]*?<\/\1>/g;
/** A sentence stating a decision. */
const DECISION_CUE =
  /^(?:decision:|decided:|we(?:'ll| will| have)? (?:decided|agreed)|(?:we|i)(?:'ll| will)? (?:go with|stick with|switch to|use)\b|let's (?:always |never |just )?(?:go with|stick with|switch to|use|keep)\b|from now on\b|going forward\b|always\b|never\b|don't ever\b|do not ever\b)/i;
const MAX_ITEM_CHARS = 240;
/** An answer this long is a report of what was done; a shorter one after it ("Noted.") does not replace it as the outcome. */
const MIN_OUTCOME_CHARS = 80;
const MAX_ERROR_CHARS = 160;
const MAX_COMMAND_CHARS = 120;

/** Builds the work log of a session's events (in turn order). Pure. */
export function buildWorkLog(events: readonly EventRecord[]): WorkLog {
  const log: WorkLog = { requests: [], files: [], commands: [], errors: [], decisions: [], open: [], toolCalls: 0 };
  // Claude Code records the shell's directory per record: a session that `cd`s elsewhere records several.
  const roots = [...new Set(events.map((e) => e.meta?.['cwd']).filter((c): c is string => typeof c === 'string' && c.length > 1))];
  if (roots[0] !== undefined) log.root = roots[0];
  const results = resultsByCall(events);
  const files = new Map<string, WorkLogFile>();
  let plan: { items: WorkLogItem[] } | undefined;
  const tasks = new Map<string, { subject: string; status: string; eventId: string }>();
  let outcomeChars = 0;

  for (const e of events) {
    if (e.tags.includes(DERIVED_EVENT_TAG)) continue;
    if (e.kind === 'user' && isRequest(e)) {
      const text = requestText(e.content);
      if (text.length === 0) continue;
      log.requests.push({ text: oneLine(text, MAX_ITEM_CHARS), eventId: e.id });
      for (const s of decisionSentences(text)) log.decisions.push({ text: s, eventId: e.id });
    } else if (e.kind === 'decision') {
      log.decisions.push({ text: oneLine(e.content.replace(/^decision:\s*/i, ''), MAX_ITEM_CHARS), eventId: e.id });
    } else if (e.kind === 'assistant' && e.content.trim().length > 0 && !e.tags.includes('thinking')) {
      // The agent's last substantial answer: a closing "Noted." does not replace the report before it.
      const text = e.content.trim();
      if (text.length >= MIN_OUTCOME_CHARS || log.outcome === undefined || outcomeChars < MIN_OUTCOME_CHARS) {
        log.outcome = { text: firstSentences(text, MAX_ITEM_CHARS), eventId: e.id };
        outcomeChars = text.length;
      }
    } else if (e.kind === 'tool_call') {
      log.toolCalls++;
      const result = e.toolCallId !== undefined ? results.get(e.toolCallId) : undefined;
      const call = readCall(e);
      for (const w of call.writes) noteWrite(files, relativeTo(w.path, roots), w.action, e, result);
      if (call.command !== undefined) log.commands.push(commandOf(call.command, e, result));
      else if (result && isFailure(result) && !REJECTED.test(result.content.trim())) {
        // A refused write ("String to replace not found", "File has not been read yet") names its file: the next
        // session may hit the same refusal on it.
        const path = call.writes[0] ? relativeTo(call.writes[0].path, roots) : undefined;
        log.errors.push({ tool: e.toolName ?? 'tool', text: errorLine(result.content), eventId: result.id, ...(path !== undefined ? { path } : {}) });
      }
      if (call.plan) plan = { items: call.plan.filter((p) => p.status !== 'completed').map((p) => ({ text: oneLine(p.text, MAX_ITEM_CHARS), eventId: e.id })) };
      if (call.task) {
        const known = tasks.get(call.task.id);
        tasks.set(call.task.id, { subject: call.task.subject ?? known?.subject ?? `task ${call.task.id}`, status: call.task.status ?? known?.status ?? 'pending', eventId: e.id });
      }
    }
  }
  log.files = [...files.values()];
  markFixed(log.commands);
  if (plan) log.open.push(...plan.items);
  for (const t of tasks.values()) if (t.status !== 'completed' && t.status !== 'deleted') log.open.push({ text: oneLine(t.subject, MAX_ITEM_CHARS), eventId: t.eventId });
  for (const c of lastRuns(log.commands)) if (c.status === 'failed') log.open.push({ text: `still failing: ${c.command}`, eventId: c.eventId });
  return log;
}

/** Whether the work log holds anything a coding summary would say (tool work, not only talk). */
export function hasWork(log: WorkLog): boolean {
  return log.toolCalls > 0 || log.files.length > 0 || log.commands.length > 0;
}

interface ParsedCall {
  writes: Array<{ path: string; action: FileAction }>;
  command?: string;
  plan?: Array<{ text: string; status: string }>;
  task?: { id: string; subject?: string; status?: string };
}

/** Reads a tool call's arguments (JSON, or a command line for SWE-agent's tools). */
function readCall(e: EventRecord): ParsedCall {
  const tool = e.toolName ?? '';
  const out: ParsedCall = { writes: [] };
  const args = parseArgs(e.content);
  if (/^apply_patch$/i.test(tool) || (args === undefined && /^\*\*\* Begin Patch/m.test(e.content))) {
    const text = typeof args?.['input'] === 'string' ? args['input'] : typeof args?.['patch'] === 'string' ? args['patch'] : e.content;
    for (const m of text.matchAll(/^\*\*\* (Add|Update|Delete) File: (.+?)\s*$/gm)) out.writes.push({ path: m[2]!, action: m[1] === 'Add' ? 'created' : m[1] === 'Delete' ? 'deleted' : 'edited' });
    for (const m of text.matchAll(/^\*\*\* Move to: (.+?)\s*$/gm)) out.writes.push({ path: m[1]!, action: 'created' });
    return out;
  }
  if (/^(?:str_replace_editor|str_replace_based_edit_tool|edit_tool)$/i.test(tool)) {
    const sub = typeof args?.['command'] === 'string' ? args['command'] : undefined;
    const path = typeof args?.['path'] === 'string' ? args['path'] : undefined;
    if (sub !== undefined && path !== undefined) {
      if (EDITOR_WRITES.has(sub)) out.writes.push({ path, action: sub === 'create' ? 'created' : 'edited' });
      return out;
    }
    // SWE-agent: `str_replace_editor <command> <path> --old_str ...`
    const words = e.content.trim().split(/\s+/);
    const at = words[0] === tool ? 1 : 0;
    if (words[at] !== undefined && EDITOR_WRITES.has(words[at]!) && words[at + 1]) out.writes.push({ path: words[at + 1]!, action: words[at] === 'create' ? 'created' : 'edited' });
    return out;
  }
  if (args && Array.isArray(args['todos'])) {
    out.plan = (args['todos'] as unknown[]).flatMap((t) => (isObject(t) && typeof t['content'] === 'string' ? [{ text: t['content'], status: String(t['status'] ?? '') }] : []));
    return out;
  }
  if (args && /^update_plan$/i.test(tool) && Array.isArray(args['plan'])) {
    out.plan = (args['plan'] as unknown[]).flatMap((t) => (isObject(t) && typeof t['step'] === 'string' ? [{ text: t['step'], status: String(t['status'] ?? '') }] : []));
    return out;
  }
  if (args && /^task(?:create|update)$/i.test(tool)) {
    const id = typeof args['taskId'] === 'string' ? args['taskId'] : typeof args['id'] === 'string' ? args['id'] : undefined;
    const subject = typeof args['subject'] === 'string' ? args['subject'] : undefined;
    // TaskCreate has no id in its input: the result names it; a created task is keyed by its event until then.
    out.task = { id: id ?? e.id, ...(subject ? { subject } : {}), ...(typeof args['status'] === 'string' ? { status: args['status'] } : {}) };
    return out;
  }
  if (SHELL_TOOLS.test(tool)) {
    const command = args === undefined ? e.content.trim() : commandText(args);
    if (command) out.command = command;
    return out;
  }
  if (args && WRITE_TOOLS.test(tool)) {
    const path = ['file_path', 'path', 'notebook_path', 'filePath', 'target_file', 'filename'].map((k) => args[k]).find((v): v is string => typeof v === 'string' && v.length > 0);
    if (path !== undefined) out.writes.push({ path, action: /^(?:write|write_file|create_file)$/i.test(tool) ? 'created' : 'edited' });
  }
  return out;
}

/** The command of shell tool arguments: `command` (a string, or an argv with `bash -lc <script>` unwrapped) or `cmd`. */
function commandText(args: Record<string, unknown>): string | undefined {
  const c = args['command'] ?? args['cmd'];
  if (typeof c === 'string') return c.trim();
  if (Array.isArray(c) && c.every((p) => typeof p === 'string')) {
    const argv = c as string[];
    const shell = argv.findIndex((p, i) => i > 0 && /^-\w*c$/.test(p) && /(?:^|\/)(?:ba|z|da)?sh$/.test(argv[i - 1]!));
    return (shell >= 0 && argv[shell + 1] !== undefined ? argv[shell + 1]! : argv.join(' ')).trim();
  }
  return undefined;
}

function commandOf(command: string, call: EventRecord, result: EventRecord | undefined): WorkLogCommand {
  const exit = result ? exitCodeOf(result) : undefined;
  const failed = result !== undefined && (exit !== undefined ? exit !== 0 : isFailure(result));
  const rejected = result !== undefined && REJECTED.test(result.content.trim());
  const status: WorkLogCommand['status'] = result === undefined || rejected ? 'unknown' : failed ? 'failed' : exit !== undefined || hasStatus(result) ? 'ok' : 'unknown';
  const c: WorkLogCommand = { command: oneLine(command, MAX_COMMAND_CHARS), status, isTest: TEST_COMMAND.test(command), eventId: call.id };
  if (exit !== undefined) c.exitCode = exit;
  if (status === 'failed' && result) c.error = errorLine(outputText(result));
  return c;
}

/** A failed run is fixed when a later run of the same command (or, for tests, of the same test runner) succeeded. */
function markFixed(commands: WorkLogCommand[]): void {
  for (let i = 0; i < commands.length; i++) {
    const c = commands[i]!;
    if (c.status !== 'failed') continue;
    const later = commands.slice(i + 1).find((d) => d.status === 'ok' && (d.command === c.command || (c.isTest && d.isTest && runner(d.command) === runner(c.command))));
    if (later) c.fixedBy = later.eventId;
  }
}

/** The last run of each distinct command. */
function lastRuns(commands: readonly WorkLogCommand[]): WorkLogCommand[] {
  const last = new Map<string, WorkLogCommand>();
  for (const c of commands) last.set(c.isTest ? `test:${runner(c.command)}` : c.command, c);
  return [...last.values()];
}

function runner(command: string): string {
  return TEST_COMMAND.exec(command)?.[0]?.trim().split(/\s+/).slice(0, 2).join(' ') ?? command;
}

function noteWrite(files: Map<string, WorkLogFile>, path: string, action: FileAction, call: EventRecord, result: EventRecord | undefined): void {
  const failed = result !== undefined && isFailure(result);
  // Claude Code's Write result says whether it created the file or replaced it (toolUseResult.type).
  const reported = result?.meta?.['toolUseResult'];
  const kind = isObject(reported) && typeof reported['type'] === 'string' ? reported['type'] : undefined;
  const seen = files.get(path);
  const act: FileAction = action === 'deleted' ? 'deleted' : seen && seen.action === 'created' && !seen.isFailed ? 'created' : kind === 'update' ? 'edited' : action;
  if (!seen) {
    files.set(path, { path, action: act, writes: failed ? 0 : 1, eventId: call.id, isFailed: failed });
    return;
  }
  if (failed) return;
  seen.writes++;
  seen.eventId = call.id;
  seen.isFailed = false;
  seen.action = act;
}

/** Tool results by the call id they answer. */
function resultsByCall(events: readonly EventRecord[]): Map<string, EventRecord> {
  const out = new Map<string, EventRecord>();
  for (const e of events) if (e.kind === 'tool_result' && e.toolCallId !== undefined) out.set(e.toolCallId, e);
  return out;
}

function isFailure(result: EventRecord): boolean {
  if (result.meta?.['isError'] === true) return true;
  const exit = exitCodeOf(result);
  if (exit !== undefined) return exit !== 0;
  const text = result.content.trimStart();
  return text.startsWith('<tool_use_error>') || /^ERROR:/m.test(text.slice(0, 200));
}

function hasStatus(result: EventRecord): boolean {
  return result.meta?.['isError'] === false || isObject(result.meta?.['toolUseResult']);
}

/** The exit code a result records: OpenHands' `meta.exitCode`, Codex's `metadata.exit_code`, a trailing `Exit code N`. */
function exitCodeOf(result: EventRecord): number | undefined {
  const m = result.meta?.['exitCode'] ?? result.meta?.['exit_code'];
  if (typeof m === 'number') return m;
  const json = parseArgs(result.content);
  const meta = json?.['metadata'];
  if (isObject(meta) && typeof meta['exit_code'] === 'number') return meta['exit_code'];
  if (typeof json?.['exit_code'] === 'number') return json['exit_code'];
  const stated = /^(?:Exit code|exit code:|Process exited with code) (-?\d+)\s*$/m.exec(result.content.slice(0, 2000));
  return stated ? Number(stated[1]) : undefined;
}

/** A result's output text: Codex wraps it in `{output}`. */
function outputText(result: EventRecord): string {
  const json = parseArgs(result.content);
  return typeof json?.['output'] === 'string' ? json['output'] : result.content;
}

/** The first line that says what failed (else the first non-empty line), on one line and cut. */
export function errorLine(text: string): string {
  const lines = text
    .replace(/<\/?tool_use_error>/g, '')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0 && !/^(?:Exit code|exit code:) -?\d+$/i.test(l));
  const at = Math.max(0, lines.findIndex((l) => ERROR_LINE.test(l)));
  // A bare label (`ERROR:`, `Traceback (most recent call last):`) says little: the line after it says what.
  const line = lines[at] !== undefined && /^[\w ()]{0,40}:$/.test(lines[at]!) && lines[at + 1] !== undefined ? `${lines[at]} ${lines[at + 1]}` : (lines[at] ?? '');
  return oneLine(line, MAX_ERROR_CHARS);
}

/** What the user typed: the message without the host's blocks. */
export function requestText(content: string): string {
  return content.replace(HOST_BLOCK, ' ').trim();
}

function isRequest(e: EventRecord): boolean {
  if (e.meta?.['isMeta'] === true || e.meta?.['isCompactSummary'] === true) return false;
  const text = e.content.trim();
  // An attachment alone (`[image: image/png, 145.0 KB]`, the importers' note for a binary) says nothing to summarize.
  return text.length > 0 && !HOST_MESSAGE.test(text) && !/^(?:\[(?:binary|image|document|file)[^\]]*\]\s*)+$/.test(text);
}

/** The sentences of a user message that state a decision. */
function decisionSentences(text: string): string[] {
  return text
    .split(/(?<=[.!?])\s+|\n+/)
    .map((s) => s.trim())
    .filter((s) => s.length >= 12 && DECISION_CUE.test(s))
    .map((s) => oneLine(s, MAX_ITEM_CHARS));
}

/** The path relative to the deepest of the session's directories it lies under, else as given. */
function relativeTo(path: string, roots: readonly string[]): string {
  let best = '';
  for (const root of roots) {
    const base = root.endsWith('/') ? root : `${root}/`;
    if (path.startsWith(base) && base.length > best.length) best = base;
  }
  return best ? path.slice(best.length) : path;
}

function parseArgs(text: string): Record<string, unknown> | undefined {
  const t = text.trimStart();
  if (!t.startsWith('{')) return undefined;
  try {
    const v = JSON.parse(t) as unknown;
    return isObject(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The text on one line, cut to `max` characters with an ellipsis. */
export function oneLine(text: string, max: number): string {
  const one = text.replace(/\s+/g, ' ').trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

/** The first sentence or two of a text, on one line, within `max` characters. */
function firstSentences(text: string, max: number): string {
  const one = text.replace(/\s+/g, ' ').trim();
  const sentences = one.split(/(?<=[.!?])\s+/);
  let out = '';
  for (const s of sentences) {
    if (out.length > 0 && out.length + s.length + 1 > max) break;
    out = out ? `${out} ${s}` : s;
  }
  return oneLine(out, max);
}

/** What {@link renderWorkLog} needs to count tokens. */
export interface TokenCounter {
  count(text: string): number;
}

interface Line {
  /** Position in the rendered text. */
  order: number;
  /** Kept first when the budget is short (higher is kept longer). */
  priority: number;
  /** Items of a list line (0 for a single statement). */
  items: number;
  render(shown: number): string;
}

/**
 * The work log as summary lines within `budgetTokens`, each citing the event it comes from (`[evt_...]`) so `expand`
 * opens it. When it does not fit, long lists are shortened first (`(+3 more)`), then the lines that matter least go:
 * what was run successfully, then the outcome, the requests after the first, the plan; files changed and errors hit
 * stay longest (they are what the next session needs, and what the session-summaries bench checks).
 */
export function renderWorkLog(log: WorkLog, budgetTokens: number, tokenizer: TokenCounter, ceilingTokens = budgetTokens): string {
  const lines: Line[] = [];
  const cite = (id: string): string => ` [${id}]`;
  const list = (order: number, priority: number, label: string, items: readonly string[], id: string): void => {
    if (items.length === 0) return;
    lines.push({
      order,
      priority,
      items: items.length,
      render: (shown) => `${label}: ${items.slice(0, shown).join(', ')}${shown < items.length ? ` (+${items.length - shown} more)` : ''}${cite(id)}`,
    });
  };
  const single = (order: number, priority: number, text: string): void => {
    lines.push({ order, priority, items: 0, render: () => text });
  };

  const [first, ...later] = log.requests;
  if (first) single(0, 8, `Asked: "${first.text}"${cite(first.eventId)}`);
  if (later.length > 0) {
    const last = later[later.length - 1]!;
    single(1, 4, `Then asked${later.length > 1 ? ` (${later.length} more requests; the last)` : ''}: "${last.text}"${cite(last.eventId)}`);
  }
  const byAction = (action: FileAction): WorkLogFile[] => log.files.filter((f) => f.action === action && !f.isFailed);
  const fileItems = (fs: WorkLogFile[]): string[] => fs.map((f) => (f.writes > 1 ? `${f.path} (${f.writes}x)` : f.path));
  for (const [i, action] of (['created', 'edited', 'deleted'] as const).entries()) {
    const fs = byAction(action);
    if (fs.length > 0) list(2 + i, 9, `Files ${action}`, fileItems(fs), fs[fs.length - 1]!.eventId);
  }
  const failed = log.commands.filter((c) => c.status === 'failed');
  // The same command failing the same way again is one line with its count (the last run cited).
  for (const [i, runs] of groupBy(failed, (c) => `${c.command}\0${c.error ?? ''}`).entries()) {
    const c = runs[runs.length - 1]!;
    const fix = c.fixedBy ? `; fixed: a later run passed${cite(c.fixedBy)}` : '';
    const times = runs.length > 1 ? ` (${runs.length}x)` : '';
    single(10 + i / 1000, 7, `Failed${times}: \`${c.command}\`${c.exitCode !== undefined ? ` (exit ${c.exitCode})` : ''}${c.error ? `: ${c.error}` : ''}${cite(c.eventId)}${fix}`);
  }
  // One line per tool and error text, naming the files the tool refused to write.
  for (const [i, errs] of groupBy(log.errors, (e) => `${e.tool}\0${e.text}`).entries()) {
    const e = errs[errs.length - 1]!;
    const paths = distinct(errs.flatMap((x) => (x.path !== undefined ? [x.path] : [])));
    const times = errs.length > 1 ? `, ${errs.length}x` : '';
    single(11 + i / 1000, 6, `Error (${e.tool}${paths.length > 0 ? ` ${paths.join(', ')}` : ''}${times}): ${e.text}${cite(e.eventId)}`);
  }
  const tests = lastRuns(log.commands.filter((c) => c.isTest && c.status !== 'unknown'));
  list(12, 6, 'Tests', tests.map((t) => `\`${t.command}\` ${t.status === 'ok' ? 'passed' : 'failing'}`), tests[tests.length - 1]?.eventId ?? '');
  for (const [i, d] of log.decisions.entries()) single(13 + i / 1000, 8, `Decision: ${d.text}${cite(d.eventId)}`);
  if (log.open.length > 0) list(14, 5, 'Open', log.open.map((o) => o.text), log.open[log.open.length - 1]!.eventId);
  // Commands that passed and are not already on a line (a failed one rerun, a test run).
  const failedCommands = new Set(failed.map((c) => c.command));
  const passed = log.commands.filter((c) => c.status !== 'failed' && !c.isTest && !failedCommands.has(c.command));
  const ran = distinct(passed.map((c) => `\`${c.command}\``));
  if (ran.length > 0) list(15, 2, 'Ran', ran, passed.at(-1)!.eventId);
  if (log.outcome) single(16, 3, `Outcome: ${log.outcome.text}${cite(log.outcome.eventId)}`);

  const shown = new Map<Line, number>(lines.map((l) => [l, l.items]));
  const total = (): number => [...shown].reduce((sum, [l, n]) => sum + tokenizer.count(l.render(n)) + 1, 0);
  // The lines that matter (files, failures, errors, decisions, the first request) may take the summary past its
  // budget, up to the ceiling, with a quarter of the budget left for the others (the outcome, what is open): they
  // are what the next session needs, and a long session has more of them than a short one.
  const core = lines.filter((l) => l.priority >= KEEP_PRIORITY).reduce((sum, l) => sum + tokenizer.count(l.render(l.items)) + 1, 0);
  const budget = Math.min(Math.max(budgetTokens, ceilingTokens), Math.max(budgetTokens, core + Math.floor(budgetTokens / 4)));
  while (shown.size > 0 && total() > budget) {
    // The line that matters least gives way: a list first loses items (half at a time), then goes. Before a line
    // that matters (a failure, a decision) goes, long lists are cut to a few items.
    const weakest = [...shown.keys()].sort((a, b) => a.priority - b.priority || b.order - a.order)[0]!;
    const n = shown.get(weakest)!;
    const long = [...shown].filter(([l, k]) => l.items > 0 && k > KEPT_ITEMS).sort((a, b) => a[0].priority - b[0].priority)[0];
    if (weakest.items > 0 && n > 1) shown.set(weakest, Math.floor(n / 2));
    else if (weakest.priority >= KEEP_PRIORITY && long) shown.set(long[0], Math.max(KEPT_ITEMS, Math.floor(long[1] / 2)));
    else shown.delete(weakest);
  }
  return [...shown]
    .sort((a, b) => a[0].order - b[0].order)
    .map(([l, n]) => l.render(n))
    .join('\n');
}

/** Lines of this priority or more (failures, errors, decisions, the first request, files) go only after long lists are cut. */
const KEEP_PRIORITY = 6;
/** Items a long list is cut down to before such a line goes. */
const KEPT_ITEMS = 3;

function distinct(items: readonly string[]): string[] {
  return [...new Set(items)];
}

/** The items grouped by `key`, groups in the order of their first item. */
function groupBy<T>(items: readonly T[], key: (item: T) => string): T[][] {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return [...groups.values()];
}
