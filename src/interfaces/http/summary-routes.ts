import { z } from 'zod';
import { EngramError } from '../../errors.js';
import { DEFAULT_SUMMARY_LIMIT, MAX_SUMMARY_LIMIT } from '../../consolidate/summary-reader.js';
import { SUMMARY_KINDS } from '../../model/summary.js';
import { defineRoute, type Route } from './route.js';

const summariesQuery = z.object({
  q: z.string().min(1).max(1000).optional().describe('Full-text search over the summaries (best first) instead of a list, newest first.'),
  project: z.string().min(1).max(100).optional().describe('Only this project.'),
  depth: z.coerce.number().int().min(0).max(2).optional().describe('Only this depth: 0 session (one per episode), 1 arc, 2 epoch.'),
  sessionId: z.string().min(1).max(128).optional().describe('Only summaries of this session (depth 0).'),
  includeCold: z
    .enum(['true', 'false'])
    .transform((v) => v === 'true')
    .optional()
    .describe('Include the cold tier (summaries replaced by newer ones). Default false.'),
  limit: z.coerce.number().int().min(1).max(MAX_SUMMARY_LIMIT).optional().describe(`Most summaries returned. Default ${DEFAULT_SUMMARY_LIMIT}.`),
  kind: z
    .enum(SUMMARY_KINDS)
    .optional()
    .describe('summary (default) or decision: decision records, one per decision event, cold once a later decision supersedes them (coldSourceId).'),
  subject: z.string().min(1).max(200).optional().describe('With kind=decision: only decisions on this subject.'),
});

const summaryParams = z.object({ summaryId: z.string().min(1).max(64).describe('A summary id (sum_...).') });

/** The summary DAG over HTTP (docs/consolidation.md): only summaries of sessions the caller's project may read. */
export const SUMMARY_ROUTES: readonly Route[] = [
  defineRoute({
    method: 'get',
    path: '/v1/summaries',
    operationId: 'listSummaries',
    tag: 'summaries',
    summary: 'Session, arc and epoch summaries the caller may read; or a full-text search over them',
    description:
      'Summaries are derived views: each names what it covers (sessions, time range) and its drill-down ids (childIds of an arc or epoch, ' +
      'sourceEventIds of a session summary); `POST /v1/expand` with a summary id returns the level below. Summaries replaced by newer ones ' +
      'are in the cold tier: left out unless includeCold=true, always readable by id.',
    query: summariesQuery,
    success: { status: 200, description: '`{ summaries: SummaryRecord[] }`, with `score` on each when `q` is given.' },
    errors: [400],
    handle: async ({ view, query }) => {
      const filter = {
        ...(query.project !== undefined ? { project: query.project } : {}),
        ...(query.depth !== undefined ? { depth: query.depth as 0 | 1 | 2 } : {}),
        ...(query.includeCold ? { includeCold: true } : {}),
        ...(query.limit !== undefined ? { limit: query.limit } : {}),
        ...(query.kind !== undefined ? { kind: query.kind } : {}),
      };
      if (query.subject !== undefined && query.kind !== 'decision') throw new EngramError('INVALID_INPUT', 'subject: only with kind=decision', { field: 'subject' });
      if (query.q !== undefined) {
        if (query.sessionId !== undefined) throw new EngramError('INVALID_INPUT', 'sessionId: not with q (search all summaries, or list a session)', { field: 'sessionId' });
        return { body: { summaries: (await view.summaries.search(query.q, filter)).map((h) => ({ ...h.summary, score: h.score })) } };
      }
      return {
        body: {
          summaries: await view.summaries.list({
            ...filter,
            ...(query.sessionId !== undefined ? { sessionId: await view.resolveSessionId(query.sessionId) } : {}),
            ...(query.subject !== undefined ? { subject: query.subject } : {}),
          }),
        },
      };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/v1/summaries/stats',
    operationId: 'summaryStats',
    tag: 'summaries',
    summary: 'Counts of summaries by depth, the cold tier, skipped sessions and consolidation jobs (admins only: it counts every project)',
    success: { status: 200, description: '`{ byDepth: {0,1,2}, cold, skipped, jobs: {pending, leased, done, failed} }`.' },
    errors: [403],
    isAdminOnly: true,
    handle: async ({ view }) => ({ body: await view.summaries.counts() }),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/summaries/{summaryId}',
    operationId: 'getSummary',
    tag: 'summaries',
    summary: 'One summary by id (cold ones included)',
    params: summaryParams,
    success: { status: 200, description: 'The SummaryRecord.' },
    errors: [400, 404],
    handle: async ({ view, params }) => ({ body: await view.summaries.get(params.summaryId) }),
  }),
];
