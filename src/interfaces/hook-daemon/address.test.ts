import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HOOK_EVENT_NAMES } from '../claude-code/claude-settings.js';
import { hookDaemonAddress, parseHookArgv, SERVED_HOOK_EVENTS } from './address.js';

const BIN = resolve('bin/engram.js');
const base = { store: { db: '/data/engram.db' }, env: { HOME: '/home/u' }, cwd: '/work/app', binPath: BIN };

describe('parseHookArgv', () => {
  it('takes the commands install writes, store options apart from the per-call ones', () => {
    expect(parseHookArgv(['hooks', 'run', 'session-start', '--db', '/x/e.db'])).toEqual({ event: 'session-start', store: { db: '/x/e.db' } });
    expect(parseHookArgv(['hooks', 'run', 'stop', '--pg=postgres://h/db', '--host', 'codex', '--no-summaries', '--no-redact', '--brief-tokens', '900'])).toEqual({
      event: 'stop',
      store: { pg: 'postgres://h/db', redact: false },
    });
  });

  it('takes the program\'s own options before `hooks` too, as a user types them (README)', () => {
    expect(parseHookArgv(['--db', '/tmp/demo.db', 'hooks', 'run', 'session-end'])).toEqual({ event: 'session-end', store: { db: '/tmp/demo.db' } });
    expect(parseHookArgv(['--pg=postgres://h/db', '--no-redact', 'hooks', 'run', 'stop', '--host', 'codex'])).toEqual({ event: 'stop', store: { pg: 'postgres://h/db', redact: false } });
    // Per-call options belong after the event.
    expect(parseHookArgv(['--brief-tokens', '900', 'hooks', 'run', 'stop'])).toBeUndefined();
  });

  it('leaves anything else to the CLI in its own process', () => {
    expect(parseHookArgv(['hooks', 'run', 'codex-notify', '{}'])).toBeUndefined();
    expect(parseHookArgv(['hooks', 'run', 'session-start', '--verbose'])).toBeUndefined();
    expect(parseHookArgv(['hooks', 'run', 'session-start', 'extra'])).toBeUndefined();
    expect(parseHookArgv(['hooks', 'run', 'session-start', '--db'])).toBeUndefined();
    expect(parseHookArgv(['--verbose', 'hooks', 'run', 'stop'])).toBeUndefined();
    expect(parseHookArgv(['--db', 'x', 'hooks', 'status', 'stop'])).toBeUndefined();
    expect(parseHookArgv(['hooks', 'run'])).toBeUndefined();
    expect(parseHookArgv(['recall', 'x'])).toBeUndefined();
  });

  it('serves every Claude Code hook event the CLI knows', () => {
    expect([...SERVED_HOOK_EVENTS].sort()).toEqual([...HOOK_EVENT_NAMES].sort());
  });
});

describe('hookDaemonAddress', () => {
  let tmp: string | undefined;
  afterEach(() => {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
    tmp = undefined;
  });

  it('is one address for one store, build and environment, and another when any of them differs', () => {
    const a = hookDaemonAddress(base)!;
    expect(a.socketPath).toMatch(/engram-\d+\/hooks-[0-9a-f]{16}\.sock$/);
    expect(hookDaemonAddress({ ...base, cwd: '/elsewhere' })!.socketPath).toBe(a.socketPath);
    expect(hookDaemonAddress({ ...base, store: { db: '/data/other.db' } })!.socketPath).not.toBe(a.socketPath);
    expect(hookDaemonAddress({ ...base, env: { HOME: '/home/u', ENGRAM_RECALL_TOKENS: '900' } })!.socketPath).not.toBe(a.socketPath);
    expect(hookDaemonAddress({ ...base, env: { HOME: '/home/v' } })!.socketPath).not.toBe(a.socketPath);
    expect(hookDaemonAddress({ ...base, store: { ...base.store, redact: false } })!.socketPath).not.toBe(a.socketPath);
    // Variables that do not change what a hook does do not split it.
    expect(hookDaemonAddress({ ...base, env: { HOME: '/home/u', CLAUDE_PROJECT_DIR: '/p', PATH: '/bin' } })!.socketPath).toBe(a.socketPath);
  });

  it('resolves the store as the CLI does: a relative or default path against the working directory, $ENGRAM_DB, $ENGRAM_PG_URL', () => {
    expect(hookDaemonAddress({ ...base, store: {} })!.daemonArgs).toEqual(expect.arrayContaining(['--db', '/work/app/.engram/engram.db']));
    expect(hookDaemonAddress({ ...base, store: { db: 'x.db' } })!.db).toBe('/work/app/x.db');
    expect(hookDaemonAddress({ ...base, store: {}, env: { ENGRAM_DB: '/e/e.db' } })!.db).toBe('/e/e.db');
    const pg = hookDaemonAddress({ ...base, store: {}, env: { ENGRAM_PG_URL: 'postgres://h/db' } })!;
    expect(pg.db).toBeUndefined();
    // A URL from the environment is not copied into the resident process's arguments (it inherits the environment).
    expect(pg.daemonArgs.join(' ')).not.toContain('postgres://');
    expect(hookDaemonAddress({ ...base, store: { pg: 'postgres://h/db' } })!.daemonArgs).toEqual(expect.arrayContaining(['--pg', 'postgres://h/db']));
  });

  it('is none when turned off, or when the socket folder is open to other users', () => {
    expect(hookDaemonAddress({ ...base, env: { ENGRAM_HOOK_DAEMON: 'off' } })).toBeUndefined();
    expect(hookDaemonAddress({ ...base, env: { ENGRAM_HOOK_DAEMON: '0' } })).toBeUndefined();
    tmp = mkdtempSync(join(tmpdir(), 'engram-addr-'));
    const previous = process.env.TMPDIR;
    process.env.TMPDIR = tmp;
    try {
      const folder = join(tmp, `engram-${process.getuid!()}`);
      mkdirSync(folder, { mode: 0o755 });
      chmodSync(folder, 0o755);
      expect(hookDaemonAddress(base)).toBeUndefined();
      chmodSync(folder, 0o700);
      expect(hookDaemonAddress(base)!.socketPath.startsWith(folder)).toBe(true);
    } finally {
      if (previous === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = previous;
    }
  });
});
