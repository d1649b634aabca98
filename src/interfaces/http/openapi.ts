import { z } from 'zod';
import { ERROR_CODES } from '../../errors.js';
import { ENGRAM_SESSION_HEADER, ENGRAM_TOOLS_HEADER } from './mcp-endpoint.js';
import type { Route } from './route.js';

const STATUS_TEXT: Record<number, string> = {
  400: 'Invalid input: `error.data.field` names the offending field.',
  401: 'Missing, unknown or revoked bearer token.',
  403: 'The agent may not do this.',
  404: 'No such session, event or artifact.',
  409: 'Conflict: a name taken, an idempotency key reused with other content, or a concurrent writer won.',
  413: 'The request body is larger than the server accepts.',
  422: 'A budget cannot be met (a window too small for the task card, an agent message over its budgets): `error.data` says which and what to resend.',
  500: 'A server fault; details are in the server log.',
  503: 'The store is temporarily unavailable; retry after `Retry-After` seconds.',
};

/** JSON Schema (2020-12, as OpenAPI 3.1 uses) of what a client sends. */
function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
}

/** Output shapes are documented as the server produces them. */
function outputSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
}

function parameters(schema: z.ZodObject | undefined, where: 'path' | 'query'): unknown[] {
  if (!schema) return [];
  const json = jsonSchema(schema) as { properties?: Record<string, Record<string, unknown>>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, prop]) => {
    const { description, ...propSchema } = prop;
    return {
      name,
      in: where,
      required: where === 'path' || (json.required ?? []).includes(name),
      ...(typeof description === 'string' ? { description } : {}),
      schema: propSchema,
    };
  });
}

function errorResponses(statuses: number[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const status of [...new Set([...statuses, 401, 500])].sort((a, b) => a - b)) {
    out[String(status)] = {
      description: STATUS_TEXT[status] ?? 'Error',
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    };
  }
  return out;
}

/**
 * The OpenAPI 3.1 document of the HTTP API, built from the same route table and zod schemas the server
 * validates with, plus `/healthz` and `/mcp`, which the app serves outside the table.
 */
export function buildOpenApiDocument(routes: readonly Route[], info: { version: string; serverUrl?: string }): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const add = (path: string, method: string, operation: Record<string, unknown>) => {
    (paths[path] ??= {})[method] = operation;
  };
  for (const r of routes) {
    add(r.path, r.method, {
      operationId: r.operationId,
      tags: [r.tag],
      summary: r.summary,
      ...(r.description ? { description: r.description } : {}),
      parameters: [
        ...parameters(r.params, 'path'),
        ...parameters(r.query, 'query'),
        ...(r.headers ?? []).map((h) => ({ name: h.name, in: 'header', required: false, description: h.description, schema: { type: 'string' } })),
      ],
      ...(r.body
        ? {
            requestBody: {
              required: true,
              content: {
                'application/json': { schema: jsonSchema(r.body) },
                ...(r.acceptsText ? { 'text/plain': { schema: { type: 'string', description: 'The message itself (YAML or JSON), as `message` in the JSON form.' } } } : {}),
              },
            },
          }
        : {}),
      responses: {
        [String(r.success.status)]: {
          description: r.success.description,
          content: { 'application/json': { schema: r.success.schema ? outputSchema(r.success.schema) : { type: 'object' } } },
        },
        ...errorResponses(r.errors),
      },
    });
  }
  add('/v1/openapi.json', 'get', {
    operationId: 'openapi',
    tags: ['meta'],
    summary: 'This document',
    responses: { '200': { description: 'The OpenAPI 3.1 document.', content: { 'application/json': { schema: { type: 'object' } } } }, ...errorResponses([]) },
  });
  add('/v1/dashboard/stream', 'get', {
    operationId: 'dashboardStream',
    tags: ['dashboard'],
    summary: 'Live updates for the dashboard (server-sent events; read it with fetch so the token stays in the Authorization header)',
    description: 'Events: `ready`, then `bus` (a LESS telemetry event the caller may see: an engram put, a deref, a grant, a rejection) and `sessions` (session activity changed). Ends after 10 minutes; reconnect.',
    responses: { '200': { description: 'text/event-stream', content: { 'text/event-stream': { schema: { type: 'string' } } } }, ...errorResponses([]) },
  });
  add('/healthz', 'get', {
    operationId: 'health',
    tags: ['meta'],
    summary: 'Whether the server and its store answer (no token needed)',
    security: [],
    responses: {
      '200': { description: '`{ ok: true, backend }`', content: { 'application/json': { schema: { type: 'object' } } } },
      '503': { description: 'The store does not answer.', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
    },
  });
  add('/mcp', 'post', {
    operationId: 'mcp',
    tags: ['mcp'],
    summary: 'MCP over Streamable HTTP (stateless, JSON responses)',
    description:
      `JSON-RPC messages of the Model Context Protocol. The tools listed are the profile named by the \`${ENGRAM_TOOLS_HEADER}\` header or the \`tools\` ` +
      `query parameter: core (default: recall, expand, get_task_state, update_task_state, append_events), team (core, the hierarchy tools and ` +
      `the Engram Bus tools less_put_engram, less_query_engrams, less_request_deref, less_deref_pointer, less_issue_grant (parents only)), ` +
      `graph (core and impact, entities, graph_build), all, or several joined by commas. The bus tools act as the authenticated agent; run-scoped engrams belong to the run named by the \`X-Engram-Run\` header or \`run\` query parameter. ` +
      `The tools work for the session named by the \`${ENGRAM_SESSION_HEADER}\` header or the \`session\` query parameter, default the agent's name.`,
    parameters: [
      { name: ENGRAM_SESSION_HEADER, in: 'header', required: false, schema: { type: 'string' } },
      { name: 'session', in: 'query', required: false, schema: { type: 'string' } },
      { name: 'X-Engram-Run', in: 'header', required: false, schema: { type: 'string' } },
      { name: 'run', in: 'query', required: false, schema: { type: 'string' } },
      { name: ENGRAM_TOOLS_HEADER, in: 'header', required: false, schema: { type: 'string' } },
      { name: 'tools', in: 'query', required: false, schema: { type: 'string' } },
    ],
    requestBody: { required: true, content: { 'application/json': { schema: { type: 'object' } } } },
    responses: {
      '200': { description: 'JSON-RPC response(s).', content: { 'application/json': { schema: { type: 'object' } } } },
      '202': { description: 'Notifications accepted.' },
      ...errorResponses([400, 413]),
    },
  });
  return {
    openapi: '3.1.0',
    info: {
      title: 'Engram HTTP API',
      version: info.version,
      description: 'Lossless memory and context engine for LLM agents. Every endpoint except /healthz needs `Authorization: Bearer <token>`.',
    },
    ...(info.serverUrl ? { servers: [{ url: info.serverUrl }] } : {}),
    security: [{ bearerAuth: [] }],
    paths,
    components: {
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'An agent token (`engram agent add NAME --role R`).' } },
      schemas: {
        Error: {
          type: 'object',
          required: ['error'],
          properties: {
            error: {
              type: 'object',
              required: ['code', 'message', 'data'],
              properties: {
                code: { type: 'string', enum: [...ERROR_CODES] },
                message: { type: 'string' },
                data: { type: 'object', description: '`field` names the offending input field, when there is one.' },
              },
            },
          },
        },
      },
    },
  };
}
