import { Command, CommanderError, Option } from 'commander';
import { resolve } from 'node:path';
import { openEngram, type Engram } from '../../engine.js';
import { EngramError, isEngramError } from '../../errors.js';
import { EVENT_KINDS } from '../../model/event.js';
import { MODEL_PROFILES } from '../../context/assembly/governor.js';
import { IMPORT_FORMATS } from '../../memory/importers/types.js';
import { DEFAULT_DB_PATH, type StoreLocation } from '../../store/open-store.js';
import { ingestCommand } from './commands/ingest.js';
import { mcpCommand, type McpArgs } from './commands/mcp.js';
import { migrateCommand, type MigrateArgs } from './commands/migrate.js';
import { karmaCommand, type KarmaArgs } from './commands/karma.js';
import { compactCommand, contextCommand, taskCommand, type CompactArgs, type ContextArgs, type TaskArgs } from './commands/context.js';
import { parseInteger, recallCommand } from './commands/recall.js';
import { showCommand } from './commands/show.js';
import { sessionsCommand, statsCommand } from './commands/stats.js';
import { EXIT, exitCodeFor } from './exit-codes.js';
import type { Io } from './output.js';
import { formatPairs, processIo } from './output.js';

interface GlobalOptions {
  db?: string;
  pg?: string;
  json?: boolean;
}

const VERSION = '0.1.0';

/**
 * The `engram` command line. Parses arguments, opens the store, calls the engine, and maps errors to
 * exit codes in one place ({@link exitCodeFor}). Returns the exit code instead of calling process.exit,
 * so pending writes finish and the store closes cleanly.
 */
export async function main(argv: string[], io: Io = processIo): Promise<number> {
  let exitCode: number = EXIT.OK;
  let mem: Engram | undefined;
  const withStore =
    <A extends GlobalOptions>(run: (mem: Engram, args: A) => Promise<number>, createStore: boolean | ((args: A) => boolean) = false) =>
    async (args: A): Promise<void> => {
      // Only writing verbs create a store; read verbs on a missing store fail with NOT_FOUND.
      const create = typeof createStore === 'function' ? createStore(args) : createStore;
      mem = await openEngram({ ...storeLocation(args), sqlite: { create }, postgres: { create } });
      exitCode = await run(mem, args);
    };
  // Subcommand options merged with the program's global ones (--db, --json may stand anywhere).
  const merged = <A>(fn: (args: A & GlobalOptions) => Promise<void>) =>
    function (this: Command, ...rest: unknown[]): Promise<void> {
      const cmd = rest[rest.length - 1] as Command;
      const positional = rest.slice(0, -2);
      return fn({ ...cmd.optsWithGlobals(), ...positionalArgs(cmd, positional) } as A & GlobalOptions);
    };

  const program = new Command()
    .name('engram')
    .description('Lossless memory and context engine for LLM agents.')
    .version(VERSION)
    .option('--db <path>', `SQLite store (default: $ENGRAM_DB or ${DEFAULT_DB_PATH})`)
    .option('--pg <url>', 'PostgreSQL store, postgres://user:pass@host/db[?schema=name] (default: $ENGRAM_PG_URL; wins over the SQLite default)')
    .option('--json', 'machine-readable output on stdout')
    .configureOutput({ writeOut: (s) => io.out(s.replace(/\n$/, '')), writeErr: (s) => io.err(s.replace(/\n$/, '')) })
    .exitOverride()
    .showHelpAfterError('(run engram --help for usage)');

  program
    .command('init')
    .description('create the store (if missing) and print where it is')
    .action(
      merged(
        withStore(async (m, args: GlobalOptions) => {
          const stats = await m.stats();
          if (args.json) io.out(JSON.stringify(stats, null, 2));
          else io.out(`Engram store ready: ${stats.backend} (${stats.events} events in ${stats.sessions} sessions)`);
          return EXIT.OK;
        }, true),
      ),
    );

  program
    .command('ingest')
    .description('import a transcript (generic JSONL, OpenAI messages, Anthropic messages, Claude Code session)')
    .argument('<file>', 'transcript file, or - for standard input')
    .option('-s, --session <id>', 'import into this session (default: the session ids in the file, else the file name)')
    .addOption(new Option('-f, --format <format>', 'input format (default: detected)').choices([...IMPORT_FORMATS]))
    .option('--skip-invalid', 'store the valid records and list invalid ones (default: reject the whole file)')
    .action(merged(withStore((m, args: Parameters<typeof ingestCommand>[1] & GlobalOptions) => ingestCommand(m, args, io), true)));

  program
    .command('recall')
    .description('search everything stored: exact strings, identifiers, words; prints quoted evidence with provenance')
    .argument('<query...>', 'what to look for')
    .option('-s, --session <id...>', 'only these sessions')
    .addOption(new Option('--kind <kind...>', 'only these event kinds').choices([...EVENT_KINDS]))
    .option('--since <time>', 'only events at or after: ISO-8601, or an age like 12h, 7d')
    .option('--until <time>', 'only events at or before: ISO-8601, or an age')
    .option('--task <id>', 'only events bound to this task')
    .option('-k, --k <n>', 'most hits (default 10)')
    .option('-b, --budget <tokens>', 'token budget of the pack (default 2000)')
    .option('--ignore-task', "with one --session: do not condition on that session's task card")
    .action(merged(withStore((m, args: Parameters<typeof recallCommand>[1] & GlobalOptions) => recallCommand(m, args, io))));

  program
    .command('show')
    .description('print an event (evt_...) or the full content of an artifact (art_...); unique prefixes work')
    .argument('<id>', 'event or artifact id, or a unique prefix of at least 4 characters after the underscore')
    .option('--raw', 'artifact: write the original bytes to stdout')
    .action(
      merged(
        withStore((m, args: Parameters<typeof showCommand>[1] & GlobalOptions) =>
          showCommand(m, args, io, (bytes) => process.stdout.write(bytes)),
        ),
      ),
    );

  program
    .command('stats')
    .description('counts of sessions, events by kind and artifacts')
    .action(merged(withStore((m, args: GlobalOptions) => statsCommand(m, args, io))));

  program
    .command('sessions')
    .description('list sessions, most recent first')
    .option('-n, --limit <n>', 'at most this many')
    .action(
      merged(
        withStore((m, args: GlobalOptions & { limit?: string }) => {
          const { limit, ...rest } = args;
          return sessionsCommand(m, { ...rest, ...(limit !== undefined ? { limit: parseInteger(limit, 'limit') } : {}) }, io);
        }),
      ),
    );

  program
    .command('context')
    .description("the context pack for a session's next turn: identity, markers of evicted history, recent tail, task state, query")
    .requiredOption('-s, --session <id>', 'session')
    .requiredOption('-w, --window <tokens>', "the model's context window in tokens")
    .addOption(new Option('-f, --format <format>', 'output format').choices(['text', 'openai', 'anthropic']).default('text'))
    .option('-q, --query <text>', 'the new user message')
    .option('--identity <text>', 'the system prompt / identity block')
    .option('--identity-file <file>', 'read the identity block from a file')
    .option('--codex <path...>', 'static knowledge: files or directories, inlined below 0.7 of the window, else served through recall')
    .option('--max-messages <n>', 'governor: keep at most this many history messages')
    .option('--max-chars <n>', 'governor: character cap of the whole prompt')
    .addOption(new Option('--model-profile <id>', 'governor: model whose KV cache to budget').choices(Object.keys(MODEL_PROFILES)))
    .option('--kv-budget-mb <mb>', 'governor: KV-cache memory for this request; compacts further before it would be exceeded')
    .action(merged(withStore((m, args: ContextArgs & GlobalOptions) => contextCommand(m, args, io))));

  program
    .command('compact')
    .description("compact a session's window now if it is over its high-water mark (nothing is deleted)")
    .requiredOption('-s, --session <id>', 'session')
    .requiredOption('-w, --window <tokens>', "the model's context window in tokens")
    .action(merged(withStore((m, args: CompactArgs & GlobalOptions) => compactCommand(m, args, io))));

  program
    .command('pin')
    .description('pin an event in the session window (never evicted or pruned); --unpin to release it')
    .argument('<event>', 'event id')
    .requiredOption('-s, --session <id>', 'session')
    .option('--unpin', 'release the pin')
    .action(
      merged(
        withStore(async (m, args: GlobalOptions & { event: string; session: string; unpin?: boolean }) => {
          await m.context.pin(args.session, args.event, !args.unpin);
          if (args.json) io.out(JSON.stringify({ event: args.event, isPinned: !args.unpin }));
          else io.out(`${args.event} ${args.unpin ? 'unpinned' : 'pinned'} in the window of ${args.session}.`);
          return EXIT.OK;
        }),
      ),
    );

  program
    .command('task')
    .description("read or change a session's task state card (versioned; every version is kept)")
    .argument('<action>', 'get | update (merge fields) | set (replace the card) | history')
    .argument('[value]', 'for update/set: the card as JSON, @FILE, or - for standard input')
    .requiredOption('-s, --session <id>', 'session')
    .option('--turn <n>', 'the turn whose work produced this update (default: the latest)')
    .action(merged(withStore((m, args: TaskArgs & GlobalOptions) => taskCommand(m, args, io), (args) => args.action === 'update' || args.action === 'set')));

  program
    .command('karma')
    .description('verified facts, promoted into the stable prefix of every context pack of their scope')
    .argument('<action>', 'add TEXT | list | remove ID')
    .argument('[value]', 'the fact (add) or its id (remove)')
    .option('-s, --session <id>', 'add: only for this session; list: facts of this session and the store-wide ones')
    .option('--from <event>', 'add: the event the fact was verified from')
    .option('--by <name>', 'who verified or removes it (default: user)')
    .option('--all', 'list: include removed facts')
    .action(merged(withStore((m, args: KarmaArgs & GlobalOptions) => karmaCommand(m, args, io), (args) => args.action !== 'list')));

  program
    .command('mcp')
    .description('serve the MCP tools (recall, expand, get/update_task_state, append_events) on stdio for an agent host')
    .option('-s, --session <id>', 'the session the tools work for (default: $ENGRAM_SESSION)')
    .action(merged(withStore((m, args: McpArgs & GlobalOptions) => mcpCommand(m, args, io, VERSION), true)));

  program
    .command('migrate')
    .description('copy a whole store to another (SQLite <-> PostgreSQL), resumably, and verify the copy')
    .requiredOption('--from <store>', 'source: sqlite:PATH, a file path, or a postgres:// URL')
    .requiredOption('--to <store>', 'target: sqlite:PATH, a file path, or a postgres:// URL (empty, or a copy interrupted earlier)')
    .option('--batch <n>', 'events per transaction (default 500)')
    .action(
      merged(async (args: MigrateArgs & GlobalOptions) => {
        exitCode = await migrateCommand(args, io);
      }),
    );

  program.addHelpText(
    'after',
    `
Exit codes:
${formatPairs(Object.entries(EXIT).map(([name, code]) => [`  ${code}`, name.toLowerCase().replace(/_/g, ' ')]))}

Examples:
  engram ingest ~/.claude/projects/my-app/5f1e....jsonl
  engram recall "ECONNREFUSED" --session 5f1e...
  engram recall why did we pick postgres --json
  engram show evt_01jc...`,
  );

  try {
    await program.parseAsync(argv);
  } catch (err) {
    exitCode = reportError(err, io, argv.includes('--json'));
  } finally {
    await mem?.close();
  }
  return exitCode;
}

/** --pg / $ENGRAM_PG_URL, else --db / $ENGRAM_DB, else the default SQLite file. */
function storeLocation(opts: GlobalOptions): StoreLocation {
  if (opts.db && opts.pg) throw new EngramError('INVALID_INPUT', '--db and --pg name two stores; give one', { field: 'pg' });
  const pg = opts.pg || (opts.db ? undefined : process.env.ENGRAM_PG_URL);
  if (pg) return { pg };
  return { db: resolve(opts.db || process.env.ENGRAM_DB || DEFAULT_DB_PATH) };
}

function positionalArgs(cmd: Command, values: unknown[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  cmd.registeredArguments.forEach((arg, i) => {
    out[arg.name()] = values[i];
  });
  return out;
}

/** Prints an error and returns its exit code. The one place CLI errors are mapped. */
function reportError(err: unknown, io: Io, asJson: boolean): number {
  if (err instanceof CommanderError) {
    // Help and version "errors" are normal exits; commander already printed the message.
    if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return EXIT.OK;
    return EXIT.INVALID_INPUT;
  }
  const e = isEngramError(err) ? err : new EngramError('INTERNAL', err instanceof Error ? (err.stack ?? err.message) : String(err));
  if (asJson) io.err(JSON.stringify({ error: e.toJSON() }));
  else io.err(`engram: ${e.code}: ${e.message}`);
  return exitCodeFor(e.code);
}
