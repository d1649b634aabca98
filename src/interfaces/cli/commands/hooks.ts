import type { Command } from 'commander';
import { spawn } from 'node:child_process';
import { homedir } from 'node:os';
import { basename, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EngramError, isEngramError } from '../../../errors.js';
import { DEFAULT_DB_PATH } from '../../../store/open-store.js';
import { validateSessionId } from '../../../memory/ingest.js';
import { HOOK_EVENT_NAMES, MCP_SERVER_NAME, type EntryChange, type HookEventName } from '../../claude-code/claude-settings.js';
import { DEFAULT_HOOK_MAX_CHARS, DEFAULT_HOOK_WINDOW_TOKENS, HOOK_HOSTS, parseHookInput, runClaudeCodeHook } from '../../claude-code/hook-handlers.js';
import { CODEX_NOTIFY_EVENT } from '../../codex/codex-config.js';
import { applyCodexChanges, codexLocations, planCodexInstall, planCodexUninstall, type CodexFileChange } from '../../codex/install.js';
import { parseCodexNotification, runCodexNotify } from '../../codex/notify.js';
import { applyChanges, claudeCodeLocations, isChanged, planInstall, planUninstall, type ClaudeCodeLocations, type EngramLaunch, type FileChange } from '../../claude-code/install.js';
import { diffLines } from '../../claude-code/settings-file.js';
import type { CliContext, GlobalOptions } from '../cli-context.js';
import { EXIT } from '../exit-codes.js';
import type { Io } from '../output.js';
import { printJson } from '../output.js';
import { parseInteger } from './recall.js';
import { openLlm } from '../llm-option.js';
import { logLlmCallsTo } from '../../../consolidate/telemetry.js';
import { hostProcessIds } from '../../../memory/host-sessions.js';
import { projectForDirectory } from '../../../memory/project-identity.js';
import { registerHookDaemon } from './hook-daemon.js';
import type { CarryOverOptions } from '../../../context/carry-over.js';
import { DEFAULT_BRIEF_TOKENS } from '../../../context/project-brief.js';
import { DEFAULT_PROMPT_RECALL_TOKENS } from '../../../memory/prompt-recall.js';

export interface HooksSetupArgs extends GlobalOptions {
  claudeCode?: boolean;
  /** Codex CLI: `$CODEX_HOME/config.toml` and `hooks.json`. */
  codex?: boolean;
  /** A Claude Code project directory: its `.claude/settings.json` and `.mcp.json` instead of the user's files. */
  project?: string;
  /** The session the MCP tools work for. */
  session?: string;
  dryRun?: boolean;
}

export interface HooksRunArgs extends GlobalOptions {
  event: string;
  /** codex-notify: the user's chained notify program and its arguments, then Codex's notification (the last). */
  args?: string[];
  /** The agent host whose hook this is: claude-code (default) or codex. */
  host?: string;
  window?: string;
  maxChars?: string;
  briefTokens?: string;
  recallTokens?: string;
  /** False with --no-summaries. */
  summaries?: boolean;
}

/** Environment variables the hook commands read (docs/memory-across-sessions.md): set them in Claude Code's `env`. */
export const HOOK_ENV = {
  briefTokens: 'ENGRAM_BRIEF_TOKENS',
  recallTokens: 'ENGRAM_RECALL_TOKENS',
  summaries: 'ENGRAM_HOOK_SUMMARIES',
} as const;

/** Largest hook input read from stdin (a UserPromptSubmit carries the prompt, which may hold a pasted log). */
const MAX_HOOK_INPUT_BYTES = 32 * 1024 * 1024;

/** `engram hooks install|uninstall --claude-code`: adds (or removes) Engram's hooks and MCP server in Claude Code's settings. */
export async function setupCommand(action: 'install' | 'uninstall', args: HooksSetupArgs, io: Io, context: CliContext): Promise<number> {
  if (args.claudeCode && args.codex) throw new EngramError('INVALID_INPUT', '--claude-code, --codex: connect one agent host at a time', { field: 'host' });
  if (args.codex) return codexSetup(action, args, io, context);
  if (!args.claudeCode) throw new EngramError('INVALID_INPUT', '--claude-code or --codex: name the agent host to connect', { field: 'host' });
  const locations = claudeCodeLocations({ projectDir: args.project, home: homedir(), configDir: process.env.CLAUDE_CONFIG_DIR });
  const store = action === 'install' ? storeArgs(args, context) : undefined;
  const changes = store ? planInstall(locations, launchFor(args, store.args)) : planUninstall(locations);
  if (!args.dryRun) applyChanges(changes);

  if (args.json) {
    printJson(io, {
      action,
      scope: locations.scope,
      dryRun: args.dryRun === true,
      ...(store ? { store: store.described } : {}),
      files: changes.map((c) => ({ path: c.path, file: fileAction(c), ...(c.hooks ? { hooks: c.hooks } : {}), ...(c.mcp ? { mcp: c.mcp } : {}) })),
    });
    return EXIT.OK;
  }
  io.out(`Claude Code, ${locations.scope === 'user' ? 'user settings' : `project ${resolve(args.project!)}`}${store ? `; store: ${store.described}` : ''}`);
  for (const change of changes) {
    const what = change.hooks
      ? `hooks: ${Object.entries(change.hooks).map(([event, c]) => `${event} ${c}`).join(', ')}`
      : `MCP server ${MCP_SERVER_NAME}: ${change.mcp}`;
    const done = fileAction(change);
    io.out(`${args.dryRun ? `would ${done === 'unchanged' ? 'leave' : verb(done)}` : done} ${change.path} (${what})`);
    if (args.dryRun && isChanged(change)) io.out(diffLines(change.before ?? '', change.after ?? ''));
  }
  for (const note of notes(action, locations, changes, args.dryRun === true)) io.out(note);
  return EXIT.OK;
}

/**
 * `engram hooks run EVENT`: one Claude Code hook, its JSON on stdin. Claude Code reads a hook's exit code 2 as
 * "block" (a prompt is refused, a Stop turns into another turn), so a failure here is reported on stderr with
 * exit 1, which Claude Code shows and passes over; the documented codes do not apply to this verb.
 */
export async function runCommand(args: HooksRunArgs, io: Io, context: CliContext): Promise<number> {
  try {
    if (args.event === CODEX_NOTIFY_EVENT) return await codexNotify(args, io, context);
    const event = hookEvent(args.event);
    const host = hookHost(args.host);
    if ((args.args ?? []).length > 0) throw new EngramError('INVALID_INPUT', `arguments: ${event} reads its input from stdin and takes no arguments`, { field: 'arguments' });
    // Run on behalf of a hook process (the resident process, or bin/engram.js after it read stdin): that process's input, directory and host.
    const call = context.hookCall;
    const input = parseHookInput(call ? checkedInput(call.stdin) : await readStdin());
    // A relative transcript path is the hook process's, not this one's.
    if (call && input.transcript_path) input.transcript_path = resolve(call.cwd, input.transcript_path);
    const carry = carryOverOptions(args);
    const mem = await context.openStore(args, { create: true });
    // A model writes the summaries only when one is named (--llm or ENGRAM_LLM_URL); Claude Code waits for the hook.
    const llm = event === 'stop' || event === 'session-end' || event === 'session-start' ? await openLlm(args, { onCall: logLlmCallsTo(mem.bus) }) : null;
    const outcome = await runClaudeCodeHook(mem, event, input, {
      windowTokens: args.window !== undefined ? parseInteger(args.window, 'window') : DEFAULT_HOOK_WINDOW_TOKENS,
      maxChars: args.maxChars !== undefined ? parseInteger(args.maxChars, 'max-chars') : DEFAULT_HOOK_MAX_CHARS,
      hostPids: call ? call.hostPids : hostProcessIds(),
      ...(call ? { project: projectForDirectory(input.cwd ?? call.cwd) } : {}),
      llm,
      host,
      ...carry,
    });
    if (outcome.stdout !== undefined) io.out(outcome.stdout);
    const issues = outcome.imported?.issueCount ?? 0;
    if (issues > 0) io.err(`engram hooks run ${event}: ${issues} line(s) of ${input.transcript_path} left out (${outcome.imported!.issues[0]?.message ?? 'see engram ingest'})`);
    return EXIT.OK;
  } catch (err) {
    const e = isEngramError(err) ? err : new EngramError('INTERNAL', err instanceof Error ? (err.stack ?? err.message) : String(err));
    io.err(`engram hooks run ${args.event}: ${e.code}: ${e.message}`);
    return EXIT.FAILURE;
  }
}

/** Budgets and switches of the carry-over (flags first, then the environment): 0 turns a part off. */
function carryOverOptions(args: HooksRunArgs): CarryOverOptions {
  const env = process.env;
  const tokens = (flag: string | undefined, name: string, field: string): number | undefined => {
    const raw = flag ?? env[name];
    if (raw === undefined || raw === '') return undefined;
    const n = parseInteger(raw, flag !== undefined ? field : name);
    if (n !== 0 && n < MIN_HOOK_TOKENS) throw new EngramError('INVALID_INPUT', `${flag !== undefined ? field : name}: ${n} tokens is too small; give 0 (off) or at least ${MIN_HOOK_TOKENS}`, { field });
    return n;
  };
  const brief = tokens(args.briefTokens, HOOK_ENV.briefTokens, 'brief-tokens');
  const recall = tokens(args.recallTokens, HOOK_ENV.recallTokens, 'recall-tokens');
  const summaries = args.summaries === false ? false : !['0', 'false', 'off', 'no'].includes((env[HOOK_ENV.summaries] ?? '').toLowerCase());
  return { ...(brief !== undefined ? { briefTokens: brief } : {}), ...(recall !== undefined ? { recallTokens: recall } : {}), summaries };
}

/**
 * `engram hooks run codex-notify [<chained program> ...] '<json>'`: Codex's notify program. The user's own notify
 * program (install chains it after `--`) is started first and left to run, so Engram never delays or swallows it;
 * then the turn's rollout is imported (codex/notify.ts).
 */
async function codexNotify(args: HooksRunArgs, io: Io, context: CliContext): Promise<number> {
  const rest = args.args ?? [];
  const json = rest.at(-1);
  if (json === undefined) throw new EngramError('INVALID_INPUT', "notification: missing; Codex passes it as the notify program's last argument", { field: 'notification' });
  const chained = rest.slice(0, -1);
  if (chained.length > 0) {
    const child = spawn(chained[0]!, [...chained.slice(1), json], { detached: true, stdio: 'ignore' });
    child.on('error', (err) => io.err(`engram hooks run ${CODEX_NOTIFY_EVENT}: the chained notify program ${chained[0]} did not start: ${err.message}`));
    child.unref();
  }
  const notification = parseCodexNotification(json);
  const carry = carryOverOptions(args);
  const mem = await context.openStore(args, { create: true });
  const llm = await openLlm(args, { onCall: logLlmCallsTo(mem.bus) });
  const locations = codexLocations({ home: homedir(), codexHome: process.env.CODEX_HOME });
  const outcome = await runCodexNotify(mem, notification, { sessionsDir: locations.sessionsDir, hostPids: hostProcessIds(), llm, ...carry });
  const issues = outcome.imported?.issueCount ?? 0;
  if (issues > 0) io.err(`engram hooks run ${CODEX_NOTIFY_EVENT}: ${issues} line(s) of ${outcome.rollout} left out (${outcome.imported!.issues[0]?.message ?? 'see engram ingest'})`);
  return EXIT.OK;
}

/** `engram hooks install|uninstall --codex`. */
async function codexSetup(action: 'install' | 'uninstall', args: HooksSetupArgs, io: Io, context: CliContext): Promise<number> {
  if (args.project !== undefined) throw new EngramError('INVALID_INPUT', "--project: Codex's configuration is the user's ($CODEX_HOME, else ~/.codex); leave --project out", { field: 'project' });
  const locations = codexLocations({ home: homedir(), codexHome: process.env.CODEX_HOME });
  const store = action === 'install' ? storeArgs(args, context) : undefined;
  const changes = store ? await planCodexInstall(locations, launchFor(args, store.args)) : await planCodexUninstall(locations);
  if (!args.dryRun) applyCodexChanges(changes);
  if (args.json) {
    printJson(io, {
      action,
      host: 'codex',
      dryRun: args.dryRun === true,
      ...(store ? { store: store.described } : {}),
      files: changes.map((c) => ({
        path: c.path,
        file: fileAction(c),
        ...(c.hooks ? { hooks: c.hooks } : {}),
        ...(c.mcp ? { mcp: c.mcp } : {}),
        ...(c.notify ? { notify: c.notify } : {}),
        ...(c.chained ? { chained: c.chained } : {}),
      })),
    });
    return EXIT.OK;
  }
  io.out(`Codex, ${locations.home}${store ? `; store: ${store.described}` : ''}`);
  for (const change of changes) {
    const what = change.hooks
      ? `hooks: ${Object.entries(change.hooks).map(([event, c]) => `${event} ${c}`).join(', ')}`
      : `MCP server ${MCP_SERVER_NAME}: ${change.mcp}; notify: ${change.notify}${change.chained ? ` (${action === 'install' ? 'runs your' : 'gives back your'} ${change.chained.join(' ')})` : ''}`;
    const done = fileAction(change);
    io.out(`${args.dryRun ? `would ${done === 'unchanged' ? 'leave' : verb(done)}` : done} ${change.path} (${what})`);
    if (args.dryRun && isChanged(change)) io.out(diffLines(change.before ?? '', change.after ?? ''));
  }
  for (const note of codexNotes(action, locations.configPath, changes, args.dryRun === true)) io.out(note);
  return EXIT.OK;
}

function codexNotes(action: 'install' | 'uninstall', configPath: string, changes: CodexFileChange[], isDryRun: boolean): string[] {
  const out: string[] = [];
  if (changes.some((c) => c.mcp === 'kept-foreign')) out.push(`note: ${configPath} already has an MCP server named "${MCP_SERVER_NAME}" that this command did not write; it is kept as it is.`);
  if (isDryRun) out.push('Dry run: nothing was written.');
  else if (changes.some(isChanged)) {
    out.push(`Restart Codex to ${action === 'install' ? 'load' : 'drop'} the MCP server, notify program and hooks.`);
    if (action === 'install') out.push('Codex runs new hooks once you trust them: open /hooks in Codex and trust the two engram hooks (the brief at a new session, evidence for each prompt).');
  }
  return out;
}

function hookHost(value: string | undefined) {
  const host = HOOK_HOSTS[value ?? 'claude-code'];
  if (host) return host;
  throw new EngramError('INVALID_INPUT', `host: unknown "${value}"; expected ${Object.keys(HOOK_HOSTS).join(' or ')}`, { field: 'host' });
}

/** Smallest non-zero budget of a brief or a prompt's evidence (a frame and one line). */
const MIN_HOOK_TOKENS = 120;

/** The options that name the store in the installed commands, and how to describe it. */
function storeArgs(args: HooksSetupArgs, context: CliContext): { args: string[]; described: string } {
  if (args.pg) return { args: ['--pg', args.pg], described: 'PostgreSQL (--pg; the URL is written into the files)' };
  if (!args.db && !process.env.ENGRAM_DB && process.env.ENGRAM_PG_URL) return { args: [], described: "PostgreSQL at $ENGRAM_PG_URL of Claude Code's environment" };
  // An explicit store wins; else the project's own store, else the one engram uses in this directory.
  const db = args.db || process.env.ENGRAM_DB ? context.storeLocation(args).db! : resolve(args.project ?? '.', DEFAULT_DB_PATH);
  return { args: ['--db', db], described: db };
}

function launchFor(args: HooksSetupArgs, store: string[]): EngramLaunch {
  return {
    node: process.execPath,
    // bin/engram.js of this package: four folders up from commands/ under dist/ (or src/ under vitest).
    bin: fileURLToPath(new URL('../../../../bin/engram.js', import.meta.url)),
    storeArgs: store,
    ...(args.session !== undefined ? { mcpSession: validateSessionId(args.session, 'session') } : {}),
    ...(args.embedder ? { mcpArgs: ['--embedder', args.embedder] } : {}),
  };
}

function fileAction(change: FileChange | CodexFileChange): 'created' | 'changed' | 'removed' | 'unchanged' {
  if (!isChanged(change)) return 'unchanged';
  if (change.before === undefined) return 'created';
  return change.after === undefined ? 'removed' : 'changed';
}

function verb(action: 'created' | 'changed' | 'removed'): string {
  return { created: 'create', changed: 'change', removed: 'remove' }[action];
}

function notes(action: 'install' | 'uninstall', locations: ClaudeCodeLocations, changes: FileChange[], isDryRun: boolean): string[] {
  const out: string[] = [];
  const mcp = changes.find((c) => c.mcp !== undefined)?.mcp as EntryChange;
  if (mcp === 'kept-foreign') {
    out.push(`note: ${locations.mcpPath} already has an MCP server named "${MCP_SERVER_NAME}" that this command did not write; it is kept as it is.`);
  }
  if (isDryRun) out.push('Dry run: nothing was written.');
  else if (changes.some(isChanged)) {
    out.push(`Restart Claude Code to ${action === 'install' ? 'load' : 'drop'} the hooks and the MCP server.`);
    if (action === 'install' && locations.scope === 'project') {
      out.push('The project files name absolute paths on this machine; Claude Code asks once before it starts a server from .mcp.json.');
    }
  }
  return out;
}

function hookEvent(value: string): HookEventName {
  if ((HOOK_EVENT_NAMES as string[]).includes(value)) return value as HookEventName;
  throw new EngramError('INVALID_INPUT', `event: unknown "${value}"; expected one of ${HOOK_EVENT_NAMES.join(', ')}`, { field: 'event' });
}

/** A hook input read by another process: held to the same limit as {@link readStdin}. */
function checkedInput(text: string): string {
  if (Buffer.byteLength(text) > MAX_HOOK_INPUT_BYTES) throw new EngramError('INVALID_INPUT', `stdin: the hook input is over ${MAX_HOOK_INPUT_BYTES} bytes`, { field: 'stdin' });
  return text;
}

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) throw new EngramError('INVALID_INPUT', "stdin: hooks run reads the hook's JSON from standard input, as Claude Code sends it", { field: 'stdin' });
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of process.stdin) {
    bytes += (chunk as Buffer).length;
    if (bytes > MAX_HOOK_INPUT_BYTES) throw new EngramError('INVALID_INPUT', `stdin: the hook input is over ${MAX_HOOK_INPUT_BYTES} bytes`, { field: 'stdin' });
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** `engram hooks`. */
export function register(program: Command, context: CliContext): void {
  const { io } = context;
  const hooks = program.command('hooks').description('connect an agent host to Engram in one command: Claude Code or Codex (hooks, MCP server, notify)');
  for (const action of ['install', 'uninstall'] as const) {
    const cmd = hooks
      .command(action)
      .description(
        action === 'install'
          ? "add Engram's hooks (SessionStart pack, transcript import, compaction record) and MCP server to Claude Code's settings, keeping the rest"
          : 'remove exactly what install added, keeping the rest of the settings',
      )
      .option('--claude-code', 'the agent host: Claude Code (~/.claude/settings.json and ~/.claude.json)')
      .option('--codex', 'the agent host: Codex CLI ($CODEX_HOME/config.toml and hooks.json, else ~/.codex/)')
      .option('--project <dir>', "a project's .claude/settings.json and .mcp.json instead of the user's files")
      .option('--dry-run', 'print what would change (a diff per file) and write nothing');
    if (action === 'install') cmd.option('--session <name>', "a fixed session for the MCP tools (default: Claude Code's current session of the project, as the hooks record it)");
    cmd.action(context.withoutStore(async (args: HooksSetupArgs) => setupCommand(action, args, io, context)));
  }
  hooks
    .command('run')
    .description(
      "run one hook with its JSON on stdin, or Codex's notify program with its JSON as the last argument (install writes these commands); exits 0, or 1 on a failure (never 2, which a host reads as 'block')",
    )
    .argument('<event>', [...HOOK_EVENT_NAMES, CODEX_NOTIFY_EVENT].join(' | '))
    .argument('[args...]', `${CODEX_NOTIFY_EVENT}: the chained notify program and its arguments, then the notification`)
    .option('--host <name>', "the host whose hook this is: claude-code (default) or codex (its rollout is the transcript)")
    .option('--window <tokens>', `session-start: the window the pack is built for (default ${DEFAULT_HOOK_WINDOW_TOKENS})`)
    .option('--max-chars <n>', `session-start (resume, compact): the pack's character cap (default ${DEFAULT_HOOK_MAX_CHARS})`)
    .option('--brief-tokens <n>', `session-start (startup, clear): the project brief's budget, 0 for none (default $${HOOK_ENV.briefTokens}, else ${DEFAULT_BRIEF_TOKENS})`)
    .option('--recall-tokens <n>', `user-prompt-submit: the budget of the prompt's evidence, 0 for none (default $${HOOK_ENV.recallTokens}, else ${DEFAULT_PROMPT_RECALL_TOKENS})`)
    .option('--no-summaries', `stop, session-end, session-start: do not keep session summaries current (or $${HOOK_ENV.summaries}=0)`)
    .action(context.withoutStore((args: HooksRunArgs) => runCommand(args, io, context)));
  registerHookDaemon(hooks, context);
}

