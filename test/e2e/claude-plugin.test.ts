import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv } from '../fixtures/cli.js';

/**
 * The Claude Code plugin (`.claude-plugin/marketplace.json` at the repository root, the plugin in
 * `plugins/claude-code/`), tested by doing what Claude Code does, since Claude Code is not installed here: read the
 * marketplace and the manifest (checked against the documented fields), copy the plugin into a plugin cache as
 * `/plugin install` does, expand `${CLAUDE_PLUGIN_ROOT}` to that copy, and run each hook command with `sh -c` and
 * the documented hook JSON on stdin, in a temporary HOME and project with a real transcript; then start the MCP
 * server from the manifest's entry and call it with the real SDK client.
 */

const ROOT = resolve('.');
const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as Record<string, any>;
const marketplace = readJson(join(ROOT, '.claude-plugin', 'marketplace.json'));
const entry = marketplace.plugins[0];
const pluginDir = resolve(ROOT, entry.source);
const manifest = readJson(join(pluginDir, '.claude-plugin', 'plugin.json'));
const hooksFile = readJson(join(pluginDir, 'hooks', 'hooks.json'));

/** The keys the plugin manifest and marketplace references document (Claude Code's plugin docs). */
const MANIFEST_KEYS = ['name', 'version', 'description', 'author', 'homepage', 'repository', 'license', 'keywords', 'commands', 'agents', 'skills', 'hooks', 'mcpServers', 'outputStyles', 'lspServers', 'userConfig'];
const MARKETPLACE_KEYS = ['name', 'owner', 'plugins', 'metadata', '$schema', 'description', 'version'];
const ENTRY_KEYS = ['name', 'source', 'description', 'version', 'author', 'homepage', 'repository', 'license', 'keywords', 'category', 'tags', 'strict'];
const HOOK_EVENTS = ['PreToolUse', 'PostToolUse', 'Notification', 'UserPromptSubmit', 'Stop', 'SubagentStop', 'SessionStart', 'SessionEnd', 'PreCompact'];
const KEBAB = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

describe('the plugin files, against the documented schema', () => {
  it('has a marketplace listing the plugin by a source inside the repository', () => {
    for (const key of Object.keys(marketplace)) expect(MARKETPLACE_KEYS).toContain(key);
    expect(marketplace.name).toMatch(KEBAB);
    expect(typeof marketplace.owner.name).toBe('string');
    expect(marketplace.plugins).toHaveLength(1);
    for (const key of Object.keys(entry)) expect(ENTRY_KEYS).toContain(key);
    expect(entry.source).toMatch(/^\.\//);
    expect(existsSync(join(pluginDir, '.claude-plugin', 'plugin.json'))).toBe(true);
  });

  it("has a manifest of the documented keys, named as the marketplace names it, at the package's version", () => {
    for (const key of Object.keys(manifest)) expect(MANIFEST_KEYS).toContain(key);
    expect(manifest.name).toMatch(KEBAB);
    expect(manifest.name).toBe(entry.name);
    expect(manifest.version).toBe(readJson(join(ROOT, 'package.json')).version);
    expect(entry.version).toBe(manifest.version);
    expect(manifest.mcpServers.engram).toEqual({ command: 'sh', args: ['${CLAUDE_PLUGIN_ROOT}/bin/engram-plugin', 'mcp'] });
  });

  it('has hooks of the documented shape, each running engram hooks run through the plugin launcher', () => {
    for (const [event, groups] of Object.entries(hooksFile.hooks as Record<string, any[]>)) {
      expect(HOOK_EVENTS).toContain(event);
      for (const group of groups) {
        for (const hook of group.hooks) {
          expect(Object.keys(hook)).toEqual(['type', 'command']);
          expect(hook.type).toBe('command');
          expect(hook.command).toMatch(/^sh "\$\{CLAUDE_PLUGIN_ROOT\}\/bin\/engram-plugin" hooks run [a-z-]+$/);
        }
      }
    }
    expect(Object.keys(hooksFile.hooks)).toEqual(['SessionStart', 'UserPromptSubmit', 'Stop', 'SessionEnd', 'PreCompact']);
  });
});

describe('the plugin installed as Claude Code installs it', () => {
  let dir: string;
  let home: string;
  let project: string;
  let installed: string;
  /** A directory on PATH holding `engram`, as `npm install -g` leaves it. */
  let binDir: string;
  /** A PATH with this Node and the shell's tools, and no engram. */
  let bareNodePath: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'engram-plugin-'));
    home = join(dir, 'home');
    project = join(dir, 'shop-api');
    binDir = join(dir, 'global-bin');
    mkdirSync(project, { recursive: true });
    mkdirSync(binDir);
    writeFileSync(join(binDir, 'engram'), `#!/bin/sh\nexec "${process.execPath}" "${join(ROOT, 'bin', 'engram.js')}" "$@"\n`, { mode: 0o755 });
    mkdirSync(join(dir, 'node-only'));
    symlinkSync(process.execPath, join(dir, 'node-only', 'node'));
    bareNodePath = `${join(dir, 'node-only')}:/usr/bin:/bin`;
    // `/plugin install engram@engram` copies the plugin into the cache, keyed by marketplace, plugin and version.
    installed = join(home, '.claude', 'plugins', 'cache', marketplace.name, manifest.name, manifest.version);
    cpSync(pluginDir, installed, { recursive: true });
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  /** The environment Claude Code gives a hook of the plugin: its own, plus CLAUDE_PLUGIN_ROOT and CLAUDE_PROJECT_DIR. */
  const hostEnv = (extra: Record<string, string> = {}) =>
    cliEnv({ HOME: home, PATH: `${binDir}:${process.env.PATH ?? ''}`, CLAUDE_PLUGIN_ROOT: installed, CLAUDE_PROJECT_DIR: project, ENGRAM_EMBEDDER: 'none', ENGRAM_LLM_URL: '', ENGRAM_PROJECT: '', ...extra });
  const expand = (text: string) => text.replaceAll('${CLAUDE_PLUGIN_ROOT}', installed);

  function hook(event: string, input: Record<string, unknown>, extra: Record<string, string> = {}) {
    const command = expand((hooksFile.hooks[event] as any[])[0].hooks[0].command as string);
    const r = spawnSync('sh', ['-c', command], { cwd: project, env: hostEnv(extra), input: JSON.stringify({ cwd: project, hook_event_name: event, permission_mode: 'default', ...input }), encoding: 'utf8' });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  }

  const first = '0c7e5b1a-1d2e-4f30-8a41-5b6c7d8e9f01';
  const second = '0c7e5b1a-1d2e-4f30-8a41-5b6c7d8e9f02';

  it("stores a session in the user's store and gives the next session of the project its brief and a prompt its evidence", () => {
    const transcript = join(home, '.claude', 'projects', '-shop-api', `${first}.jsonl`);
    mkdirSync(join(transcript, '..'), { recursive: true });
    writeFileSync(transcript, `${claudeTranscript(first, project).join('\n')}\n`);
    const base = { session_id: first, transcript_path: transcript };
    const started = hook('SessionStart', { ...base, source: 'startup' });
    expect(started.stderr).toBe('');
    expect(started.code).toBe(0);
    // A project's first session: nothing to say yet.
    expect(started.stdout).toBe('');
    expect(hook('UserPromptSubmit', { ...base, prompt: 'fix the refund rounding' }).code).toBe(0);
    expect(hook('Stop', { ...base, stop_hook_active: false }).code).toBe(0);
    expect(hook('SessionEnd', { ...base, reason: 'prompt_input_exit' }).code).toBe(0);
    // The plugin's store: one per user, shared by every project.
    expect(existsSync(join(home, '.engram', 'engram.db'))).toBe(true);

    const next = hook('SessionStart', { session_id: second, transcript_path: join(transcript, '..', `${second}.jsonl`), source: 'startup' });
    expect(next.code).toBe(0);
    const brief = JSON.parse(next.stdout).hookSpecificOutput;
    expect(brief.hookEventName).toBe('SessionStart');
    expect(brief.additionalContext).toContain('<engram-brief project="shop-api-');
    expect(brief.additionalContext).toContain('src/refunds.py');

    const prompt = hook('UserPromptSubmit', { session_id: second, transcript_path: join(transcript, '..', `${second}.jsonl`), prompt: 'what did grep float find in src/payments?' });
    expect(prompt.code).toBe(0);
    expect(JSON.parse(prompt.stdout).hookSpecificOutput.additionalContext).toContain('src/payments/capture.py:41');
    expect(hook('PreCompact', { session_id: second, transcript_path: transcript, trigger: 'manual', custom_instructions: '' }).code).toBe(0);
  });

  it('runs Engram named by ENGRAM_BIN, and says what to install when there is none, with exit 1', () => {
    const viaBin = hook('UserPromptSubmit', { session_id: second, prompt: 'hello' }, { ENGRAM_BIN: join(ROOT, 'bin', 'engram.js'), PATH: bareNodePath });
    expect(viaBin.stderr).toBe('');
    expect(viaBin.code).toBe(0);
    const none = hook('UserPromptSubmit', { session_id: second, prompt: 'hello' }, { PATH: bareNodePath });
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('npm install -g');
  });

  it("starts the manifest's MCP server, which lists the core tools and works for the project's current session", async () => {
    const server = manifest.mcpServers.engram as { command: string; args: string[] };
    const transport = new StdioClientTransport({ command: server.command, args: server.args.map(expand), env: hostEnv(), cwd: project, stderr: 'pipe' });
    const client = new Client({ name: 'claude-code-plugin-e2e', version: '1.0.0' });
    await client.connect(transport);
    try {
      expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(['append_events', 'expand', 'get_task_state', 'recall', 'update_task_state']);
      const card = await client.callTool({ name: 'get_task_state', arguments: {} });
      expect(card.structuredContent).toMatchObject({ sessionId: second });
    } finally {
      await client.close();
    }
  });
});

/** A Claude Code transcript (documented JSONL) of real work: tests run, a grep, files edited, the fix verified. */
function claudeTranscript(sessionId: string, cwd: string): string[] {
  const base = { sessionId, cwd, version: '2.1.0', gitBranch: 'main', isSidechain: false, userType: 'external' };
  let n = 0;
  const ts = () => new Date(Date.now() - 30 * 60_000 + n * 1000).toISOString();
  const line = (type: 'user' | 'assistant', content: unknown) => ({ ...base, type, uuid: `u${++n}`, parentUuid: n > 1 ? `u${n - 1}` : null, timestamp: ts(), message: { role: type, content } });
  const tool = (id: string, name: string, input: Record<string, unknown>, result: string) => [
    line('assistant', [{ type: 'tool_use', id, name, input }]),
    line('user', [{ type: 'tool_result', tool_use_id: id, content: result }]),
  ];
  return [
    line('user', 'Refunds are off by a cent; find out why test_refund fails and fix it.'),
    ...tool('toolu_01', 'Bash', { command: 'pytest tests/payments -x' }, 'FAILED tests/payments/test_capture.py::test_refund - AssertionError: expected 4999 got 5000'),
    ...tool('toolu_02', 'Bash', { command: 'grep -rn "float(" src/payments' }, 'src/payments/capture.py:41:    amount = float(total) * rate'),
    ...tool('toolu_03', 'Edit', { file_path: 'src/refunds.py', old_string: 'round(x)', new_string: 'quantize_half_even(x)' }, 'The file src/refunds.py has been updated.'),
    ...tool('toolu_04', 'Edit', { file_path: 'src/payments/capture.py', old_string: 'float(total)', new_string: 'Decimal(total)' }, 'The file src/payments/capture.py has been updated.'),
    ...tool('toolu_05', 'Bash', { command: 'pytest tests/payments -x' }, '42 passed in 1.20s'),
    line('assistant', [{ type: 'text', text: 'Decision: money stays in Decimal end to end and refunds round half-even; test_refund passes.' }]),
  ].map((record) => JSON.stringify(record));
}
