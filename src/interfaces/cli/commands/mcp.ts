import type { Command } from 'commander';
import type { CliContext, GlobalOptions } from '../cli-context.js';
import type { Engram } from '../../../engine.js';
import { EngramError } from '../../../errors.js';
import { IdentifierCatchUpWorker } from '../../../memory/identifier-catch-up-worker.js';
import { validateSessionId } from '../../../memory/ingest.js';
import { currentHostSession } from '../../../memory/host-sessions.js';
import { projectForDirectory } from '../../../memory/project-identity.js';
import { agentPrincipal } from '../../../model/access.js';
import { resolveRunId } from '../../shared/bus.js';
import { EXIT } from '../exit-codes.js';
import { parseToolProfiles, TOOL_PROFILES, TOOLS_ENV } from '../../mcp/tool-profiles.js';
import type { Io } from '../output.js';

export interface McpArgs {
  session?: string;
  /** The agent the Engram Bus tools act as (name or id); default `$ENGRAM_AGENT`. */
  agent?: string;
  /** The run of run-scoped engrams; default `$ENGRAM_RUN`, else the bus default. */
  run?: string;
  /** The tool profile(s) listed: core (default), team, graph, all; default `$ENGRAM_MCP_TOOLS`. */
  tools?: string;
}

/**
 * `engram mcp`: serves the MCP tools on stdio until stdin closes or a SIGINT / SIGTERM arrives, then lets the
 * running tool calls finish and returns (the caller closes the store). Stdout carries the protocol only:
 * everything this command says goes to stderr.
 */
export async function mcpCommand(mem: Engram, args: McpArgs, io: Io, version: string): Promise<number> {
  const tools = args.tools !== undefined ? parseToolProfiles(args.tools, 'tools') : parseToolProfiles(process.env[TOOLS_ENV], TOOLS_ENV);
  // An empty ENGRAM_SESSION (a host's env block clearing it) names no session.
  const named = args.session || process.env.ENGRAM_SESSION || undefined;
  // Without a session named, the project of the directory the host started the server in, and its current session there.
  const identity = projectForDirectory(process.cwd());
  const fixed = named !== undefined ? validateSessionId(named, 'session') : undefined;
  const sessionId = fixed ?? hostSessionResolver(mem, identity.project);
  // On stdio nobody presents a token: whoever starts the server already holds the store, and names the agent.
  const agentName = args.agent || process.env.ENGRAM_AGENT;
  const agent = agentName ? await mem.busAgent(agentName) : undefined;
  const runId = resolveRunId(mem, args.run || process.env.ENGRAM_RUN, undefined);
  const canIssueGrants = agent ? await mem.bus.hasChildren(agent.id) : false;
  // With --agent, the agent's access rules bound every tool (its project's sessions); without, stdio is the
  // local user's full-trust access, like the rest of the CLI.
  // Loaded when `mcp` runs, not on every command.
  const [{ StdioServerTransport }, { createMcpServer }] = await Promise.all([import('@modelcontextprotocol/sdk/server/stdio.js'), import('../../mcp/server.js')]);
  const { server, settled } = createMcpServer(mem, {
    sessionId,
    project: identity.project,
    version,
    ...(agent ? { agent, principal: agentPrincipal(agent) } : {}),
    runId,
    canIssueGrants,
    tools,
  });
  const transport = new StdioServerTransport();

  let stop: (code: number) => void = () => {};
  const stopped = new Promise<number>((resolve) => {
    stop = resolve;
  });
  const onEnd = () => stop(EXIT.OK);
  // A client stopping its server sends SIGTERM: a normal end. Ctrl-C keeps the CLI's documented 130.
  const onSigterm = () => stop(EXIT.OK);
  const onSigint = () => stop(EXIT.INTERRUPTED);
  process.stdin.once('end', onEnd);
  process.stdin.once('close', onEnd);
  process.once('SIGTERM', onSigterm);
  process.once('SIGINT', onSigint);
  server.server.onclose = onEnd;
  transport.onerror = (err) => io.err(`engram mcp: transport error: ${err.message}`);
  // Appends through append_events leave the identifier index to a catch-up, as in `engram serve`.
  const identifierCatchUp = new IdentifierCatchUpWorker((p, o) => mem.maintainTextIndex(p, o), {
    onError: (err) => io.err(`engram mcp: identifier index catch-up failed: ${err instanceof Error ? err.message : String(err)}`),
  });
  identifierCatchUp.start();
  try {
    await server.connect(transport);
    io.err(
      `engram mcp: serving ${fixed !== undefined ? `session ${fixed}` : `the agent host's current session of project ${identity.project}`} on stdio` +
        `, tools: ${[...tools].join(', ')}` +
        (agent ? ` as agent ${agent.name} (run ${runId})` : tools.has('team') ? ' (no --agent: the less_* bus tools are not listed)' : ''),
    );
    const code = await stopped;
    await settled();
    await server.close();
    return code;
  } finally {
    await identifierCatchUp.stop();
    process.stdin.off('end', onEnd);
    process.stdin.off('close', onEnd);
    process.off('SIGTERM', onSigterm);
    process.off('SIGINT', onSigint);
  }
}

/** How long a resolved host session is reused before it is looked up again (a new session starts while the server runs). */
const HOST_SESSION_TTL_MS = 2_000;

/**
 * The session the MCP tools act on when none is named: the host's current session of the project, as its hooks
 * recorded it (memory/host-sessions.ts), found by this server's parent process (the host that started it); else the
 * project's latest host session; else a session named after the project. Looked up again every few seconds.
 */
function hostSessionResolver(mem: Engram, project: string): () => Promise<string> {
  let cached: { id: string; atMs: number } | undefined;
  return async () => {
    const now = Date.now();
    if (cached && now - cached.atMs < HOST_SESSION_TTL_MS) return cached.id;
    const id = (await currentHostSession(mem.store, project, process.ppid)) ?? project;
    cached = { id, atMs: now };
    return id;
  };
}

/** `engram mcp`. */
export function register(program: Command, context: CliContext): void {
  const { io } = context;
  program
    .command('mcp')
    .description('serve the MCP tools (recall, expand, get/update_task_state, append_events) on stdio for an agent host')
    .option('-s, --session <id>', "the session the tools work for (default: $ENGRAM_SESSION, else the agent host's current session of the project in this directory, as its hooks record it)")
    .option('--agent <name>', 'the agent the bus tools (less_*, profile team) act as (default: $ENGRAM_AGENT; without one they are not listed)')
    .option('--run <id>', 'the run of run-scoped engrams (default: $ENGRAM_RUN, else default)')
    .option('--tools <profile>', `the tools listed: ${TOOL_PROFILES.join(' | ')}, or several joined by commas (default: $${TOOLS_ENV}, else core: recall, expand, get/update_task_state, append_events)`)
    .action(context.withStore((m, args: McpArgs & GlobalOptions) => mcpCommand(m, args, io, context.version), true, 'background'));
}
