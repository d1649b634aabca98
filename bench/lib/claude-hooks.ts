/**
 * Claude Code's side of the hook contract, for benchmarks: install Engram's hooks into a temporary HOME with the
 * real `engram hooks install --claude-code`, read the commands it wrote into `~/.claude/settings.json`, and run
 * each one exactly as Claude Code does: `sh -c "<command>"`, the hook's JSON on stdin, the project directory as
 * the working directory (and as `$CLAUDE_PROJECT_DIR`). Whatever the installed hooks do is what gets measured.
 */
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

/** bin/engram.js of this checkout (its dist/ must be built: `npm run build`, or vitest's global setup). */
export const ENGRAM_BIN = fileURLToPath(new URL('../../bin/engram.js', import.meta.url));

/** The hook events a replay fires, in Claude Code's names. Events the settings do not list are skipped. */
export type HookEvent = 'SessionStart' | 'UserPromptSubmit' | 'Stop' | 'SessionEnd' | 'PreCompact';

/** A temporary user with Engram's hooks installed: the commands per event and the store they name. */
export interface HookWorld {
  /** The temporary HOME (`~/.claude/settings.json`, `~/.claude/projects/...`). */
  home: string;
  /** The SQLite store the installed commands name (`--db`). */
  db: string;
  /** Hook commands per event, in the order the settings list them. */
  commands: Map<string, string[]>;
  /** Extra environment for every hook (budgets, cache directory). */
  env: Record<string, string>;
}

export interface HookRun {
  event: HookEvent;
  /** Wall time of all of the event's commands, ms (what Claude Code waits for). */
  ms: number;
  /**
   * CPU time (user + system) of the commands and their children, ms, when asked for and `/usr/bin/time` exists:
   * on a machine shared with other work the wall time mostly measures the wait for a core.
   */
  cpuMs?: number;
  /** Exit codes, one per command. */
  codes: number[];
  /** The text the hook injects into the conversation ('' when nothing). */
  injected: string;
  stderr: string;
}

/** The caller's environment minus what would reach a developer's own store, embedder or Claude config. */
function baseEnv(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) out[k] = v;
  for (const k of ['ENGRAM_DB', 'ENGRAM_PG_URL', 'ENGRAM_EMBEDDER', 'ENGRAM_REPO', 'CLAUDE_CONFIG_DIR', 'ENGRAM_BRIEF_TOKENS', 'ENGRAM_RECALL_TOKENS']) delete out[k];
  return out;
}

/**
 * Runs `engram hooks install --claude-code --db <db>` with HOME = `home` and reads back the hook commands.
 * `cacheDir` ($ENGRAM_CACHE_DIR) is shared between worlds so the token table is built once per run.
 */
export function installHookWorld(options: { home: string; db: string; cacheDir: string; env?: Record<string, string> }): HookWorld {
  mkdirSync(options.home, { recursive: true });
  const env = { ENGRAM_CACHE_DIR: options.cacheDir, ...options.env };
  const run = spawnSync(process.execPath, [ENGRAM_BIN, 'hooks', 'install', '--claude-code', '--db', options.db], {
    cwd: options.home,
    env: { ...baseEnv(), ...env, HOME: options.home },
    encoding: 'utf8',
  });
  if (run.status !== 0) throw new Error(`engram hooks install failed (${run.status}): ${run.stderr}${run.stdout}`);
  return { home: options.home, db: options.db, commands: readHookCommands(join(options.home, '.claude', 'settings.json')), env };
}

/** The command hooks of each event in a Claude Code settings file. */
export function readHookCommands(settingsPath: string): Map<string, string[]> {
  const settings = JSON.parse(readFileSync(settingsPath, 'utf8')) as { hooks?: Record<string, Array<{ hooks?: Array<{ type?: string; command?: string }> }>> };
  const out = new Map<string, string[]>();
  for (const [event, groups] of Object.entries(settings.hooks ?? {})) {
    const commands = groups.flatMap((g) => (g.hooks ?? []).filter((h) => h.type === 'command' && typeof h.command === 'string').map((h) => h.command!));
    if (commands.length > 0) out.set(event, commands);
  }
  return out;
}

/** Where Claude Code keeps a session's transcript: `~/.claude/projects/<cwd, each non-alphanumeric as '-'>/<session>.jsonl`. */
export function transcriptPathFor(world: HookWorld, cwd: string, sessionId: string): string {
  const dir = join(world.home, '.claude', 'projects', resolve(cwd).replace(/[^A-Za-z0-9]/g, '-'));
  mkdirSync(dir, { recursive: true });
  return join(dir, `${sessionId}.jsonl`);
}

/**
 * What a SessionStart or UserPromptSubmit hook's stdout adds to the conversation: the JSON form's
 * `hookSpecificOutput.additionalContext`, else the plain text (Claude Code adds both); nothing for other JSON.
 */
export function injectedText(stdout: string): string {
  const text = stdout.trim();
  if (text === '') return '';
  if (text.startsWith('{')) {
    try {
      const json = JSON.parse(text) as { hookSpecificOutput?: { additionalContext?: unknown } };
      const context = json.hookSpecificOutput?.additionalContext;
      return typeof context === 'string' ? context : '';
    } catch {
      // Not JSON after all: Claude Code treats it as plain text.
    }
  }
  return text;
}

/** Runs every command of `event` with `input` on stdin, one after the other, in `cwd`. */
export async function fireHook(
  world: HookWorld,
  event: HookEvent,
  input: Record<string, unknown>,
  options: { cwd: string; env?: Record<string, string>; spawnCwd?: string; measureCpu?: boolean },
): Promise<HookRun | undefined> {
  const commands = world.commands.get(event);
  if (!commands) return undefined;
  const payload = JSON.stringify({ hook_event_name: event, ...input });
  const env = { ...baseEnv(), ...world.env, ...options.env, HOME: world.home, CLAUDE_PROJECT_DIR: options.cwd };
  const started = performance.now();
  const codes: number[] = [];
  const injected: string[] = [];
  let stderr = '';
  let cpuMs: number | undefined;
  for (const command of commands) {
    const cpuFile = options.measureCpu && existsSync(TIME_BIN) ? join(world.home, `.hook-cpu-${process.pid}-${Math.random().toString(36).slice(2)}`) : undefined;
    const r = await runShell(command, payload, options.spawnCwd ?? options.cwd, env, cpuFile);
    if (cpuFile !== undefined) {
      const [user, system] = readFileSync(cpuFile, 'utf8').trim().split(/\s+/).slice(-2).map(Number);
      rmSync(cpuFile, { force: true });
      cpuMs = (cpuMs ?? 0) + ((user ?? 0) + (system ?? 0)) * 1000;
    }
    codes.push(r.code);
    stderr += r.stderr;
    if (event === 'SessionStart' || event === 'UserPromptSubmit') {
      const text = injectedText(r.stdout);
      if (text !== '') injected.push(text);
    }
  }
  const run: HookRun = { event, ms: performance.now() - started, codes, injected: injected.join('\n\n'), stderr };
  if (cpuMs !== undefined) run.cpuMs = cpuMs;
  return run;
}

/** GNU time: `sh -c` run under it when a hook's CPU time is wanted (it writes user and system seconds to a file). */
const TIME_BIN = '/usr/bin/time';

function runShell(command: string, stdin: string, cwd: string, env: Record<string, string>, cpuFile?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const argv = cpuFile !== undefined ? [TIME_BIN, ['-f', '%U %S', '-o', cpuFile, 'sh', '-c', command]] as const : (['sh', ['-c', command]] as const);
    const child = spawn(argv[0], [...argv[1]], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', fail);
    child.on('close', (code) => done({ code: code ?? -1, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }));
    child.stdin.on('error', () => {
      // A hook may exit without reading its stdin; that is its business, not a failure of the run.
    });
    child.stdin.end(stdin);
  });
}

/**
 * One Claude Code session as the host drives it: the transcript file it grows, and the hook inputs it sends
 * (common fields `session_id`, `transcript_path`, `cwd`; `hook_event_name` added by {@link fireHook}).
 */
export class ClaudeSession {
  readonly transcriptPath: string;
  readonly runs: HookRun[] = [];

  constructor(
    readonly world: HookWorld,
    readonly sessionId: string,
    readonly cwd: string,
    readonly env: Record<string, string> = {},
    /** The process's working directory when `cwd` (sent in the JSON) does not exist here, e.g. a recorded one. */
    readonly spawnCwd?: string,
    /** Measure each hook's CPU time too ({@link HookRun.cpuMs}). */
    readonly measureCpu = false,
  ) {
    this.transcriptPath = transcriptPathFor(world, cwd, sessionId);
    writeFileSync(this.transcriptPath, '');
  }

  /** Appends transcript records (one JSON object per line), as Claude Code writes them while the session runs. */
  append(records: unknown[]): void {
    if (records.length > 0) appendFileSync(this.transcriptPath, records.map((r) => `${typeof r === 'string' ? r : JSON.stringify(r)}\n`).join(''));
  }

  start(source: 'startup' | 'resume' | 'clear' | 'compact' = 'startup'): Promise<HookRun | undefined> {
    return this.fire('SessionStart', { source });
  }

  prompt(prompt: string): Promise<HookRun | undefined> {
    return this.fire('UserPromptSubmit', { prompt });
  }

  stop(): Promise<HookRun | undefined> {
    return this.fire('Stop', { stop_hook_active: false });
  }

  end(reason = 'prompt_input_exit'): Promise<HookRun | undefined> {
    return this.fire('SessionEnd', { reason });
  }

  private async fire(event: HookEvent, extra: Record<string, unknown>): Promise<HookRun | undefined> {
    const run = await fireHook(this.world, event, { session_id: this.sessionId, transcript_path: this.transcriptPath, cwd: this.cwd, ...extra }, {
      cwd: this.cwd,
      env: this.env,
      measureCpu: this.measureCpu,
      ...(this.spawnCwd !== undefined ? { spawnCwd: this.spawnCwd } : {}),
    });
    if (run) this.runs.push(run);
    return run;
  }
}

/** Runs `task` over `items` with at most `jobs` at a time, keeping the results in the items' order. */
export async function pool<T, R>(items: T[], jobs: number, task: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await task(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(jobs, items.length)) }, worker));
  return out;
}

/** Runs `engram ARGS --db <world's store>` as the world's user; throws with its stderr when it fails. */
export function engramCli(world: HookWorld, args: string[], cwd: string): string {
  const run = spawnSync(process.execPath, [ENGRAM_BIN, ...args, '--db', world.db], {
    cwd,
    env: { ...baseEnv(), ...world.env, HOME: world.home },
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  if (run.status !== 0) throw new Error(`engram ${args.join(' ')} failed (${run.status}): ${run.stderr}`);
  return run.stdout;
}
