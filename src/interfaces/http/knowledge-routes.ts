import { z } from 'zod';
import { EngramError } from '../../errors.js';
import { EDGE_TYPES, ENTITY_KINDS } from '../../model/graph.js';
import { DEFAULT_EXPAND_MAX_TOKENS } from '../../view/expand.js';
import { DEFAULT_ENTITY_LIST, MAX_ENTITY_LIST } from '../../consolidate/graph/knowledge-graph.js';
import { DEFAULT_MAX_DEPTH, DEFAULT_MIN_CONFIDENCE, MAX_IMPACT_DEPTH } from '../../consolidate/graph/impact.js';
import { DEFAULT_ENTITY_EXPAND_TOKENS } from '../../consolidate/graph/entity-expand.js';
import { MAX_BUILD_EVENTS_PER_REQUEST, MAX_BUILD_SESSION_IDS } from '../../view/graph-build-as.js';
import { defineRoute, type Route } from './route.js';

const entityRef = z.string().min(1).max(320).describe('An entity id (ent_...) or kind:name, e.g. `file:src/engine.ts`, `service:ledger`.');

const expandBody = z
  .object({
    id: z.string().min(1).max(200).optional().describe('An event id (evt_...) or artifact id (art_...), or a unique prefix, or a turn of a session (`<session>#<turn>`): its full content, as `POST /v1/expand`.'),
    entity: entityRef.optional(),
    aspect: z.string().min(1).max(100).optional().describe('Entity only: one group (`evidence`, an edge type, a group label such as `imported by`) or a topic word.'),
    question: z.string().min(1).max(1000).optional().describe('Entity only: lines sharing its words come first in each group.'),
    maxTokens: z
      .number()
      .int()
      .optional()
      .describe(`Budget of the answer by the store tokenizer. Default ${DEFAULT_EXPAND_MAX_TOKENS} for an id, ${DEFAULT_ENTITY_EXPAND_TOKENS} for an entity.`),
  })
  .strict();

const impactBody = z
  .object({
    entity: entityRef,
    direction: z.enum(['dependents', 'dependencies']).optional().describe('`dependents` (default): what breaks if it changes; `dependencies`: what it uses.'),
    minConfidence: z.number().min(0).max(1).optional().describe(`Edges below this confidence are not followed. Default ${DEFAULT_MIN_CONFIDENCE}.`),
    maxDepth: z.number().int().min(1).max(MAX_IMPACT_DEPTH).optional().describe(`Deepest level walked. Default ${DEFAULT_MAX_DEPTH}.`),
    commit: z.string().regex(/^[0-9a-f]{40}$|^[0-9a-f]{64}$/, 'a full commit sha (40 or 64 hex digits)').optional().describe('Code edges of this commit only (full sha); edges learned from sessions always count.'),
    types: z.array(z.enum(EDGE_TYPES)).min(1).optional().describe('Edge types followed. Default imports, calls, depends_on.'),
  })
  .strict();

const entitiesQuery = z.object({
  q: z.string().max(300).optional().describe('Part of the name (case-insensitive).'),
  kinds: z
    .string()
    .transform((s) => s.split(',').map((k) => k.trim()))
    .pipe(z.array(z.enum(ENTITY_KINDS)))
    .optional()
    .describe(`Comma-separated entity kinds: ${ENTITY_KINDS.join(', ')}.`),
  limit: z.coerce.number().int().min(1).max(MAX_ENTITY_LIST).optional().describe(`Most entities returned. Default ${DEFAULT_ENTITY_LIST}.`),
});

const buildBody = z
  .object({
    sessionIds: z
      .array(z.string().min(1).max(200))
      .min(1)
      .max(MAX_BUILD_SESSION_IDS)
      .optional()
      .describe('Only these sessions (each must be readable by the caller). Default: every session the caller may read (an admin: every session).'),
  })
  .strict();

/** The knowledge graph over HTTP (docs/knowledge.md): what the calling agent's project may read only. */
export const KNOWLEDGE_ROUTES: readonly Route[] = [
  defineRoute({
    method: 'get',
    path: '/v1/entities',
    operationId: 'listEntities',
    tag: 'knowledge',
    summary: 'Entities of the knowledge graph the caller may see, most cited first',
    query: entitiesQuery,
    success: { status: 200, description: '`{ entities: [{ id, kind, name, citations, firstSeen }] }`.' },
    errors: [400],
    handle: async ({ view, query }) => ({
      body: {
        entities: await view.knowledge.list({
          ...(query.q !== undefined ? { query: query.q } : {}),
          ...(query.kinds ? { kinds: query.kinds } : {}),
          ...(query.limit !== undefined ? { limit: query.limit } : {}),
        }),
      },
    }),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/memory/expand',
    operationId: 'memoryExpand',
    tag: 'knowledge',
    summary: 'Expand an event, an artifact or an entity',
    description:
      'With `id`: the full stored content of an event or artifact (as `POST /v1/expand`). With `entity`: a bounded block of what the ' +
      'knowledge graph knows about it, grouped by aspect (neighbours by edge type and direction, and the evidence), each line citing event ids or `repo:` pointers.',
    body: expandBody,
    success: { status: 200, description: 'For an id `{ text, details }`; for an entity `{ entity, text, groups, tokens, maxTokens, isTruncated }`.' },
    errors: [400, 404],
    handle: async ({ view, body }) => {
      if ((body.id === undefined) === (body.entity === undefined)) {
        throw new EngramError('INVALID_INPUT', 'entity: give either id (an event or artifact) or entity', { field: 'entity' });
      }
      if (body.id !== undefined) return { body: await view.expand(body.id, body.maxTokens ?? DEFAULT_EXPAND_MAX_TOKENS) };
      return {
        body: await view.knowledge.expand(body.entity!, {
          ...(body.aspect !== undefined ? { aspect: body.aspect } : {}),
          ...(body.question !== undefined ? { question: body.question } : {}),
          ...(body.maxTokens !== undefined ? { maxTokens: body.maxTokens } : {}),
        }),
      };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/v1/graph/impact',
    operationId: 'graphImpact',
    tag: 'knowledge',
    summary: 'Blast radius of an entity, grouped by depth (will break, likely affected, may need testing)',
    body: impactBody,
    success: { status: 200, description: '`{ entity, direction, minConfidence, maxDepth, groups: [{ depth, label, entities }], isTruncated }`.' },
    errors: [400, 404],
    handle: async ({ view, body }) => {
      const { entity, ...options } = body;
      return { body: await view.knowledge.impact(entity, options) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/v1/graph/build',
    operationId: 'graphBuild',
    tag: 'knowledge',
    summary: 'Extract entities and edges from the events not read yet (incremental), over the sessions the caller may read',
    description:
      'Deterministic extraction (docs/knowledge.md) of each session\'s events after its cursor. An agent builds over the sessions its project owns or that ' +
      'are shared with it (a named session it may not read is 404), an admin over every session. The rows cite the events they came from, so each ' +
      'project sees only its own evidence. Code indexing (`engram graph build --code`) is not offered over HTTP: it reads a path on the server.',
    body: buildBody,
    success: {
      status: 200,
      description: `\`{ sessions, events, written: { entities, edges, citations }, isComplete }\`: sessions and events read, rows added; at most ${MAX_BUILD_EVENTS_PER_REQUEST} events per request, \`isComplete: false\` when more are left (call again).`,
    },
    errors: [400, 404],
    handle: async ({ view, body }) => ({ body: await view.buildGraph({ ...(body.sessionIds ? { sessionIds: body.sessionIds } : {}), maxEvents: MAX_BUILD_EVENTS_PER_REQUEST }) }),
  }),
];
