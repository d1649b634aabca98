import { Option, type Command } from 'commander';
import { atFilePath, type CliContext, type GlobalOptions } from '../cli-context.js';
import { readFileSync } from 'node:fs';
import type { Engram } from '../../../engine.js';
import { EngramError } from '../../../errors.js';
import type { EngramKind, EngramScope } from '../../../model/engram.js';
import { EXIT, exitCodeFor } from '../exit-codes.js';
import { toBudgetError } from '../../../bus/messages/message-validator.js';
import type { Io } from '../output.js';
import { formatPairs, printJson } from '../output.js';

export interface BusArgs {
  action: string;
  value?: string;
  /** The agent the command acts as (name or id). */
  as?: string;
  run?: string;
  k?: string;
  kind?: string[];
  scope?: string[];
  key?: string[];
  maxTokens?: string;
  grant?: string;
  child?: string;
  cap?: string;
  ttl?: string;
  direction?: string;
  lead?: string[];
  since?: string;
  json?: boolean;
}

export const BUS_ACTIONS = ['put', 'query', 'deref', 'grant', 'brief', 'validate-message', 'metrics', 'contradictions', 'promote', 'remove', 'usage'] as const;

/**
 * `engram bus ACTION`: the Engram Bus from the command line, acting as a registered agent (`--as NAME`): the
 * same checks as over HTTP or MCP (scopes, budgets, grants), since the CLI calls the same bus.
 */
export async function busCommand(mem: Engram, args: BusArgs, io: Io): Promise<number> {
  const needAgent = async () => {
    if (!args.as) throw new EngramError('INVALID_INPUT', '--as: name the agent this command acts as (engram agent list)', { field: 'as' });
    return mem.busAgent(args.as);
  };
  const runId = args.run ?? mem.bus.defaultRunId;
  const out = (value: unknown, human: () => string): number => {
    if (args.json) printJson(io, value);
    else io.out(human());
    return EXIT.OK;
  };
  switch (args.action) {
    case 'put': {
      const agent = await needAgent();
      const r = await mem.bus.engrams.put(agent, readJsonArg(args.value, 'engram'), runId);
      return out(r, () => `${r.status === 'duplicate' ? 'already stored' : 'stored'}: ${r.engram.id} (${r.engram.kind}, ${r.engram.scope})`);
    }
    case 'query': {
      const agent = await needAgent();
      const r = await mem.bus.engrams.query(
        agent,
        {
          ...(args.value ? { text: args.value } : {}),
          ...(args.key ? { keys: args.key } : {}),
          ...(args.kind ? { kinds: args.kind as EngramKind[] } : {}),
          ...(args.scope ? { scopes: args.scope as EngramScope[] } : {}),
          ...(args.k ? { k: Number(args.k) } : {}),
        },
        runId,
      );
      return out(r, () =>
        r.engrams.length === 0
          ? 'No engrams.'
          : r.engrams
              .map((e, i) => `[${i + 1}] ${e.engram.id} ${e.engram.kind} ${e.engram.scope} conf ${e.engram.confidence}\n    ${e.engram.claim}\n    -> ${e.engram.pointers.map((p) => p.ref).join(', ')}`)
              .join('\n'),
      );
    }
    case 'deref': {
      const agent = await needAgent();
      if (!args.value) throw new EngramError('INVALID_INPUT', 'pointer: give the pointer ref to dereference', { field: 'pointer' });
      const r = await mem.bus.enforcer.deref(agent, {
        pointer: args.value,
        ...(args.maxTokens ? { maxTokens: Number(args.maxTokens) } : {}),
        ...(args.grant ? { grant: args.grant } : {}),
      });
      return out(r, () => `${r.pointer.ref}  content_digest ${r.contentDigest}  ${r.tokens} tokens${r.isTruncated ? ' (cut)' : ''}\n${r.excerpt}`);
    }
    case 'grant': {
      const parent = await needAgent();
      if (!args.child || !args.value) throw new EngramError('INVALID_INPUT', 'grant: give the pointer and --child AGENT', { field: args.child ? 'pointer' : 'child' });
      const r = await mem.bus.issueGrantTo(parent, {
        child: args.child,
        pointer: args.value,
        capTokens: args.cap ? Number(args.cap) : 500,
        ...(args.ttl ? { ttlSeconds: Number(args.ttl) } : {}),
      });
      return out(r, () => `grant ${r.grant.id} for ${r.child.name}, ${r.grant.capTokens} tokens, until ${new Date(r.grant.expiresMs).toISOString()}\n${r.token}`);
    }
    case 'brief': {
      const parent = await needAgent();
      const r = await mem.bus.brief(parent, { runId, ...(args.lead ? { lead: args.lead } : {}) });
      return out(r, () => (r.lines.length > 0 ? r.lines.join('\n') : 'No engrams from the children yet.'));
    }
    case 'validate-message': {
      const agent = await needAgent();
      const text = readTextArg(args.value, 'message');
      const direction = args.direction as 'child-to-parent' | 'parent-to-child' | undefined;
      const { verdict, turn } = await mem.bus.enforcer.submitMessage(agent, text, direction ? { direction } : {});
      // The verdict is the answer (stdout). A rejection is also the refusal HTTP and MCP answer with
      // (BUDGET_EXCEEDED, or POINTER_INVALID when only pointers are malformed): its exit code and, with --json,
      // its error object on stderr, as every refused command reports it.
      const refusal = verdict.ok ? undefined : toBudgetError(verdict);
      if (args.json) {
        printJson(io, { ...verdict, turn });
        if (refusal) io.err(JSON.stringify({ error: { ...refusal.toJSON(), data: { ...refusal.data, turn } } }));
      } else if (!verdict.ok && refusal) {
        io.out(`${refusal.code} (turn ${turn}); resend as engrams and pointers:`);
        for (const v of verdict.violations) io.out(`  - ${v.seedName} ${v.field}: ${v.measured} > ${v.allowed} ${v.unit}. ${v.instruction}`);
      } else io.out(`ok: ${verdict.usage.inlineTokens} inline tokens, ${verdict.usage.engrams} engrams (turn ${turn})`);
      return refusal ? exitCodeFor(refusal.code) : EXIT.OK;
    }
    case 'metrics': {
      const r = await mem.bus.metrics(args.since ? { sinceMs: Date.parse(args.since) } : {});
      return out(r, () =>
        formatPairs([
          ['events', r.events],
          ['rejection rate', r.rejectionRate],
          ['resend success', r.resendSuccessRate],
          ['contradiction rate', r.contradictionRate],
          ['top kinds', r.topEngramKinds.map((k) => `${k.kind} ${k.count}`).join(', ') || '-'],
          ['inline tokens/turn', Object.entries(r.inlineTokensPerTurnByRole).map(([role, s]) => `${role} ${s.average}`).join(', ') || '-'],
          ['derefs/turn', Object.entries(r.derefsPerTurnByRole).map(([role, s]) => `${role} ${s.average}`).join(', ') || '-'],
        ]),
      );
    }
    case 'contradictions': {
      const agent = await needAgent();
      const r = await mem.bus.engrams.contradictions(agent, runId);
      return out(r, () => (r.length === 0 ? 'No contradictions.' : r.map((e) => `${e.engram.id} ${e.engram.claim}\n    -> ${e.engram.pointers.map((p) => p.ref).join(' vs ')}`).join('\n')));
    }
    case 'promote': {
      const agent = await needAgent();
      if (!args.value || !args.scope?.[0]) throw new EngramError('INVALID_INPUT', 'promote: give the engram id and --scope', { field: args.value ? 'scope' : 'id' });
      const r = await mem.bus.promote(agent, args.value, args.scope[0] as EngramScope);
      return out(r, () => `${r.id} is now ${r.scope}`);
    }
    case 'remove': {
      const agent = await needAgent();
      if (!args.value) throw new EngramError('INVALID_INPUT', 'remove: give the engram id', { field: 'id' });
      await mem.bus.engrams.remove(agent, args.value);
      return out({ id: args.value, removed: true }, () => `${args.value} removed (kept in the store, out of every query)`);
    }
    case 'usage': {
      const agent = await needAgent();
      const r = await mem.bus.enforcer.usage(agent);
      return out(r, () =>
        formatPairs([
          ['turn', r.turn],
          ['repo spans', `${r.usage.counts.repo}/${r.limits.repo}`],
          ['artifact sections', `${r.usage.counts.artifact}/${r.limits.artifact}`],
          ['sam items', `${r.usage.counts.sam}/${r.limits.sam}`],
          ['deref tokens', `${r.usage.tokens}/${r.limits.tokens}`],
        ]),
      );
    }
    default:
      throw new EngramError('INVALID_INPUT', `action: unknown "${args.action}"; expected one of ${BUS_ACTIONS.join(', ')}`, { field: 'action' });
  }
}

/** JSON from the argument, `@FILE`, or `-` (standard input). */
function readJsonArg(value: string | undefined, field: string): unknown {
  const text = readTextArg(value, field);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new EngramError('INVALID_INPUT', `${field}: not valid JSON (${(err as Error).message})`, { field });
  }
}

function readTextArg(value: string | undefined, field: string): string {
  if (value === undefined) throw new EngramError('INVALID_INPUT', `${field}: give it as an argument, @FILE, or - for standard input`, { field });
  if (value === '-') return readFileSync(0, 'utf8');
  if (value.startsWith('@')) {
    try {
      return readFileSync(value.slice(1), 'utf8');
    } catch (err) {
      throw new EngramError('NOT_FOUND', `${field}: cannot read ${value.slice(1)} (${(err as Error).message})`, { field });
    }
  }
  return value;
}

/** `engram bus ACTION`. */
export function register(program: Command, context: CliContext): void {
  const { io } = context;
  program
    .command('bus')
    .description(`the Engram Bus, acting as an agent (--as NAME): ${BUS_ACTIONS.join(' | ')}`)
    .argument('<action>', BUS_ACTIONS.join(' | '))
    .argument('[value]', 'put: the engram JSON (or @FILE, -); query: text; deref/grant: the pointer; validate-message: the message (YAML/JSON, @FILE, -); promote/remove: the engram id')
    .option('--as <agent>', 'the agent to act as (name or id; see engram agent list)')
    .option('--run <id>', 'run label for run-scoped engrams (default: default)')
    .option('-k, --k <n>', 'query: most engrams (1-12, default 10)')
    .option('--kind <kind...>', 'query: only these kinds')
    .option('--scope <scope...>', 'query: only these scopes; promote: the new scope')
    .option('--key <key...>', 'query: hash keys (service:gateway, t:pool)')
    .option('--max-tokens <n>', 'deref: longest excerpt (default 400)')
    .option('--grant <token>', 'deref: a grant token from the parent')
    .option('--child <agent>', 'grant: the child agent')
    .option('--cap <tokens>', 'grant: token cap (default 500)')
    .option('--ttl <seconds>', 'grant: lifetime (default 3600)')
    .addOption(new Option('--direction <d>', 'validate-message: the contract').choices(['child-to-parent', 'parent-to-child']))
    .option('--lead <line...>', "brief: the parent's own first lines")
    .option('--since <iso>', 'metrics: only events since')
    .action(
      context.withStore(
        (m, args: BusArgs & GlobalOptions) => busCommand(m, args, io),
        (args) => ['put', 'grant', 'validate-message', 'deref', 'promote', 'remove'].includes(args.action),
        'foreground',
        (args) => atFilePath(args.value),
      ),
    );
}
