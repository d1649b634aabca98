import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runEngram, type CliRun } from '../fixtures/cli.js';

/**
 * `engram hooks install|uninstall --claude-code` on fixture settings files (a temporary HOME and project), and
 * `engram hooks run` with the JSON Claude Code writes to a hook's stdin, against a real SQLite store.
 */

let dir: string;
let home: string;
let project: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-hooks-'));
  home = join(dir, 'home');
  project = join(dir, 'shop-api');
  mkdirSync(home);
  mkdirSync(project);
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function engram(args: string[], options: { input?: string } = {}): CliRun {
  return runEngram(['--embedder', 'none', ...args], { cwd: dir, env: { HOME: home, CLAUDE_CONFIG_DIR: '' }, ...options });
}

const read = (path: string) => readFileSync(path, 'utf8');
const json = (path: string) => JSON.parse(read(path)) as Record<string, any>;

/** A user's settings as Claude Code writes them (two-space JSON, final newline), with hooks of their own. */
const USER_SETTINGS = `${JSON.stringify(
  {
    permissions: { allow: ['Bash(npm test:*)'], deny: [] },
    hooks: {
      Stop: [{ hooks: [{ type: 'command', command: 'npx prettier --write .', timeout: 30 }] }],
      PostToolUse: [{ matcher: 'Edit|Write', hooks: [{ type: 'command', command: './scripts/lint.sh' }] }],
    },
    model: 'opus',
  },
  null,
  2,
)}\n`;
/** ~/.claude.json holds much more than MCP servers; all of it must survive. */
const CLAUDE_JSON = `${JSON.stringify({ numStartups: 41, projects: { '/work/x': { allowedTools: [] } }, mcpServers: { github: { type: 'http', url: 'https://api.example.com/mcp' } } }, null, 2)}\n`;

describe('engram hooks install / uninstall --claude-code', () => {
  it("installs into the user's empty settings, runs the store's own engram, and uninstalls to nothing", () => {
    const settings = join(home, '.claude', 'settings.json');
    const claudeJson = join(home, '.claude.json');
    const r = engram(['hooks', 'install', '--claude-code', '--db', 'mem/engram.db']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`created ${settings}`);

    const hooks = json(settings).hooks;
    expect(Object.keys(hooks)).toEqual(['SessionStart', 'UserPromptSubmit', 'Stop', 'SessionEnd', 'PreCompact']);
    const command: string = hooks.SessionStart[0].hooks[0].command;
    expect(command).toBe(`${process.execPath} ${resolve('bin/engram.js')} hooks run session-start --db ${join(dir, 'mem/engram.db')}`);
    expect(json(claudeJson).mcpServers.engram).toEqual({
      type: 'stdio',
      command: process.execPath,
      // No --session: the server works for Claude Code's current session of the project (docs/integrations.md).
      // --embedder given to install is passed on to the server (these tests run with --embedder none).
      args: [resolve('bin/engram.js'), 'mcp', '--db', join(dir, 'mem/engram.db'), '--embedder', 'none'],
    });

    const again = engram(['hooks', 'install', '--claude-code', '--db', 'mem/engram.db', '--json']);
    expect(JSON.parse(again.stdout).files.map((f: { file: string }) => f.file)).toEqual(['unchanged', 'unchanged']);

    const removed = engram(['hooks', 'uninstall', '--claude-code']);
    expect(removed.code).toBe(0);
    expect(existsSync(settings)).toBe(false);
    expect(existsSync(claudeJson)).toBe(false);
  });

  it("merges with the user's hooks and other settings, and uninstall restores the files byte for byte", () => {
    mkdirSync(join(home, '.claude'));
    const settings = join(home, '.claude', 'settings.json');
    const claudeJson = join(home, '.claude.json');
    writeFileSync(settings, USER_SETTINGS);
    writeFileSync(claudeJson, CLAUDE_JSON);

    expect(engram(['hooks', 'install', '--claude-code']).code).toBe(0);
    const installed = json(settings);
    expect(installed.permissions).toEqual({ allow: ['Bash(npm test:*)'], deny: [] });
    expect(installed.model).toBe('opus');
    expect(installed.hooks.Stop).toHaveLength(2);
    expect(installed.hooks.Stop[0].hooks[0].command).toBe('npx prettier --write .');
    expect(installed.hooks.PostToolUse).toEqual(JSON.parse(USER_SETTINGS).hooks.PostToolUse);
    const mcp = json(claudeJson);
    expect(mcp.numStartups).toBe(41);
    expect(Object.keys(mcp.mcpServers)).toEqual(['github', 'engram']);

    const twice = read(settings);
    expect(engram(['hooks', 'install', '--claude-code']).code).toBe(0);
    expect(read(settings)).toBe(twice);

    expect(engram(['hooks', 'uninstall', '--claude-code']).code).toBe(0);
    expect(read(settings)).toBe(USER_SETTINGS);
    expect(read(claudeJson)).toBe(CLAUDE_JSON);
  });

  it("writes a project's .claude/settings.json and .mcp.json with --project and the project's store", () => {
    const r = engram(['hooks', 'install', '--claude-code', '--project', project]);
    expect(r.code).toBe(0);
    const store = join(project, '.engram', 'engram.db');
    expect(json(join(project, '.claude', 'settings.json')).hooks.Stop[0].hooks[0].command).toContain(`hooks run stop --db ${store}`);
    expect(json(join(project, '.mcp.json')).mcpServers.engram.args).toEqual([resolve('bin/engram.js'), 'mcp', '--db', store, '--embedder', 'none']);
    expect(existsSync(join(home, '.claude', 'settings.json'))).toBe(false);
    expect(engram(['hooks', 'uninstall', '--claude-code', '--project', project]).code).toBe(0);
    expect(existsSync(join(project, '.mcp.json'))).toBe(false);
  });

  it('prints the diff with --dry-run and writes nothing', () => {
    mkdirSync(join(project, '.claude'));
    writeFileSync(join(project, '.claude', 'settings.json'), USER_SETTINGS);
    const r = engram(['hooks', 'install', '--claude-code', '--project', project, '--dry-run']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`would change ${join(project, '.claude', 'settings.json')}`);
    expect(r.stdout).toMatch(/^\+ {4}"SessionStart": \[$/m);
    expect(r.stdout).toContain(`would create ${join(project, '.mcp.json')}`);
    expect(r.stdout).toContain('Dry run: nothing was written.');
    expect(read(join(project, '.claude', 'settings.json'))).toBe(USER_SETTINGS);
    expect(existsSync(join(project, '.mcp.json'))).toBe(false);
  });

  it('refuses malformed settings without touching either file', () => {
    mkdirSync(join(project, '.claude'));
    const broken = '{\n  "hooks": {\n    "Stop": [\n  }\n';
    writeFileSync(join(project, '.claude', 'settings.json'), broken);
    const r = engram(['hooks', 'install', '--claude-code', '--project', project, '--json']);
    expect(r.code).toBe(2);
    const error = JSON.parse(r.stderr).error;
    expect(error).toMatchObject({ code: 'INVALID_INPUT', data: { field: 'settings', file: join(project, '.claude', 'settings.json') } });
    expect(error.message).toContain('not valid JSON');
    expect(read(join(project, '.claude', 'settings.json'))).toBe(broken);
    expect(existsSync(join(project, '.mcp.json'))).toBe(false);
    expect(engram(['hooks', 'uninstall', '--claude-code', '--project', project]).code).toBe(2);
    expect(read(join(project, '.claude', 'settings.json'))).toBe(broken);
  });

  it('keeps an MCP server named engram that the user wrote, and still installs the hooks', () => {
    const own = `${JSON.stringify({ mcpServers: { engram: { type: 'http', url: 'http://127.0.0.1:7077/mcp?session=shop' } } }, null, 2)}\n`;
    writeFileSync(join(project, '.mcp.json'), own);
    const r = engram(['hooks', 'install', '--claude-code', '--project', project]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('already has an MCP server named "engram"');
    expect(read(join(project, '.mcp.json'))).toBe(own);
    expect(json(join(project, '.claude', 'settings.json')).hooks.SessionStart).toHaveLength(1);
    expect(engram(['hooks', 'uninstall', '--claude-code', '--project', project]).code).toBe(0);
    expect(read(join(project, '.mcp.json'))).toBe(own);
  });

  it('asks for the host', () => {
    const r = engram(['hooks', 'install']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--claude-code');
  });
});

/** A Claude Code transcript in the documented JSONL shape: a prompt, a tool call and its result. */
function transcriptLines(sessionId: string): string[] {
  const base = { sessionId, cwd: '/repo', version: '2.0.14', gitBranch: 'main', isSidechain: false, userType: 'external' };
  return [
    { ...base, type: 'user', uuid: 'u1', parentUuid: null, timestamp: '2026-11-20T10:00:00.000Z', message: { role: 'user', content: 'run the payment tests' } },
    {
      ...base,
      type: 'assistant',
      uuid: 'u2',
      parentUuid: 'u1',
      timestamp: '2026-11-20T10:00:05.000Z',
      message: { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_01', name: 'Bash', input: { command: 'pytest tests/payments -x' } }] },
    },
    {
      ...base,
      type: 'user',
      uuid: 'u3',
      parentUuid: 'u2',
      timestamp: '2026-11-20T10:00:30.000Z',
      message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: 'FAILED tests/payments/test_capture.py::test_refund - AssertionError: expected 4999 got 5000' }] },
    },
  ].map((line) => JSON.stringify(line));
}

describe('engram hooks run (Claude Code hook input on stdin)', () => {
  const session = '5f1e0c2a-7b1d-4c3e-9f00-0a1b2c3d4e5f';
  let transcript: string;
  let db: string;
  beforeEach(() => {
    transcript = join(project, `${session}.jsonl`);
    db = join(dir, 'engram.db');
  });

  const hook = (event: string, input: Record<string, unknown>) =>
    engram(['--db', db, 'hooks', 'run', event], { input: JSON.stringify({ session_id: session, transcript_path: transcript, cwd: project, ...input }) });
  const stored = () => JSON.parse(engram(['--db', db, 'stats', '--json']).stdout).events as number;

  it('streams the transcript in on UserPromptSubmit and Stop, each line once, printing nothing for the prompt', () => {
    const lines = transcriptLines(session);
    writeFileSync(transcript, `${lines[0]}\n`);
    const prompt = hook('user-prompt-submit', { hook_event_name: 'UserPromptSubmit', prompt: 'run the payment tests' });
    expect(prompt.code).toBe(0);
    // Claude Code adds a UserPromptSubmit hook's stdout to the prompt: nothing may be printed.
    expect(prompt.stdout).toBe('');
    expect(stored()).toBe(1);

    appendFileSync(transcript, `${lines[1]}\n${lines[2]}\n`);
    expect(hook('stop', { hook_event_name: 'Stop', stop_hook_active: false }).code).toBe(0);
    expect(stored()).toBe(3);
    expect(hook('stop', { hook_event_name: 'Stop', stop_hook_active: false }).code).toBe(0);
    expect(stored()).toBe(3);

    const found = JSON.parse(engram(['--db', db, 'recall', 'test_refund', '--json']).stdout);
    expect(found.hits[0]).toMatchObject({ sessionId: session, kind: 'tool_result' });
  });

  it('answers SessionStart with the push pack as additionalContext, and nothing for a session with no memory', () => {
    const fresh = hook('session-start', { hook_event_name: 'SessionStart', source: 'startup', transcript_path: join(project, 'not-yet.jsonl') });
    expect(fresh.code).toBe(0);
    expect(fresh.stdout).toBe('');

    writeFileSync(transcript, `${transcriptLines(session).join('\n')}\n`);
    expect(engram(['--db', db, 'karma', 'add', 'Amounts are integer cents; refunds round half-even.']).code).toBe(0);
    const r = hook('session-start', { hook_event_name: 'SessionStart', source: 'compact' });
    expect(r.code).toBe(0);
    const output = JSON.parse(r.stdout).hookSpecificOutput;
    expect(output.hookEventName).toBe('SessionStart');
    expect(output.additionalContext).toContain('Amounts are integer cents; refunds round half-even.');
    expect(output.additionalContext).toContain('AssertionError: expected 4999 got 5000');
    expect(output.additionalContext.length).toBeLessThanOrEqual(10_000);
  });

  it('records a compaction on PreCompact, once per compaction', () => {
    writeFileSync(transcript, `${transcriptLines(session).join('\n')}\n`);
    const input = { hook_event_name: 'PreCompact', trigger: 'manual', custom_instructions: 'keep the refund numbers' };
    expect(hook('pre-compact', input).code).toBe(0);
    expect(hook('pre-compact', input).code).toBe(0);
    expect(stored()).toBe(4);
    const found = JSON.parse(engram(['--db', db, 'recall', 'compacted', '--session', session, '--json']).stdout);
    expect(found.hits).toHaveLength(1);
    expect(found.hits[0]).toMatchObject({ kind: 'system' });
    expect(found.hits[0].excerpt).toContain('keep the refund numbers');
  });

  it('fails with exit 1, never 2 (which Claude Code reads as "block"), on input it cannot use', () => {
    const cases: Array<[string, string | undefined]> = [
      ['stop', 'not json'],
      ['stop', JSON.stringify({ transcript_path: transcript })],
      ['stop', JSON.stringify({ session_id: 'not a session id!' })],
      ['restart', JSON.stringify({ session_id: session })],
      ['stop', JSON.stringify({ session_id: session, hook_event_name: 'PreCompact' })],
    ];
    for (const [event, input] of cases) {
      const r = engram(['--db', db, 'hooks', 'run', event], input === undefined ? {} : { input });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`^engram hooks run ${event}: INVALID_INPUT: `));
    }
  });
});
