import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isEngramError } from '../../errors.js';
import { engramHookEvent, installHooks, installMcpServer, isEngramMcpEntry, shellQuote, uninstallHooks, uninstallMcpServer } from './claude-settings.js';
import { hookCommand, mcpServerEntry, type EngramLaunch } from './install.js';
import { diffLines, readSettingsFile } from './settings-file.js';

const launch: EngramLaunch = { node: '/usr/bin/node', bin: '/opt/engram/bin/engram.js', storeArgs: ['--db', '/home/me/.engram/engram.db'], mcpSession: 'shop' };
const commands = {
  SessionStart: hookCommand(launch, 'session-start'),
  UserPromptSubmit: hookCommand(launch, 'user-prompt-submit'),
  Stop: hookCommand(launch, 'stop'),
  PreCompact: hookCommand(launch, 'pre-compact'),
};
const FILE = '/home/me/.claude/settings.json';

/** Settings a user already has: a formatter hook on Stop, a permission list, a key Engram does not know. */
function userSettings(): Record<string, unknown> {
  return {
    permissions: { allow: ['Bash(npm test:*)'] },
    hooks: {
      Stop: [{ hooks: [{ type: 'command', command: 'npx prettier --write .', timeout: 30 }] }],
      PostToolUse: [{ matcher: 'Edit|Write', hooks: [{ type: 'command', command: './scripts/lint.sh' }] }],
    },
    someFutureSetting: { nested: [1, 2, 3] },
  };
}

describe('Claude Code hooks in settings.json', () => {
  it('adds one command hook per event to empty settings', () => {
    const { next, hooks } = installHooks({}, commands, FILE);
    expect(hooks).toEqual({ SessionStart: 'added', UserPromptSubmit: 'added', Stop: 'added', PreCompact: 'added' });
    expect(next).toEqual({
      hooks: {
        SessionStart: [{ hooks: [{ type: 'command', command: commands.SessionStart }] }],
        UserPromptSubmit: [{ hooks: [{ type: 'command', command: commands.UserPromptSubmit }] }],
        Stop: [{ hooks: [{ type: 'command', command: commands.Stop }] }],
        PreCompact: [{ hooks: [{ type: 'command', command: commands.PreCompact }] }],
      },
    });
  });

  it("keeps the user's hooks and unknown keys, and adds its own beside them", () => {
    const before = userSettings();
    const { next } = installHooks(before, commands, FILE);
    expect(before).toEqual(userSettings());
    expect(next.permissions).toEqual(before.permissions);
    expect(next.someFutureSetting).toEqual(before.someFutureSetting);
    const hooks = next.hooks as Record<string, unknown[]>;
    expect(hooks.Stop).toEqual([
      { hooks: [{ type: 'command', command: 'npx prettier --write .', timeout: 30 }] },
      { hooks: [{ type: 'command', command: commands.Stop }] },
    ]);
    expect(hooks.PostToolUse).toEqual((before.hooks as Record<string, unknown>).PostToolUse);
  });

  it('adds nothing when installed twice', () => {
    const once = installHooks(userSettings(), commands, FILE).next;
    const twice = installHooks(once, commands, FILE);
    expect(twice.next).toEqual(once);
    expect(Object.values(twice.hooks)).toEqual(['unchanged', 'unchanged', 'unchanged', 'unchanged']);
  });

  it('updates its command in place when the checkout or the store moved, and drops a second copy', () => {
    const old = installHooks(userSettings(), { Stop: "node '/old place/bin/engram.js' hooks run stop --db /old.db" }, FILE).next;
    (old.hooks as Record<string, unknown[]>).Stop!.push({ hooks: [{ type: 'command', command: 'engram hooks run stop' }] });
    const { next, hooks } = installHooks(old, { Stop: commands.Stop }, FILE);
    expect(hooks.Stop).toBe('updated');
    expect((next.hooks as Record<string, unknown[]>).Stop).toEqual([
      { hooks: [{ type: 'command', command: 'npx prettier --write .', timeout: 30 }] },
      { hooks: [{ type: 'command', command: commands.Stop }] },
    ]);
  });

  it('uninstall gives back exactly the settings before install', () => {
    for (const before of [{}, userSettings(), { hooks: { Stop: [{ matcher: '', hooks: [] }] } }]) {
      const installed = installHooks(before, commands, FILE).next;
      const { next, hooks } = uninstallHooks(installed, FILE);
      expect(next).toEqual(before);
      // SessionEnd is not among this test's commands: nothing of Engram's there to remove.
      expect(hooks).toEqual({ SessionStart: 'removed', UserPromptSubmit: 'removed', Stop: 'removed', SessionEnd: 'absent', PreCompact: 'removed' });
    }
  });

  it('uninstall drops an empty hooks object or event list that only its hooks filled', () => {
    expect(uninstallHooks(installHooks({ hooks: { Stop: [] } }, commands, FILE).next, FILE).next).toEqual({});
  });

  it("uninstall leaves the user's own engram commands (ingest in a Stop hook) alone", () => {
    const own = { hooks: { Stop: [{ hooks: [{ type: 'command', command: 'jq -r .transcript_path | xargs npx engram ingest >/dev/null' }] }] } };
    const { next, hooks } = uninstallHooks(own, FILE);
    expect(next).toEqual(own);
    expect(hooks.Stop).toBe('absent');
  });

  it('refuses settings whose hooks are not of the shape Claude Code reads, naming the key', () => {
    for (const [bad, path] of [
      [{ hooks: [] }, 'hooks'],
      [{ hooks: { Stop: { command: 'x' } } }, 'hooks.Stop'],
    ] as const) {
      let caught: unknown;
      try {
        installHooks(bad as Record<string, unknown>, commands, FILE);
      } catch (err) {
        caught = err;
      }
      expect(isEngramError(caught, 'INVALID_INPUT')).toBe(true);
      expect((caught as { data: { field: string } }).data.field).toBe(path);
    }
  });

  it('recognises the commands it writes, quoted paths included, and nothing else', () => {
    const spaced = hookCommand({ ...launch, bin: "/Users/me/My Tools/it's/bin/engram.js" }, 'pre-compact');
    expect(spaced).toBe("/usr/bin/node '/Users/me/My Tools/it'\\''s/bin/engram.js' hooks run pre-compact --db /home/me/.engram/engram.db");
    expect(engramHookEvent(spaced)).toBe('pre-compact');
    expect(engramHookEvent('engram hooks run session-start')).toBe('session-start');
    expect(engramHookEvent('npx engram ingest t.jsonl')).toBeUndefined();
    expect(engramHookEvent('engram hooks run stopper')).toBeUndefined();
    expect(shellQuote('plain/path-1.2')).toBe('plain/path-1.2');
  });
});

describe('the engram MCP server entry', () => {
  const entry = mcpServerEntry(launch);

  it('is a stdio server running node on bin/engram.js mcp for the session and store', () => {
    expect(entry).toEqual({ type: 'stdio', command: '/usr/bin/node', args: ['/opt/engram/bin/engram.js', 'mcp', '--session', 'shop', '--db', '/home/me/.engram/engram.db'] });
    expect(isEngramMcpEntry(entry)).toBe(true);
  });

  it('is added beside other servers, once, and removed exactly', () => {
    const before = { mcpServers: { github: { type: 'http', url: 'https://api.example.com/mcp' } }, numStartups: 41 };
    const added = installMcpServer(before, entry, '.mcp.json');
    expect(added.mcp).toBe('added');
    expect(installMcpServer(added.next, entry, '.mcp.json').mcp).toBe('unchanged');
    const removed = uninstallMcpServer(added.next, '.mcp.json');
    expect(removed.mcp).toBe('removed');
    expect(removed.next).toEqual(before);
    expect(uninstallMcpServer(installMcpServer({}, entry, '.mcp.json').next, '.mcp.json').next).toEqual({});
  });

  it('keeps a server named engram that it did not write (HTTP, npx), on install and uninstall', () => {
    for (const foreign of [
      { type: 'http', url: 'http://127.0.0.1:7077/mcp' },
      { command: 'npx', args: ['engram', 'mcp', '--session', 'my-project'] },
    ]) {
      const config = { mcpServers: { engram: foreign } };
      expect(installMcpServer(config, entry, '.mcp.json')).toEqual({ next: config, mcp: 'kept-foreign' });
      expect(uninstallMcpServer(config, '.mcp.json')).toEqual({ next: config, mcp: 'kept-foreign' });
    }
  });
});

describe('settings files', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'engram-settings-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads a missing or blank file as empty settings', () => {
    expect(readSettingsFile(join(dir, 'none.json')).value).toEqual({});
    writeFileSync(join(dir, 'blank.json'), '\n');
    expect(readSettingsFile(join(dir, 'blank.json')).value).toEqual({});
  });

  it('refuses malformed JSON naming the file (and the line, when the parser gives the position)', () => {
    const path = join(dir, 'settings.json');
    writeFileSync(path, '{\n  "hooks": {\n    "Stop": [,]\n  }\n}\n');
    let caught: unknown;
    try {
      readSettingsFile(path);
    } catch (err) {
      caught = err;
    }
    expect(isEngramError(caught, 'INVALID_INPUT')).toBe(true);
    expect((caught as Error).message).toMatch(new RegExp(`^${path}(:3:\\d+)?: not valid JSON`));
    expect((caught as Error).message).toContain('nothing was written');
    expect((caught as { data: unknown }).data).toMatchObject({ field: 'settings', file: path });
  });

  it('refuses a file that is JSON but not an object', () => {
    const path = join(dir, 'settings.json');
    writeFileSync(path, '[]\n');
    expect(() => readSettingsFile(path)).toThrow(/expected a JSON object/);
  });

  it('diffs the changed region with context, and an empty side from line 0', () => {
    expect(diffLines('a\nb\nc\n', 'a\nb\nc\n')).toBe('');
    expect(diffLines('1\n2\n3\n4\n5\n', '1\n2\n3\nnew\n4\n5\n', 1)).toBe('@@ -3,2 +3,3 @@\n 3\n+new\n 4');
    expect(diffLines('', '{\n}\n')).toBe('@@ -0,0 +1,2 @@\n+{\n+}');
  });
});
