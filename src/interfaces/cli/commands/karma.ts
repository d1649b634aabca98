import type { Command } from 'commander';
import type { CliContext, GlobalOptions } from '../cli-context.js';
import type { Engram } from '../../../engine.js';
import { EngramError } from '../../../errors.js';
import type { Io } from '../output.js';
import { printJson } from '../output.js';

export interface KarmaArgs {
  action: string;
  value?: string;
  session?: string;
  from?: string;
  by?: string;
  all?: boolean;
  json?: boolean;
}

/** `engram karma add|list|remove`: verified facts promoted into the prefix of every pack of their scope. */
export async function karmaCommand(mem: Engram, args: KarmaArgs, io: Io): Promise<number> {
  switch (args.action) {
    case 'add': {
      if (!args.value) throw new EngramError('INVALID_INPUT', 'karma add: give the verified fact as text', { field: 'value' });
      const k = await mem.karma.add(args.value, {
        ...(args.session ? { sessionId: args.session } : {}),
        ...(args.from ? { sourceEventId: args.from } : {}),
        ...(args.by ? { verifiedBy: args.by } : {}),
      });
      if (args.json) printJson(io, k);
      else io.out(`${k.id} added${k.sessionId ? ` for session ${k.sessionId}` : ' for every session'}.`);
      return 0;
    }
    case 'list': {
      const list = await mem.karma.list({ ...(args.session ? { sessionId: args.session } : {}), includeRemoved: args.all === true });
      if (args.json) printJson(io, list);
      else if (list.length === 0) io.out('No verified facts.');
      else for (const k of list) io.out(`${k.id}  ${k.verifiedAt}  ${k.sessionId ?? '(all sessions)'}${k.removedAt ? `  removed ${k.removedAt}` : ''}\n  ${k.text}`);
      return 0;
    }
    case 'remove': {
      if (!args.value) throw new EngramError('INVALID_INPUT', 'karma remove: give the fact id (kar_...)', { field: 'value' });
      await mem.karma.remove(args.value, args.by ?? 'user');
      if (!args.json) io.out(`${args.value} removed (kept in the store, no longer promoted).`);
      else printJson(io, { removed: args.value });
      return 0;
    }
    default:
      throw new EngramError('INVALID_INPUT', `karma: unknown action "${args.action}"; use add, list or remove`, { field: 'action' });
  }
}

/** `engram karma ACTION`. */
export function register(program: Command, context: CliContext): void {
  const { io } = context;
  program
    .command('karma')
    .description('verified facts, promoted into the stable prefix of every context pack of their scope')
    .argument('<action>', 'add TEXT | list | remove ID')
    .argument('[value]', 'the fact (add) or its id (remove)')
    .option('-s, --session <id>', 'add: only for this session; list: facts of this session and the store-wide ones')
    .option('--from <event>', 'add: the event the fact was verified from')
    .option('--by <name>', 'who verified or removes it (default: user)')
    .option('--all', 'list: include removed facts')
    .action(context.withStore((m, args: KarmaArgs & GlobalOptions) => karmaCommand(m, args, io), (args) => args.action !== 'list'));
}
