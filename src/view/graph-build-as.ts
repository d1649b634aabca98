import { EngramError } from '../errors.js';
import type { BuildReport, GraphBuilder } from '../consolidate/graph/graph-builder.js';
import type { PrincipalReads } from './principal-reads.js';

/** Most sessions named by one build request (HTTP, MCP); without names, every readable session is read. */
export const MAX_BUILD_SESSION_IDS = 1000;
/**
 * Events one build request reads at most (HTTP, MCP): a request's work is bounded for servers (model/limits.ts). A
 * build that stops there says so (`isComplete: false`); the next request goes on from the cursors.
 */
export const MAX_BUILD_EVENTS_PER_REQUEST = 20_000;
/** Sessions listed when a bounded reader builds over every session it may read. */
const MAX_READABLE_SESSIONS = 100_000;

/**
 * `graph build` for a principal (HTTP `POST /v1/graph/build`, the MCP tool `graph_build`): the sessions named
 * must each be readable (else NOT_FOUND, as for any read of them), and with none named, a bounded agent reads
 * the sessions its project owns or that are shared with it, an admin or the local CLI every session. The graph's
 * rows cite the events they came from, so what one project builds is visible only through those citations
 * (model/access.ts); cursors are per session, so builds by several agents do not interfere.
 */
export async function buildGraphAs(
  view: PrincipalReads,
  builder: GraphBuilder,
  options: { sessionIds?: readonly string[]; maxEvents?: number } = {},
): Promise<BuildReport> {
  const named = options.sessionIds;
  const bound = options.maxEvents !== undefined ? { maxEvents: options.maxEvents } : {};
  if (named !== undefined) {
    if (named.length > MAX_BUILD_SESSION_IDS) {
      throw new EngramError('INVALID_INPUT', `sessionIds: ${named.length} sessions exceed the ${MAX_BUILD_SESSION_IDS} of one build; build in batches or name none`, {
        field: 'sessionIds',
        max: MAX_BUILD_SESSION_IDS,
      });
    }
    const ids: string[] = [];
    for (const name of new Set(named)) ids.push((await view.getSession(name)).id);
    return builder.buildFromSessions({ sessionIds: [...new Set(ids)], ...bound });
  }
  if (view.principal.kind === 'local' || view.principal.isAdmin) return builder.buildFromSessions(bound);
  const readable = await view.listSessions({ limit: MAX_READABLE_SESSIONS });
  return builder.buildFromSessions({ sessionIds: readable.map((s) => s.id), ...bound });
}
