import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import type { ErrorCode } from '../../errors.js';
import { EngramError, isEngramError } from '../../errors.js';

/**
 * What the calling model should do next, per code. The reader is a model in the middle of a task: it can
 * fix its arguments and call again, try another id, or stop and tell the user; each hint says which.
 */
function nextStep(e: EngramError, options: ToolErrorOptions): string {
  const field = typeof e.data.field === 'string' ? argumentPath(e.data.field, options.fieldPrefixes ?? {}) : undefined;
  const code: ErrorCode = e.code;
  switch (code) {
    case 'INVALID_INPUT':
      return field ? `Fix the argument \`${field}\` as described and call the tool again.` : 'Fix the arguments as described and call the tool again.';
    case 'POINTER_INVALID':
      if (Array.isArray(e.data.violations)) return resendStep(e);
      return (
        'The pointer is malformed or unsafe: fix it as the message says and call again. Forms: repo:PATH#L10-L20@<full 40-hex commit sha>, ' +
        'artifact:art_<sha256>#L1-L40, sam:event:evt_..., diff:<commit>#PATH#L1-L9; or use an id exactly as a recall hit printed it.'
      );
    case 'NOT_FOUND':
      if (field === 'child') return "No agent has that name; use your child's name or id exactly (your children are listed by engram agent list).";
      if (field?.startsWith('pointer') || e.data.pointer !== undefined) {
        return 'The pointer addresses nothing that exists (a file, line span or artifact missing at that commit). Check it against the engram that cited it; do not retry it unchanged.';
      }
      if (typeof e.data.id === 'string' && e.data.id.startsWith('eng_')) return 'No live engram visible to you has that id (it may have expired or been removed); query again with less_query_engrams.';
      return 'Nothing has that id. Use an id exactly as a recall hit printed it (evt_... or art_...), or recall again to find it.';
    case 'AMBIGUOUS_ID':
      return 'That id prefix matches several objects; call again with more characters of the id.';
    case 'IDEMPOTENCY_CONFLICT':
      return 'An event key can only be reused for the same content: resend with the original content, or use a new key.';
    case 'CONFLICT':
      return 'Another writer changed it first. Read the current value again (e.g. get_task_state) and retry your change on top of it.';
    case 'BUDGET_EXCEEDED':
      if (Array.isArray(e.data.violations)) return resendStep(e);
      if (e.data.limit === 'maxEngramsPerAgentPerMinute') {
        return 'You are writing engrams faster than allowed: wait a minute before the next one, and send fewer, better engrams (merge related claims into one).';
      }
      if (e.data.limit === 'maxEngramChars') {
        return `Shorten the claim to at most ${String(e.data.allowed)} characters (1-3 sentences) and put the details behind its pointers, then call again.`;
      }
      return 'The answer does not fit the token budget: resend with a larger budgetTokens / maxTokens, or ask for less (a narrower query, fewer items).';
    case 'DEREF_DENIED':
      if (e.data.reason === 'count' || e.data.reason === 'tokens') {
        return (
          "Your deref budget for this turn is spent. Do not retry as is: work from the engrams and pointers you have, or ask your parent for a grant " +
          'with less_request_deref (the pointer and why you need it), then call less_deref_pointer again with the budget_token your parent gives you. ' +
          'Your next message to your parent starts a new turn with a fresh budget.'
        );
      }
      return (
        'That grant cannot pay for this deref (see the reason). Ask your parent for a new grant for exactly this pointer with less_request_deref; ' +
        'a grant is single-use, covers one pointer and expires.'
      );
    case 'SCOPE_DENIED':
      if (e.data.field === 'sessionId') {
        return "This session belongs to another project (or is shared with yours read-only): you may not write to it. Do not retry; work in a session of your own project.";
      }
      if (e.data.field === 'provenance.created_by') return 'Leave provenance out: the engine records you as the writer. Call again without it.';
      if (e.data.field === 'scope') return 'Write the engram with scope project or run; your parent promotes it wider when it holds up. Call again with a narrower scope.';
      return "The scope rules do not allow this (only a parent of an engram's writer promotes it, with enough confidence). Do not retry; tell your parent.";
    case 'FORBIDDEN':
      return 'Your agent is not allowed to do that. Do not retry; ask the user or an admin agent.';
    case 'UNAUTHENTICATED':
      if (e.data.field === 'agent') return 'The bus tools have no agent to act as here. Do not retry; tell the user to add --agent NAME to the engram mcp command.';
      return 'The server does not accept your credentials (a missing, unknown or revoked token). Do not retry; tell the user.';
    case 'PAYLOAD_TOO_LARGE':
      return 'The request is too large for the server: send fewer or smaller events per call.';
    case 'UNSUPPORTED_MEDIA_TYPE':
      return 'The request was sent in a format the server does not read; send it as JSON (Content-Type: application/json).';
    case 'PROVIDER_ERROR':
      return e.data.retryable === true ? 'A model provider failed temporarily; retry shortly.' : 'A model provider failed; retrying will not help. Tell the user.';
    case 'NOT_AN_ENGRAM_STORE':
    case 'SCHEMA_TOO_NEW':
    case 'STORAGE_ERROR':
      if (e.data.retryable === true) return 'The memory store is busy or briefly unreachable; retry this call in a few seconds.';
      return 'The memory store is unavailable; retrying will not help. Continue without memory and tell the user.';
    case 'INTERNAL':
      return 'This is a bug in Engram, not in your call; do not retry the same call. Tell the user.';
  }
}

/** After a rejected agent message: resend in the compliant form the violations describe. */
function resendStep(e: EngramError): string {
  const resend = e.data.resend as { instructions?: unknown; maxInlineTokens?: unknown } | undefined;
  const steps = Array.isArray(resend?.instructions) ? resend.instructions.map(String) : [];
  return (
    `Resend the message as engrams + pointers (within ${String(resend?.maxInlineTokens ?? 'the')} inline tokens, no pasted code): ` +
    (steps.length > 0 ? steps.join(' ') : 'shorten it and point to the sources instead of quoting them.')
  );
}

/** Codes whose details (paths, SQL, URLs, stack traces) are the server's business, not the caller's. */
const SERVER_FAULTS: readonly ErrorCode[] = ['STORAGE_ERROR', 'INTERNAL', 'NOT_AN_ENGRAM_STORE', 'SCHEMA_TOO_NEW'];

export interface ToolErrorOptions {
  /**
   * Set by a server that answers remote callers (MCP over HTTP): server faults are handed here (for the
   * server's log) and the caller gets the code without the message or data, as `/v1` answers them.
   * Without it (stdio: the caller is the local user) every detail is shown.
   */
  onServerFault?: (e: EngramError) => void;
  /**
   * Engine field prefixes renamed to the tool's argument names, e.g. `{ taskState: 'update' }`: the engine
   * names `taskState.phase`, the model sent it as `update.phase`.
   */
  fieldPrefixes?: Record<string, string>;
}

function argumentPath(field: string, prefixes: Record<string, string>): string {
  for (const [from, to] of Object.entries(prefixes)) {
    if (field === from || field.startsWith(`${from}.`) || field.startsWith(`${from}[`)) return `${to}${field.slice(from.length)}`;
  }
  return field;
}

/**
 * The one place errors become MCP tool results: `isError: true`, a text the model can act on (the code, the
 * message naming the field, and what to do next), and the error itself as structured content.
 * Anything that is not an {@link EngramError} is reported as `INTERNAL`.
 */
export function toolErrorResult(err: unknown, options: ToolErrorOptions = {}): CallToolResult {
  let e = isEngramError(err) ? err : new EngramError('INTERNAL', err instanceof Error ? err.message : String(err));
  if (options.onServerFault && SERVER_FAULTS.includes(e.code)) {
    options.onServerFault(e);
    const retryable = e.code === 'STORAGE_ERROR' && e.data.retryable === true;
    e = new EngramError(e.code, retryable ? 'the store is temporarily unavailable; retry shortly' : 'internal error; see the server log', retryable ? { retryable } : {});
  }
  return {
    isError: true,
    content: [{ type: 'text', text: `${e.code}: ${e.message}\n${nextStep(e, options)}` }],
    structuredContent: { error: e.toJSON() },
  };
}

/** JSON-RPC error codes of resource reads (MCP specification, resources, "Error Handling"). */
export const RESOURCE_ERROR_CODES = { notFound: -32002, invalidParams: -32602, internal: -32603 } as const;

/**
 * The one place errors of a resource read become protocol errors (a resource read has no `isError` result):
 * `NOT_FOUND` is -32002 (resource not found), a bad argument (`INVALID_INPUT`, `AMBIGUOUS_ID`) -32602, anything
 * else -32603, each with the Engram error as `data`. Server faults are reported to `onServerFault` and answered
 * without their details, as tool errors are.
 */
export function resourceError(err: unknown, onServerFault?: (e: EngramError) => void): McpError {
  let e = isEngramError(err) ? err : new EngramError('INTERNAL', err instanceof Error ? err.message : String(err));
  if (onServerFault && SERVER_FAULTS.includes(e.code)) {
    onServerFault(e);
    e = new EngramError(e.code, 'internal error; see the server log', {});
  }
  const code =
    e.code === 'NOT_FOUND' ? RESOURCE_ERROR_CODES.notFound : e.code === 'INVALID_INPUT' || e.code === 'AMBIGUOUS_ID' ? RESOURCE_ERROR_CODES.invalidParams : RESOURCE_ERROR_CODES.internal;
  return new McpError(code, `${e.code}: ${e.message}`, { error: e.toJSON() });
}
