import type { Command } from 'commander';
import type { CliContext, GlobalOptions } from '../cli-context.js';
import type { Engram } from '../../../engine.js';
import { EngramError } from '../../../errors.js';
import type { AgentRecord } from '../../../model/agent.js';
import type { Io } from '../output.js';
import { printJson } from '../output.js';

export interface AgentArgs {
  action: string;
  name?: string;
  role?: string;
  parent?: string;
  project?: string;
  admin?: boolean;
  json?: boolean;
}

/** `engram agent add|list|revoke|rotate`: the agents that may call `engram serve`, and their tokens. */
export async function agentCommand(mem: Engram, args: AgentArgs, io: Io): Promise<number> {
  const name = (): string => {
    if (!args.name) throw new EngramError('INVALID_INPUT', `agent ${args.action}: give the agent's name`, { field: 'name' });
    return args.name;
  };
  switch (args.action) {
    case 'add': {
      if (!args.role) throw new EngramError('INVALID_INPUT', '--role: give the agent a role (architect, director, manager, programmer, ...)', { field: 'role' });
      const { agent, token } = await mem.agents.add(name(), {
        role: args.role,
        ...(args.parent ? { parent: args.parent } : {}),
        ...(args.project ? { project: args.project } : {}),
        ...(args.admin ? { isAdmin: true } : {}),
      });
      if (args.json) printJson(io, { agent, token });
      else io.out(`Agent ${agent.name} added (${agent.id}, role ${agent.role}${agent.isAdmin ? ', admin' : ''}).\n${tokenNotice(token)}`);
      return 0;
    }
    case 'list': {
      const agents = await mem.agents.list();
      if (args.json) printJson(io, agents);
      else if (agents.length === 0) io.out('No agents yet. Add one with: engram agent add NAME --role ROLE');
      else io.out(formatAgents(agents));
      return 0;
    }
    case 'revoke': {
      const agent = await mem.agents.revoke(name());
      if (args.json) printJson(io, agent);
      else io.out(`Agent ${agent.name} revoked at ${agent.revokedAt}: its token no longer works (the record is kept).`);
      return 0;
    }
    case 'rotate': {
      const { agent, token } = await mem.agents.rotateToken(name());
      if (args.json) printJson(io, { agent, token });
      else io.out(`New token for ${agent.name}; the old one no longer works.\n${tokenNotice(token)}`);
      return 0;
    }
    default:
      throw new EngramError('INVALID_INPUT', `agent: unknown action "${args.action}"; use add, list, revoke or rotate`, { field: 'action' });
  }
}

/** The one time a token is shown: say so, since only its hash is stored. */
export function tokenNotice(token: string): string {
  return `Token (shown once, only its hash is stored; keep it secret):\n  ${token}`;
}

function formatAgents(agents: AgentRecord[]): string {
  const names = new Map(agents.map((a) => [a.id as string, a.name]));
  const rows = agents.map((a) => [
    a.name,
    a.role,
    a.parentId ? (names.get(a.parentId) ?? a.parentId) : '-',
    a.project ?? '-',
    a.isAdmin ? 'admin' : '',
    a.revokedAt ? `revoked ${a.revokedAt}` : `since ${a.createdAt}`,
  ]);
  const header = ['NAME', 'ROLE', 'PARENT', 'PROJECT', '', 'STATUS'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [header, ...rows].map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
}

/** `engram agent ACTION`. */
export function register(program: Command, context: CliContext): void {
  const { io } = context;
  program
    .command('agent')
    .description('agents that may call `engram serve` (HTTP API, MCP over HTTP) and their bearer tokens')
    .argument('<action>', 'add NAME | list | revoke NAME | rotate NAME')
    .argument('[name]', 'the agent (a name, or its id for revoke/rotate)')
    .option('--role <role>', 'add: architect, director, manager, programmer, ... (free text, up to 32 characters)')
    .option('--parent <agent>', "add: the agent's parent in the hierarchy (name or id)")
    .option('--project <name>', 'add: the project the agent works on')
    .option('--admin', 'add: the agent may manage other agents over HTTP')
    .action(context.withStore((m, args: AgentArgs & GlobalOptions) => agentCommand(m, args, io), (args) => args.action === 'add'));
}
