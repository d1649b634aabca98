import { EngramError } from '../../errors.js';
import { isEngramMcpEntry, isObject, MCP_SERVER_NAME, type EntryChange } from '../claude-code/claude-settings.js';

/**
 * What `engram hooks install --codex` changes in Codex's `config.toml`, and how `uninstall` finds exactly that
 * again. Pure functions over the parsed TOML (a plain object): reading and writing the file is in toml-file.ts.
 *
 * Codex's contracts (its configuration documentation):
 * - MCP servers: `[mcp_servers.<name>]` with `command`, `args` and `env` (Codex starts a server with a reduced
 *   environment, so the store is named in `args`, never left to the user's shell);
 * - `notify = ["program", "arg", ...]`: a program Codex runs after each agent turn with one more argument, a JSON
 *   object `{"type": "agent-turn-complete", "thread-id", "turn-id", "cwd", "input-messages", "last-assistant-message"}`.
 *   There is one `notify` program: when the user already has one, Engram's runs it first (chains it) and gives it
 *   back on uninstall.
 *
 * Entries are recognised by what they run (`.../bin/engram.js mcp`, `... engram.js hooks run codex-notify`), as for
 * Claude Code: anything the user wrote is kept.
 */

/** The `engram hooks run` event Codex's `notify` program runs. */
export const CODEX_NOTIFY_EVENT = 'codex-notify';
/** Separates Engram's notify command from the user's program it chains. */
export const CHAIN_SEPARATOR = '--';

export interface CodexPlan {
  /** The configuration after the change (the input is not modified). */
  next: Record<string, unknown>;
  mcp: EntryChange;
  notify: EntryChange;
  /** The user's own notify program, run by Engram's (install) or given back (uninstall). */
  chained?: string[];
}

/** Whether a `notify` value is Engram's: `[node, .../bin/engram.js, ..., "hooks", "run", "codex-notify", ...]`. */
export function isEngramNotify(value: unknown): value is string[] {
  if (!isStringArray(value)) return false;
  const at = value.indexOf(CODEX_NOTIFY_EVENT);
  return at >= 2 && value[at - 1] === 'run' && value[at - 2] === 'hooks' && value.some((v) => /[/\\]bin[/\\]engram\.js$/.test(v));
}

/** The user's program an Engram notify command chains (what follows its `--`), empty when none. */
export function chainedNotify(value: string[]): string[] {
  const at = value.indexOf(CHAIN_SEPARATOR, value.indexOf(CODEX_NOTIFY_EVENT));
  return at < 0 ? [] : value.slice(at + 1);
}

/**
 * Adds (or updates) `[mcp_servers.engram]` and Engram's `notify` (`notifyCommand`, to which `-- <user's program>`
 * is appended when there is one). A server named engram that install did not write is kept (`kept-foreign`).
 */
export function installCodexConfig(config: Record<string, unknown>, entry: Record<string, unknown>, notifyCommand: string[], file: string): CodexPlan {
  const next = structuredClone(config);
  const servers = tableAt(next, 'mcp_servers', file);
  const current = servers[MCP_SERVER_NAME];
  let mcp: EntryChange;
  if (current !== undefined && !isEngramMcpEntry(current)) mcp = 'kept-foreign';
  else {
    mcp = current === undefined ? 'added' : JSON.stringify(current) === JSON.stringify(entry) ? 'unchanged' : 'updated';
    servers[MCP_SERVER_NAME] = entry;
  }

  const before = next.notify;
  if (before !== undefined && !isStringArray(before)) throw notOfShape(file, 'notify', 'a list of strings (the program and its arguments)');
  const chained = before === undefined ? [] : isEngramNotify(before) ? chainedNotify(before) : before;
  const notify = [...notifyCommand, CHAIN_SEPARATOR, ...chained];
  next.notify = notify;
  const change: EntryChange = before === undefined || !isEngramNotify(before) ? 'added' : JSON.stringify(before) === JSON.stringify(notify) ? 'unchanged' : 'updated';
  return { next, mcp, notify: change, ...(chained.length > 0 ? { chained } : {}) };
}

/** Removes what install added: the engram MCP server it wrote, and its notify (giving back the chained program). */
export function uninstallCodexConfig(config: Record<string, unknown>, file: string): CodexPlan {
  const next = structuredClone(config);
  let mcp: EntryChange = 'absent';
  if (next.mcp_servers !== undefined) {
    const servers = tableAt(next, 'mcp_servers', file);
    const current = servers[MCP_SERVER_NAME];
    if (current !== undefined) mcp = isEngramMcpEntry(current) ? 'removed' : 'kept-foreign';
    if (mcp === 'removed') {
      delete servers[MCP_SERVER_NAME];
      if (Object.keys(servers).length === 0) delete next.mcp_servers;
    }
  }
  if (!isEngramNotify(next.notify)) return { next, mcp, notify: 'absent' };
  const chained = chainedNotify(next.notify);
  if (chained.length > 0) next.notify = chained;
  else delete next.notify;
  return { next, mcp, notify: 'removed', ...(chained.length > 0 ? { chained } : {}) };
}

function tableAt(parent: Record<string, unknown>, key: string, file: string): Record<string, unknown> {
  const value = parent[key];
  if (value === undefined) {
    const created: Record<string, unknown> = {};
    parent[key] = created;
    return created;
  }
  if (!isObject(value)) throw notOfShape(file, key, 'a table');
  return value;
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}

function notOfShape(file: string, key: string, shape: string): EngramError {
  return new EngramError('INVALID_INPUT', `${file}: "${key}" is not ${shape}, as Codex expects; fix it by hand first (nothing was written)`, { field: key, file });
}
