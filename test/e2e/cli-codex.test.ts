import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runEngram, type CliRun } from '../fixtures/cli.js';

/**
 * `engram hooks install|uninstall --codex` on a Codex configuration in a temporary HOME / CODEX_HOME, and what the
 * installed commands do: Codex's notify program (`hooks run codex-notify '<json>'`) importing a rollout, and Codex's
 * hooks (`hooks run session-start|user-prompt-submit --host codex`, Claude Code's protocol) answering the brief and
 * a prompt's evidence, against a real SQLite store.
 */

let dir: string;
let home: string;
let codexHome: string;
let project: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-codex-'));
  home = join(dir, 'home');
  codexHome = join(home, '.codex');
  project = join(dir, 'ledger');
  mkdirSync(codexHome, { recursive: true });
  mkdirSync(project);
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function engram(args: string[], options: { input?: string; env?: Record<string, string> } = {}): CliRun {
  return runEngram(['--embedder', 'none', ...args], { cwd: dir, env: { HOME: home, CODEX_HOME: '', ENGRAM_LLM_URL: '', ...options.env }, ...(options.input !== undefined ? { input: options.input } : {}) });
}

const read = (path: string) => readFileSync(path, 'utf8');
const BIN = resolve('bin/engram.js');

/** A user's config.toml: comments, a notify program of their own, another MCP server, a profile. */
const USER_CONFIG = `# Codex settings
model = "gpt-5-codex"   # the one I like
approval_policy = "on-request"
notify = ["notify-send", "-u", "low", "Codex"]

[mcp_servers.github]
# the GitHub server
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]
env = { GITHUB_TOKEN = "ghp_example" }

[profiles.fast]
model = "gpt-5-mini"
`;

describe('engram hooks install / uninstall --codex', () => {
  it("merges into the user's config.toml keeping comments, chains their notify, and uninstall gives the bytes back", () => {
    const config = join(codexHome, 'config.toml');
    const hooksJson = join(codexHome, 'hooks.json');
    writeFileSync(config, USER_CONFIG);
    const db = join(dir, 'engram.db');

    const r = engram(['hooks', 'install', '--codex', '--db', db]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`changed ${config} (MCP server engram: added; notify: added (runs your notify-send -u low Codex))`);
    expect(r.stdout).toContain('/hooks');
    const text = read(config);
    // The user's lines are all still there, comments included.
    for (const line of USER_CONFIG.split('\n').filter((l) => l !== '' && !l.startsWith('notify'))) expect(text).toContain(line);
    expect(text).toContain(`notify = ["${process.execPath}", "${BIN}", "hooks", "run", "codex-notify", "--db", "${db}", "--", "notify-send", "-u", "low", "Codex"]`);
    expect(text).toMatch(new RegExp(`command = "${process.execPath.replace(/[/.]/g, '\\$&')}", args = \\["${BIN.replace(/[/.]/g, '\\$&')}", "mcp", "--db", "${db.replace(/[/.]/g, '\\$&')}", "--embedder", "none"\\]`));
    const hooks = JSON.parse(read(hooksJson)).hooks;
    expect(Object.keys(hooks)).toEqual(['SessionStart', 'UserPromptSubmit']);
    expect(hooks.SessionStart[0].hooks[0]).toEqual({ type: 'command', command: `${process.execPath} ${BIN} hooks run session-start --host codex --db ${db}` });

    const installed = read(config);
    const again = engram(['hooks', 'install', '--codex', '--db', db, '--json']);
    expect(JSON.parse(again.stdout).files.map((f: { file: string }) => f.file)).toEqual(['unchanged', 'unchanged']);
    expect(read(config)).toBe(installed);

    const removed = engram(['hooks', 'uninstall', '--codex']);
    expect(removed.code).toBe(0);
    expect(removed.stdout).toContain('gives back your notify-send -u low Codex');
    expect(read(config)).toBe(USER_CONFIG);
    expect(existsSync(hooksJson)).toBe(false);
  });

  it('honours CODEX_HOME, and uninstall of an install into nothing leaves nothing', () => {
    const elsewhere = join(dir, 'codex-home');
    const r = engram(['hooks', 'install', '--codex', '--db', 'mem.db'], { env: { CODEX_HOME: elsewhere } });
    expect(r.code).toBe(0);
    expect(read(join(elsewhere, 'config.toml'))).toContain('[mcp_servers.engram]');
    expect(existsSync(join(codexHome, 'config.toml'))).toBe(false);
    expect(engram(['hooks', 'uninstall', '--codex'], { env: { CODEX_HOME: elsewhere } }).code).toBe(0);
    expect(existsSync(join(elsewhere, 'config.toml'))).toBe(false);
    expect(existsSync(join(elsewhere, 'hooks.json'))).toBe(false);
  });

  it('prints the diff with --dry-run and writes nothing', () => {
    writeFileSync(join(codexHome, 'config.toml'), USER_CONFIG);
    const r = engram(['hooks', 'install', '--codex', '--dry-run']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`would change ${join(codexHome, 'config.toml')}`);
    expect(r.stdout).toMatch(/^-notify = \["notify-send", "-u", "low", "Codex"\]$/m);
    expect(r.stdout).toMatch(/^\+notify = \[.*"codex-notify"/m);
    expect(r.stdout).toContain('Dry run: nothing was written.');
    expect(read(join(codexHome, 'config.toml'))).toBe(USER_CONFIG);
    expect(existsSync(join(codexHome, 'hooks.json'))).toBe(false);
  });

  it('refuses a config.toml that is not TOML, naming the file and line, and writes neither file', () => {
    const broken = 'model = "o3"\n[mcp_servers\ncommand = "x"\n';
    writeFileSync(join(codexHome, 'config.toml'), broken);
    const r = engram(['hooks', 'install', '--codex', '--json']);
    expect(r.code).toBe(2);
    const error = JSON.parse(r.stderr).error;
    expect(error).toMatchObject({ code: 'INVALID_INPUT', data: { field: 'config', file: join(codexHome, 'config.toml'), line: 3 } });
    expect(error.message).toContain('not valid TOML');
    expect(read(join(codexHome, 'config.toml'))).toBe(broken);
    expect(existsSync(join(codexHome, 'hooks.json'))).toBe(false);
  });

  it('keeps an MCP server named engram that the user wrote, and a notify that is not a list is refused', () => {
    const own = '[mcp_servers.engram]\nurl = "http://127.0.0.1:7077/mcp"\n';
    writeFileSync(join(codexHome, 'config.toml'), own);
    const r = engram(['hooks', 'install', '--codex']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('already has an MCP server named "engram"');
    expect(read(join(codexHome, 'config.toml'))).toContain('url = "http://127.0.0.1:7077/mcp"');
    expect(engram(['hooks', 'uninstall', '--codex']).code).toBe(0);
    expect(read(join(codexHome, 'config.toml'))).toBe(own);

    writeFileSync(join(codexHome, 'config.toml'), 'notify = "say done"\n');
    const bad = engram(['hooks', 'install', '--codex']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('"notify" is not a list of strings');
  });
});

const THREAD = '019ae2b4-7c1d-7f00-8a11-3c5d7e9f1a20';
const LATER = '019ae3c0-1111-7222-8333-444455556666';

/** A Codex rollout in the documented envelope layout: a session of real work (tests run, files patched, a fix). */
function rolloutLines(threadId: string, extraRuns = 0): string[] {
  // The turns of a session that ended ten minutes ago (a rollout is written as the session goes).
  const startMs = Date.now() - 10 * 60_000;
  const at = (s: number) => new Date(startMs + s * 1000).toISOString();
  const item = (s: number, payload: Record<string, unknown>) => ({ timestamp: at(s), type: 'response_item', payload });
  const shell = (s: number, id: string, command: string, output: string, exitCode: number) => [
    item(s, { type: 'function_call', name: 'shell', arguments: JSON.stringify({ command: ['bash', '-lc', command], workdir: project }), call_id: id }),
    item(s + 1, { type: 'function_call_output', call_id: id, output: JSON.stringify({ output, metadata: { exit_code: exitCode, duration_seconds: 0.4 } }) }),
  ];
  const patch = (s: number, id: string, file: string) => [
    item(s, { type: 'custom_tool_call', status: 'completed', call_id: id, name: 'apply_patch', input: `*** Begin Patch\n*** Update File: ${file}\n@@\n-ROUND_DOWN\n+ROUND_HALF_EVEN\n*** End Patch\n` }),
    item(s + 1, { type: 'custom_tool_call_output', call_id: id, output: JSON.stringify({ output: `Success. Updated the following files:\nM ${file}\n`, metadata: { exit_code: 0 } }) }),
  ];
  return [
    { timestamp: at(0), type: 'session_meta', payload: { id: threadId, timestamp: at(0), cwd: project, originator: 'codex_cli_rs', cli_version: '0.60.0', source: 'cli' } },
    { timestamp: at(1), type: 'turn_context', payload: { cwd: project, model: 'gpt-5-codex' } },
    item(2, { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'The ledger monthly totals are off by a cent; find why test_monthly_totals fails and fix it.' }] }),
    ...shell(3, 'call_1', 'pytest tests/test_totals.py -x -q', "E   AssertionError: assert Decimal('1043.17') == Decimal('1043.18')\n1 failed in 0.42s\n", 1),
    ...shell(5, 'call_2', 'grep -n ROUND_DOWN -r ledger', 'ledger/totals.py:14: return sum(amounts).quantize(CENT, rounding=ROUND_DOWN)\nledger/invoice.py:9: ROUND_DOWN\n', 0),
    ...patch(7, 'call_3', 'ledger/totals.py'),
    ...patch(9, 'call_4', 'ledger/invoice.py'),
    ...shell(11, 'call_5', 'pytest tests/test_totals.py -x -q', '3 passed in 0.40s\n', 0),
    ...shell(13, 'call_6', 'pytest -q', '128 passed in 4.10s\n', 0),
    ...Array.from({ length: extraRuns }, (_, i) => shell(20 + 2 * i, `call_x${i}`, `pytest tests/test_invoice.py -k case_${i}`, '1 passed in 0.10s\n', 0)).flat(),
    item(15, { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Decision: totals and invoices round half-even (ROUND_HALF_EVEN) instead of truncating with ROUND_DOWN; test_monthly_totals and the whole suite pass.' }] }),
  ].map((line) => JSON.stringify(line));
}

describe('Codex notify and hooks (engram hooks run)', () => {
  let db: string;
  beforeEach(() => {
    db = join(dir, 'engram.db');
    const day = join(codexHome, 'sessions', '2026', '12', '01');
    mkdirSync(day, { recursive: true });
    writeFileSync(join(day, `rollout-2026-12-01T09-00-00-${THREAD}.jsonl`), `${rolloutLines(THREAD).join('\n')}\n`);
    // Another thread's rollout of the same day is not this turn's.
    writeFileSync(join(day, `rollout-2026-12-01T08-00-00-${LATER.replace(/6$/, '7')}.jsonl`), `${rolloutLines(LATER.replace(/6$/, '7')).slice(0, 3).join('\n')}\n`);
  });

  const notification = (threadId: string) =>
    JSON.stringify({ type: 'agent-turn-complete', 'thread-id': threadId, 'turn-id': 'turn-1', cwd: project, 'input-messages': ['fix the totals'], 'last-assistant-message': 'Fixed.' });
  const stats = () => JSON.parse(engram(['--db', db, 'stats', '--json']).stdout) as { events: number; sessions: number };
  const codexHook = (event: string, input: Record<string, unknown>) => engram(['--db', db, 'hooks', 'run', event, '--host', 'codex'], { input: JSON.stringify(input) });

  it("imports the thread's rollout after a turn, once, and runs the user's chained notify program", () => {
    const marker = join(dir, 'chained.txt');
    const r = engram(['--db', db, 'hooks', 'run', 'codex-notify', '--', process.execPath, '-e', `require('fs').writeFileSync(${JSON.stringify(marker)}, process.argv.at(-1))`, notification(THREAD)]);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    const first = stats();
    expect(first.sessions).toBe(1);
    // 1 user message, 6 tool calls and 6 results, 1 assistant message, and the start record.
    expect(first.events).toBe(15);
    expect(engram(['--db', db, 'hooks', 'run', 'codex-notify', notification(THREAD)]).code).toBe(0);
    expect(stats().events).toBe(15);
    const found = JSON.parse(engram(['--db', db, 'recall', 'AssertionError', '--json']).stdout);
    expect(found.hits[0]).toMatchObject({ sessionId: THREAD });
    // The chained program runs detached: wait for its file (bounded), then check it got the notification.
    const deadline = Date.now() + 10_000;
    while (!existsSync(marker) && Date.now() < deadline) engram(['--version']);
    expect(JSON.parse(read(marker))['thread-id']).toBe(THREAD);
  });

  it("gives a new Codex session the project's brief from the earlier session, and a prompt its evidence", () => {
    expect(engram(['--db', db, 'hooks', 'run', 'codex-notify', notification(THREAD)]).code).toBe(0);
    const start = codexHook('session-start', { session_id: LATER, transcript_path: null, cwd: project, hook_event_name: 'SessionStart', model: 'gpt-5-codex', source: 'startup' });
    expect(start.stderr).toBe('');
    expect(start.code).toBe(0);
    const brief = JSON.parse(start.stdout).hookSpecificOutput;
    expect(brief.hookEventName).toBe('SessionStart');
    // The earlier session was summarized at this start (no model: the work log) and the brief cites it.
    expect(brief.additionalContext).toContain('ROUND_HALF_EVEN');
    expect(brief.additionalContext).toContain(THREAD.slice(0, 8));

    // Evidence the brief did not already give: the grep that found every ROUND_DOWN.
    const prompt = codexHook('user-prompt-submit', { session_id: LATER, transcript_path: null, cwd: project, hook_event_name: 'UserPromptSubmit', turn_id: 't1', prompt: 'where is ROUND_DOWN used in the ledger code?' });
    expect(prompt.code).toBe(0);
    expect(JSON.parse(prompt.stdout).hookSpecificOutput.additionalContext).toContain('ledger/invoice.py:9: ROUND_DOWN');
    const unrelated = codexHook('user-prompt-submit', { session_id: LATER, transcript_path: null, cwd: project, hook_event_name: 'UserPromptSubmit', turn_id: 't2', prompt: 'write a haiku about autumn leaves' });
    expect(unrelated.stdout).toBe('');
  });

  it('summarizes the session after a turn once it grew by 20 events since its last summary', () => {
    const day = join(codexHome, 'sessions', '2026', '12', '02');
    mkdirSync(day, { recursive: true });
    const longer = '019ae4d0-2222-7333-8444-555566667777';
    // 14 events of work and 8 more: past the 20 a turn's end waits for.
    writeFileSync(join(day, `rollout-2026-12-02T09-00-00-${longer}.jsonl`), `${rolloutLines(longer, 4).join('\n')}\n`);
    expect(engram(['--db', db, 'hooks', 'run', 'codex-notify', notification(THREAD)]).code).toBe(0);
    expect(engram(['--db', db, 'hooks', 'run', 'codex-notify', notification(longer)]).code).toBe(0);
    const summaries = JSON.parse(engram(['--db', db, 'summaries', '--json']).stdout) as Array<{ sessionId: string; text: string }>;
    expect(summaries.map((s) => s.sessionId)).toEqual([longer]);
    expect(summaries[0]!.text).toContain('ledger/invoice.py');
  });

  it('passes over other notification types and a thread with no rollout yet, and fails with exit 1 on bad input', () => {
    expect(engram(['--db', db, 'hooks', 'run', 'codex-notify', JSON.stringify({ type: 'approval-requested' })]).code).toBe(0);
    expect(engram(['--db', db, 'hooks', 'run', 'codex-notify', notification('019ae999-0000-7000-8000-000000000000')]).code).toBe(0);
    expect(stats().events).toBe(0);
    for (const bad of [['not json'], [JSON.stringify({ type: 'agent-turn-complete' })], []]) {
      const r = engram(['--db', db, 'hooks', 'run', 'codex-notify', ...bad]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^engram hooks run codex-notify: INVALID_INPUT: notification/);
    }
  });
});
