import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { EngramError } from '../../errors.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { Engram } from '../../engine.js';
import { eventInputSchema } from '../../model/event.js';
import type { TaskStateUpdate, TaskStateVersion } from '../../model/task-state.js';
import { taskStateUpdateSchema } from '../../model/task-state.js';
import { DEFAULT_EXPAND_MAX_TOKENS } from '../../view/expand.js';
import { MAX_RECALL_BATCH, recallAnswer, recallText } from '../../view/agent-recall.js';
import type { Principal } from '../../model/access.js';
import { LOCAL_PRINCIPAL } from '../../model/access.js';
import type { ToolErrorOptions } from './errors.js';
import { resourceError, toolErrorResult } from './errors.js';
import { displaySessionIds, displaySessionIdsInText } from '../../model/session-names.js';
import type { BusAgent } from '../../bus/bus-agent.js';
import { registerBusTools } from './bus-tools.js';
import { registerHierarchyTools } from './hierarchy-tools.js';
import { entityExpandResult, isEntityTarget, registerKnowledgeTools } from './knowledge-tools.js';
import { recallSummaries, summaryRecallText } from '../shared/summary-recall.js';
import { granularBatch, granularLayersText, GRANULARITIES } from '../../view/granular-recall.js';
import { parseToolProfiles, type ToolGroup } from './tool-profiles.js';

export interface EngramMcpServerOptions {
  /**
   * The session this server works for: `append_events` writes to it, task state tools read and write its card. A
   * function is asked at every tool call: the host's current session (memory/host-sessions.ts) changes as the user
   * starts new sessions while the server runs.
   */
  sessionId: string | (() => Promise<string>);
  /** The project of a session the local principal creates through this server (default `default`). */
  project?: string;
  /** Reported to clients in the initialize handshake. */
  version: string;
  /**
   * The agent the Engram Bus tools (less_*) act as: the authenticated one over HTTP, `--agent` on stdio.
   * Without one, those tools answer with an error saying how to name one.
   */
  agent?: BusAgent;
  /** The run that run-scoped engrams belong to. Default: the bus default (`default`). */
  runId?: string;
  /** List `less_issue_grant`: the agent has children. Default false. */
  canIssueGrants?: boolean;
  /**
   * For servers that answer remote callers: server faults go here (the server's log) and the caller gets only
   * their code (see ToolErrorOptions.onServerFault). Default: every detail in the tool result (stdio).
   */
  onServerFault?: (e: EngramError) => void;
  /**
   * Whose access rules bound every tool and resource (model/access.ts): the authenticated agent over HTTP,
   * the `--agent` on stdio. Default: the local, full-trust principal (stdio without `--agent`).
   */
  principal?: Principal;
  /**
   * The tool groups listed (tool-profiles.ts): `core` (recall, expand, task state, append_events) always; `team` adds
   * the bus tools (only with {@link agent}) and the hierarchy tools; `graph` the knowledge tools. Default: core only.
   */
  tools?: ReadonlySet<ToolGroup>;
}

export interface EngramMcpServer {
  server: McpServer;
  /** Resolves once every tool call started so far has finished (so the store can close under none). */
  settled(): Promise<void>;
}

export { DEFAULT_EXPAND_MAX_TOKENS, MAX_RECALL_BATCH };

/**
 * A permissive schema that advertises `precise`'s JSON Schema to the client. The engine validates these
 * arguments itself and names the offending field (`taskState.phase`, `events[2].kind`); letting the SDK
 * validate them first would answer with its own differently shaped message, outside errors.ts.
 */
function validatedByEngine(precise: z.ZodType, description: string) {
  const { $schema: _unused, ...json } = leanJsonSchema(z.toJSONSchema(precise, { io: 'input', target: 'draft-7' })) as Record<string, unknown>;
  return z.record(z.string(), z.unknown()).meta({ ...json, description });
}

/**
 * The advertised schema without what says nothing to a model: `propertyNames: {type: string}` (every JSON key is a
 * string) and integer bounds at the safe-integer limits. A host sends the tool list with every model call.
 */
function leanJsonSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(leanJsonSchema);
  if (typeof node !== 'object' || node === null) return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'propertyNames' && JSON.stringify(value) === '{"type":"string"}') continue;
    if ((key === 'maximum' && value === Number.MAX_SAFE_INTEGER) || (key === 'minimum' && value === Number.MIN_SAFE_INTEGER)) continue;
    out[key] = leanJsonSchema(value);
  }
  return out;
}

const recallInput = z.object({
  query: z
    .union([z.string(), z.array(z.string()).min(1).max(MAX_RECALL_BATCH)])
    .describe(
      `Exact strings (an error, a path, a hash, an identifier) and/or words; an array of up to ${MAX_RECALL_BATCH} searches several things at once.`,
    ),
  k: z.number().int().optional().describe('Hits per query (1-1000, default 10).'),
  budgetTokens: z.number().int().optional().describe('Evidence budget per query in tokens (at least 64, default 2000).'),
  sessionOnly: z.boolean().optional().describe('Only this session, ranked by its task card (default: everything stored).'),
  summaries: z.boolean().optional().describe('Also matching session, arc and epoch summaries (derived, with ids to expand).'),
  summaryDepth: z.union([z.literal(0), z.literal(1), z.literal(2)]).optional().describe('With summaries: only depth 0 (session), 1 (arc) or 2 (epoch).'),
  granularity: z
    .enum(GRANULARITIES)
    .optional()
    .describe('auto: identifiers go to raw events, broad questions to summaries and entities first, entity names to their expansion (reported). Default: raw events.'),
});

const expandInput = z.object({
  id: z
    .string()
    .describe('An id from a recall hit (evt_, art_, sum_ or ent_; or a unique prefix of 4+ characters after the underscore), a turn of a session as <session>#<turn> (2f6a1c3e#45, as injected evidence cites it), or an entity as kind:name (file:src/app.ts).'),
  maxTokens: z.number().int().min(1).optional().describe(`Longest answer in tokens (default ${DEFAULT_EXPAND_MAX_TOKENS}; 1500 for an entity).`),
  aspect: z.string().optional().describe('Entity only: one group (evidence, depends_on, ...) or a topic word.'),
  question: z.string().optional().describe('Entity only: lines sharing its words come first.'),
});

const updateTaskStateInput = z.object({
  update: validatedByEngine(
    taskStateUpdateSchema,
    'Fields to change: given fields replace the stored ones (lists whole); extensions merge by key (null removes one); taskId null clears it.',
  ),
});

const appendEventsInput = z.object({
  events: z
    .array(validatedByEngine(eventInputSchema, 'kind and content required; a key makes retries idempotent.'))
    .describe('In the order they happened; stored in one transaction.'),
});

/**
 * An MCP server over one {@link Engram}, working for one session. Thin: each tool parses its arguments, calls
 * the engine and renders the answer; every failure goes through {@link toolErrorResult}.
 */
export function createMcpServer(mem: Engram, options: EngramMcpServerOptions): EngramMcpServer {
  const given = options.sessionId;
  const session = typeof given === 'function' ? given : async () => given;
  const view = mem.viewAs(options.principal ?? LOCAL_PRINCIPAL, options.project !== undefined ? { newSessionProject: options.project } : {});
  const server = new McpServer({ name: 'engram', version: options.version });
  const inFlight = new Set<Promise<unknown>>();
  const principal = options.principal ?? LOCAL_PRINCIPAL;
  // An agent sees its project's own sessions by the names it gives them (model/session-names.ts).
  const display = principal.kind === 'agent' && !principal.isAdmin ? (r: CallToolResult) => displayResult(r, principal.project) : (r: CallToolResult) => r;
  const run = (fn: () => Promise<CallToolResult>, errorOptions: ToolErrorOptions = {}): Promise<CallToolResult> => {
    const call = fn()
      .then(display)
      .catch((err: unknown) => display(toolErrorResult(err, { ...errorOptions, ...(options.onServerFault ? { onServerFault: options.onServerFault } : {}) })));
    inFlight.add(call);
    void call.finally(() => inFlight.delete(call));
    return call;
  };

  server.registerTool(
    'recall',
    {
      title: 'Recall from memory',
      description:
        'Search the lossless memory of this and earlier sessions (every message, tool call and output, verbatim, including what was compacted away). ' +
        'Returns quoted evidence with session, turn and event id. Unsure of an exact value (a path, hash, error, port, version, decision)? ' +
        'call recall before answering; do not guess. expand a hit id for its full content. ' +
        'A result with no match says so ("No event in memory matches"): memory holds nothing on it.',
      inputSchema: recallInput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args) =>
      run(async () => {
        const sessionId = await session();
        const outcome = await view.recall({
          queries: typeof args.query === 'string' ? [args.query] : args.query,
          askingSessionId: sessionId,
          ...(args.sessionOnly ? { sessionIds: [sessionId] } : {}),
          k: args.k,
          budgetTokens: args.budgetTokens,
        });
        const answer = recallAnswer(outcome);
        const queries = typeof args.query === 'string' ? [args.query] : args.query;
        const recalled = outcome.results.flatMap((r) => r.hits);
        const summaries = args.summaries ? await recallSummaries(view, queries, { recalled, ...(args.summaryDepth !== undefined ? { depth: args.summaryDepth } : {}) }) : undefined;
        const granular = args.granularity !== undefined ? await granularBatch(view, queries, args.granularity) : undefined;
        return {
          content: [
            // The derived layers the query's granularity puts first, then the raw evidence.
            ...(granular ? granular.map((g) => ({ type: 'text' as const, text: granularLayersText(g) })) : []),
            { type: 'text', text: recallText(answer) },
            ...(summaries ? [{ type: 'text' as const, text: summaryRecallText(summaries) }] : []),
          ],
          structuredContent: {
            ...(answer.taskStateVersion !== undefined ? { taskStateVersion: answer.taskStateVersion } : {}),
            // The text is already the tool's content; structured results carry the hits without it.
            results: answer.results.map(({ text: _text, ...r }) => r),
            ...(summaries ? { summaries: summaries.map(({ text: _text, ...s }) => s) } : {}),
            ...(granular ? { granular } : {}),
          },
        };
      }),
  );

  server.registerTool(
    'expand',
    {
      title: 'Expand an event, artifact or entity',
      description:
        'The full stored content behind a recall hit when its excerpt is not enough: an event, an artifact (a large tool output), ' +
        "a summary's sources, or what is known of an entity. Cut at maxTokens with a notice.",
      inputSchema: expandInput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args) =>
      run(async () => {
        if (isEntityTarget(args.id)) {
          return entityExpandResult(
            await view.knowledge.expand(args.id, {
              ...(args.aspect ? { aspect: args.aspect } : {}),
              ...(args.question ? { question: args.question } : {}),
              ...(args.maxTokens !== undefined ? { maxTokens: args.maxTokens } : {}),
            }),
          );
        }
        const { text, details } = await view.expand(args.id, args.maxTokens ?? DEFAULT_EXPAND_MAX_TOKENS);
        return { content: [{ type: 'text', text }], structuredContent: details };
      }),
  );

  server.registerTool(
    'get_task_state',
    {
      title: 'Get the task state card',
      description:
        "This session's task card (goals, constraints, open loops, next actions, key events, premises, phase): read it when you resume work or lose track.",
      inputSchema: z.object({}),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    () =>
      run(async () => {
        const sessionId = await session();
        const card = await view.getTaskState(sessionId);
        if (!card) {
          return {
            content: [{ type: 'text', text: `No task state yet for session ${sessionId}. Create one with update_task_state.` }],
            structuredContent: { sessionId, version: 0 },
          };
        }
        return cardResult(card, `Task state of session ${sessionId}, version ${card.version}:`);
      }),
  );

  server.registerTool(
    'update_task_state',
    {
      title: 'Update the task state card',
      description:
        "Change this session's task card when the goal, constraints, phase, open loops or next actions change; put the ids of events the task " +
        'depends on in keyEvents. Recall in the session is ranked by the card. Every version is kept.',
      inputSchema: updateTaskStateInput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (args) =>
      run(async () => {
        // Only shaped as an object here: the task-state store validates every field and names the bad one.
        const sessionId = await session();
        const card = await view.updateTaskState(sessionId, args.update as TaskStateUpdate);
        return cardResult(card, `Task state of session ${sessionId} is now version ${card.version}:`);
      }, { fieldPrefixes: { taskState: 'update' } }),
  );

  server.registerTool(
    'append_events',
    {
      title: 'Store events in memory',
      description:
        'Store turns of this session verbatim and in order (messages, tool calls and results, decisions, notes); large outputs become artifacts. ' +
        'An event whose key is already stored with the same content is not stored twice. Returns ids and turns.',
      inputSchema: appendEventsInput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    (args) =>
      run(async () => {
        // The ingestor takes unknown input and validates every event, naming the field (`events[2].kind`).
        const sessionId = await session();
        const outcomes = await view.append(sessionId, args.events);
        const events = outcomes.map((o) => ({
          id: o.record.id,
          turn: o.record.turn,
          isDuplicate: o.isDuplicate,
          ...(o.record.artifact ? { artifactId: o.record.artifact.id } : {}),
        }));
        const lines = events.map(
          (e) => `${e.id}  turn ${e.turn}${e.artifactId ? `  artifact ${e.artifactId}` : ''}${e.isDuplicate ? '  (already stored)' : ''}`,
        );
        return {
          content: [{ type: 'text', text: `Stored ${events.length} event(s) in session ${sessionId}:\n${lines.join('\n')}` }],
          structuredContent: { sessionId, events },
        };
      }),
  );

  const groups = options.tools ?? parseToolProfiles(undefined);
  if (groups.has('team')) {
    // The bus tools act as an agent: without one they could only refuse, so they are not listed.
    if (options.agent) registerBusTools(server, mem, { agent: options.agent, runId: options.runId ?? mem.bus.defaultRunId, canIssueGrants: options.canIssueGrants ?? false }, run);
    registerHierarchyTools(server, view, session, run);
  }
  if (groups.has('graph')) registerKnowledgeTools(server, view, run);

  server.registerResource(
    'task-state',
    new ResourceTemplate('engram://session/{id}/task-state', { list: undefined }),
    { title: 'Task state card', description: "A session's current task state card as JSON (null before the first update).", mimeType: 'application/json' },
    async (uri, variables) => {
      try {
        const card = await view.getTaskState(String(variables.id));
        const shown = principal.kind === 'agent' && !principal.isAdmin ? displaySessionIds(card, principal.project) : card;
        return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(shown, null, 2) }] };
      } catch (err) {
        throw resourceError(err, options.onServerFault);
      }
    },
  );

  return {
    server,
    settled: async () => {
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },
  };
}

/** A tool result with the project's own qualified session ids shown by their plain names. */
function displayResult(r: CallToolResult, project: string): CallToolResult {
  return {
    ...r,
    content: r.content.map((c) => (c.type === 'text' ? { ...c, text: displaySessionIdsInText(c.text, project) } : c)),
    ...(r.structuredContent !== undefined ? { structuredContent: displaySessionIds(r.structuredContent, project) } : {}),
  };
}

function cardResult(card: TaskStateVersion, title: string): CallToolResult {
  const structured = { sessionId: card.sessionId, version: card.version, state: card.state, eventId: card.eventId, producedByTurn: card.producedByTurn, ts: card.ts };
  return { content: [{ type: 'text', text: `${title}\n${JSON.stringify(card.state, null, 2)}` }], structuredContent: structured };
}
