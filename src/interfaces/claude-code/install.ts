import { join, resolve } from 'node:path';
import {
  CLAUDE_CODE_HOOK_EVENTS,
  HOOK_EVENT_NAMES,
  installHooks,
  installMcpServer,
  shellQuote,
  uninstallHooks,
  uninstallMcpServer,
  type EntryChange,
  type HookEventName,
} from './claude-settings.js';
import { readSettingsFile, renderSettings, writeSettingsFile, type SettingsFile } from './settings-file.js';

/** Where Claude Code keeps the two files install changes. */
export interface ClaudeCodeLocations {
  scope: 'user' | 'project';
  /** Hooks: `~/.claude/settings.json` (or `$CLAUDE_CONFIG_DIR/settings.json`), or `<project>/.claude/settings.json`. */
  settingsPath: string;
  /** MCP servers: `~/.claude.json` (or `$CLAUDE_CONFIG_DIR/.claude.json`), or `<project>/.mcp.json`. */
  mcpPath: string;
}

/**
 * The user's files by default; a project's with `projectDir`. `configDir` is `$CLAUDE_CONFIG_DIR`, which moves
 * both user files (Claude Code's settings documentation).
 */
export function claudeCodeLocations(options: { projectDir?: string | undefined; home: string; configDir?: string | undefined }): ClaudeCodeLocations {
  if (options.projectDir !== undefined) {
    const dir = resolve(options.projectDir);
    return { scope: 'project', settingsPath: join(dir, '.claude', 'settings.json'), mcpPath: join(dir, '.mcp.json') };
  }
  if (options.configDir) return { scope: 'user', settingsPath: join(options.configDir, 'settings.json'), mcpPath: join(options.configDir, '.claude.json') };
  return { scope: 'user', settingsPath: join(options.home, '.claude', 'settings.json'), mcpPath: join(options.home, '.claude.json') };
}

/** How the installed hooks and MCP server start Engram: absolute paths, so neither PATH nor npx is involved. */
export interface EngramLaunch {
  /** The node executable (`process.execPath`). */
  node: string;
  /** bin/engram.js of this checkout or package. */
  bin: string;
  /** Global options naming the store (`--db /abs/engram.db`), empty to use the environment's. */
  storeArgs: string[];
  /**
   * A fixed session for the MCP tools; absent (the default), the server works for the host's current session of
   * the project it is started in (memory/host-sessions.ts).
   */
  mcpSession?: string;
  /** More options for the MCP server (`--embedder ...`). */
  mcpArgs?: string[];
}

/** The shell command of one hook: `'<node>' '<bin>' hooks run <event> --db '<store>'`. */
export function hookCommand(launch: EngramLaunch, event: HookEventName): string {
  return [launch.node, launch.bin, 'hooks', 'run', event, ...launch.storeArgs].map(shellQuote).join(' ');
}

/** The `engram` MCP server entry (a stdio server; Claude Code starts it without a shell). */
export function mcpServerEntry(launch: EngramLaunch): Record<string, unknown> {
  return {
    type: 'stdio',
    command: launch.node,
    args: [launch.bin, 'mcp', ...(launch.mcpSession !== undefined ? ['--session', launch.mcpSession] : []), ...launch.storeArgs, ...(launch.mcpArgs ?? [])],
  };
}

/** One file's planned change; `after` undefined removes the file. */
export interface FileChange {
  path: string;
  before: string | undefined;
  after: string | undefined;
  hooks?: Record<string, EntryChange>;
  mcp?: EntryChange;
}

export function isChanged(change: FileChange): boolean {
  return change.before !== change.after;
}

/**
 * What install changes in both files. Both are read and checked before anything is written: a malformed file
 * throws INVALID_INPUT and neither file is touched.
 */
export function planInstall(locations: ClaudeCodeLocations, launch: EngramLaunch): FileChange[] {
  const settings = readSettingsFile(locations.settingsPath);
  const mcp = readSettingsFile(locations.mcpPath);
  const commands = Object.fromEntries(HOOK_EVENT_NAMES.map((event) => [CLAUDE_CODE_HOOK_EVENTS[event], hookCommand(launch, event)]));
  const hooksPlan = installHooks(settings.value, commands, settings.path);
  const mcpPlan = installMcpServer(mcp.value, mcpServerEntry(launch), mcp.path);
  return [
    { ...fileChange(settings, hooksPlan.next, false), hooks: hooksPlan.hooks },
    { ...fileChange(mcp, mcpPlan.next, false), mcp: mcpPlan.mcp },
  ];
}

/**
 * What uninstall changes: Engram's hooks and its MCP server go, everything else stays. A file left as an empty
 * object is removed (it configures nothing; install created it, or it was empty before).
 */
export function planUninstall(locations: ClaudeCodeLocations): FileChange[] {
  const settings = readSettingsFile(locations.settingsPath);
  const mcp = readSettingsFile(locations.mcpPath);
  const hooksPlan = uninstallHooks(settings.value, settings.path);
  const mcpPlan = uninstallMcpServer(mcp.value, mcp.path);
  return [
    { ...fileChange(settings, hooksPlan.next, Object.values(hooksPlan.hooks).includes('removed')), hooks: hooksPlan.hooks },
    { ...fileChange(mcp, mcpPlan.next, mcpPlan.mcp === 'removed'), mcp: mcpPlan.mcp },
  ];
}

/** Writes the changed files. */
export function applyChanges(changes: FileChange[]): void {
  for (const change of changes) if (isChanged(change)) writeSettingsFile(change.path, change.after);
}

function fileChange(file: SettingsFile, next: Record<string, unknown>, removeIfEmpty: boolean): FileChange {
  const isSame = JSON.stringify(next) === JSON.stringify(file.value);
  if (isSame) return { path: file.path, before: file.text, after: file.text };
  if (removeIfEmpty && Object.keys(next).length === 0) return { path: file.path, before: file.text, after: undefined };
  return { path: file.path, before: file.text, after: renderSettings(file, next) };
}
