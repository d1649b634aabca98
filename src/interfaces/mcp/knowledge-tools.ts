import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { EDGE_TYPES, ENTITY_ID_PREFIX, ENTITY_KINDS } from '../../model/graph.js';
import { DEFAULT_MAX_DEPTH, DEFAULT_MIN_CONFIDENCE, formatImpact, MAX_IMPACT_DEPTH } from '../../consolidate/graph/impact.js';
import type { EntityExpandAnswer } from '../../consolidate/graph/entity-expand.js';
import type { EngramView } from '../../view/engram-view.js';
import type { ToolErrorOptions } from './errors.js';
import { MAX_BUILD_EVENTS_PER_REQUEST, MAX_BUILD_SESSION_IDS } from '../../view/graph-build-as.js';

type Run = (fn: () => Promise<CallToolResult>, errorOptions?: ToolErrorOptions) => Promise<CallToolResult>;

/** Whether an `expand` id names an entity (an `ent_` id or `kind:name`) rather than an event or artifact. */
export function isEntityTarget(id: string): boolean {
  const colon = id.indexOf(':');
  return id.startsWith(ENTITY_ID_PREFIX) || (colon > 0 && (ENTITY_KINDS as readonly string[]).includes(id.slice(0, colon)));
}

/** The `expand` tool's answer for an entity. */
export function entityExpandResult(answer: EntityExpandAnswer): CallToolResult {
  const { text, ...rest } = answer;
  return { content: [{ type: 'text', text }], structuredContent: rest as unknown as Record<string, unknown> };
}

const impactInput = z.object({
  entity: z.string().describe('An entity id (ent_...) or kind:name, e.g. file:src/engine.ts or service:ledger (list them with the entities tool).'),
  direction: z.enum(['dependents', 'dependencies']).optional().describe('dependents (default): what breaks if it changes; dependencies: what it uses.'),
  minConfidence: z.number().min(0).max(1).optional().describe(`Edges below this confidence are not followed. Default ${DEFAULT_MIN_CONFIDENCE}.`),
  maxDepth: z.number().int().min(1).max(MAX_IMPACT_DEPTH).optional().describe(`Deepest level. Default ${DEFAULT_MAX_DEPTH}.`),
  commit: z.string().optional().describe('Code edges of this commit only (full sha).'),
  types: z.array(z.enum(EDGE_TYPES)).optional().describe('Edge types followed. Default imports, calls, depends_on.'),
});

const entitiesInput = z.object({
  query: z.string().optional().describe('Part of the name (case-insensitive).'),
  kinds: z.array(z.enum(ENTITY_KINDS)).optional(),
  limit: z.number().int().min(1).max(500).optional().describe('Default 50.'),
});

const buildInput = z.object({
  sessionIds: z.array(z.string()).max(MAX_BUILD_SESSION_IDS).optional().describe('Only these sessions. Default: every session you may read.'),
});

/** MCP tools of the knowledge graph: `impact`, `entities` and `graph_build` (`expand` takes entities too, see server.ts). */
export function registerKnowledgeTools(server: McpServer, view: EngramView, run: Run): void {
  server.registerTool(
    'impact',
    {
      title: 'Blast radius of a file, symbol or service',
      description:
        'What will break (depth 1), is likely affected (2) or may need testing (3+) if this entity changes, from the code graph of the repository ' +
        'and from dependencies learned in sessions; each entry cites the import line (repo: pointer) or the event that said so.',
      inputSchema: impactInput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args) =>
      run(async () => {
        const { entity, ...options } = args;
        const answer = await view.knowledge.impact(entity, options);
        return { content: [{ type: 'text', text: formatImpact(answer) }], structuredContent: answer as unknown as Record<string, unknown> };
      }),
  );
  server.registerTool(
    'entities',
    {
      title: 'List known entities',
      description: 'Entities of the knowledge graph (files, symbols, services, commands, people, projects, errors, decisions), most cited first.',
      inputSchema: entitiesInput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args) =>
      run(async () => {
        const entities = await view.knowledge.list({ ...(args.query ? { query: args.query } : {}), ...(args.kinds ? { kinds: args.kinds } : {}), ...(args.limit ? { limit: args.limit } : {}) });
        const text = entities.length === 0 ? 'No entities match.' : entities.map((e) => `${e.id}  ${e.kind}:${e.name}  (${e.citations} citations)`).join('\n');
        return { content: [{ type: 'text', text }], structuredContent: { entities } };
      }),
  );
  server.registerTool(
    'graph_build',
    {
      title: 'Update the knowledge graph',
      description:
        'Extracts entities and typed edges from the events of your sessions not read yet (incremental; deterministic extraction), so that ' +
        'expand, impact and entities know about recent work. Sessions you may read only; each row cites its events.',
      inputSchema: buildInput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    (args) =>
      run(async () => {
        const report = await view.buildGraph({ ...(args.sessionIds ? { sessionIds: args.sessionIds } : {}), maxEvents: MAX_BUILD_EVENTS_PER_REQUEST });
        const w = report.written;
        const more = report.isComplete ? '' : ` More events are left (at most ${MAX_BUILD_EVENTS_PER_REQUEST} per call): call graph_build again.`;
        const text = `${report.events} new events of ${report.sessions} sessions read; ${w.entities} entities, ${w.edges} edges, ${w.citations} citations added.${more}`;
        return { content: [{ type: 'text', text }], structuredContent: report as unknown as Record<string, unknown> };
      }),
  );
}
