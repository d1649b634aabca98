import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { cors } from 'hono/cors';
import type { ZodType } from 'zod';
import type { Engram } from '../../engine.js';
import { EngramError, invalidInputFromZod } from '../../errors.js';
import type { AgentRecord } from '../../model/agent.js';
import { jsonTextProblem } from '../../model/limits.js';
import { agentPrincipal, DEFAULT_PROJECT } from '../../model/access.js';
import { displaySessionIds } from '../../model/session-names.js';
import { toHttpError } from './errors.js';
import { ENGRAM_RUN_HEADER } from '../shared/bus.js';
import { ENGRAM_SESSION_HEADER, ENGRAM_TOOLS_HEADER, handleMcpRequest } from './mcp-endpoint.js';
import { buildOpenApiDocument } from './openapi.js';
import type { Route } from './route.js';
import { ROUTES } from './routes.js';
import { mountDashboard } from './dashboard-serve.js';
import { hostCheck, type HostCheckOptions } from './host-check.js';

import { DEFAULT_MAX_BODY_BYTES } from './defaults.js';
import { readBodyText } from './body-text.js';

export { DEFAULT_MAX_BODY_BYTES };

export interface HttpAppOptions extends HostCheckOptions {
  /** Reported in the OpenAPI document and to MCP clients. */
  version: string;
  /** Largest request body accepted, in bytes; larger ones get 413 PAYLOAD_TOO_LARGE. Default {@link DEFAULT_MAX_BODY_BYTES}. */
  maxBodyBytes?: number;
  /** Allow cross-origin requests from this origin (e.g. a dashboard). Default: no CORS headers at all. */
  corsOrigin?: string;
  /** Where server faults are reported (their details never reach the client). Default: stderr. */
  log?: (line: string) => void;
}

type Env = { Variables: { agent: AgentRecord } };

export interface EngramHttpApp {
  app: Hono<Env>;
  /** Resolves once no request is being handled (used by graceful shutdown, so no write is cut off). */
  settled(): Promise<void>;
}

/**
 * The HTTP API as a Hono app: bearer-token authentication, a body size limit, the `/v1` route table, MCP over
 * Streamable HTTP at `/mcp`, and `/healthz`. Thin: parse and validate, call the engine, map errors in
 * errors.ts. Validation happens before anything is written, so a refused request stores nothing.
 */
export function createHttpApp(mem: Engram, options: HttpAppOptions): EngramHttpApp {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  if (!Number.isInteger(maxBodyBytes) || maxBodyBytes < 1) {
    throw new EngramError('INVALID_INPUT', 'maxBodyBytes: must be a positive whole number of bytes', { field: 'maxBodyBytes' });
  }
  const app = new Hono<Env>();
  const inFlight = new Set<Promise<void>>();

  const fail = (c: Context, err: unknown): Response => {
    const e = toHttpError(err);
    if (e.isServerFault) log(`engram serve: ${c.req.method} ${c.req.path} -> ${e.status}: ${describe(err)}`);
    // Errors name sessions too: an agent sees its project's own by their plain names (model/session-names.ts).
    const agent = (c as Context<Env>).get('agent') as AgentRecord | undefined;
    const body = agent !== undefined && !agent.isAdmin ? displaySessionIds(e.body, agent.project ?? DEFAULT_PROJECT) : e.body;
    return c.json(body, e.status as 400, e.headers);
  };

  app.use('*', async (c, next) => {
    const done = next();
    inFlight.add(done);
    try {
      await done;
    } finally {
      inFlight.delete(done);
    }
  });
  // Before anything else, on every route (host-check.ts): a CORS origin is one the server's owner allowed.
  app.use(
    '*',
    hostCheck({
      ...(options.allowedHosts !== undefined ? { allowedHosts: options.allowedHosts } : {}),
      allowedOrigins: [...(options.allowedOrigins ?? []), ...(options.corsOrigin !== undefined ? [options.corsOrigin] : [])],
    }),
  );
  if (options.corsOrigin !== undefined) {
    app.use(
      '*',
      cors({
        origin: options.corsOrigin,
        allowHeaders: ['Authorization', 'Content-Type', ENGRAM_SESSION_HEADER, ENGRAM_RUN_HEADER, ENGRAM_TOOLS_HEADER, 'Mcp-Protocol-Version', 'Mcp-Session-Id', 'Last-Event-ID'],
        allowMethods: ['GET', 'POST', 'PUT', 'DELETE', 'OPTIONS'],
        exposeHeaders: ['Mcp-Session-Id', 'Retry-After'],
        maxAge: 600,
      }),
    );
  }
  app.use(
    '*',
    limitBody(maxBodyBytes, (c) =>
      fail(c, new EngramError('PAYLOAD_TOO_LARGE', `body: larger than the ${maxBodyBytes} bytes this server accepts; send smaller batches`, { field: 'body', maxBytes: maxBodyBytes })),
    ),
  );

  app.get('/healthz', async (c) => {
    try {
      await mem.listSessions({ limit: 1 });
      return c.json({ ok: true, backend: mem.store.name });
    } catch (err) {
      log(`engram serve: /healthz: the store does not answer: ${describe(err)}`);
      return c.json({ error: { code: 'STORAGE_ERROR', message: 'the store does not answer', data: {} } }, 503);
    }
  });

  const authenticate = async (c: Context<Env>, next: () => Promise<void>) => {
    const header = c.req.header('Authorization');
    const match = header === undefined ? null : /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
    if (header !== undefined && !match) throw new EngramError('UNAUTHENTICATED', 'Authorization: expected "Bearer <token>"');
    c.set('agent', await mem.agents.authenticate(match?.[1]));
    await next();
  };
  app.use('/v1/*', authenticate);
  app.use('/mcp', authenticate);

  for (const route of ROUTES) app.on(route.method.toUpperCase(), honoPath(route.path), (c) => serveRoute(mem, route, c));
  let openapi: Record<string, unknown> | undefined;
  app.get('/v1/openapi.json', (c) => c.json((openapi ??= buildOpenApiDocument(ROUTES, { version: options.version }))));
  app.all('/mcp', (c) => handleMcpRequest(mem, c.get('agent'), c.req.raw, { version: options.version, maxBodyBytes, log }));
  const dashboard = mountDashboard(app, mem);

  app.notFound((c) => fail(c, new EngramError('NOT_FOUND', `no endpoint ${c.req.method} ${c.req.path}; see GET /v1/openapi.json`, { field: 'path' })));
  app.onError((err, c) => fail(c, err));

  return {
    app,
    settled: async () => {
      dashboard.closeStreams();
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },
  };
}

async function serveRoute(mem: Engram, route: Route, c: Context<Env>): Promise<Response> {
  const agent = c.get('agent');
  if (route.isAdminOnly && !agent.isAdmin) {
    throw new EngramError('FORBIDDEN', `${route.method.toUpperCase()} ${route.path}: only admin agents may do this; ${agent.name} is not one`, { agent: agent.name });
  }
  const params = route.params ? parse(route.params, c.req.param()) : undefined;
  const query = route.query ? parse(route.query, c.req.query()) : undefined;
  const body = route.body ? parse(route.body, route.acceptsText && isTextBody(c) ? { message: await readBodyText(c.req.raw) } : await readJson(c)) : undefined;
  const principal = agentPrincipal(agent);
  const view = mem.viewAs(principal);
  const result = await route.handle({ mem, agent, view, params, query, body, header: (name) => c.req.header(name) });
  // An agent sees its project's own sessions by the names it gives them (model/session-names.ts).
  const answer = principal.kind === 'agent' && !principal.isAdmin ? displaySessionIds(result.body, principal.project) : result.body;
  return c.json(answer as object, (result.status ?? route.success.status) as 200);
}

function parse(schema: ZodType, value: unknown): unknown {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw invalidInputFromZod(parsed.error.issues);
  return parsed.data;
}

/** Bodies longer than this (characters) give way to other requests once parsed. */
const LARGE_BODY_CHARS = 256 * 1024;

/** A body sent as text (an agent message in YAML or JSON, as written) rather than as a JSON request object. */
function isTextBody(c: Context): boolean {
  const type = (c.req.header('Content-Type') ?? '').split(';')[0]!.trim().toLowerCase();
  return type === 'text/plain' || type === 'text/yaml' || type === 'application/yaml' || type === 'application/x-yaml';
}

/**
 * The body as JSON. Another declared media type is refused with 415 (a form or `text/plain` post is not what the
 * caller meant, and browsers send those cross-origin without asking); a missing one is read as JSON. The text is
 * scanned before parsing, since parsing is what an adversarial body makes slow (model/limits.ts).
 */
async function readJson(c: Context): Promise<unknown> {
  const type = (c.req.header('Content-Type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== '' && type !== 'application/json' && !type.endsWith('+json')) {
    throw new EngramError('UNSUPPORTED_MEDIA_TYPE', `Content-Type: ${type} is not accepted here; send the body as application/json`, {
      field: 'Content-Type',
      contentType: type,
      accepted: ['application/json'],
    });
  }
  const text = await readBodyText(c.req.raw);
  if (text.trim().length === 0) throw new EngramError('INVALID_INPUT', 'body: expected a JSON object, got an empty body', { field: 'body' });
  const problem = jsonTextProblem(text);
  if (problem) throw new EngramError('INVALID_INPUT', `body: ${problem.message}`, { field: 'body', ...problem.params });
  try {
    const value = JSON.parse(text) as unknown;
    // Reading and parsing a large body is one block of work; validating and storing it another: let other
    // requests run in between (bench/results/adversarial.md).
    if (text.length > LARGE_BODY_CHARS) await new Promise((resolve) => setImmediate(resolve));
    return value;
  } catch (err) {
    throw new EngramError('INVALID_INPUT', `body: malformed JSON (${(err as Error).message})`, { field: 'body' });
  }
}

/**
 * Refuses a body over `maxBytes` before any handler reads it: at once when Content-Length says so, else while
 * reading a chunked body (which is then handed on buffered). The same logic as `hono/body-limit`, which
 * rebuilds the request with `new Request(c.req.raw)`: that fails on the Node adaptor's request objects unless
 * the adaptor replaces the global Request class, which a library must not do to its host process.
 */
function limitBody(maxBytes: number, onTooLarge: (c: Context) => Response): MiddlewareHandler {
  return async (c, next) => {
    const raw = c.req.raw;
    // Headers first: touching `raw.body` makes the Node adaptor build a web-stream Request, and the body is then
    // read through it instead of straight from the socket (~7 % of the server's CPU under bench/http-load.ts).
    if (raw.method === 'GET' || raw.method === 'HEAD') return next();
    const declared = raw.headers.get('content-length');
    if (declared !== null && !raw.headers.has('transfer-encoding')) return Number(declared) > maxBytes ? onTooLarge(c) : next();
    if (!raw.body) return next();
    const chunks: Uint8Array[] = [];
    let size = 0;
    const reader = raw.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await reader.cancel();
        return onTooLarge(c);
      }
      chunks.push(value);
    }
    c.req.raw = new Request(raw.url, { method: raw.method, headers: raw.headers, body: Buffer.concat(chunks) });
    return next();
  };
}

/** `/v1/sessions/{sessionId}` -> `/v1/sessions/:sessionId`. */
function honoPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}

function describe(err: unknown): string {
  if (err instanceof EngramError) return `${err.code}: ${err.message}`;
  return err instanceof Error ? (err.stack ?? err.message) : String(err);
}
