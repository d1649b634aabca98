import { describe, expect, it } from 'vitest';
import { isEngramError } from '../../errors.js';
import { chainedNotify, installCodexConfig, isEngramNotify, uninstallCodexConfig } from './codex-config.js';

const FILE = '/home/me/.codex/config.toml';
const entry = { command: '/usr/bin/node', args: ['/opt/engram/bin/engram.js', 'mcp', '--db', '/home/me/.engram/engram.db'] };
const notify = ['/usr/bin/node', '/opt/engram/bin/engram.js', 'hooks', 'run', 'codex-notify', '--db', '/home/me/.engram/engram.db'];

/** A configuration a user already has: a model, their own notify program, another MCP server, a profile. */
function userConfig(): Record<string, unknown> {
  return {
    model: 'gpt-5-codex',
    notify: ['notify-send', '-u', 'low', 'Codex'],
    mcp_servers: { github: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-github'] } },
    profiles: { fast: { model: 'gpt-5-mini' } },
  };
}

describe('Codex config.toml: the engram MCP server and notify program', () => {
  it("adds the server beside the user's, chains their notify program after --, and leaves the rest", () => {
    const before = userConfig();
    const plan = installCodexConfig(before, entry, notify, FILE);
    expect(before).toEqual(userConfig());
    expect(plan).toMatchObject({ mcp: 'added', notify: 'added', chained: ['notify-send', '-u', 'low', 'Codex'] });
    expect(plan.next.notify).toEqual([...notify, '--', 'notify-send', '-u', 'low', 'Codex']);
    expect(plan.next.mcp_servers).toEqual({ ...(before.mcp_servers as object), engram: entry });
    expect(plan.next.profiles).toEqual(before.profiles);
  });

  it('changes nothing when installed twice, and updates its entries in place when the checkout moved', () => {
    const once = installCodexConfig(userConfig(), entry, notify, FILE).next;
    expect(installCodexConfig(once, entry, notify, FILE)).toMatchObject({ next: once, mcp: 'unchanged', notify: 'unchanged' });
    const moved = installCodexConfig(once, { ...entry, args: ['/new/bin/engram.js', 'mcp'] }, ['/usr/bin/node', '/new/bin/engram.js', 'hooks', 'run', 'codex-notify'], FILE);
    expect(moved).toMatchObject({ mcp: 'updated', notify: 'updated' });
    // The chained program survives the move.
    expect(moved.next.notify).toEqual(['/usr/bin/node', '/new/bin/engram.js', 'hooks', 'run', 'codex-notify', '--', 'notify-send', '-u', 'low', 'Codex']);
  });

  it('uninstall gives back exactly the configuration before install', () => {
    for (const before of [{}, userConfig(), { mcp_servers: { github: { command: 'x' } } }]) {
      const installed = installCodexConfig(before, entry, notify, FILE).next;
      expect(uninstallCodexConfig(installed, FILE)).toMatchObject({ next: before, mcp: 'removed', notify: 'removed' });
    }
  });

  it("keeps a server named engram and a notify program that it did not write", () => {
    const own = { mcp_servers: { engram: { url: 'http://127.0.0.1:7077/mcp' } }, notify: ['/usr/local/bin/engram-notify.sh'] };
    expect(uninstallCodexConfig(own, FILE)).toEqual({ next: own, mcp: 'kept-foreign', notify: 'absent' });
    const installed = installCodexConfig(own, entry, notify, FILE);
    expect(installed.mcp).toBe('kept-foreign');
    expect(installed.next.mcp_servers).toEqual(own.mcp_servers);
  });

  it('refuses a notify or mcp_servers of another shape, naming the key', () => {
    for (const [bad, key] of [
      [{ notify: 'say done' }, 'notify'],
      [{ notify: ['ok', 3] }, 'notify'],
      [{ mcp_servers: ['engram'] }, 'mcp_servers'],
    ] as const) {
      let caught: unknown;
      try {
        installCodexConfig(bad as Record<string, unknown>, entry, notify, FILE);
      } catch (err) {
        caught = err;
      }
      expect(isEngramError(caught, 'INVALID_INPUT')).toBe(true);
      expect((caught as { data: { field: string } }).data.field).toBe(key);
    }
  });

  it("recognises its notify command and the program it chains", () => {
    expect(isEngramNotify([...notify, '--', 'say', 'done'])).toBe(true);
    expect(chainedNotify([...notify, '--', 'say', 'done'])).toEqual(['say', 'done']);
    expect(chainedNotify([...notify, '--'])).toEqual([]);
    expect(isEngramNotify(['engram', 'hooks', 'run', 'codex-notify'])).toBe(false);
    expect(isEngramNotify(['python3', '/home/me/notify.py'])).toBe(false);
  });
});
