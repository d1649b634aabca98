import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, runEngram } from '../fixtures/cli.js';

/**
 * Issue #29 end to end, as Claude Code runs it: `engram hooks install --claude-code` into a temporary HOME, then every
 * hook command read back from the settings file and run through `sh -c` with Claude Code's documented JSON on stdin,
 * over a real transcript that grows turn by turn (test/fixtures/transcripts/claude-code-countdown.jsonl). A second,
 * new session of the same project must start with a brief of the first, get evidence for a related prompt and nothing
 * for an unrelated one; a task card set through the installed MCP server (no --session) must reach the next brief.
 */

const FIXTURE = resolve('test/fixtures/transcripts/claude-code-countdown.jsonl');
let dir: string;
let home: string;
let project: string;
let settings: Record<string, Array<{ hooks: Array<{ command: string }> }>>;
let mcpEntry: { command: string; args: string[] };

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-carry-'));
  home = join(dir, 'home');
  project = join(dir, 'countdown');
  mkdirSync(home);
  mkdirSync(join(project, '.git'), { recursive: true });
  const install = runEngram(['--embedder', 'none', 'hooks', 'install', '--claude-code', '--db', join(dir, 'store', 'engram.db')], {
    cwd: project,
    env: { HOME: home, CLAUDE_CONFIG_DIR: '' },
  });
  expect(install.code, install.stderr).toBe(0);
  settings = JSON.parse(readFileSync(join(home, '.claude', 'settings.json'), 'utf8')).hooks;
  mcpEntry = JSON.parse(readFileSync(join(home, '.claude.json'), 'utf8')).mcpServers.engram;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the installed command of a Claude Code hook event as Claude Code does; returns what it injected, if anything. */
function hook(event: string, input: Record<string, unknown>): string | undefined {
  const command = settings[event]![0]!.hooks[0]!.command;
  const r = spawnSync('sh', ['-c', command], { cwd: project, env: cliEnv({ HOME: home }), input: JSON.stringify({ hook_event_name: event, cwd: project, ...input }), encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  const out = r.stdout.trim();
  if (out === '') return undefined;
  const parsed = JSON.parse(out) as { hookSpecificOutput: { hookEventName: string; additionalContext: string } };
  expect(parsed.hookSpecificOutput.hookEventName).toBe(event);
  return parsed.hookSpecificOutput.additionalContext;
}

const FIRST = 'aaaaaaaa-1111-4111-8111-000000000001';
const SECOND = 'bbbbbbbb-2222-4222-8222-000000000002';

// Each hook is its own engram process (about 50 of them in the first test): on a busy 2-core machine that takes
// longer than the default 30 s.
describe('memory across sessions through the installed Claude Code hooks', { timeout: 180_000 }, () => {
  it('stores the first session turn by turn and summarizes it, with no model and no separate consolidate', () => {
    const transcript = join(dir, `${FIRST}.jsonl`);
    expect(hook('SessionStart', { session_id: FIRST, transcript_path: transcript, source: 'startup' })).toBeUndefined();
    const lines = readFileSync(FIXTURE, 'utf8').trimEnd().split('\n');
    writeFileSync(transcript, '');
    for (const line of lines) {
      const record = JSON.parse(line) as { type: string; message: { content: unknown } };
      appendFileSync(transcript, `${line}\n`);
      if (record.type === 'user' && typeof record.message.content === 'string') {
        hook('UserPromptSubmit', { session_id: FIRST, transcript_path: transcript, prompt: record.message.content });
      }
      if (record.type === 'assistant') hook('Stop', { session_id: FIRST, transcript_path: transcript, stop_hook_active: false });
    }
    hook('SessionEnd', { session_id: FIRST, transcript_path: transcript, reason: 'prompt_input_exit' });
    const summaries = JSON.parse(runEngram(['--db', join(dir, 'store', 'engram.db'), 'summaries', '--json'], { cwd: project }).stdout) as Array<{ text: string; sessionId: string }>;
    const text = summaries.filter((s) => s.sessionId === FIRST).map((s) => s.text).join('\n');
    expect(text).toContain('Files created: index.html, styles.css, script.js');
    expect(text).toMatch(/Failed: `node --check script\.js`: SyntaxError: Unexpected token '}' \[evt_[0-9a-z]{26}\]; fixed/);
    expect(text).toContain('Play a sound when the countdown reaches zero');
    // A resumed session keeps what it got before #29: its own pack.
    expect(hook('SessionStart', { session_id: FIRST, transcript_path: transcript, source: 'resume' })).toMatch(/^Engram memory of this session/);
  });

  it('starts a new session with a cited brief of the first, and answers a related prompt with evidence, an unrelated one with nothing', () => {
    const transcript = join(dir, `${SECOND}.jsonl`);
    const brief = hook('SessionStart', { session_id: SECOND, transcript_path: transcript, source: 'startup' });
    expect(brief).toBeDefined();
    expect(brief!).toMatch(/^<engram-brief project="countdown-[0-9a-f]{6}">/);
    expect(brief!).toContain('### Session aaaaaaaa');
    expect(brief!).toContain('Files created: index.html, styles.css, script.js');
    expect(brief!).toContain("Decision: Let's always keep the timer at five minutes by default.");
    expect(brief!).toMatch(/### Session aaaaaaaa, .* \[sum_[0-9A-Z]{26}\]\n/);
    // The session's lines cite its turns (`[#31]`), which `engram show aaaaaaaa#31` opens.
    const refs = [...brief!.matchAll(/\[#(\d+)\]/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(4);
    const filesTurn = /Files created: index\.html, styles\.css, script\.js.*?\[#(\d+)\]/.exec(brief!)![1];
    const shown = runEngram(['--db', join(dir, 'store', 'engram.db'), 'show', `aaaaaaaa#${filesTurn}`], { cwd: project });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(`^evt_[0-9a-z]{26}  session ${FIRST}  turn ${filesTurn} `));
    expect(shown.stdout).toMatch(/script\.js|index\.html|styles\.css/);

    const related = hook('UserPromptSubmit', { session_id: SECOND, transcript_path: transcript, prompt: 'the pause button does not stop the countdown, where is it wired up?' });
    expect(related).toBeDefined();
    // The brief quoted the answer's summary already; the prompt adds the stored turns that hold the button, none the brief quoted.
    expect(brief! + related!).toContain('pauseBtn to pauseTimer, which calls clearInterval(tick)');
    expect(related!).toContain('pauseBtn');
    const hits = related!.split('\n').filter((l) => l.startsWith('- #'));
    expect(hits.length).toBeGreaterThan(0);
    for (const line of hits) expect(brief!).not.toContain(line.slice(line.indexOf(': "') + 3, line.indexOf(': "') + 60));
    // Each hit is cited by its turn under a line naming the session by the shortest prefix that is its alone;
    // `engram show <session>#<turn>` opens it.
    expect(related!).toContain(' session aaaaaaaa:\n');
    const turn = /^- #(\d+) /.exec(hits[0]!)![1];
    const opened = runEngram(['--db', join(dir, 'store', 'engram.db'), 'show', `aaaaaaaa#${turn}`], { cwd: project });
    expect(opened.code, opened.stderr).toBe(0);
    expect(opened.stdout).toMatch(new RegExp(`^evt_[0-9a-z]{26}  session ${FIRST}  turn ${turn} `));
    const quoted = hits[0]!.slice(hits[0]!.indexOf(': "') + 3).replace(/^…/, '').slice(0, 30);
    expect(opened.stdout.replace(/\s+/g, ' ')).toContain(quoted);
    expect(hook('UserPromptSubmit', { session_id: SECOND, transcript_path: transcript, prompt: 'qwzx vbnmkj plorf' })).toBeUndefined();
    expect(hook('UserPromptSubmit', { session_id: SECOND, transcript_path: transcript, prompt: 'What did Caroline say about the adoption agency in Lyon?' })).toBeUndefined();
  });

  it("acts through the installed MCP server (no --session) on the host's current session, whose task card reaches the next brief", async () => {
    expect(mcpEntry.args).not.toContain('--session');
    const transport = new StdioClientTransport({ command: mcpEntry.command, args: mcpEntry.args, cwd: project, env: cliEnv({ HOME: home }), stderr: 'pipe' });
    const client = new Client({ name: 'carry-e2e', version: '1.0.0' });
    await client.connect(transport);
    try {
      const r = (await client.callTool({ name: 'update_task_state', arguments: { update: { taskId: 'sound-at-zero', openLoops: ['Play a chime at 00:00'], phase: 'implementing' } } })) as CallToolResult;
      expect(r.isError ?? false, JSON.stringify(r.content)).toBe(false);
      expect(JSON.stringify(r.structuredContent)).toContain(SECOND);
    } finally {
      await client.close();
    }
    const third = 'cccccccc-3333-4333-8333-000000000003';
    const brief = hook('SessionStart', { session_id: third, transcript_path: join(dir, `${third}.jsonl`), source: 'startup' });
    expect(brief!).toContain('## Open task cards');
    expect(brief!).toContain('sound-at-zero: open: Play a chime at 00:00');
    expect(existsSync(join(dir, 'store', 'engram.db'))).toBe(true);
  });
});
