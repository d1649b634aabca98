import { z } from 'zod';
import { EngramError, isEngramError } from '../../errors.js';
import { agentInputSchema, agentNameSchema } from '../../model/agent.js';
import { eventInputSchema, sessionIdSchema, STORED_EVENT_KINDS } from '../../model/event.js';
import type { SessionId } from '../../model/ids.js';
import type { TaskStateUpdate } from '../../model/task-state.js';
import { taskStateUpdateSchema } from '../../model/task-state.js';
import { contextPackSummary } from '../shared/context-pack.js';
import { DEFAULT_EXPAND_MAX_TOKENS } from '../../view/expand.js';
import { MAX_RECALL_BATCH, recallAnswer } from '../../view/agent-recall.js';
import { MAX_APPEND_EVENTS } from '../../model/limits.js';
import { agentProjectSchema } from '../../model/agent.js';
import { BUS_ROUTES } from './bus-routes.js';
import { ADMIN_ROUTES } from './admin-routes.js';
import { DASHBOARD_ROUTES } from './dashboard-routes.js';
import { HIERARCHY_ROUTES } from './hierarchy-routes.js';
import { KNOWLEDGE_ROUTES } from './knowledge-routes.js';
import { SUMMARY_ROUTES } from './summary-routes.js';
import { ARTIFACT_ROUTES } from './artifact-routes.js';
import { recallSummaries } from '../shared/summary-recall.js';
import type { SummaryDepth } from '../../model/summary.js';
import { granularBatch, GRANULARITIES } from '../../view/granular-recall.js';
import { defineRoute, type Route } from './route.js';

/** Most events in one `POST /v1/events` batch (one transaction): the engine's limit; the body size limit applies as well. */
export const MAX_APPEND_BATCH = MAX_APPEND_EVENTS;
/** Most events one `GET .../events` page returns. */
export const MAX_EVENTS_PAGE = 1000;
const DEFAULT_EVENTS_PAGE = 100;

const isoTime = z.string().refine((s) => !Number.isNaN(Date.parse(s)), 'must be an ISO-8601 time');
const sessionParams = z.object({ sessionId: sessionIdSchema.describe('The session id.') });
const kindList = z
  .string()
  .transform((s) => s.split(',').map((k) => k.trim()))
  .pipe(z.array(z.enum(STORED_EVENT_KINDS)))
  .describe(`Comma-separated event kinds: ${STORED_EVENT_KINDS.join(', ')}.`);

// Request and response shapes. Responses are documented where their shape is small and stable.
const appendBody = z
  .object({
    sessionId: sessionIdSchema.describe('The session to append to; created on first use.'),
    events: z.array(eventInputSchema).min(1).max(MAX_APPEND_BATCH).describe('Events in the order they happened, stored in one transaction.'),
  })
  .strict();
const appendResponse = z.object({
  sessionId: z.string(),
  events: z.array(
    z.object({
      id: z.string(),
      turn: z.number().int(),
      /** True when the event's key was already stored: nothing was written for it. */
      isDuplicate: z.boolean(),
      artifactId: z.string().optional(),
      /** Credentials replaced before the event was stored, by kind (never the values). */
      redactions: z.object({ count: z.number().int(), byKind: z.record(z.string(), z.number().int()) }).optional(),
    }),
  ),
});
const recallBody = z
  .object({
    query: z
      .union([z.string(), z.array(z.string()).min(1).max(MAX_RECALL_BATCH)])
      .describe(`What to look for; an array of up to ${MAX_RECALL_BATCH} queries shares one budget, each event returned once.`),
    k: z.number().int().optional().describe('Most hits per query (1-1000). Default 10.'),
    budgetTokens: z.number().int().optional().describe('Token budget of the whole answer (at least 64 per query). Default 2000.'),
    sessionIds: z.array(sessionIdSchema).min(1).max(100).optional().describe("Only these sessions. With exactly one, recall is ranked by that session's task card."),
    kinds: z.array(z.enum(STORED_EVENT_KINDS)).min(1).optional(),
    since: isoTime.optional().describe('Only events at or after this time.'),
    until: isoTime.optional().describe('Only events at or before this time.'),
    taskId: z.string().min(1).max(200).optional().describe('Only events bound to this task.'),
    ignoreTask: z.boolean().optional().describe("With one session: do not rank by its task card."),
    summaries: z.boolean().optional().describe('Also return matching summaries (session, arc, epoch; derived, with ids to expand) as `summaries`. Default false.'),
    summaryDepth: z.number().int().min(0).max(2).optional().describe('With summaries: only this depth (0 session, 1 arc, 2 epoch).'),
    granularity: z
      .enum(GRANULARITIES)
      .optional()
      .describe('auto, events, summaries or entities: also return `granular`, per query the granularity chosen (auto: by its specificity), why, and the summaries, entities and ids to expand it puts above the raw events. Absent: no `granular`.'),
  })
  .strict();
const expandBody = z
  .object({
    id: z
      .string()
      .min(1)
      .describe('An event id (evt_...) or artifact id (art_...), or a unique prefix of at least 4 characters after the underscore; a turn of a session as `<session>#<turn>` (the session\'s id or a unique prefix of it: `2f6a1c3e#45`, as injected evidence cites it); or a summary id (sum_...): the summary with its children or source events.'),
    maxTokens: z.number().int().min(1).optional().describe(`Longest answer in tokens. Default ${DEFAULT_EXPAND_MAX_TOKENS}.`),
  })
  .strict();
const taskStateBody = z
  .object({
    update: taskStateUpdateSchema.describe('Fields of the card to change: given fields replace the stored ones; extensions merge by key (null removes one).'),
    replace: z.boolean().optional().describe('Replace the whole card instead of merging. Default false.'),
    producedByTurn: z.number().int().min(0).optional().describe("The turn whose work produced the update. Default: the session's latest."),
  })
  .strict();
const agentBody = agentInputSchema.extend({ name: agentNameSchema }).strict();
const agentSchema = z.object({
  id: z.string(),
  name: z.string(),
  role: z.string(),
  parentId: z.string().optional(),
  project: z.string().optional(),
  isAdmin: z.boolean(),
  createdAt: z.string(),
  revokedAt: z.string().optional(),
});

/** Every `/v1` endpoint. `GET /v1/openapi.json` is added by the app, which builds the document from this table. */
export const ROUTES: readonly Route[] = [
  defineRoute({
    method: 'post',
    path: '/v1/events',
    operationId: 'appendEvents',
    tag: 'events',
    summary: 'Append a batch of events to a session',
    description:
      'Stored in one transaction: all events or none. An event whose `key` is already stored in the session with the same content is ' +
      'not stored again (`isDuplicate: true`); the same key with other content is 409 IDEMPOTENCY_CONFLICT and nothing is stored.',
    body: appendBody,
    success: { status: 200, description: 'Each event with its id and turn, in request order.', schema: appendResponse },
    errors: [400, 409, 413],
    handle: async ({ view, body }) => {
      const outcomes = await view.append(body.sessionId, body.events);
      return {
        body: {
          sessionId: body.sessionId,
          events: outcomes.map((o) => ({
            id: o.record.id,
            turn: o.record.turn,
            isDuplicate: o.isDuplicate,
            ...(o.record.artifact ? { artifactId: o.record.artifact.id } : {}),
            ...(o.redactions ? { redactions: o.redactions } : {}),
          })),
        },
      };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/v1/sessions',
    operationId: 'listSessions',
    tag: 'sessions',
    summary: 'Sessions the caller may read, most recent first',
    description: "An agent sees its project's sessions and those shared with its project; an admin sees every session.",
    query: z.object({ limit: z.coerce.number().int().min(1).max(10_000).optional().describe('At most this many. Default 100.') }),
    success: { status: 200, description: '`{ sessions: SessionRecord[] }`' },
    errors: [400],
    handle: async ({ view, query }) => ({ body: { sessions: await view.listSessions({ limit: query.limit ?? 100 }) } }),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/sessions/{sessionId}',
    operationId: 'getSession',
    tag: 'sessions',
    summary: 'One session: owner project, shares, event count, last turn, first and last event times',
    description: 'A session of another project that is not shared with the caller is 404, as if it did not exist.',
    params: sessionParams,
    success: { status: 200, description: 'The SessionRecord.' },
    errors: [400, 404],
    handle: async ({ view, params }) => ({ body: await view.getSession(params.sessionId) }),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/sessions/{sessionId}/events',
    operationId: 'listEvents',
    tag: 'events',
    summary: "A page of a session's events in turn order",
    description: 'Page with `afterTurn`: pass the last turn you received; `nextAfterTurn` is absent on the last page.',
    params: sessionParams,
    query: z.object({
      afterTurn: z.coerce.number().int().min(0).optional().describe('Only turns greater than this. Default 0.'),
      limit: z.coerce.number().int().min(1).max(MAX_EVENTS_PAGE).optional().describe(`Most events. Default ${DEFAULT_EVENTS_PAGE}.`),
      kinds: kindList.optional(),
    }),
    success: { status: 200, description: '`{ sessionId, events: EventRecord[], nextAfterTurn? }`' },
    errors: [400, 404],
    handle: async ({ view, params, query }) => {
      const limit = query.limit ?? DEFAULT_EVENTS_PAGE;
      const events = await view.listEvents({
        sessionId: params.sessionId as SessionId,
        afterTurn: query.afterTurn ?? 0,
        limit,
        ...(query.kinds ? { kinds: query.kinds } : {}),
      });
      const last = events[events.length - 1];
      return { body: { sessionId: params.sessionId, events, ...(events.length === limit && last ? { nextAfterTurn: last.turn } : {}) } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/v1/sessions/{sessionId}/context',
    operationId: 'getContextPack',
    tag: 'context',
    summary: "The context pack for the session's next turn",
    description:
      'Compacts the session window first when it is over its high-water mark (evicted events stay stored; the new window is saved as the ' +
      'next cache version), then assembles identity, karma, markers, the recent tail, the task card and the query under the window budgets.',
    params: sessionParams,
    query: z.object({
      window: z.coerce.number().int().min(1).describe("The model's context window, in tokens."),
      query: z.string().optional().describe('The new user message.'),
      identity: z.string().optional().describe('The system prompt / identity block.'),
      format: z.enum(['text', 'openai', 'anthropic']).optional().describe('Rendering of `formatted`. Default text.'),
      maxMessages: z.coerce.number().int().min(0).optional().describe('Governor: keep at most this many history messages.'),
      maxChars: z.coerce.number().int().min(1).optional().describe('Governor: character cap of the whole prompt.'),
    }),
    success: { status: 200, description: 'Block accounting, compaction, governor, and the pack rendered in `format` (as `engram context --json`).' },
    errors: [400, 403, 404, 422],
    handle: async ({ mem, view, params, query }) => {
      const format = query.format ?? 'text';
      const result = await view.pack(params.sessionId, {
        windowTokens: query.window,
        ...(query.identity !== undefined ? { identity: query.identity } : {}),
        ...(query.query !== undefined ? { query: query.query } : {}),
        ...(query.maxMessages !== undefined ? { maxHistoryMessages: query.maxMessages } : {}),
        ...(query.maxChars !== undefined ? { maxTotalChars: query.maxChars } : {}),
      });
      return { body: contextPackSummary(params.sessionId, result, format, mem.context.format(result.pack, format)) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/v1/sessions/{sessionId}/task-state',
    operationId: 'getTaskState',
    tag: 'task-state',
    summary: "The session's task state card",
    params: sessionParams,
    success: { status: 200, description: 'The current version (`{ sessionId, version, state, eventId, producedByTurn, ts }`), or `{ sessionId, version: 0, state: null }` before the first.' },
    errors: [400, 404],
    handle: async ({ view, params }) => ({ body: (await view.getTaskState(params.sessionId)) ?? { sessionId: params.sessionId, version: 0, state: null } }),
  }),
  defineRoute({
    method: 'put',
    path: '/v1/sessions/{sessionId}/task-state',
    operationId: 'updateTaskState',
    tag: 'task-state',
    summary: "Store the next version of the session's task state card",
    description: 'Every version is kept. Concurrent updates each get their own version; none is lost.',
    params: sessionParams,
    body: taskStateBody,
    success: { status: 200, description: 'The new version.' },
    errors: [400, 403, 404, 409],
    handle: async ({ view, params, body }) => {
      try {
        const card = await view.updateTaskState(params.sessionId, body.update as TaskStateUpdate, {
          ...(body.replace ? { replace: true } : {}),
          ...(body.producedByTurn !== undefined ? { producedByTurn: body.producedByTurn } : {}),
        });
        return { body: card };
      } catch (err) {
        // The engine names card fields `taskState.*`; in this body they are `update.*`.
        throw renameField(err, 'taskState', 'update');
      }
    },
  }),
  defineRoute({
    method: 'post',
    path: '/v1/recall',
    operationId: 'recall',
    tag: 'recall',
    summary: 'Search everything stored: quoted evidence with provenance',
    description: 'One query or a batch; the batch shares `budgetTokens` and returns each event once. Every call is written to the recall log.',
    body: recallBody,
    success: {
      status: 200,
      description:
        '`{ taskStateVersion?, results: [{ query, match, hits, candidates, usedTokens, budgetTokens, isTruncated, text }], summaries?, granular? }`; ' +
        '`match` is `exact`, `related` or `none` (no event matches: no hits, and the text says so; still 200); each hit has `isExactMatch` and `coverage`',
    },
    errors: [400, 404],
    handle: async ({ view, body }) => {
      const outcome = await view.recall({
        queries: typeof body.query === 'string' ? [body.query] : body.query,
        sessionIds: body.sessionIds,
        ignoreTask: body.ignoreTask,
        kinds: body.kinds,
        fromMs: body.since !== undefined ? Date.parse(body.since) : undefined,
        toMs: body.until !== undefined ? Date.parse(body.until) : undefined,
        taskId: body.taskId,
        k: body.k,
        budgetTokens: body.budgetTokens,
      });
      const granular = body.granularity !== undefined ? { granular: await granularBatch(view, typeof body.query === 'string' ? [body.query] : body.query, body.granularity) } : {};
      if (!body.summaries) return { body: { ...recallAnswer(outcome), ...granular } };
      const queries = typeof body.query === 'string' ? [body.query] : body.query;
      const recalled = outcome.results.flatMap((r) => r.hits);
      const summaries = await recallSummaries(view, queries, { recalled, ...(body.summaryDepth !== undefined ? { depth: body.summaryDepth as SummaryDepth } : {}) });
      return { body: { ...recallAnswer(outcome), summaries, ...granular } };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/v1/expand',
    operationId: 'expand',
    tag: 'recall',
    summary: 'The full stored content of one event or artifact',
    body: expandBody,
    success: { status: 200, description: '`{ text, details }`: a header line and the content cut at `maxTokens` with a notice, and what was expanded.' },
    errors: [400, 404],
    handle: async ({ view, body }) => ({ body: await view.expand(body.id, body.maxTokens ?? DEFAULT_EXPAND_MAX_TOKENS) }),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/sessions/{sessionId}/shares',
    operationId: 'shareSession',
    tag: 'sessions',
    summary: 'Share a session read-only with another project',
    description:
      "Agents of that project may then read the session's events, task card and recall over it, but not write to it. " +
      "Only the owner project's agents (and admins) share a session; sharing it again changes nothing.",
    params: sessionParams,
    body: z.object({ project: agentProjectSchema.describe('The project given read access.') }).strict(),
    success: { status: 200, description: 'The SessionRecord with its `sharedWith` projects.' },
    errors: [400, 403, 404],
    handle: async ({ view, params, body }) => ({ body: await view.share(params.sessionId, body.project) }),
  }),
  defineRoute({
    method: 'delete',
    path: '/v1/sessions/{sessionId}/shares/{project}',
    operationId: 'unshareSession',
    tag: 'sessions',
    summary: "End a session's read-only share with a project",
    params: z.object({ sessionId: sessionIdSchema.describe('The session id.'), project: agentProjectSchema.describe('The project whose read access ends.') }),
    success: { status: 200, description: '`{ sessionId, project, isRemoved }`: false when there was no such share.' },
    errors: [400, 403, 404],
    handle: async ({ view, params }) => ({ body: { sessionId: params.sessionId, project: params.project, isRemoved: await view.unshare(params.sessionId, params.project) } }),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/agents/me',
    operationId: 'whoAmI',
    tag: 'agents',
    summary: 'The agent the token belongs to',
    success: { status: 200, description: 'The AgentRecord.', schema: agentSchema },
    errors: [],
    handle: async ({ agent }) => ({ body: agent }),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/agents',
    operationId: 'listAgents',
    tag: 'agents',
    summary: 'Every agent, revoked ones too, oldest first (admins only)',
    success: { status: 200, description: '`{ agents: AgentRecord[] }`', schema: z.object({ agents: z.array(agentSchema) }) },
    errors: [403],
    isAdminOnly: true,
    handle: async ({ mem }) => ({ body: { agents: await mem.agents.list() } }),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/agents',
    operationId: 'addAgent',
    tag: 'agents',
    summary: 'Add an agent and return its token, once (admins only)',
    body: agentBody,
    success: { status: 201, description: 'The agent and its token; only the token hash is stored.', schema: z.object({ agent: agentSchema, token: z.string() }) },
    errors: [400, 403, 409],
    isAdminOnly: true,
    handle: async ({ mem, body }) => {
      const { name, ...options } = body;
      return { status: 201, body: await mem.agents.add(name, options) };
    },
  }),
  ...BUS_ROUTES,
  ...ADMIN_ROUTES,
  ...DASHBOARD_ROUTES,
  ...HIERARCHY_ROUTES,
  ...KNOWLEDGE_ROUTES,
  ...SUMMARY_ROUTES,
  ...ARTIFACT_ROUTES,
];

/** The same error with `from` (and `from.*`, `from[...]`) renamed to `to` in its field and message. */
function renameField(err: unknown, from: string, to: string): unknown {
  if (!isEngramError(err) || typeof err.data.field !== 'string') return err;
  const field = err.data.field;
  if (field !== from && !field.startsWith(`${from}.`) && !field.startsWith(`${from}[`)) return err;
  const renamed = `${to}${field.slice(from.length)}`;
  const message = err.message.startsWith(field) ? `${renamed}${err.message.slice(field.length)}` : err.message;
  return new EngramError(err.code, message, { ...err.data, field: renamed }, { cause: err });
}
