import { z } from 'zod';
import { sessionIdSchema, STORED_EVENT_KINDS } from '../../model/event.js';
import { delegationPacketSchema, delegationReportSchema } from '../../model/hierarchy.js';
import { MAX_RECALL_BATCH, recallAnswer } from '../../view/agent-recall.js';
import { RECALL_SCOPES } from '../../view/hierarchy-view.js';
import { defineRoute, type Route } from './route.js';

const sessionParams = z.object({ sessionId: sessionIdSchema.describe('The session id.') });

const delegateBody = z
  .object({
    packet: delegationPacketSchema.describe('The delegation packet (ENGRAM Annex A.5): subtask_id, objective, constraints, acceptance_criteria, key_event_refs, artifact_ids, plan_node_ref.'),
    childSessionId: sessionIdSchema.optional().describe('The child session to create. Default `<session>.<subtask_id>`.'),
    executor: z.string().min(1).max(200).optional().describe("The executor agent (name or id) of the session's project: the child session's single writer."),
  })
  .strict();

const receivedQuery = z.object({
  child: sessionIdSchema.optional().describe('Only the reports of this child session.'),
});

const recordBody = z
  .object({
    childSessionId: sessionIdSchema.optional().describe('Only the reports of this child session.'),
  })
  .strict();

const hierarchyRecallBody = z
  .object({
    query: z
      .union([z.string(), z.array(z.string()).min(1).max(MAX_RECALL_BATCH)])
      .describe(`What to look for; an array of up to ${MAX_RECALL_BATCH} queries shares one budget.`),
    scope: z.enum(RECALL_SCOPES).optional().describe('`subtree` (default): the session and its descendants; `tree`: the whole tree; `ancestors`: the session and its planners.'),
    k: z.number().int().optional().describe('Most hits per query (1-1000). Default 10.'),
    budgetTokens: z.number().int().optional().describe('Token budget of the whole answer. Default 2000.'),
    kinds: z.array(z.enum(STORED_EVENT_KINDS)).min(1).optional(),
  })
  .strict();

/** Hierarchical sessions (ENGRAM §7, Annex A.5): delegation, reports and their validation, the tree, recall across it. */
export const HIERARCHY_ROUTES: readonly Route[] = [
  defineRoute({
    method: 'post',
    path: '/v1/sessions/{sessionId}/delegations',
    operationId: 'delegate',
    tag: 'hierarchy',
    summary: 'Delegate a subtask to a new child session (planner -> executor -> sub-executor)',
    description:
      "Creates the child session in this session's project, records the packet in both sessions and seeds the child's task card " +
      '(goal, constraints, acceptance criteria as open loops, key events), in one transaction. The calling agent becomes the single ' +
      'writer of this session the first time it delegates from it; the executor becomes the single writer of the child. Retrying the ' +
      'same delegation answers 200 with `isDuplicate: true`; another delegation to an existing session id is 409.',
    params: sessionParams,
    body: delegateBody,
    success: { status: 201, description: '`{ parent, child, delegationEventId, taskStateVersion, isDuplicate }` (links: role, depth, parent, root, writer, packet)' },
    errors: [400, 403, 404, 409],
    handle: async ({ view, params, body }) => {
      const out = await view.hierarchy.delegate({
        parentSessionId: params.sessionId,
        packet: body.packet,
        ...(body.childSessionId !== undefined ? { childSessionId: body.childSessionId } : {}),
        ...(body.executor !== undefined ? { executor: body.executor } : {}),
      });
      return { status: out.isDuplicate ? 200 : 201, body: out };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/v1/sessions/{sessionId}/reports',
    operationId: 'report',
    tag: 'hierarchy',
    summary: "Report up from a delegated session: status, summary and key findings with provenance pointers and digests",
    description:
      "Stored as a decision in the delegated session (only its single writer may report); the planner receives it from " +
      '`GET /v1/sessions/{planner}/received-reports`, which re-resolves every pointer. Pointers must parse (400 POINTER_INVALID).',
    params: sessionParams,
    body: delegationReportSchema,
    success: { status: 201, description: '`{ eventId, sessionId, parentSessionId, subtaskId }`' },
    errors: [400, 403, 404],
    handle: async ({ view, params, body }) => ({ status: 201, body: await view.hierarchy.report(params.sessionId, body) }),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/sessions/{sessionId}/received-reports',
    operationId: 'receivedReports',
    tag: 'hierarchy',
    summary: "The reports this session's children sent up, each validated by digest",
    description:
      'Every provenance pointer is re-resolved as the caller may read it and its digest compared with the recorded one; each pointer ' +
      'answers `verified`, `digest_mismatch` (with both digests) or `unreadable` (with the error code). A report is verified only when ' +
      'all its pointers are. Writes nothing.',
    params: sessionParams,
    query: receivedQuery,
    success: { status: 200, description: '`{ reports: [{ eventId, sessionId, subtaskId, executor, report, validation: { isVerified, verifiedPointers, failedPointers, findings } }] }`' },
    errors: [400, 404],
    handle: async ({ view, params, query }) => ({
      body: { reports: await view.hierarchy.reports(params.sessionId, query.child !== undefined ? { childSessionId: query.child } : {}) },
    }),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/sessions/{sessionId}/received-reports/validations',
    operationId: 'recordReportValidations',
    tag: 'hierarchy',
    summary: "Validate the children's reports and record each outcome as a decision in this (planner) session",
    description: 'As `GET .../received-reports`, and each validation is written to the planner session (once per outcome: a retry writes nothing).',
    params: sessionParams,
    body: recordBody,
    success: { status: 200, description: '`{ reports }`, each with `validationEventId`' },
    errors: [400, 403, 404],
    handle: async ({ view, params, body }) => ({
      body: {
        reports: await view.hierarchy.reports(params.sessionId, { record: true, ...(body.childSessionId !== undefined ? { childSessionId: body.childSessionId } : {}) }),
      },
    }),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/sessions/{sessionId}/tree',
    operationId: 'hierarchyTree',
    tag: 'hierarchy',
    summary: 'The hierarchy a session belongs to, from its root, as far as the caller may read it',
    params: sessionParams,
    success: { status: 200, description: '`{ rootSessionId, isLinked, nodes: [{ sessionId, role, depth, parentSessionId, writer, subtaskId?, objective?, reports, lastReportStatus? }] }`' },
    errors: [400, 404],
    handle: async ({ view, params }) => ({ body: await view.hierarchy.tree(params.sessionId) }),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/sessions/{sessionId}/hierarchy-recall',
    operationId: 'hierarchyRecall',
    tag: 'hierarchy',
    summary: "Recall across the hierarchy: the session's subtree, whole tree or ancestors, ranked by its task card",
    params: sessionParams,
    body: hierarchyRecallBody,
    success: { status: 200, description: '`{ sessionIds, taskStateVersion?, results }` (results as `POST /v1/recall`)' },
    errors: [400, 403, 404],
    handle: async ({ view, params, body }) => {
      const outcome = await view.hierarchy.recall(params.sessionId, {
        queries: typeof body.query === 'string' ? [body.query] : body.query,
        ...(body.scope !== undefined ? { scope: body.scope } : {}),
        ...(body.k !== undefined ? { k: body.k } : {}),
        ...(body.budgetTokens !== undefined ? { budgetTokens: body.budgetTokens } : {}),
        ...(body.kinds !== undefined ? { kinds: body.kinds } : {}),
      });
      return { body: { sessionIds: outcome.sessionIds, ...recallAnswer(outcome) } };
    },
  }),
];
