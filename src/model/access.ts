import type { AgentRecord } from './agent.js';

/**
 * The project of sessions and agents that name none: sessions stored before ownership existed, sessions the
 * local CLI creates without `--project`, and agents added without `--project`.
 */
export const DEFAULT_PROJECT = 'default';

/**
 * Who asks, as the access rules see it (LESS §4-§6, PAS Bus §3, §8).
 * - `local`: whoever holds the store itself (the CLI on the database file, a library caller). Full trust:
 *   they could read the file directly, so nothing is hidden from them.
 * - `agent`: a caller authenticated by a bearer token (HTTP, MCP over HTTP, MCP on stdio with `--agent`).
 *   It reads sessions of its own project and sessions shared with that project, and writes only its own
 *   project's sessions. An admin agent reads and writes everything.
 */
export type Principal =
  | { kind: 'local' }
  | { kind: 'agent'; agentId: string; agentName: string; project: string; isAdmin: boolean };

export const LOCAL_PRINCIPAL: Principal = { kind: 'local' };

/** The principal of an agent of the registry: its project, or {@link DEFAULT_PROJECT} when it names none. */
export function agentPrincipal(agent: Pick<AgentRecord, 'name' | 'project' | 'isAdmin'> & { id: string }): Principal {
  return { kind: 'agent', agentId: agent.id, agentName: agent.name, project: agent.project ?? DEFAULT_PROJECT, isAdmin: agent.isAdmin };
}

/** Whether the principal sees and changes everything (the local CLI, an admin agent). */
export function hasFullAccess(p: Principal): boolean {
  return p.kind === 'local' || p.isAdmin;
}

/**
 * The project whose sessions (own or shared with it) bound what the principal reads, or null when nothing is
 * bounded. Store queries take it as {@link EventFilter.visibleToProject}-style filters.
 */
export function readProject(p: Principal): string | null {
  return hasFullAccess(p) ? null : (p as Extract<Principal, { kind: 'agent' }>).project;
}

/** The project a session created by this principal belongs to. */
export function projectForNewSession(p: Principal, asked?: string): string {
  if (asked !== undefined) return asked;
  return p.kind === 'agent' ? p.project : DEFAULT_PROJECT;
}

/** What the rules need to know of a session: its owner and the projects it is shared with (read-only). */
export interface SessionAccessFacts {
  project: string;
  sharedWith: readonly string[];
}

/** Whether the principal may read the session's events, task card, karma and recall over it. */
export function canReadSession(p: Principal, s: SessionAccessFacts): boolean {
  const project = readProject(p);
  return project === null || s.project === project || s.sharedWith.includes(project);
}

/** Whether the principal may append to the session, change its task card or compact its window. */
export function canWriteSession(p: Principal, s: Pick<SessionAccessFacts, 'project'>): boolean {
  const project = readProject(p);
  return project === null || s.project === project;
}

/** A short description for errors and logs. */
export function describePrincipal(p: Principal): string {
  return p.kind === 'local' ? 'the local CLI' : `agent ${p.agentName} (project ${p.project}${p.isAdmin ? ', admin' : ''})`;
}
