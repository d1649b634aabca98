import { join } from 'node:path';
import { installHooks, shellQuote, uninstallHooks, type EntryChange, type HookEventName } from '../claude-code/claude-settings.js';
import { isChanged, type EngramLaunch, type FileChange } from '../claude-code/install.js';
import { readSettingsFile, renderSettings, writeSettingsFile, type SettingsFile } from '../claude-code/settings-file.js';
import { CODEX_NOTIFY_EVENT, installCodexConfig, uninstallCodexConfig } from './codex-config.js';
import { readTomlFile, renderToml } from './toml-file.js';

/**
 * `engram hooks install|uninstall --codex`: Engram's MCP server and `notify` program in `$CODEX_HOME/config.toml`,
 * and its hooks in `$CODEX_HOME/hooks.json` (docs/integrations.md):
 *
 * - `[mcp_servers.engram]`: `engram mcp` on the store, for the Codex session of the project it is started in;
 * - `notify`: `engram hooks run codex-notify` stores each turn's rollout and keeps the session summary current
 *   (notify.ts), chaining the user's own notify program;
 * - hooks (Codex's hooks.json has Claude Code's shape): `SessionStart` answers a new session with the project's brief,
 *   `UserPromptSubmit` a prompt with evidence from earlier sessions. Codex runs a hook only once the user trusted it
 *   (`/hooks` in Codex). No Stop hook: `notify` already runs after every turn.
 */
export interface CodexLocations {
  /** `$CODEX_HOME`, else `~/.codex`. */
  home: string;
  configPath: string;
  hooksPath: string;
  /** Where Codex writes its rollouts. */
  sessionsDir: string;
}

export function codexLocations(options: { home: string; codexHome?: string | undefined }): CodexLocations {
  const dir = options.codexHome ? options.codexHome : join(options.home, '.codex');
  return { home: dir, configPath: join(dir, 'config.toml'), hooksPath: join(dir, 'hooks.json'), sessionsDir: join(dir, 'sessions') };
}

/** Codex's hook events Engram answers, and the `engram hooks run` event each runs. */
export const CODEX_HOOK_EVENTS: Partial<Record<string, HookEventName>> = { SessionStart: 'session-start', UserPromptSubmit: 'user-prompt-submit' };

/** `[node, bin/engram.js, hooks, run, codex-notify, <store>]`: Codex appends `-- <chained program>` and the notification. */
export function codexNotifyCommand(launch: EngramLaunch): string[] {
  return [launch.node, launch.bin, 'hooks', 'run', CODEX_NOTIFY_EVENT, ...launch.storeArgs];
}

/** The `[mcp_servers.engram]` table. */
export function codexMcpEntry(launch: EngramLaunch): Record<string, unknown> {
  return {
    command: launch.node,
    args: [launch.bin, 'mcp', ...(launch.mcpSession !== undefined ? ['--session', launch.mcpSession] : []), ...launch.storeArgs, ...(launch.mcpArgs ?? [])],
  };
}

/** The shell command of one Codex hook. */
export function codexHookCommand(launch: EngramLaunch, event: HookEventName): string {
  return [launch.node, launch.bin, 'hooks', 'run', event, '--host', 'codex', ...launch.storeArgs].map(shellQuote).join(' ');
}

/** A planned change of config.toml or hooks.json. */
export interface CodexFileChange extends FileChange {
  notify?: EntryChange;
  /** The user's notify program Engram's chains (install) or that is given back (uninstall). */
  chained?: string[];
}

/** What install changes. Both files are read and checked first: a malformed one throws INVALID_INPUT and nothing is written. */
export async function planCodexInstall(locations: CodexLocations, launch: EngramLaunch): Promise<CodexFileChange[]> {
  const config = await readTomlFile(locations.configPath);
  const hooks = readSettingsFile(locations.hooksPath);
  const configPlan = installCodexConfig(config.value, codexMcpEntry(launch), codexNotifyCommand(launch), config.path);
  const commands = Object.fromEntries(Object.entries(CODEX_HOOK_EVENTS).map(([codexEvent, event]) => [codexEvent, codexHookCommand(launch, event!)]));
  const hooksPlan = installHooks(hooks.value, commands, hooks.path);
  return [
    {
      path: config.path,
      before: config.text,
      after: sameValue(configPlan.next, config.value) ? config.text : await renderToml(config, configPlan.next),
      mcp: configPlan.mcp,
      notify: configPlan.notify,
      ...(configPlan.chained ? { chained: configPlan.chained } : {}),
    },
    { ...jsonChange(hooks, hooksPlan.next, false), hooks: hooksPlan.hooks },
  ];
}

/** What uninstall changes: Engram's entries go, the chained notify program comes back, everything else stays. */
export async function planCodexUninstall(locations: CodexLocations): Promise<CodexFileChange[]> {
  const config = await readTomlFile(locations.configPath);
  const hooks = readSettingsFile(locations.hooksPath);
  const configPlan = uninstallCodexConfig(config.value, config.path);
  const hooksPlan = uninstallHooks(hooks.value, hooks.path);
  const touched = Object.fromEntries(Object.entries(hooksPlan.hooks).filter(([event, change]) => change !== 'absent' || event in CODEX_HOOK_EVENTS));
  const removedAll = configPlan.mcp === 'removed' || configPlan.notify === 'removed';
  let after: string | undefined = config.text;
  if (!sameValue(configPlan.next, config.value)) {
    after = await renderToml(config, configPlan.next);
    // A file left with nothing in it configures nothing: install created it (or it was empty), so it goes.
    if (removedAll && after.trim() === '') after = undefined;
  }
  return [
    { path: config.path, before: config.text, after, mcp: configPlan.mcp, notify: configPlan.notify, ...(configPlan.chained ? { chained: configPlan.chained } : {}) },
    { ...jsonChange(hooks, hooksPlan.next, Object.values(hooksPlan.hooks).includes('removed')), hooks: touched },
  ];
}

/** Writes the changed files. */
export function applyCodexChanges(changes: CodexFileChange[]): void {
  for (const change of changes) if (isChanged(change)) writeSettingsFile(change.path, change.after);
}

function jsonChange(file: SettingsFile, next: Record<string, unknown>, removeIfEmpty: boolean): FileChange {
  if (sameValue(next, file.value)) return { path: file.path, before: file.text, after: file.text };
  if (removeIfEmpty && Object.keys(next).length === 0) return { path: file.path, before: file.text, after: undefined };
  return { path: file.path, before: file.text, after: renderSettings(file, next) };
}

function sameValue(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
