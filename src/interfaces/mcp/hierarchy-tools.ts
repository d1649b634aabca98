import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { DelegationPacketInput, DelegationReportInput } from '../../model/hierarchy.js';
import { delegationPacketSchema, delegationReportSchema } from '../../model/hierarchy.js';
import { MAX_RECALL_BATCH, recallAnswer, recallText } from '../../view/agent-recall.js';
import type { EngramView } from '../../view/engram-view.js';
import { RECALL_SCOPES, type ReceivedReport } from '../../view/hierarchy-view.js';
import type { ToolErrorOptions } from './errors.js';

type Run = (fn: () => Promise<CallToolResult>, errorOptions?: ToolErrorOptions) => Promise<CallToolResult>;

/** Advertises the precise schema; the engine validates and names the field (`packet.acceptance_criteria`). */
function validatedByEngine(precise: z.ZodType, description: string) {
  const { $schema: _unused, ...json } = z.toJSONSchema(precise, { io: 'input', target: 'draft-7' }) as Record<string, unknown>;
  return z.record(z.string(), z.unknown()).meta({ ...json, description });
}

const delegateInput = z.object({
  packet: validatedByEngine(
    delegationPacketSchema,
    'The subtask: subtask_id, objective, constraints, acceptance_criteria (at least one), key_event_refs (sam:event:evt_... the executor starts from), artifact_ids, plan_node_ref.',
  ),
  executor: z.string().optional().describe('The agent that does the work (its name); it becomes the only writer of the new session.'),
  childSessionId: z.string().optional().describe('The new session id. Default <this session>.<subtask_id>.'),
});

const reportInput = z.object({
  report: validatedByEngine(
    delegationReportSchema,
    'status (done, partial, failed, blocked), summary, and key_findings: each a claim with provenance [{ pointer, content_digest }] ' +
      'where content_digest is what less_deref_pointer answered for that pointer.',
  ),
});

const receivedInput = z.object({
  childSessionId: z.string().optional().describe('Only the reports of this child session.'),
  record: z.boolean().optional().describe('Also record each validation as a decision in this session. Default false.'),
});

const hierarchyRecallInput = z.object({
  query: z.union([z.string(), z.array(z.string()).min(1).max(MAX_RECALL_BATCH)]).describe('What to look for: exact strings and/or words.'),
  scope: z.enum(RECALL_SCOPES).optional().describe('subtree (default): this session and the sessions it delegated to; tree: the whole hierarchy; ancestors: this session and its planners.'),
  k: z.number().int().optional().describe('Most hits per query. Default 10.'),
  budgetTokens: z.number().int().optional().describe('Token budget of the evidence. Default 2000.'),
});

/**
 * The hierarchy tools (ENGRAM §7, Annex A.5), acting from the server's session: `delegate` hands a subtask to a new
 * child session, `report` sends this (delegated) session's report up, `received_reports` validates the children's
 * reports by digest, `hierarchy_tree` and `hierarchy_recall` look across the tree. Thin: the view decides everything.
 */
export function registerHierarchyTools(server: McpServer, view: EngramView, session: () => Promise<string>, run: Run): void {
  server.registerTool(
    'delegate',
    {
      title: 'Delegate a subtask to an executor',
      description:
        'Hand a subtask to an executor in a new session of its own (its own context and task card, seeded from the packet). Give only what it ' +
        'needs: the objective, constraints, acceptance criteria, and pointers to the key events. It reports back; read its reports with received_reports.',
      inputSchema: delegateInput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    (args) =>
      run(async () => {
        const sessionId = await session();
        const out = await view.hierarchy.delegate({
          parentSessionId: sessionId,
          packet: args.packet as DelegationPacketInput,
          ...(args.executor !== undefined ? { executor: args.executor } : {}),
          ...(args.childSessionId !== undefined ? { childSessionId: args.childSessionId } : {}),
        });
        const text =
          `${out.isDuplicate ? 'Already delegated' : 'Delegated'} subtask ${out.child.packet?.subtask_id} to session ${out.child.sessionId}` +
          `${out.child.writer ? ` (writer ${out.child.writer.name})` : ''}, role ${out.child.role}; its task card is version ${out.taskStateVersion}.`;
        return { content: [{ type: 'text', text }], structuredContent: { ...out } };
      }),
  );

  server.registerTool(
    'report',
    {
      title: 'Report to your planner',
      description:
        'Send your report up to the session that delegated yours: status, a short summary and key findings, each citing the pointers you read ' +
        'with their content_digest. Your planner re-reads every pointer and checks the digest; a finding without evidence is not verified.',
      inputSchema: reportInput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (args) =>
      run(async () => {
        const sessionId = await session();
        const out = await view.hierarchy.report(sessionId, args.report as DelegationReportInput);
        return { content: [{ type: 'text', text: `Report ${out.eventId} sent to session ${out.parentSessionId} (subtask ${out.subtaskId}).` }], structuredContent: { ...out } };
      }, { fieldPrefixes: { report: 'report' } }),
  );

  server.registerTool(
    'received_reports',
    {
      title: "Read and validate your executors' reports",
      description:
        'The reports of the sessions this session delegated to. Every provenance pointer is re-read and its digest compared: each is verified, ' +
        'digest_mismatch (the content changed or was misquoted) or unreadable. Trust only verified findings.',
      inputSchema: receivedInput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    (args) =>
      run(async () => {
        const sessionId = await session();
        const reports = await view.hierarchy.reports(sessionId, {
          ...(args.childSessionId !== undefined ? { childSessionId: args.childSessionId } : {}),
          ...(args.record ? { record: true } : {}),
        });
        const text = reports.length === 0 ? `No reports yet from the sessions ${sessionId} delegated to.` : reports.map(reportText).join('\n\n');
        return { content: [{ type: 'text', text }], structuredContent: { reports } };
      }),
  );

  server.registerTool(
    'hierarchy_tree',
    {
      title: 'Show the planner / executor tree',
      description: 'The hierarchy this session belongs to: each session with its role, writer, subtask and the status of its last report.',
      inputSchema: z.object({}),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    () =>
      run(async () => {
        const sessionId = await session();
        const tree = await view.hierarchy.tree(sessionId);
        const lines = tree.nodes.map(
          (n) =>
            `${'  '.repeat(n.depth)}${n.sessionId}  ${n.role}${n.writer ? `  writer ${n.writer}` : ''}${n.subtaskId ? `  subtask ${n.subtaskId}` : ''}` +
            `${n.lastReportStatus ? `  last report: ${n.lastReportStatus}` : ''}`,
        );
        return { content: [{ type: 'text', text: lines.join('\n') }], structuredContent: { ...tree } };
      }),
  );

  server.registerTool(
    'hierarchy_recall',
    {
      title: 'Recall across the hierarchy',
      description:
        'Search the memory of this session and the sessions it delegated to (scope subtree), the whole hierarchy (tree) or its planners (ancestors), ' +
        "ranked by this session's task card. Returns quoted evidence with provenance.",
      inputSchema: hierarchyRecallInput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args) =>
      run(async () => {
        const sessionId = await session();
        const outcome = await view.hierarchy.recall(sessionId, {
          queries: typeof args.query === 'string' ? [args.query] : args.query,
          ...(args.scope !== undefined ? { scope: args.scope } : {}),
          ...(args.k !== undefined ? { k: args.k } : {}),
          ...(args.budgetTokens !== undefined ? { budgetTokens: args.budgetTokens } : {}),
        });
        const answer = recallAnswer(outcome);
        return {
          content: [{ type: 'text', text: recallText(answer) }],
          structuredContent: { sessionIds: outcome.sessionIds, results: answer.results.map(({ text: _text, ...r }) => r) },
        };
      }),
  );
}

function reportText(r: ReceivedReport): string {
  const v = r.validation;
  const lines = [
    `Report ${r.eventId} from ${r.sessionId}${r.executor ? ` (${r.executor})` : ''}, subtask ${r.subtaskId}: ${r.report.status}. ` +
      `${v.isVerified ? 'Verified' : 'NOT verified'}: ${v.verifiedPointers} pointer(s) verified, ${v.failedPointers} failed.`,
    r.report.summary,
  ];
  for (const f of v.findings) {
    lines.push(`- ${f.isVerified ? '[verified]' : '[NOT verified]'} ${f.claim}`);
    for (const p of f.pointers) if (p.status !== 'verified') lines.push(`    ${p.status}: ${p.pointer}${p.status === 'unreadable' ? ` (${p.code}: ${p.reason})` : ''}`);
  }
  return lines.join('\n');
}
