import { z } from 'zod';
import { EngramError } from '../../errors.js';
import { sessionIdSchema } from '../../model/event.js';
import { MAX_PURGE_EVENT_IDS, MIN_PURGE_MATCH_CHARS, type PurgeSelector } from '../../memory/purge.js';
import { defineRoute, type Route } from './route.js';

const purgeBody = z
  .object({
    sessionId: sessionIdSchema.optional().describe('Purge this session whole.'),
    eventIds: z.array(z.string().min(1)).min(1).max(MAX_PURGE_EVENT_IDS).optional().describe('Purge these events (ids or unique prefixes).'),
    match: z
      .string()
      .min(MIN_PURGE_MATCH_CHARS)
      .optional()
      .describe(`Purge every event holding this exact text (a literal, not a pattern; at least ${MIN_PURGE_MATCH_CHARS} characters).`),
    sessionIds: z.array(sessionIdSchema).min(1).max(100).optional().describe('With `match`: only search these sessions.'),
    confirm: z.boolean().optional().describe('`true` to purge. Without it the request is refused (400) and nothing changes.'),
    dryRun: z.boolean().optional().describe('`true`: answer what would be purged, change nothing.'),
  })
  .strict();

/** Admin-only endpoints: the privacy purge (memory/purge.ts). */
export const ADMIN_ROUTES: readonly Route[] = [
  defineRoute({
    method: 'post',
    path: '/v1/admin/purge',
    operationId: 'purge',
    tag: 'admin',
    summary: 'Delete content for good: a session, events, or every event holding a text (admins only)',
    description:
      'The one destructive operation. Selected events become tombstones (id, session, turn, kind and time stay); their content goes from ' +
      'events, artifacts, full-text and vector indexes, the embedding queue, the recall log, cached windows, karma facts and engrams that ' +
      'cite or quote it. One purge-log row records the calling agent, the time, the selector and the counts, never the content. Then the ' +
      "store's files are scrubbed (SQLite: rewritten, WAL truncated; PostgreSQL: the touched tables vacuumed) and `scrub` says whether that " +
      'completed (docs/security.md). Needs `confirm: true`; `dryRun: true` answers the counts and changes nothing.',
    body: purgeBody,
    success: { status: 200, description: '`{ id?, isDryRun, selector, bySession, counts, scrub? }`' },
    errors: [400, 403, 404],
    isAdminOnly: true,
    handle: async ({ mem, agent, body }) => {
      const selector = selectorOf(body);
      if (body.dryRun !== true && body.confirm !== true) {
        throw new EngramError('INVALID_INPUT', 'confirm: must be true to purge (or ask dryRun: true to see what would be purged); nothing was changed', {
          field: 'confirm',
        });
      }
      return { body: await mem.purge(selector, { actor: `agent:${agent.name}`, isDryRun: body.dryRun === true }) };
    },
  }),
];

function selectorOf(body: z.output<typeof purgeBody>): PurgeSelector {
  const given = [body.sessionId, body.eventIds, body.match].filter((v) => v !== undefined).length;
  if (given !== 1) {
    throw new EngramError('INVALID_INPUT', 'sessionId: give exactly one of sessionId, eventIds or match', { field: 'sessionId' });
  }
  if (body.sessionIds !== undefined && body.match === undefined) {
    throw new EngramError('INVALID_INPUT', 'sessionIds: only limits a match', { field: 'sessionIds' });
  }
  if (body.sessionId !== undefined) return { sessionId: body.sessionId };
  if (body.eventIds !== undefined) return { eventIds: body.eventIds };
  return { match: body.match!, ...(body.sessionIds ? { sessionIds: body.sessionIds } : {}) };
}
