import { lstatSync, mkdirSync, realpathSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

/**
 * Where the resident hook process of a store listens (issue #29: each hook p95 under 300 ms at 100K events). A hook
 * that starts Node, loads Engram and opens the store spends ~400 ms before it does anything; the resident process has
 * all of that done, so a hook only starts Node, hands over its input and prints the answer (client.ts).
 *
 * One resident process serves exactly the hook calls that would have run identically in it: the same Node.js and the
 * same build of Engram (the bin's path and its code's modification times), the same store options, the same user, HOME and `ENGRAM_*`
 * environment. Any difference gives another socket, so a call never reaches a process that would answer it
 * differently (an upgraded package starts a new one; the old one ends when idle).
 *
 * Imports only Node's own modules: the hook client reads this before any of Engram is loaded.
 */

/** `off` (or 0, false, no) runs every hook in its own process, as before. */
export const HOOK_DAEMON_ENV = 'ENGRAM_HOOK_DAEMON';
/** Minutes the resident process waits for a hook before it exits. Default {@link DEFAULT_IDLE_MINUTES}. */
export const HOOK_DAEMON_IDLE_ENV = 'ENGRAM_HOOK_DAEMON_IDLE_MINUTES';
/**
 * An hour: a session's hooks come minutes apart, and a new session within the hour starts without the cold cost. Idle,
 * the process holds the store open and about 120 MB of memory, and uses no CPU.
 */
export const DEFAULT_IDLE_MINUTES = 60;
/** The hook events the resident process runs (Claude Code's, and Codex's through `--host codex`); `codex-notify` is not one. */
export const SERVED_HOOK_EVENTS = ['session-start', 'user-prompt-submit', 'stop', 'session-end', 'pre-compact'] as const;
/** The SQLite default of the CLI (store/open-store.ts DEFAULT_DB_PATH), resolved against the working directory. */
const DEFAULT_DB_PATH = '.engram/engram.db';
/** Environment variables besides `ENGRAM_*` that change what a hook does (its home, host configuration, caches). */
const KEYED_ENV = ['HOME', 'CODEX_HOME', 'CLAUDE_CONFIG_DIR', 'XDG_CACHE_HOME'];

/** The global options that name and open the store (main.ts): they choose the resident process. */
export interface StoreOptions {
  db?: string;
  pg?: string;
  embedder?: string;
  repo?: string;
  /** False with --no-redact. */
  redact?: boolean;
}

export interface HookDaemonAddress {
  /** The Unix socket the process listens on. */
  socketPath: string;
  /** The arguments that start it: `hooks daemon --socket <path>` and the store options (paths made absolute). */
  daemonArgs: string[];
  /** The SQLite file it serves, absolute (undefined for PostgreSQL): it exits when the file is replaced or removed. */
  db?: string;
}

export interface AddressInput {
  store: StoreOptions;
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  /** bin/engram.js, the launcher the hook command runs. */
  binPath: string;
}

/** Whether the environment turns the resident process off. */
export function isHookDaemonOff(env: Readonly<Record<string, string | undefined>>): boolean {
  return /^(?:off|0|false|no)$/i.test(env[HOOK_DAEMON_ENV] ?? '');
}

/**
 * The address of the resident process for these options, or undefined when there can be none: turned off, no Unix
 * sockets (Windows), or a socket folder another user could reach into.
 */
export function hookDaemonAddress(input: AddressInput): HookDaemonAddress | undefined {
  const uid = process.getuid?.();
  if (uid === undefined || isHookDaemonOff(input.env)) return undefined;
  const folder = socketFolder(uid);
  if (folder === undefined) return undefined;
  const s = input.store;
  const pg = s.pg || (s.db ? undefined : input.env['ENGRAM_PG_URL']) || undefined;
  const db = pg ? undefined : resolve(input.cwd, s.db || input.env['ENGRAM_DB'] || DEFAULT_DB_PATH);
  const repo = s.repo ? resolve(input.cwd, s.repo) : undefined;
  const bin = realBinPath(input.binPath);
  const env = Object.entries(input.env)
    .filter(([k, v]) => v !== undefined && (k.startsWith('ENGRAM_') || KEYED_ENV.includes(k)))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const key = JSON.stringify({ v: 1, uid, node: `${process.execPath}@${process.version}`, bin, code: codeStamp(bin), pg: pg ?? null, db: db ?? null, embedder: s.embedder ?? null, repo: repo ?? null, redact: s.redact !== false, env });
  const socketPath = join(folder, `hooks-${digest(key)}.sock`);
  const daemonArgs = [
    'hooks',
    'daemon',
    '--socket',
    socketPath,
    // A URL given in the hook's command is passed on; one from $ENGRAM_PG_URL stays in the environment it came from.
    ...(s.pg ? ['--pg', s.pg] : db !== undefined ? ['--db', db] : []),
    ...(s.embedder ? ['--embedder', s.embedder] : []),
    ...(repo ? ['--repo', repo] : []),
    ...(s.redact === false ? ['--no-redact'] : []),
  ];
  return { socketPath, daemonArgs, ...(db !== undefined ? { db } : {}) };
}

/**
 * 16 hex digits of the key: FNV-1a in two 32-bit lanes of different offsets. The key is no secret (the socket folder
 * is the user's alone); it only has to tell a user's few configurations apart, and node:crypto would cost the hook
 * client ~10 ms of its start.
 */
function digest(text: string): string {
  let a = 0x811c9dc5;
  let b = 0x050c5d1f;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193) ^ (a >>> 15);
  }
  return (a >>> 0).toString(16).padStart(8, '0') + (b >>> 0).toString(16).padStart(8, '0');
}

/**
 * The modification times of the code bin/engram.js runs (its bundle and dist/'s entry): a rebuild or an upgrade
 * changes them, and with them the address.
 */
export function codeStamp(bin: string): string {
  const root = dirname(dirname(bin));
  return ['dist/cli-bundle/main.cjs', 'dist/interfaces/cli/main.js', 'dist/interfaces/hook-daemon/server.js']
    .map((f) => statSync(join(root, f), { throwIfNoEntry: false })?.mtimeMs ?? 0)
    .join(':');
}

/**
 * `<tmpdir>/engram-<uid>`, made 0700 when missing. Undefined when it is not a plain directory of this user's that
 * only they can enter (a name another user made first, or a symbolic link): the hooks then run in their own process.
 */
function socketFolder(uid: number): string | undefined {
  const folder = join(tmpdir(), `engram-${uid}`);
  try {
    mkdirSync(folder, { mode: 0o700 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') return undefined;
  }
  const st = lstatSync(folder, { throwIfNoEntry: false });
  if (!st || !st.isDirectory() || st.uid !== uid || (st.mode & 0o077) !== 0) return undefined;
  return folder;
}

/** bin/engram.js with links resolved (an npm install links it from node_modules/.bin). */
export function realBinPath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

/**
 * The event and store options of a hook command (`[options] hooks run <event> [options]`: install writes the options
 * after the event, a user may put the global ones first), or undefined when the arguments are not that form or hold
 * anything else (the command then runs in its own process, where the CLI's parser reports what is wrong).
 */
export function parseHookArgv(argv: readonly string[]): { event: string; store: StoreOptions } | undefined {
  const store: StoreOptions = {};
  const storeValued: Record<string, keyof StoreOptions> = { '--db': 'db', '--pg': 'pg', '--embedder': 'embedder', '--repo': 'repo' };
  const requestValued = new Set(['--host', '--window', '--max-chars', '--brief-tokens', '--recall-tokens', '--llm']);
  const requestFlags = new Set(['--no-summaries', '--json']);
  // Before `hooks`: only the program's own options (commander takes them there).
  const globalValued = new Set(['--db', '--pg', '--embedder', '--repo', '--llm']);
  let event: string | undefined;
  let at = 0;
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (event === undefined && token === 'hooks') {
      if (argv[i + 1] !== 'run' || !(SERVED_HOOK_EVENTS as readonly string[]).includes(argv[i + 2] ?? '')) return undefined;
      event = argv[i + 2];
      i += 2;
      at = i;
      continue;
    }
    const eq = token.indexOf('=');
    const name = token.startsWith('--') && eq > 0 ? token.slice(0, eq) : token;
    const inline = token.startsWith('--') && eq > 0 ? token.slice(eq + 1) : undefined;
    const isGlobal = event === undefined;
    if (name === '--no-redact' && inline === undefined) store.redact = false;
    else if (name === '--json' && inline === undefined) continue;
    else if (!isGlobal && requestFlags.has(name) && inline === undefined) continue;
    else if (isGlobal ? globalValued.has(name) : storeValued[name] !== undefined || requestValued.has(name)) {
      const value = inline ?? argv[++i];
      if (value === undefined) return undefined;
      const field = storeValued[name];
      if (field !== undefined) (store as Record<string, string>)[field] = value;
    } else return undefined;
  }
  return event !== undefined && at > 0 ? { event, store } : undefined;
}
