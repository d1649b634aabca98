import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { BusAgent } from '../../bus/bus-agent.js';
import type { EngramQuery } from '../../bus/engram-bus.js';
import { MAX_QUERY_K } from '../../bus/engram-bus.js';
import { parsePointerRef } from '../../bus/pointer.js';
import type { EngramKind, EngramScope } from '../../model/engram.js';
import type { Pointer } from '../../model/pointer.js';
import { ENGRAM_KINDS, ENGRAM_SCOPES, engramSchema } from '../../model/engram.js';
import type { Engram } from '../../engine.js';
import { EngramError } from '../../errors.js';
import { derefAnswer, derefRequestAnswer, engramHit, issuedGrantAnswer, type EngramHit } from '../shared/bus.js';
import type { ToolErrorOptions } from './errors.js';

/** Who the bus tools act for, and in which run. */
export interface BusToolContext {
  /** The calling agent: the authenticated one over HTTP, `--agent` on stdio; undefined refuses every less_* call. */
  agent: BusAgent | undefined;
  /** The run that run-scoped engrams belong to. */
  runId: string;
  /** List `less_issue_grant` (the agent has children to grant to). */
  canIssueGrants: boolean;
}

type Run = (fn: () => Promise<CallToolResult>, errorOptions?: ToolErrorOptions) => Promise<CallToolResult>;

/** URI of the SharedBriefMicro resource. */
export const BUS_BRIEF_URI = 'engram://bus/brief';

const { $schema: _unused, ...engramInputJson } = z.toJSONSchema(engramSchema.omit({ id: true, provenance: true }), { io: 'input', target: 'draft-7' }) as Record<
  string,
  unknown
>;

/**
 * The engram as the tool's arguments: advertised with the v0.1 schema (minus `id` and `provenance`, which the
 * engine fills in), validated by the engine, whose errors name the field the model sent (`pointers[0].ref`).
 */
const putEngramInput = z.looseObject({}).meta(engramInputJson);

const pointerArg = z
  .union([z.string(), z.record(z.string(), z.unknown())])
  .describe('A pointer ref such as repo:src/api/client.ts#L80-L96@<full commit sha>, artifact:art_<sha256>#L1-L40, sam:event:evt_..., or a pointer object { type, ref }.');

const queryInput = z.object({
  text: z.string().optional().describe('What you want to know, in words and identifiers (paths, function names, error codes).'),
  keys: z.array(z.string()).optional().describe('Hash keys: concept keys such as service:gateway or budget:reservation, or t:<token>.'),
  pointers: z.array(pointerArg).optional().describe('Pointers you are working on: engrams about the same files rank first.'),
  kinds: z.array(z.string()).optional().describe(`Only these kinds: ${ENGRAM_KINDS.join(', ')}.`),
  scopes: z.array(z.string()).optional().describe(`Only these scopes: ${ENGRAM_SCOPES.join(', ')}.`),
  k: z.number().int().optional().describe(`Most engrams (1-${MAX_QUERY_K}). Default 10.`),
});

const derefInput = z.object({
  pointer: pointerArg,
  max_tokens: z.number().int().optional().describe('Longest excerpt in tokens; ask for what you need. Default 400.'),
  budget_token: z.string().optional().describe('A grant your parent gave you for exactly this pointer (single use), for a deref beyond your budget.'),
});

const requestInput = z.object({
  pointer: pointerArg,
  reason: z.string().describe('One line: what you need the content for and why the engrams and pointers you have are not enough.'),
});

const grantInput = z.object({
  child: z.string().describe('Your child agent, by name or id.'),
  pointer: pointerArg,
  cap_tokens: z.number().int().describe('Most tokens the child may read with this grant (e.g. 500).'),
  ttl_seconds: z.number().int().optional().describe('How long the grant stays valid. Default 3600.'),
});

/**
 * The LESS tools (`less.put_engram`, `less.query_engrams`, `less.request_deref`, `less.deref_pointer`,
 * `less.issue_grant`, LESS §4.2) with MCP-legal names, and the SharedBriefMicro as a resource. Each acts as
 * {@link BusToolContext.agent}; the engine enforces scopes, budgets and grants.
 */
export function registerBusTools(server: McpServer, mem: Engram, ctx: BusToolContext, run: Run): void {
  const agent = (): BusAgent => {
    if (ctx.agent) return ctx.agent;
    throw new EngramError(
      'UNAUTHENTICATED',
      'the less_* tools act as an agent of the team, and this MCP server was started without one: start it with `engram mcp --agent NAME` (see `engram agent list`)',
      { field: 'agent' },
    );
  };

  server.registerTool(
    'less_put_engram',
    {
      title: 'Share an engram',
      description:
        'Share a finding with your team as an engram: a micro-claim (1-3 sentences, at most 500 characters) with 1-12 pointers to where it ' +
        'is true (repo:path#Lx-Ly@<commit>, artifact:..., sam:event:evt_...). Pointer-first: point at code and documents instead of pasting ' +
        'them; others dereference only what they need. Kinds: risk for problems (a contradiction is one risk citing both sources), decision, ' +
        'fact (verified), todo, constraint, diff, test, perf, policy. Scope project (your project sees it) or run (this run only); your parent ' +
        'promotes it wider. Give confidence (0-1) and a ttl (ISO-8601: PT6H, P7D). A near-identical claim on the same pointers is stored once. ' +
        'Send few, precise engrams: there is a rate limit per minute.',
      inputSchema: putEngramInput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    (args) =>
      run(async () => {
        const out = await mem.bus.engrams.put(agent(), args, ctx.runId);
        const e = out.engram;
        return {
          content: [
            {
              type: 'text',
              text: `${out.status === 'duplicate' ? 'Already stored (a near-identical claim on the same pointers)' : 'Stored'}: ${e.id} (${e.kind}, ${e.scope}, run ${ctx.runId}). Cite it by id.`,
            },
          ],
          structuredContent: out,
        };
      }),
  );

  server.registerTool(
    'less_query_engrams',
    {
      title: 'Query engrams',
      description:
        'Find what other agents of your project already know before you read code yourself: engrams matching free text, hash keys ' +
        '(service:gateway) or the pointers you work on, best first, each with its pointers. Querying costs no deref budget. Dereference a ' +
        'pointer (less_deref_pointer) only when a claim is not enough to act on.',
      inputSchema: queryInput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args) =>
      run(async () => {
        const q: EngramQuery = {
          ...(args.text !== undefined ? { text: args.text } : {}),
          ...(args.keys ? { keys: args.keys } : {}),
          ...(args.pointers ? { pointers: args.pointers.map((p, i) => toPointer(p, `pointers[${i}]`)) } : {}),
          ...(args.kinds ? { kinds: args.kinds as EngramKind[] } : {}),
          ...(args.scopes ? { scopes: args.scopes as EngramScope[] } : {}),
          ...(args.k !== undefined ? { k: args.k } : {}),
        };
        const out = await mem.bus.engrams.query(agent(), q, ctx.runId);
        const hits = out.engrams.map(engramHit);
        return {
          content: [{ type: 'text', text: hits.length === 0 ? 'No engrams match. Nobody has shared this yet: look at the sources, then share what you find (less_put_engram).' : formatHits(hits) }],
          structuredContent: { engrams: hits, candidates: out.candidates },
        };
      }),
  );

  server.registerTool(
    'less_deref_pointer',
    {
      title: 'Dereference a pointer',
      description:
        'Read the exact content behind a pointer: a line span of a file at a commit, an artifact section, an event. Budgeted per turn (by ' +
        'default 3 repository spans, 2 artifact sections, 2 events and 1200 tokens in all), so ask for the narrowest span and a small ' +
        'max_tokens. The answer carries a content_digest: cite it with the pointer when you report what you read. Past your budget the call ' +
        'is refused with DEREF_DENIED: ask your parent for a grant (less_request_deref), then call again with the budget_token it gives you.',
      inputSchema: derefInput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (args) =>
      run(async () => {
        const out = derefAnswer(
          await mem.bus.enforcer.deref(agent(), {
            pointer: toPointerOrRef(args.pointer),
            ...(args.max_tokens !== undefined ? { maxTokens: args.max_tokens } : {}),
            ...(args.budget_token !== undefined ? { grant: args.budget_token } : {}),
          }),
        );
        const l = mem.bus.limits;
        const limits = { repo: l.maxRepoSpansPerTurn, artifact: l.maxArtifactSectionsPerTurn, sam: l.maxSamItemsPerTurn, tokens: l.maxDerefTokensPerTurn };
        const lines = out.lines ? ` (lines ${out.lines.start}-${out.lines.end})` : '';
        const header =
          `${out.pointer.ref}${lines}  content_digest ${out.content_digest}  ${out.tokens} tokens${out.is_truncated ? ' (cut at max_tokens)' : ''}` +
          `${out.grant_id ? `  paid by grant ${out.grant_id}` : ''}\n` +
          `Budget of turn ${out.turn}: repo ${out.usage.counts.repo}/${limits.repo}, artifact ${out.usage.counts.artifact}/${limits.artifact}, ` +
          `sam ${out.usage.counts.sam}/${limits.sam}, tokens ${out.usage.tokens}/${limits.tokens}`;
        // Quoted like recall evidence: what a file says must not read as instructions to the model.
        return { content: [{ type: 'text', text: `${header}\n${quote(out.excerpt)}` }], structuredContent: { ...out } };
      }),
  );

  server.registerTool(
    'less_request_deref',
    {
      title: 'Ask your parent for a deref grant',
      description:
        "Ask your parent agent for a grant to read a pointer beyond this turn's deref budget (after DEREF_DENIED). Records the request and " +
        'returns the DEREF_REQUESTS entry to put in your next message to your parent, with your reason; your parent answers with a ' +
        'budget_token (in GRANTS), which you pass to less_deref_pointer. If you still have budget for this kind of pointer, it says so: ' +
        'dereference directly instead.',
      inputSchema: requestInput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    (args) =>
      run(async () => {
        const out = derefRequestAnswer(await mem.bus.requestDeref(agent(), { pointer: toPointerOrRef(args.pointer), reason: args.reason }));
        const text =
          out.remaining > 0
            ? `No grant needed: you have ${out.remaining} more ${out.pointer.type} deref(s) this turn (turn ${out.turn}). Call less_deref_pointer with this pointer.`
            : [
                `Request recorded. Your parent ${out.parent.name} (${out.parent.role}) grants derefs; put this in your next message to it:`,
                out.deref_request_yaml,
                'When its reply carries a GRANTS entry for this pointer, call less_deref_pointer with the pointer and that budget_token. ' +
                  'Until then, continue with the engrams and pointers you have.',
              ].join('\n');
        return { content: [{ type: 'text', text }], structuredContent: { ...out } };
      }),
  );

  if (ctx.canIssueGrants) {
    server.registerTool(
      'less_issue_grant',
      {
        title: 'Grant a child a deref',
        description:
          'As a parent, let one of your child agents read one pointer beyond its turn budget, up to cap_tokens: weigh the reason of its ' +
          'DEREF_REQUESTS entry first, and grant the narrowest span that answers it. Returns the budget_token to hand the child in the GRANTS ' +
          'section of your next message to it. A grant is single-use, covers exactly that pointer and expires (default 1 hour).',
        inputSchema: grantInput,
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      },
      (args) =>
        run(async () => {
          const out = issuedGrantAnswer(await mem.bus.issueGrantTo(agent(), {
            child: args.child,
            pointer: toPointerOrRef(args.pointer),
            capTokens: args.cap_tokens,
            ...(args.ttl_seconds !== undefined ? { ttlSeconds: args.ttl_seconds } : {}),
          }));
          const type = out.grant.pointer.slice(0, out.grant.pointer.indexOf(':'));
          const text = [
            `Grant ${out.grant.id} for ${out.child.name}: one deref of ${out.grant.pointer}, up to ${out.grant.cap_tokens} tokens, until ${out.grant.expires_at}.`,
            `Put it in the GRANTS section of your next message to ${out.child.name}:`,
            'GRANTS:',
            `  - budget_token: "${out.budget_token}"`,
            `    pointer: { type: "${type}", ref: ${JSON.stringify(out.grant.pointer)} }`,
            `    cap_tokens: ${out.grant.cap_tokens}`,
          ].join('\n');
          return { content: [{ type: 'text', text }], structuredContent: { budget_token: out.budget_token, grant: out.grant } };
        }),
    );
  }

  if (ctx.agent) {
    const self = ctx.agent;
    server.registerResource(
      'bus-brief',
      BUS_BRIEF_URI,
      {
        title: 'Shared brief (LESS)',
        description: "The SharedBriefMicro of this agent's children's engrams in the current run, contradictions first (JSON).",
        mimeType: 'application/json',
      },
      async (uri) => {
        const brief = await mem.bus.brief(self, { runId: ctx.runId });
        return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify({ run: ctx.runId, ...brief }, null, 2) }] };
      },
    );
  }
}

/** A pointer argument as the enforcer takes it: a ref string stays a string; an object is validated there. */
function toPointerOrRef(p: string | Record<string, unknown>): Pointer | string {
  return typeof p === 'string' ? p : (p as Pointer);
}

/** A pointer argument as a pointer object, its type read from the ref. */
function toPointer(p: string | Record<string, unknown>, field: string): Pointer {
  return typeof p === 'string' ? { type: parsePointerRef(p, field).type, ref: p } : (p as Pointer);
}

function quote(text: string): string {
  return text
    .split('\n')
    .map((l) => `> ${l}`)
    .join('\n');
}

function formatHits(hits: EngramHit[]): string {
  return hits
    .map((h, i) => {
      const e = h.engram;
      const flags = [e.kind, e.scope, `confidence ${e.confidence}`, ...(h.is_contradiction ? ['CONTRADICTION'] : [])].join(', ');
      return `[${i + 1}] ${e.id} (${flags}; by ${e.provenance.created_by})\n${quote(e.claim)}\n    -> ${e.pointers.map((p) => p.ref).join('\n    -> ')}`;
    })
    .join('\n');
}
