import type { z } from 'zod';
import type { Engram } from '../../engine.js';
import type { AgentRecord } from '../../model/agent.js';
import type { EngramView } from '../../view/engram-view.js';

export type HttpMethod = 'get' | 'post' | 'put' | 'delete';

/** What a handler gets: the engine, the calling agent, and its inputs, already validated. */
export interface RouteContext<P, Q, B> {
  mem: Engram;
  agent: AgentRecord;
  /** The engine as this agent may use it: every session read and write goes through it (model/access.ts). */
  view: EngramView;
  params: P;
  query: Q;
  body: B;
  /** A request header (case-insensitive name), for the few routes that read one (`X-Engram-Run`). */
  header(name: string): string | undefined;
}

export interface RouteResult {
  /** Default: the route's success status. */
  status?: number;
  body: unknown;
}

/**
 * One HTTP endpoint, described once: the app serves it and the OpenAPI document is generated from it, so the
 * document cannot drift from what is validated.
 */
export interface Route {
  method: HttpMethod;
  /** OpenAPI form, `/v1/sessions/{sessionId}/events`. */
  path: string;
  operationId: string;
  tag: string;
  summary: string;
  description?: string;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  /** Request headers the route reads, for the OpenAPI document. */
  headers?: Array<{ name: string; description: string }>;
  /**
   * The body may also be plain text (`text/plain`, `application/yaml`): it is then validated as `{ message: <text> }`.
   * Any other content type is parsed as JSON.
   */
  acceptsText?: boolean;
  success: { status: number; description: string; schema?: z.ZodType };
  /** Statuses this route answers with the error shape, besides 401 and 500, which every route can. */
  errors: number[];
  /** Only agents with `isAdmin` may call it (others get 403 FORBIDDEN). */
  isAdminOnly?: boolean;
  handle(ctx: RouteContext<unknown, unknown, unknown>): Promise<RouteResult>;
}

type Out<T> = T extends z.ZodType ? z.output<T> : undefined;

/** Declares a route with its handler typed by its own schemas. */
export function defineRoute<P extends z.ZodObject | undefined = undefined, Q extends z.ZodObject | undefined = undefined, B extends z.ZodType | undefined = undefined>(
  spec: Omit<Route, 'handle' | 'params' | 'query' | 'body'> & {
    params?: P;
    query?: Q;
    body?: B;
    handle(ctx: RouteContext<Out<P>, Out<Q>, Out<B>>): Promise<RouteResult>;
  },
): Route {
  return spec as unknown as Route;
}
