import { z } from 'zod';
import { MAX_DEREF_MAX_TOKENS } from '../../bus/resolvers/pointer-resolver.js';
import { ENGRAM_KINDS, ENGRAM_SCOPES } from '../../model/engram.js';
import { sessionIdSchema } from '../../model/event.js';
import { DashboardView } from '../../view/dashboard-view.js';
import { ENGRAM_RUN_HEADER, resolveRunId, runIdSchema } from '../shared/bus.js';
import { defineRoute, type Route, type RouteContext } from './route.js';

/**
 * The read endpoints the dashboard (issue #18) needs beyond the API's own: each answers for the calling agent
 * through the trust model (view/dashboard-view.ts): an agent token sees its project, an admin token everything.
 * The live stream (`GET /v1/dashboard/stream`) and the static UI at `/` are served by dashboard-serve.ts.
 */

const MAX_PAGE = 500;
const page = {
  offset: z.coerce.number().int().min(0).max(1_000_000).optional().describe('Items to skip. Default 0.'),
  limit: z.coerce.number().int().min(1).max(MAX_PAGE).optional().describe(`Most items (1-${MAX_PAGE}). Default 100.`),
};
const runParam = runIdSchema.optional().describe(`The run whose run-scoped engrams are shown (or the \`${ENGRAM_RUN_HEADER}\` header). Default \`default\`.`);
const runHeader = [{ name: ENGRAM_RUN_HEADER, description: 'The run; wins over `?run=`. Default `default`.' }];

const dashboardOf = (ctx: RouteContext<unknown, unknown, unknown>) => new DashboardView(ctx.mem, ctx.view, ctx.agent);
const runOf = (ctx: RouteContext<unknown, { run?: string | undefined }, unknown>): string => resolveRunId(ctx.mem, ctx.header(ENGRAM_RUN_HEADER), ctx.query.run);

export const DASHBOARD_ROUTES: readonly Route[] = [
  defineRoute({
    method: 'get',
    path: '/v1/dashboard/overview',
    operationId: 'dashboardOverview',
    tag: 'dashboard',
    summary: 'Sessions per project, events over time, recall latency; store size and embedding queue for admins',
    success: { status: 200, description: '`{ caller, sessions, events, projects, activityDays, eventsByDay: [{ day, events, artifacts }], recall, store?, embeddingQueue? }`' },
    errors: [],
    handle: async (ctx) => ({ body: await dashboardOf(ctx).overview() }),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/dashboard/agents',
    operationId: 'dashboardAgents',
    tag: 'dashboard',
    summary: 'The budget meter of every visible agent: deref usage and remaining this turn, inline tokens per turn, grants, rejections',
    description: "An agent sees its own project's agents; an admin every agent.",
    success: { status: 200, description: '`{ agents: AgentMeter[] }`' },
    errors: [],
    handle: async (ctx) => ({ body: { agents: await dashboardOf(ctx).meters() } }),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/dashboard/briefs',
    operationId: 'dashboardBriefs',
    tag: 'dashboard',
    summary: 'The live SharedBriefMicro of every visible parent agent in a run',
    query: z.object({ run: runParam }),
    headers: runHeader,
    success: { status: 200, description: '`{ run, briefs: [{ parent, brief: { lines, tokens, included, omitted, contradictions } }] }`' },
    errors: [400],
    handle: async (ctx) => {
      const run = runOf(ctx);
      return { body: { run, briefs: await dashboardOf(ctx).briefs(run) } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/v1/dashboard/engrams',
    operationId: 'dashboardEngrams',
    tag: 'dashboard',
    summary: 'A page of the engram feed, newest first, filtered by project, run, role, scope, kind and author',
    description: 'Live engrams only. `project` is for admins (an agent sees its own project only); contradictions are flagged.',
    query: z.object({
      project: z.string().max(64).optional().describe('Only this project (admins; empty string: engrams without a project).'),
      run: runParam,
      role: z.string().min(1).max(64).optional().describe("Only engrams whose author has this role."),
      scope: z.enum(ENGRAM_SCOPES).optional(),
      kind: z.enum(ENGRAM_KINDS).optional(),
      agent: z.string().min(1).max(64).optional().describe('Only engrams written by this agent (name or id).'),
      ...page,
    }),
    headers: runHeader,
    success: {
      status: 200,
      description:
        '`{ items: [{ engram, project, run, author, isContradiction, expiresAt }], total, hasMore, projects }`: only the rows up to the page are read, ' +
        'so `total` is null when more follow than were read (`hasMore`); the feed goes back 5,000 engrams per project.',
    },
    errors: [400, 404],
    handle: async (ctx) => {
      const q = ctx.query;
      return {
        body: await dashboardOf(ctx).feed({
          run: runOf(ctx),
          ...(q.project !== undefined ? { project: q.project } : {}),
          ...(q.role !== undefined ? { role: q.role } : {}),
          ...(q.scope !== undefined ? { scope: q.scope } : {}),
          ...(q.kind !== undefined ? { kind: q.kind } : {}),
          ...(q.agent !== undefined ? { agent: q.agent } : {}),
          offset: q.offset ?? 0,
          limit: q.limit ?? 100,
        }),
      };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/v1/dashboard/sessions',
    operationId: 'dashboardSessions',
    tag: 'dashboard',
    summary: 'A page of the sessions the caller may read, most recently active first, with their agent host, first request and summary line',
    query: z.object({ project: z.string().min(1).max(200).optional().describe('Only sessions of this project.'), ...page }),
    success: {
      status: 200,
      description:
        '`{ sessions: SessionOverview[], total }`: each a SessionRecord plus `host` (`claude-code`, `codex`, ... or null), `firstRequest`, `firstRequestId`, ' +
        '`summaryLine` (the first line of its latest summary after the request, citing `[evt_...]`) and `summaryId`.',
    },
    errors: [400],
    handle: async (ctx) => ({ body: await dashboardOf(ctx).sessions({ offset: ctx.query.offset ?? 0, limit: ctx.query.limit ?? 100, ...(ctx.query.project ? { project: ctx.query.project } : {}) }) }),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/dashboard/sessions/{sessionId}/timeline',
    operationId: 'dashboardTimeline',
    tag: 'dashboard',
    summary:
      "A session's timeline: its host and first request, its summaries, the files its tool calls wrote, events by kind and turn, compactions and markers, task-state versions, karma, recall log, embedding queue",
    description: 'A session the caller may not read is 404, as if it did not exist. The context pack itself is `GET /v1/sessions/{sessionId}/context`.',
    params: z.object({ sessionId: sessionIdSchema.describe('The session id.') }),
    success: { status: 200, description: 'The SessionTimeline.' },
    errors: [400, 404],
    handle: async (ctx) => ({ body: await dashboardOf(ctx).timeline(ctx.params.sessionId) }),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/dashboard/pointer',
    operationId: 'dashboardPointer',
    tag: 'dashboard',
    summary: 'Pointer click-through: the exact span with its digest (and, for admins, the lines around a repo span)',
    description:
      "An admin's read is not budgeted. An agent's click-through is a deref like any other: it counts against the agent's turn budget " +
      '(403 DEREF_DENIED past it), and `sam:`/`artifact:` content of sessions it may not read is 404.',
    body: z
      .object({
        pointer: z.string().min(1).max(2000).describe('The pointer ref (`repo:src/a.ts#L10-L20@<commit>`, `artifact:...`, `sam:event:<id>`).'),
        max_tokens: z.number().int().min(1).max(MAX_DEREF_MAX_TOKENS).optional().describe('Longest excerpt in tokens. Default 800.'),
      })
      .strict(),
    success: { status: 200, description: '`{ ref, type, excerpt, contentDigest, spanDigest, tokens, isTruncated, lines?, context?, isBudgeted }`' },
    errors: [400, 403, 404],
    handle: async (ctx) => ({ body: await dashboardOf(ctx).pointer(ctx.body.pointer, ctx.body.max_tokens ?? 800) }),
  }),
];
