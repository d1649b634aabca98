import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
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
      return 'The pointer is malformed; use an id exactly as a recall hit printed it.';
    case 'NOT_FOUND':
      return 'Nothing has that id. Use an id exactly as a recall hit printed it (evt_... or art_...), or recall again to find it.';
    case 'AMBIGUOUS_ID':
      return 'That id prefix matches several objects; call again with more characters of the id.';
    case 'IDEMPOTENCY_CONFLICT':
      return 'An event key can only be reused for the same content: resend with the original content, or use a new key.';
    case 'CONFLICT':
      return 'Another writer changed it first. Read the current value again (e.g. get_task_state) and retry your change on top of it.';
    case 'BUDGET_EXCEEDED':
      return 'The answer does not fit the token budget: resend with a larger budgetTokens / maxTokens, or ask for less (a narrower query, fewer items).';
    case 'DEREF_DENIED':
    case 'SCOPE_DENIED':
      return 'You are not allowed to read that. Do not retry; ask the user or the owner for access.';
    case 'PROVIDER_ERROR':
      return e.data.retryable === true ? 'A model provider failed temporarily; retry shortly.' : 'A model provider failed; retrying will not help. Tell the user.';
    case 'NOT_AN_ENGRAM_STORE':
    case 'SCHEMA_TOO_NEW':
    case 'STORAGE_ERROR':
      return 'The memory store is unavailable; retrying will not help. Continue without memory and tell the user.';
    case 'INTERNAL':
      return 'This is a bug in Engram, not in your call; do not retry the same call. Tell the user.';
  }
}

export interface ToolErrorOptions {
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
  const e = isEngramError(err) ? err : new EngramError('INTERNAL', err instanceof Error ? err.message : String(err));
  return {
    isError: true,
    content: [{ type: 'text', text: `${e.code}: ${e.message}\n${nextStep(e, options)}` }],
    structuredContent: { error: e.toJSON() },
  };
}
