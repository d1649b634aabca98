import { EngramError } from '../../errors.js';

/**
 * Which MCP tools a server lists (issue #30, item 5). An agent host puts every listed tool's name, description and
 * input schema into every model call, so the default is a small profile: the tools every coding agent uses. The
 * rest come in groups a host asks for by name.
 *
 * | profile | tools |
 * | --- | --- |
 * | `core` (default) | recall, expand, get_task_state, update_task_state, append_events |
 * | `team` | core + the Engram Bus tools (`less_*`, only with an agent identity) + the hierarchy tools (delegate, report, received_reports, hierarchy_tree, hierarchy_recall) |
 * | `graph` | core + the knowledge tools (impact, entities, graph_build) |
 * | `all` | every tool |
 *
 * Profiles combine with commas (`team,graph` is `all`). The bus tools act as an agent, so without one (no `--agent`
 * on stdio) they are not listed at all: a tool that could only answer UNAUTHENTICATED costs tokens and says nothing.
 */
export const TOOL_PROFILES = ['core', 'team', 'graph', 'all'] as const;
export type ToolProfile = (typeof TOOL_PROFILES)[number];

/** The tool groups a server registers; `core` is always one of them. */
export type ToolGroup = 'core' | 'team' | 'graph';

/** The default profile of `engram mcp` and of `/mcp` on `engram serve`. */
export const DEFAULT_TOOL_PROFILE: ToolProfile = 'core';

/** Environment variable naming the profile of `engram mcp` when `--tools` is not given. */
export const TOOLS_ENV = 'ENGRAM_MCP_TOOLS';

/**
 * The groups of a `--tools` value (`core`, `team`, `graph`, `all`, or several joined by commas); undefined or
 * empty is the default profile. INVALID_INPUT names `field` and the profiles there are.
 */
export function parseToolProfiles(value: string | undefined, field = 'tools'): ReadonlySet<ToolGroup> {
  const groups = new Set<ToolGroup>(['core']);
  const names = (value ?? '').split(',').map((s) => s.trim().toLowerCase()).filter((s) => s !== '');
  for (const name of names.length > 0 ? names : [DEFAULT_TOOL_PROFILE]) {
    if (!(TOOL_PROFILES as readonly string[]).includes(name)) {
      throw new EngramError('INVALID_INPUT', `${field}: unknown tool profile "${name}"; expected ${TOOL_PROFILES.join(', ')} (or several joined by commas)`, { field });
    }
    if (name === 'all' || name === 'team') groups.add('team');
    if (name === 'all' || name === 'graph') groups.add('graph');
  }
  return groups;
}
