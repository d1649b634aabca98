import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { Engram } from '../../engine.js';
import { validateSessionId } from '../../memory/ingest.js';
import type { AgentRecord } from '../../model/agent.js';
import { createMcpServer } from '../mcp/server.js';
import { jsonTextProblem } from '../../model/limits.js';
import { agentPrincipal } from '../../model/access.js';
import { ENGRAM_RUN_HEADER, resolveRunId } from '../shared/bus.js';
import { invalidUtf8Body } from './body-text.js';
import { decodeUtf8Strictly } from '../../util/is-utf8-text.js';
import { parseToolProfiles } from '../mcp/tool-profiles.js';

/** Header naming the Engram session the MCP tools work for; `?session=` in the URL does the same. */
export const ENGRAM_SESSION_HEADER = 'X-Engram-Session';
/** Header naming the tool profile(s) listed (mcp/tool-profiles.ts: core, team, graph, all); `?tools=` does the same. */
export const ENGRAM_TOOLS_HEADER = 'X-Engram-Tools';

/**
 * MCP over Streamable HTTP, stateless: every POST gets a fresh MCP server and transport (the SDK's
 * `WebStandardStreamableHTTPServerTransport`, the core that its Node `StreamableHTTPServerTransport` wraps),
 * answers with JSON, and is closed once it has answered. No MCP session id is issued, so any Engram server
 * sharing a PostgreSQL store can answer any request, and nothing is held in memory between requests.
 *
 * The Engram session the tools work for (what `append_events` writes to, whose task card the task tools read)
 * is named per request by the `X-Engram-Session` header or the `session` query parameter, and defaults to the
 * calling agent's name. The Engram Bus tools (less_*) act as the authenticated agent, in the run named by the
 * `X-Engram-Run` header or `?run=` (default `default`). The tools listed are the profile named by the `X-Engram-Tools`
 * header or `?tools=` (default `core`; mcp/tool-profiles.ts). GET (a server-initiated SSE stream) and DELETE (ending an MCP session) have nothing
 * to serve here: 405, which MCP clients accept.
 */
export async function handleMcpRequest(
  mem: Engram,
  agent: AgentRecord,
  request: Request,
  options: { version: string; maxBodyBytes: number; log?: (line: string) => void },
): Promise<Response> {
  if (request.method !== 'POST') {
    return Response.json(
      { jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: this MCP endpoint is stateless; send JSON-RPC messages with POST' }, id: null },
      { status: 405, headers: { Allow: 'POST' } },
    );
  }
  const requested = request.headers.get(ENGRAM_SESSION_HEADER) ?? new URL(request.url).searchParams.get('session');
  const sessionId = validateSessionId(requested ?? agent.name, 'session');
  const runId = resolveRunId(mem, request.headers.get(ENGRAM_RUN_HEADER), new URL(request.url).searchParams.get('run'));
  const tools = parseToolProfiles(request.headers.get(ENGRAM_TOOLS_HEADER) ?? new URL(request.url).searchParams.get('tools') ?? undefined, 'tools');
  // A JSON body is scanned before it is parsed, like every JSON body of the API (model/limits.ts): parsing is what
  // a deeply nested or value-heavy body makes slow. Other content types are left to the transport (415).
  let parsedBody: unknown;
  if (/^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(request.headers.get('content-type') ?? '')) {
    const decoded = decodeUtf8Strictly(new Uint8Array(await request.arrayBuffer()));
    if ('invalid' in decoded) return jsonRpcError(400, -32700, `Parse error: ${invalidUtf8Body(decoded.invalid.offset, decoded.invalid.byte).message}`);
    const text = decoded.text;
    const problem = jsonTextProblem(text);
    if (problem) return jsonRpcError(400, -32600, `Invalid Request: the body ${problem.message}`, problem.params);
    try {
      parsedBody = JSON.parse(text) as unknown;
    } catch {
      return jsonRpcError(400, -32700, 'Parse error: Invalid JSON');
    }
  }
  // The bus tools act as the authenticated agent; less_issue_grant is listed only to agents with children.
  const canIssueGrants = await mem.bus.hasChildren(agent.id);
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const { server, settled } = createMcpServer(mem, {
    sessionId,
    version: options.version,
    agent,
    runId,
    canIssueGrants,
    tools,
    principal: agentPrincipal(agent),
    // Remote callers get a server fault's code only, as on /v1; its details go to the server's log.
    onServerFault: (e) => log(`engram serve: MCP tool call -> ${e.code}: ${e.message}`),
  });
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
    // The same limit as the rest of the API (the app has already enforced it; the transport checks again).
    maxRequestBodySize: options.maxBodyBytes,
  });
  await server.connect(transport);
  try {
    // In JSON mode the response is complete when this resolves: every tool call of the request has answered.
    return await transport.handleRequest(request, parsedBody === undefined ? undefined : { parsedBody });
  } finally {
    await settled();
    await server.close();
  }
}

function jsonRpcError(status: number, code: number, message: string, data?: object): Response {
  return Response.json({ jsonrpc: '2.0', error: { code, message, ...(data ? { data } : {}) }, id: null }, { status });
}
