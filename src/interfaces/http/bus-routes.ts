import { z } from 'zod';
import { AGENT_MESSAGE_DIRECTIONS } from '../../bus/messages/index.js';
import { MAX_QUERY_K } from '../../bus/engram-bus.js';
import { MAX_GRANT_TTL_MS } from '../../bus/budget-enforcer.js';
import { MAX_DEREF_MAX_TOKENS } from '../../bus/resolvers/pointer-resolver.js';
import { ENGRAM_KINDS, ENGRAM_SCOPES, engramSchema } from '../../model/engram.js';
import { pointerSchema, type Pointer } from '../../model/pointer.js';
import { EngramError, isEngramError } from '../../errors.js';
import {
  derefAnswer,
  engramHit,
  ENGRAM_RUN_HEADER,
  issuedGrantAnswer,
  resolveRunId,
  runIdSchema,
  validateMessageFor,
} from '../shared/bus.js';
import { defineRoute, type Route, type RouteContext } from './route.js';

/**
 * The Engram Bus over HTTP (PAS Bus §6, LESS §4.2): engrams, pointer derefs, grants, agent message
 * validation, the SharedBriefMicro, contradictions, telemetry metrics and the deref budget meter. The caller is
 * always the authenticated agent; no body field names an agent to act as. Wire names are the seed's
 * (`content_digest`, `budget_token`, `max_tokens`, `cap_tokens`), so bus bodies are snake_case throughout.
 */

/** A body the engine validates itself (naming the field), documented with `precise`'s JSON Schema. */
function validatedByEngine(precise: z.ZodType, description: string) {
  const { $schema: _unused, ...json } = z.toJSONSchema(precise, { io: 'input' }) as Record<string, unknown>;
  return z.record(z.string(), z.unknown()).meta({ ...json, description });
}

/** A comma-separated list in a query parameter. */
const commaList = <T extends z.ZodType<unknown, string>>(item: T, description: string) =>
  z
    .string()
    .transform((s) => s.split(',').map((v) => v.trim()).filter((v) => v.length > 0))
    .pipe(z.array(item).max(64))
    .describe(description);

const runParam = runIdSchema.optional().describe(`The run that run-scoped engrams belong to (or the \`${ENGRAM_RUN_HEADER}\` header). Default \`default\`.`);
const runHeader = [{ name: ENGRAM_RUN_HEADER, description: 'The run that run-scoped engrams belong to; wins over `?run=`. Default `default`.' }];
const kParam = z.coerce.number().int().min(1).max(MAX_QUERY_K).optional().describe(`Most engrams (1-${MAX_QUERY_K}). Default 10.`);
const kindsParam = commaList(z.enum(ENGRAM_KINDS), `Comma-separated engram kinds: ${ENGRAM_KINDS.join(', ')}.`).optional();
const idParams = z.object({ id: z.string().min(1).max(200).describe('The engram id (eng_...).') });
const pointerOrRef = z
  .union([z.string().min(1), z.record(z.string(), z.unknown()).meta({ ...pointerJson(), description: 'A pointer object.' })])
  .describe('The pointer: a ref (`repo:src/a.ts#L10-L20@<commit>`) or a pointer object `{ type, ref }`.');

function pointerJson(): Record<string, unknown> {
  const { $schema: _unused, ...json } = z.toJSONSchema(pointerSchema, { io: 'input' }) as Record<string, unknown>;
  return json;
}

const engramHitSchema = z.object({
  engram: z.record(z.string(), z.unknown()),
  project: z.string().nullable(),
  run: z.string(),
  matched_keys: z.number().int(),
  similarity: z.number().optional(),
  expires_at: z.string(),
  is_contradiction: z.boolean(),
});
const usageSchema = z.object({ counts: z.record(z.string(), z.number().int()), tokens: z.number().int() });

const runOf = (ctx: RouteContext<unknown, { run?: string | undefined } | undefined, unknown>): string =>
  resolveRunId(ctx.mem, ctx.header(ENGRAM_RUN_HEADER), ctx.query?.run);

/** The same error with its `field` (and the field's name at the start of its message) renamed. */
function renameField(err: unknown, from: string, to: string): unknown {
  if (!isEngramError(err) || err.data.field !== from) return err;
  const message = err.message.startsWith(from) ? `${to}${err.message.slice(from.length)}` : err.message;
  return new EngramError(err.code, message, { ...err.data, field: to }, { cause: err });
}

export const BUS_ROUTES: readonly Route[] = [
  defineRoute({
    method: 'post',
    path: '/v1/engram',
    operationId: 'putEngram',
    tag: 'bus',
    summary: 'Store an engram written by the calling agent',
    description:
      'The body is an engram v0.1 object (PAS Bus §4.1); `id` and `provenance` may be left out and are filled in (`created_by` is always ' +
      'the calling agent). Rejected: no pointers, a pointer without a resolvable format (a repo pointer needs its commit), a claim over the ' +
      'limit, unknown fields (400 naming the field); a scope the agent may not write (403 SCOPE_DENIED); more engrams per minute than ' +
      'allowed (422 BUDGET_EXCEEDED, `error.data.retryAfterMs`). A near-identical claim on the same pointers is stored once: the stored ' +
      'one is returned with `status: "duplicate"` and 200.',
    query: z.object({ run: runParam }),
    headers: runHeader,
    body: validatedByEngine(engramSchema.partial({ id: true, provenance: true }), 'An engram v0.1 object; id and provenance are optional.'),
    success: { status: 201, description: '`{ status: "stored" | "duplicate", engram }` (200 for a duplicate).' },
    errors: [400, 403, 413, 422],
    handle: async (ctx) => {
      const out = await ctx.mem.bus.engrams.put(ctx.agent, ctx.body, runOf(ctx));
      return { status: out.status === 'stored' ? 201 : 200, body: out };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/v1/engram/query',
    operationId: 'queryEngrams',
    tag: 'bus',
    summary: 'Engrams for hash keys and/or text, visible to the calling agent, ranked',
    description:
      'Hash-key recall (keys as given plus the keys of `text`), ranked by matched keys, then scope, recency, confidence and pointer overlap; ' +
      'reranked by embedding similarity to `text` when the server has an embedder. Only live engrams of the agent\'s project (run scope: ' +
      'of this run), plus org/global ones.',
    query: z.object({
      keys: commaList(z.string().min(1).max(80), 'Comma-separated hash keys (`service:gateway,t:pool`).').optional(),
      text: z.string().min(1).max(2000).optional().describe('Free text: its tokens and n-grams become keys, and it drives the rerank.'),
      k: kParam,
      kinds: kindsParam,
      scopes: commaList(z.enum(ENGRAM_SCOPES), `Comma-separated scopes: ${ENGRAM_SCOPES.join(', ')}.`).optional(),
      run: runParam,
    }),
    headers: runHeader,
    success: { status: 200, description: '`{ engrams, candidates }`', schema: z.object({ engrams: z.array(engramHitSchema), candidates: z.number().int() }) },
    errors: [400],
    handle: async (ctx) => {
      const q = ctx.query;
      const out = await ctx.mem.bus.engrams.query(
        ctx.agent,
        {
          ...(q.keys ? { keys: q.keys } : {}),
          ...(q.text !== undefined ? { text: q.text } : {}),
          ...(q.k !== undefined ? { k: q.k } : {}),
          ...(q.kinds ? { kinds: q.kinds } : {}),
          ...(q.scopes ? { scopes: q.scopes } : {}),
        },
        runOf(ctx),
      );
      return { body: { engrams: out.engrams.map(engramHit), candidates: out.candidates } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/v1/engram/query_by_embedding',
    operationId: 'queryEngramsByEmbedding',
    tag: 'bus',
    summary: 'Engrams nearest in meaning to a text or to another engram',
    description: 'Needs an embedder on the server (`engram serve --embedder`). Give `embedding_ref` (an engram id: its claim is compared) or `text`.',
    query: z.object({
      embedding_ref: z.string().min(1).max(200).optional().describe('An engram id whose claim to compare with.'),
      text: z.string().min(1).max(2000).optional().describe('A text to compare with.'),
      k: kParam,
      kinds: kindsParam,
      run: runParam,
    }),
    headers: runHeader,
    success: { status: 200, description: '`{ engrams }`, each with its `similarity`.', schema: z.object({ engrams: z.array(engramHitSchema) }) },
    errors: [400, 404],
    handle: async (ctx) => {
      const q = ctx.query;
      if ((q.embedding_ref === undefined) === (q.text === undefined)) {
        throw new EngramError('INVALID_INPUT', 'embedding_ref: give either embedding_ref (an engram id) or text, one of them', { field: 'embedding_ref' });
      }
      try {
        const engrams = await ctx.mem.bus.engrams.queryByEmbedding(
          ctx.agent,
          {
            ...(q.embedding_ref !== undefined ? { engramId: q.embedding_ref } : {}),
            ...(q.text !== undefined ? { text: q.text } : {}),
            ...(q.k !== undefined ? { k: q.k } : {}),
            ...(q.kinds ? { kinds: q.kinds } : {}),
          },
          runOf(ctx),
        );
        return { body: { engrams: engrams.map(engramHit) } };
      } catch (err) {
        throw renameField(err, 'engram_ref', 'embedding_ref');
      }
    },
  }),
  defineRoute({
    method: 'get',
    path: '/v1/engram/{id}',
    operationId: 'getEngram',
    tag: 'bus',
    summary: 'One live engram visible to the calling agent',
    params: idParams,
    query: z.object({ run: runParam }),
    headers: runHeader,
    success: { status: 200, description: 'The engram with its project, run, expiry and whether it is a contradiction.', schema: engramHitSchema },
    errors: [400, 404],
    handle: async (ctx) => ({ body: engramHit(await ctx.mem.bus.engrams.get(ctx.agent, ctx.params.id, runOf(ctx))) }),
  }),
  defineRoute({
    method: 'delete',
    path: '/v1/engram/{id}',
    operationId: 'removeEngram',
    tag: 'bus',
    summary: 'Remove an engram from every query (admins only); it stays stored',
    params: idParams,
    success: { status: 200, description: '`{ id, removed: true }`', schema: z.object({ id: z.string(), removed: z.literal(true) }) },
    errors: [403, 404],
    isAdminOnly: true,
    handle: async ({ mem, agent, params }) => {
      await mem.bus.engrams.remove(agent, params.id);
      return { body: { id: params.id, removed: true } };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/v1/engram/{id}/promote',
    operationId: 'promoteEngram',
    tag: 'bus',
    summary: 'Widen the scope of an engram (a parent of its writer, or an admin)',
    description: 'Promotion only widens (run -> project -> org -> global), needs the confidence floor, and org/global only where the store enables them.',
    params: idParams,
    body: z.object({ scope: z.enum(ENGRAM_SCOPES).describe('The new, wider scope.') }).strict(),
    success: { status: 200, description: '`{ engram }` with its new scope.' },
    errors: [400, 403, 404],
    handle: async ({ mem, agent, params, body }) => ({ body: { engram: await mem.bus.promote(agent, params.id, body.scope) } }),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/pointer/deref',
    operationId: 'derefPointer',
    tag: 'bus',
    summary: 'The content behind a pointer, within the calling agent\'s deref budget',
    description:
      'Counts against the budget of the agent\'s current turn (a turn ends with each message through POST /v1/messages/validate): by ' +
      'default 3 repository spans, 2 artifact sections, 2 event-store items and 1200 tokens. Past the budget the answer is 403 DEREF_DENIED ' +
      'unless `budget_token` is a grant from the agent\'s parent for exactly this pointer (single use). The answer carries the ' +
      '`content_digest` (sha256 of the excerpt) as proof of what was read.',
    body: z
      .object({
        pointer: pointerOrRef,
        max_tokens: z.number().int().min(1).max(MAX_DEREF_MAX_TOKENS).optional().describe('Longest excerpt in tokens. Default 400.'),
        budget_token: z.string().min(1).max(2000).optional().describe("A grant from the agent's parent (POST /v1/grants)."),
      })
      .strict(),
    success: {
      status: 200,
      description: 'The excerpt and its proof, the turn it counted against and the turn\'s usage.',
      schema: z.object({
        excerpt: z.string(),
        pointer: z.record(z.string(), z.unknown()),
        content_digest: z.string(),
        span_digest: z.string(),
        tokens: z.number().int(),
        is_truncated: z.boolean(),
        lines: z.object({ start: z.number().int(), end: z.number().int() }).optional(),
        turn: z.number().int(),
        usage: usageSchema,
        grant_id: z.string().optional(),
      }),
    },
    errors: [400, 403, 404],
    handle: async ({ mem, agent, body }) => {
      const out = await mem.bus.enforcer.deref(agent, {
        pointer: body.pointer as Pointer | string,
        ...(body.max_tokens !== undefined ? { maxTokens: body.max_tokens } : {}),
        ...(body.budget_token !== undefined ? { grant: body.budget_token } : {}),
      });
      return { body: derefAnswer(out) };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/v1/grants',
    operationId: 'issueGrant',
    tag: 'bus',
    summary: 'Grant a child one deref of one pointer beyond its budget (its parent only)',
    description: 'Returns a signed `budget_token` the child passes as `budget_token` to POST /v1/pointer/deref; it covers one deref of exactly this pointer, up to `cap_tokens`, until it expires.',
    body: z
      .object({
        child: z.string().min(1).max(64).describe('The child agent, by name or id.'),
        pointer: pointerOrRef,
        cap_tokens: z.number().int().min(1).max(MAX_DEREF_MAX_TOKENS).describe('Most tokens the deref may return.'),
        ttl_seconds: z.number().int().min(1).max(MAX_GRANT_TTL_MS / 1000).optional().describe('Lifetime in seconds. Default 3600.'),
      })
      .strict(),
    success: {
      status: 201,
      description: '`{ budget_token, grant }`',
      schema: z.object({
        budget_token: z.string(),
        grant: z.object({
          id: z.string(),
          parent_id: z.string(),
          child_id: z.string(),
          pointer: z.string(),
          cap_tokens: z.number().int(),
          issued_at: z.string(),
          expires_at: z.string(),
        }),
      }),
    },
    errors: [400, 403, 404],
    handle: async ({ mem, agent, body }) => {
      const out = issuedGrantAnswer(await mem.bus.issueGrantTo(agent, {
        child: body.child,
        pointer: body.pointer as Pointer | string,
        capTokens: body.cap_tokens,
        ...(body.ttl_seconds !== undefined ? { ttlSeconds: body.ttl_seconds } : {}),
      }));
      return { status: 201, body: { budget_token: out.budget_token, grant: out.grant } };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/v1/messages/validate',
    operationId: 'validateMessage',
    tag: 'bus',
    summary: "Check an agent message against its budgets (the gateway's validate_agent_message)",
    description:
      'The message (PAS Bus §7, YAML or JSON) as `text/plain`, or `{ message, direction }` as JSON (`message` may also be the message ' +
      'object itself). Over budget: 422 BUDGET_EXCEEDED whose `error.data` holds `violations` (limit, seed name, field, measured, allowed, ' +
      'instruction), `resend` (what a compliant resend must look like), `usage` and `turn`; resend as engrams + pointers. Each message, ' +
      "accepted or not, starts the agent's next turn (and with it a fresh deref budget).",
    query: z.object({ direction: z.enum(AGENT_MESSAGE_DIRECTIONS).optional().describe('For a text body: the contract to check. Default: detected from the sections.') }),
    body: z
      .object({
        message: z.union([z.string().min(1), z.record(z.string(), z.unknown())]).describe('The message text (YAML or JSON), or the message object.'),
        direction: z.enum(AGENT_MESSAGE_DIRECTIONS).optional().describe('The contract to check. Default: detected from the sections.'),
      })
      .strict(),
    acceptsText: true,
    success: {
      status: 200,
      description: '`{ ok: true, usage, turn, direction }`',
      schema: z.object({
        ok: z.literal(true),
        usage: z.object({ inlineTokens: z.number().int(), engrams: z.number().int(), inlineCodeChars: z.number().int(), sharedBriefLines: z.number().int().optional() }),
        turn: z.number().int(),
        direction: z.enum(AGENT_MESSAGE_DIRECTIONS),
      }),
    },
    errors: [400, 413, 422],
    handle: async ({ mem, agent, query, body }) => {
      const text = typeof body.message === 'string' ? body.message : JSON.stringify(body.message);
      const direction = body.direction ?? query.direction;
      return { body: await validateMessageFor(mem, agent, text, direction) };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/v1/bus/brief',
    operationId: 'sharedBrief',
    tag: 'bus',
    summary: "The SharedBriefMicro of the calling agent's children (the agent as parent)",
    description: "The top live engrams of the agent's children in the run, contradictions first, within 30 lines and the brief's token budget.",
    query: z.object({
      run: runParam,
      lead: z.string().max(4000).optional().describe("The parent's own first lines (goal, constraints), one per line (newline-separated)."),
    }),
    headers: runHeader,
    success: { status: 200, description: '`{ run, lines, tokens, included, omitted, contradictions }`' },
    errors: [400],
    handle: async (ctx) => {
      const runId = runOf(ctx);
      const lead = (ctx.query.lead ?? '').split(/\r?\n/).filter((l) => l.trim().length > 0);
      return { body: { run: runId, ...(await ctx.mem.bus.brief(ctx.agent, { runId, lead })) } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/v1/bus/contradictions',
    operationId: 'contradictions',
    tag: 'bus',
    summary: 'Risk engrams that cite two or more sources (or are tagged contradiction), visible to the calling agent',
    query: z.object({ run: runParam, limit: z.coerce.number().int().min(1).max(1000).optional().describe('Most engrams. Default 100.') }),
    headers: runHeader,
    success: { status: 200, description: '`{ engrams }`', schema: z.object({ engrams: z.array(engramHitSchema) }) },
    errors: [400],
    handle: async (ctx) => ({ body: { engrams: (await ctx.mem.bus.engrams.contradictions(ctx.agent, runOf(ctx), ctx.query.limit ?? 100)).map(engramHit) } }),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/bus/metrics',
    operationId: 'busMetrics',
    tag: 'bus',
    summary: 'The bus telemetry metrics (LESS §12)',
    description: 'Inline tokens and derefs per turn by role, top engram kinds, contradiction rate, rejection and resend-success rates.',
    query: z.object({
      since: z
        .string()
        .refine((s) => !Number.isNaN(Date.parse(s)), 'must be an ISO-8601 time')
        .optional()
        .describe('Only telemetry at or after this time.'),
    }),
    success: { status: 200, description: 'The BusMetrics.' },
    errors: [400],
    handle: async ({ view, query }) => ({ body: await view.busMetrics(query.since !== undefined ? { sinceMs: Date.parse(query.since) } : {}) }),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/bus/usage',
    operationId: 'busUsage',
    tag: 'bus',
    summary: "The deref budget meter of the calling agent's current turn",
    success: {
      status: 200,
      description: '`{ turn, usage: { counts, tokens }, limits }`',
      schema: z.object({ turn: z.number().int(), usage: usageSchema, limits: z.record(z.string(), z.number().int()) }),
    },
    errors: [],
    handle: async ({ mem, agent }) => ({ body: await mem.bus.enforcer.usage(agent) }),
  }),
];
