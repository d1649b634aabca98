import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, runEngram } from '../fixtures/cli.js';

/**
 * The resident hook process (src/interfaces/hook-daemon/), as Claude Code meets it: the installed hook commands run
 * through `sh -c` with the hook JSON on stdin. The first hook runs in its own process and starts the resident one;
 * later hooks are answered by it with the same bytes a hook in its own process prints, the host's process ids of the
 * hook (not the resident process's), and nothing lost when the store file is replaced or the process is killed.
 */

const FIXTURE = resolve('test/fixtures/transcripts/claude-code-countdown.jsonl');
const FIRST = 'aaaaaaaa-1111-4111-8111-00000000000a';
const PROMPT = 'the pause button does not stop the countdown, where is it wired up?';
let dir: string;
let home: string;
let project: string;
let db: string;
let settings: Record<string, Array<{ hooks: Array<{ command: string }> }>>;
/** The test fixtures turn the resident process off (test/fixtures/cli.ts); here it is on, as a user has it. */
const ON = { ENGRAM_HOOK_DAEMON: 'on' };

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-daemon-'));
  home = join(dir, 'home');
  project = join(dir, 'countdown');
  db = join(dir, 'store', 'engram.db');
  mkdirSync(home);
  mkdirSync(join(project, '.git'), { recursive: true });
  const install = runEngram(['hooks', 'install', '--claude-code', '--db', db], { cwd: project, env: { HOME: home, CLAUDE_CONFIG_DIR: '' } });
  expect(install.code, install.stderr).toBe(0);
  settings = JSON.parse(readFileSync(join(home, '.claude', 'settings.json'), 'utf8')).hooks;
});
afterAll(async () => {
  // Gone before its folder is removed: a process still closing its store would write into it.
  daemon(['--stop']);
  await waitFor(false);
  rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
});

/** Runs the installed command of a hook event as Claude Code does. */
function hook(event: string, input: Record<string, unknown>, env: Record<string, string> = {}): { code: number | null; context: string | undefined; stderr: string } {
  const command = settings[event]![0]!.hooks[0]!.command;
  const r = spawnSync('sh', ['-c', command], { cwd: project, env: cliEnv({ HOME: home, ...ON, ...env }), input: JSON.stringify({ hook_event_name: event, cwd: project, ...input }), encoding: 'utf8' });
  const out = r.stdout.trim();
  return { code: r.status, context: out === '' ? undefined : (JSON.parse(out) as { hookSpecificOutput: { additionalContext: string } }).hookSpecificOutput.additionalContext, stderr: r.stderr };
}

/** {@link hook}, without waiting: several hooks at once, as parallel sessions of a host send them. */
function hookAsync(event: string, input: Record<string, unknown>): Promise<{ code: number | null; stderr: string }> {
  const command = settings[event]![0]!.hooks[0]!.command;
  return new Promise((done) => {
    const child = spawn('sh', ['-c', command], { cwd: project, env: cliEnv({ HOME: home, ...ON }) });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString('utf8')));
    child.stdout.resume();
    child.on('close', (code) => done({ code, stderr }));
    child.stdin.end(JSON.stringify({ hook_event_name: event, cwd: project, ...input }));
  });
}

/** `engram hooks daemon <args> --db <db> --json`, as the hooks' environment would run it. */
function daemon(args: string[]): { running: boolean; served?: number; pid?: number; socket: string } {
  const r = runEngram(['hooks', 'daemon', ...args, '--db', db, '--json'], { cwd: project, env: { HOME: home, ...ON } });
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

/** Waits (up to 20 s) until the store's resident process answers, or has gone when `running` is false. */
async function waitFor(running: boolean): Promise<{ running: boolean; served?: number; pid?: number; socket: string }> {
  for (let i = 0; i < 100; i++) {
    const status = daemon(['--status']);
    if (status.running === running) return status;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`the resident hook process did not ${running ? 'start' : 'end'} within 20 s`);
}

describe('the resident hook process', { timeout: 180_000 }, () => {
  it('is started by the first hook and then answers the hooks, with the bytes a hook in its own process prints', async () => {
    expect(daemon(['--status']).running).toBe(false);
    const transcript = join(dir, `${FIRST}.jsonl`);
    writeFileSync(transcript, readFileSync(FIXTURE, 'utf8'));
    expect(hook('SessionStart', { session_id: FIRST, transcript_path: transcript, source: 'startup' }).code).toBe(0);
    const started = await waitFor(true);
    expect(started.served).toBe(0);
    const end = hook('SessionEnd', { session_id: FIRST, transcript_path: transcript, reason: 'prompt_input_exit' });
    expect(end.code, end.stderr).toBe(0);

    // Two new sessions ask the same: one through the resident process, one in its own process.
    const viaDaemon = { start: hook('SessionStart', { session_id: 'new-via-daemon', transcript_path: null, source: 'startup' }), prompt: hook('UserPromptSubmit', { session_id: 'new-via-daemon', transcript_path: null, prompt: PROMPT }) };
    const status = daemon(['--status']);
    expect(status.pid).toBe(started.pid);
    expect(status.served).toBe(3);
    const off = { ENGRAM_HOOK_DAEMON: 'off' };
    const alone = { start: hook('SessionStart', { session_id: 'new-alone', transcript_path: null, source: 'startup' }, off), prompt: hook('UserPromptSubmit', { session_id: 'new-alone', transcript_path: null, prompt: PROMPT }, off) };
    expect(daemon(['--status']).served).toBe(3);
    expect(viaDaemon.start.context).toContain('Files created: index.html, styles.css, script.js');
    expect(viaDaemon.prompt.context).toContain('pauseBtn');
    expect(viaDaemon.start.context).toBe(alone.start.context);
    expect(viaDaemon.prompt.context).toBe(alone.prompt.context);

    // The start record names the hook's host (this test's process, through sh), not the resident process's parents.
    const store = new Database(db, { readonly: true });
    const metas = store.prepare("SELECT meta FROM events WHERE session_id = ? AND kind = 'system'").all('new-via-daemon') as Array<{ meta: string | null }>;
    store.close();
    const pids = metas.flatMap((m) => (JSON.parse(m.meta ?? '{}') as { hostPids?: number[] }).hostPids ?? []);
    expect(pids).toContain(process.pid);
  });

  it('answers hooks of several sessions arriving at once, each importing its transcript, all stored', async () => {
    await waitFor(true);
    const before = daemon(['--status']).served!;
    const sessions = Array.from({ length: 6 }, (_, i) => `cccccccc-1111-4111-8111-00000000000${i}`);
    const runs = sessions.flatMap((id) => {
      const transcript = join(dir, `${id}.jsonl`);
      writeFileSync(transcript, readFileSync(FIXTURE, 'utf8'));
      return [
        hookAsync('Stop', { session_id: id, transcript_path: transcript, stop_hook_active: false }),
        hookAsync('UserPromptSubmit', { session_id: id, transcript_path: transcript, prompt: PROMPT }),
      ];
    });
    for (const r of await Promise.all(runs)) expect(r.code, r.stderr).toBe(0);
    expect(daemon(['--status']).served).toBe(before + runs.length);
    const store = new Database(db, { readonly: true });
    const count = store.prepare('SELECT count(*) FROM events WHERE session_id = ?').pluck();
    const stored = sessions.map((id) => count.get(id) as number);
    store.close();
    // Every session holds the whole transcript (the fixture's events), whichever of its two hooks imported it.
    expect(new Set(stored).size).toBe(1);
    expect(stored[0]).toBeGreaterThan(10);
  });

  it('fails a bad hook input as a hook in its own process does: exit 1, never 2, the field named', () => {
    const bad = hook('UserPromptSubmit', { session_id: '', prompt: 'x' });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^engram hooks run user-prompt-submit: INVALID_INPUT: .*session_id/);
  });

  it('ends when its store file is replaced, and the next hook writes to the new file', async () => {
    const before = await waitFor(true);
    rmSync(join(dir, 'store'), { recursive: true, force: true });
    const r = hook('UserPromptSubmit', { session_id: 'after-replace', transcript_path: join(dir, `${FIRST}.jsonl`), prompt: PROMPT });
    expect(r.code, r.stderr).toBe(0);
    const sessions = runEngram(['--db', db, 'sessions', '--json'], { cwd: project });
    expect(sessions.code, sessions.stderr).toBe(0);
    expect(sessions.stdout).toContain('after-replace');
    const after = await waitFor(true);
    expect(after.pid).not.toBe(before.pid);
  });

  it('is replaced when killed: the hook runs in its own process and starts a new one', async () => {
    const before = await waitFor(true);
    process.kill(before.pid!, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 200));
    const r = hook('Stop', { session_id: 'after-kill', transcript_path: join(dir, `${FIRST}.jsonl`), stop_hook_active: false });
    expect(r.code, r.stderr).toBe(0);
    const after = await waitFor(true);
    expect(after.pid).not.toBe(before.pid);
    expect(after.socket).toBe(before.socket);
  });

  it('stops when asked, and none is started with ENGRAM_HOOK_DAEMON=off', async () => {
    await waitFor(true);
    daemon(['--stop']);
    await waitFor(false);
    const r = hook('Stop', { session_id: 'off', transcript_path: join(dir, `${FIRST}.jsonl`), stop_hook_active: false }, { ENGRAM_HOOK_DAEMON: 'off' });
    expect(r.code, r.stderr).toBe(0);
    await new Promise((r) => setTimeout(r, 1500));
    expect(daemon(['--status']).running).toBe(false);
  });
});
