import type { Command } from 'commander';
import type { CliContext, RegisterCommands } from './cli-context.js';

/**
 * Every command file, in the order `engram --help` lists them, with the top-level command names it registers and a
 * loader. `main` imports only the file of the command being run: each file pulls its own module graph (hooks the
 * Claude Code installer, serve the HTTP stack, bench the evaluation code), and loading them all cost a CLI recall
 * on a 1M-event store ~10 % of its start (issue #14, "CLI start to first recall"). A file added under commands/
 * goes here with the names it registers.
 */
export const COMMAND_FILES: ReadonlyArray<{ names: readonly string[]; load: () => Promise<{ register: RegisterCommands }> }> = [
  { names: ['init'], load: () => import('./commands/init.js') },
  { names: ['ingest'], load: () => import('./commands/ingest.js') },
  { names: ['recall'], load: () => import('./commands/recall.js') },
  { names: ['bus'], load: () => import('./commands/bus.js') },
  { names: ['reindex'], load: () => import('./commands/embedding.js') },
  { names: ['show'], load: () => import('./commands/show.js') },
  { names: ['stats', 'sessions', 'share', 'unshare'], load: () => import('./commands/stats.js') },
  { names: ['context', 'compact', 'pin', 'task'], load: () => import('./commands/context.js') },
  { names: ['delegate', 'report', 'reports', 'tree', 'recall-tree'], load: () => import('./commands/hierarchy.js') },
  { names: ['karma'], load: () => import('./commands/karma.js') },
  { names: ['graph', 'entities', 'impact', 'expand'], load: () => import('./commands/graph.js') },
  { names: ['consolidate', 'summaries'], load: () => import('./commands/consolidate.js') },
  { names: ['purge'], load: () => import('./commands/purge.js') },
  { names: ['artifacts'], load: () => import('./commands/artifacts.js') },
  { names: ['agent'], load: () => import('./commands/agent.js') },
  { names: ['serve'], load: () => import('./commands/serve.js') },
  { names: ['mcp'], load: () => import('./commands/mcp.js') },
  { names: ['hooks'], load: () => import('./commands/hooks.js') },
  { names: ['migrate'], load: () => import('./commands/migrate.js') },
  { names: ['bench'], load: () => import('./commands/bench.js') },
];

/** The program's options that take a value (`--db <path>`): the token after one is its value, not a command. */
const GLOBAL_OPTIONS_WITH_VALUE = new Set(['--db', '--pg', '--embedder', '--llm', '--repo']);

/**
 * The command `argv` (as `process.argv`: node, script, then the user's words) runs: its first word that is neither
 * a program option nor an option's value. Undefined when there is none (`engram --help`, `engram --version`).
 */
export function invokedCommand(argv: readonly string[]): string | undefined {
  const words = argv.slice(2);
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    if (word === '--') return words[i + 1];
    if (!word.startsWith('-')) return word;
    if (GLOBAL_OPTIONS_WITH_VALUE.has(word)) i++;
  }
  return undefined;
}

/**
 * Registers the command `argv` runs, loading only its file; every command, in help order, when no known command is
 * named (help, `--version`, a typo: commander then lists or suggests the commands as before).
 */
export async function registerCommands(program: Command, context: CliContext, argv: readonly string[]): Promise<void> {
  const name = invokedCommand(argv);
  const one = name === undefined ? undefined : COMMAND_FILES.find((f) => f.names.includes(name));
  const files = one ? [one] : COMMAND_FILES;
  const modules = await Promise.all(files.map((f) => f.load()));
  for (const m of modules) m.register(program, context);
}
