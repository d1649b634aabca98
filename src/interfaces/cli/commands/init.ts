import type { Command } from 'commander';
import type { CliContext, GlobalOptions } from '../cli-context.js';
import { EXIT } from '../exit-codes.js';

/** `engram init`: creates the store (if missing) and prints where it is. */
export function register(program: Command, context: CliContext): void {
  const { io } = context;
  program
    .command('init')
    .description('create the store (if missing) and print where it is')
    .action(
      context.withStore(async (m, args: GlobalOptions) => {
        const stats = await m.stats();
        if (args.json) io.out(JSON.stringify(stats, null, 2));
        else io.out(`Engram store ready: ${stats.backend} (${stats.events} events in ${stats.sessions} sessions)`);
        return EXIT.OK;
      }, true),
    );
}
