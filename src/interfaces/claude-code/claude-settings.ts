import { EngramError } from '../../errors.js';

/**
 * What `engram hooks install --claude-code` adds to Claude Code's settings, and how `uninstall` finds exactly
 * that again. Pure functions over parsed JSON: reading and writing the files is in settings-file.ts.
 *
 * Claude Code's contracts (its hooks and MCP documentation):
 * - hooks live in `settings.json` (`~/.claude/settings.json`, or `<project>/.claude/settings.json`) as
 *   `{ "hooks": { "<Event>": [ { "matcher"?: string, "hooks": [ { "type": "command", "command": string } ] } ] } }`;
 * - MCP servers live in `<project>/.mcp.json` (project scope) or in `~/.claude.json` (user scope), both as
 *   `{ "mcpServers": { "<name>": { "type": "stdio", "command": string, "args": string[] } } }`.
 *
 * Nothing Engram writes carries a key Claude Code does not define (it validates these files), so what
 * install added is recognised by what it wrote: a hook whose command runs `engram ... hooks run <event>`,
 * and an `engram` MCP server started as `node <...>/bin/engram.js mcp`. Entries the user wrote themselves
 * (another command, `npx engram mcp`, an HTTP server named engram) are never changed or removed.
 */

/** The hooks Engram installs: the `engram hooks run` event name, and Claude Code's event it answers. */
export const CLAUDE_CODE_HOOK_EVENTS = {
  'session-start': 'SessionStart',
  'user-prompt-submit': 'UserPromptSubmit',
  stop: 'Stop',
  'session-end': 'SessionEnd',
  'pre-compact': 'PreCompact',
} as const;
export type HookEventName = keyof typeof CLAUDE_CODE_HOOK_EVENTS;
export const HOOK_EVENT_NAMES = Object.keys(CLAUDE_CODE_HOOK_EVENTS) as HookEventName[];

/** The MCP server's name in `mcpServers`. */
export const MCP_SERVER_NAME = 'engram';

/** A hook command install wrote: `... engram[.js][']  hooks run <event>`, the only way Engram's hooks are started. */
const ENGRAM_HOOK_COMMAND = /engram(?:\.js)?['"]?\s+hooks\s+run\s+(session-start|user-prompt-submit|stop|session-end|pre-compact)(?=\s|$)/;

/** Which `engram hooks run` event a hook command starts, or undefined when it is not one of Engram's. */
export function engramHookEvent(command: unknown): HookEventName | undefined {
  if (typeof command !== 'string') return undefined;
  return ENGRAM_HOOK_COMMAND.exec(command)?.[1] as HookEventName | undefined;
}

/** An MCP server entry install wrote: node running `<...>/bin/engram.js mcp ...`. */
export function isEngramMcpEntry(entry: unknown): boolean {
  if (!isObject(entry) || !Array.isArray(entry.args)) return false;
  const [script, verb] = entry.args as unknown[];
  return typeof script === 'string' && /[/\\]bin[/\\]engram\.js$/.test(script) && verb === 'mcp';
}

/** A string quoted for the POSIX shell Claude Code runs hook commands with. */
export function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

export type EntryChange = 'added' | 'updated' | 'unchanged' | 'removed' | 'absent' | 'kept-foreign';

export interface HooksPlan {
  /** The settings after the change (the input is not modified). */
  next: Record<string, unknown>;
  /** What happened to each Claude Code event's Engram hook. */
  hooks: Record<string, EntryChange>;
}

export interface McpPlan {
  next: Record<string, unknown>;
  mcp: EntryChange;
}

/**
 * Adds Engram's hook for each event (`commands`: Claude Code event -> command), keeping everything else. An
 * Engram hook already there with the same command is left as it is (install twice adds nothing); one with
 * another command (the checkout or the store moved) gets the new command; a second copy is removed.
 * `file` names the settings file in errors.
 */
export function installHooks(settings: Record<string, unknown>, commands: Record<string, string>, file: string): HooksPlan {
  const next = structuredClone(settings);
  const hooks = objectAt(next, 'hooks', file);
  const changes: Record<string, EntryChange> = {};
  for (const [event, command] of Object.entries(commands)) {
    const groups = arrayAt(hooks, event, `hooks.${event}`, file);
    let change: EntryChange = 'added';
    let kept = false;
    for (let g = 0; g < groups.length; g++) {
      const group = groups[g];
      if (!isObject(group) || !Array.isArray(group.hooks)) continue;
      const before = group.hooks.length;
      const remaining = group.hooks.flatMap((hook: unknown) => {
        if (!isObject(hook) || engramHookEvent(hook.command) === undefined) return [hook];
        if (kept) return [];
        kept = true;
        change = hook.command === command ? 'unchanged' : 'updated';
        return [{ ...hook, command }];
      });
      group.hooks = remaining;
      // A group that held only a duplicate Engram hook goes with it.
      if (remaining.length === 0 && before > 0) groups.splice(g--, 1);
    }
    if (!kept) groups.push({ hooks: [{ type: 'command', command }] });
    changes[event] = change;
  }
  return { next, hooks: changes };
}

/**
 * Removes every Engram hook (and the groups, event lists and `hooks` object that only it made non-empty),
 * keeping the user's hooks and every other setting.
 */
export function uninstallHooks(settings: Record<string, unknown>, file: string): HooksPlan {
  const next = structuredClone(settings);
  const changes: Record<string, EntryChange> = {};
  for (const event of Object.values(CLAUDE_CODE_HOOK_EVENTS)) changes[event] = 'absent';
  if (next.hooks === undefined) return { next, hooks: changes };
  const hooks = objectAt(next, 'hooks', file);
  for (const event of Object.values(CLAUDE_CODE_HOOK_EVENTS)) {
    if (hooks[event] === undefined) continue;
    const groups = arrayAt(hooks, event, `hooks.${event}`, file);
    for (let g = 0; g < groups.length; g++) {
      const group = groups[g];
      if (!isObject(group) || !Array.isArray(group.hooks)) continue;
      const before = group.hooks.length;
      const remaining = group.hooks.filter((hook: unknown) => !(isObject(hook) && engramHookEvent(hook.command) !== undefined));
      if (remaining.length === before) continue;
      group.hooks = remaining;
      changes[event] = 'removed';
      if (remaining.length === 0) groups.splice(g--, 1);
    }
    if (groups.length === 0 && changes[event] === 'removed') delete hooks[event];
  }
  if (Object.keys(hooks).length === 0 && Object.values(changes).includes('removed')) delete next.hooks;
  return { next, hooks: changes };
}

/**
 * Adds (or updates) the `engram` MCP server. A server of that name that install did not write (an HTTP
 * server, `npx engram mcp`) is kept as it is: `kept-foreign`.
 */
export function installMcpServer(config: Record<string, unknown>, entry: Record<string, unknown>, file: string): McpPlan {
  const next = structuredClone(config);
  const servers = objectAt(next, 'mcpServers', file);
  const current = servers[MCP_SERVER_NAME];
  if (current !== undefined && !isEngramMcpEntry(current)) return { next: structuredClone(config), mcp: 'kept-foreign' };
  const mcp: EntryChange = current === undefined ? 'added' : sameJson(current, entry) ? 'unchanged' : 'updated';
  servers[MCP_SERVER_NAME] = entry;
  return { next, mcp };
}

/** Removes the `engram` MCP server if install wrote it (and `mcpServers` if that leaves it empty). */
export function uninstallMcpServer(config: Record<string, unknown>, file: string): McpPlan {
  const next = structuredClone(config);
  if (next.mcpServers === undefined) return { next, mcp: 'absent' };
  const servers = objectAt(next, 'mcpServers', file);
  const current = servers[MCP_SERVER_NAME];
  if (current === undefined) return { next, mcp: 'absent' };
  if (!isEngramMcpEntry(current)) return { next, mcp: 'kept-foreign' };
  delete servers[MCP_SERVER_NAME];
  if (Object.keys(servers).length === 0) delete next.mcpServers;
  return { next, mcp: 'removed' };
}

function objectAt(parent: Record<string, unknown>, key: string, file: string): Record<string, unknown> {
  const value = parent[key];
  if (value === undefined) {
    const created: Record<string, unknown> = {};
    parent[key] = created;
    return created;
  }
  if (!isObject(value)) throw notOfShape(file, key, 'an object');
  return value;
}

function arrayAt(parent: Record<string, unknown>, key: string, path: string, file: string): unknown[] {
  const value = parent[key];
  if (value === undefined) {
    const created: unknown[] = [];
    parent[key] = created;
    return created;
  }
  if (!Array.isArray(value)) throw notOfShape(file, path, 'a list');
  return value;
}

function notOfShape(file: string, path: string, shape: string): EngramError {
  return new EngramError('INVALID_INPUT', `${file}: "${path}" is not ${shape}, as Claude Code expects; fix it by hand first (nothing was written)`, {
    field: path,
    file,
  });
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
