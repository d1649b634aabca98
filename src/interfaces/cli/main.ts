import { Command, CommanderError, Option } from 'commander';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { openEngram, type Engram } from '../../engine.js';
import { EngramError, isEngramError } from '../../errors.js';
import { EVENT_KINDS } from '../../model/event.js';
import { MODEL_PROFILES } from '../../context/assembly/governor.js';
import { IMPORT_FORMATS } from '../../memory/importers/types.js';
import { DEFAULT_DB_PATH, type StoreLocation } from '../../store/open-store.js';
import { createEmbedderFromSpec, DEFAULT_EMBEDDER_SPEC, parseEmbedderSpec } from '../../providers/embedder-spec.js';
import { CLI_DRAIN_LIMIT, drainQueue, reindexCommand, type ReindexArgs } from './commands/embedding.js';
import { BUS_ACTIONS, busCommand, type BusArgs } from './commands/bus.js';
import { ingestCommand } from './commands/ingest.js';
import { mcpCommand, type McpArgs } from './commands/mcp.js';
import { migrateCommand, type MigrateArgs } from './commands/migrate.js';
import { karmaCommand, type KarmaArgs } from './commands/karma.js';
import { purgeCommand, type PurgeArgs } from './commands/purge.js';
import { agentCommand, type AgentArgs } from './commands/agent.js';
import { serveCommand, type ServeArgs } from './commands/serve.js';
import { benchLocomoCommand, benchNeedleCommand, type BenchLocomoArgs, type BenchNeedleArgs } from './commands/bench.js';
import { compactCommand, contextCommand, taskCommand, type CompactArgs, type ContextArgs, type TaskArgs } from './commands/context.js';
import { parseInteger, recallCommand } from './commands/recall.js';
import { showCommand } from './commands/show.js';
import { sessionsCommand, shareCommand, statsCommand } from './commands/stats.js';
import { EXIT, exitCodeFor } from './exit-codes.js';
import type { Io } from './output.js';
import { formatPairs, processIo } from './output.js';

interface GlobalOptions {
  db?: string;
  pg?: string;
  json?: boolean;
  embedder?: string;
  repo?: string;
  /** False with --no-redact. */
  redact?: boolean;
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
    <A extends GlobalOptions>(
      run: (mem: Engram, args: A) => Promise<number>,
      createStore: boolean | ((args: A) => boolean) = false,
      vectors: 'none' | 'foreground' | 'background' = 'none',
    ) =>
    async (args: A): Promise<void> => {
      // Only writing verbs create a store; read verbs on a missing store fail with NOT_FOUND.
      const create = typeof createStore === 'function' ? createStore(args) : createStore;
      // Only verbs that embed or search vectors load an embedder (the built-in one costs ~100 ms and 130 MB).
      const embedder = vectors === 'none' ? null : await createEmbedderFromSpec(parseEmbedderSpec(args.embedder || process.env.ENGRAM_EMBEDDER || DEFAULT_EMBEDDER_SPEC));
      mem = await openEngram({
        ...storeLocation(args),
        sqlite: { create },
        postgres: { create },
        ...(embedder ? { embedder, indexing: { background: vectors === 'background' } } : {}),
        ...busRepo(args),
        ingest: { redact: redactSetting(args) },
      });
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
    .option(
      '--embedder <spec>',
      `semantic recall: builtin (offline, default), none, onnx:<model id or directory>, openai:<model> (default: $ENGRAM_EMBEDDER or ${DEFAULT_EMBEDDER_SPEC})`,
    )
    .option('--repo <path>', 'the git repository that repo: and diff: pointers address (default: $ENGRAM_REPO, else the working directory)')
    .option('--no-redact', 'store credentials verbatim instead of replacing them with [REDACTED:kind:hash] (default: redact; $ENGRAM_REDACT=off)')
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
    .option('-p, --project <name>', "the project new sessions belong to: its agents may read them (default: default; see the README's trust model)")
    .addOption(new Option('-f, --format <format>', 'input format (default: detected)').choices([...IMPORT_FORMATS]))
    .option('--skip-invalid', 'store the valid records and list invalid ones (default: reject the whole file)')
    .option('--no-embed', 'do not embed the new events now (they stay queued for `engram reindex` or `engram serve`)')
    .action(
      merged(
        withStore(
          async (m, args: Parameters<typeof ingestCommand>[1] & GlobalOptions & { embed?: boolean }) => {
            const code = await ingestCommand(m, args, io);
            if (args.embed !== false) await drainQueue(m, io);
            return code;
          },
          true,
          'foreground',
        ),
      ),
    );

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
    .addOption(new Option('--retriever <name>', 'fts, vector or hybrid (default: hybrid when the store has vectors of the embedder)').choices(['fts', 'vector', 'hybrid']))
    .action(
      merged(
        withStore(
          async (m, args: Parameters<typeof recallCommand>[1] & GlobalOptions) => {
            if (args.retriever !== 'fts') await drainQueue(m, io, { limit: CLI_DRAIN_LIMIT, quiet: args.json === true });
            return recallCommand(m, args, io);
          },
          false,
          'foreground',
        ),
      ),
    );

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
    .action(merged(withStore((m, args: BusArgs & GlobalOptions) => busCommand(m, args, io), (args) => ['put', 'grant', 'validate-message', 'deref', 'promote', 'remove'].includes(args.action), 'foreground')));

  program
    .command('reindex')
    .description("embed every event with the chosen embedder's model (a new model replaces the old vectors; events are untouched)")
    .option('--retry-failed', 'queue events whose embedding failed repeatedly again')
    .action(merged(withStore((m, args: ReindexArgs & GlobalOptions) => reindexCommand(m, args, io), false, 'foreground')));

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

  for (const isUnshare of [false, true]) {
    program
      .command(isUnshare ? 'unshare' : 'share')
      .description(isUnshare ? "end a session's read-only share with a project" : "share a session read-only with another project's agents")
      .argument('<session>', 'the session id')
      .argument('<project>', isUnshare ? 'the project whose read access ends' : 'the project whose agents may read it')
      .action(merged(withStore((m, args: GlobalOptions & { session: string; project: string }) => shareCommand(m, { ...args, isUnshare }, io))));
  }

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
    .command('purge')
    .description('delete content for good (privacy): a session, events, or every event holding a text; leaves tombstones, logged')
    .option('-s, --session <id...>', 'purge this session whole (with --match: only search these sessions)')
    .option('-e, --event <id...>', 'purge these events (ids or unique prefixes)')
    .option('-m, --match <text>', 'purge every event holding this exact text (a literal, not a pattern; at least 4 characters)')
    .option('--yes', 'really purge (without it: show what would be purged, change nothing, exit 2)')
    .option('--dry-run', 'show what would be purged and exit 0')
    .option('--log', 'list past purges (who, when, what; never the content)')
    .action(merged(withStore((m, args: PurgeArgs & GlobalOptions) => purgeCommand(m, args, io))));

  program
    .command('agent')
    .description('agents that may call `engram serve` (HTTP API, MCP over HTTP) and their bearer tokens')
    .argument('<action>', 'add NAME | list | revoke NAME | rotate NAME')
    .argument('[name]', 'the agent (a name, or its id for revoke/rotate)')
    .option('--role <role>', 'add: architect, director, manager, programmer, ... (free text, up to 32 characters)')
    .option('--parent <agent>', "add: the agent's parent in the hierarchy (name or id)")
    .option('--project <name>', 'add: the project the agent works on')
    .option('--admin', 'add: the agent may manage other agents over HTTP')
    .action(merged(withStore((m, args: AgentArgs & GlobalOptions) => agentCommand(m, args, io), (args) => args.action === 'add')));

  program
    .command('serve')
    .description('serve the HTTP API (/v1) and MCP over Streamable HTTP (/mcp) to agents with bearer tokens')
    .option('-p, --port <n>', 'TCP port (default 7077; 0 picks a free one)')
    .option('--host <host>', 'interface to bind (default 127.0.0.1: this machine only)')
    .option('--allow-remote', 'allow a --host reachable from other machines')
    .option('--cors <origin>', 'allow browser requests from this origin (default: no CORS)')
    .option('--max-body-bytes <n>', 'largest request body accepted (default 8 MiB)')
    // The embedding worker runs in the background while serving (--embedder none turns it off).
    .action(merged(withStore((m, args: ServeArgs & GlobalOptions) => serveCommand(m, args, io, VERSION), true, 'background')));

  program
    .command('mcp')
    .description('serve the MCP tools (recall, expand, get/update_task_state, append_events) on stdio for an agent host')
    .option('-s, --session <id>', 'the session the tools work for (default: $ENGRAM_SESSION)')
    .option('--agent <name>', 'the agent the bus tools (less_*) act as (default: $ENGRAM_AGENT; without one they are refused)')
    .option('--run <id>', 'the run of run-scoped engrams (default: $ENGRAM_RUN, else default)')
    .action(merged(withStore((m, args: McpArgs & GlobalOptions) => mcpCommand(m, args, io, VERSION), true, 'background')));

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

  const bench = program
    .command('bench')
    .description('measure recall on a benchmark (no store is touched: each conversation or trace gets a temporary one)');
  bench
    .command('locomo')
    .description('LoCoMo evidence recall@k overall and per category, for any file of that shape (embedder: --embedder)')
    .requiredOption('--data <file>', 'LoCoMo-shaped JSON: a list of {sample_id, conversation: {session_N, session_N_date_time}, qa}')
    .option('-k, --k <list>', 'depths, comma-separated (default 5,10,25,50)')
    .addOption(new Option('--retriever <name>', 'fts, vector or hybrid (default: hybrid, fts with --embedder none)').choices(['fts', 'vector', 'hybrid']))
    .action(
      merged(async (args: BenchLocomoArgs & GlobalOptions) => {
        exitCode = await benchLocomoCommand(args, io);
      }),
    );
  bench
    .command('needle')
    .description('needle recall under forced compaction: Engram against truncation, narrative and summary-DAG baselines (ENGRAM §10A)')
    .option('--quick', 'a reduced run (one seed, four traces), under a minute')
    .option('--seed <n>', 'seed, or seeds comma-separated (default 1,2: 1 for development, 2 held out)')
    .option('--window <tokens>', 'context window (default 32000)')
    .option('--cycles <list>', 'compaction cycles to probe after, comma-separated (default 1,3,5)')
    .option('--out <dir>', 'where the report goes (default bench/results)')
    .option('--replay <file>', 'replay a recorded transcript (any format ingest reads) instead of synthetic traces')
    .addOption(new Option('-f, --format <format>', 'with --replay: transcript format (default: detected)').choices([...IMPORT_FORMATS]))
    .option('-s, --session <id>', 'with --replay: the session to replay (default: the largest)')
    .addOption(new Option('--traces <n>', 'traces per seed').hideHelp())
    .addOption(new Option('--needles-per-type <n>', 'needles of each type per trace').hideHelp())
    .action(
      merged(async (args: BenchNeedleArgs & GlobalOptions) => {
        exitCode = await benchNeedleCommand(args, io);
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

/** The bus's repository: --repo / $ENGRAM_REPO (checked to be a git repository), else the engine's default (the working directory). */
function busRepo(opts: GlobalOptions): { bus?: { repoRoot: string } } {
  const given = opts.repo || process.env.ENGRAM_REPO;
  if (!given) return {};
  const root = resolve(given);
  if (!existsSync(join(root, '.git')) && !existsSync(join(root, 'HEAD'))) {
    throw new EngramError('INVALID_INPUT', `--repo: ${root} is not a git repository (no .git)`, { field: 'repo' });
  }
  return { bus: { repoRoot: root } };
}

/** Redaction of credentials on ingest: on unless --no-redact or $ENGRAM_REDACT is off, 0, false or no. */
function redactSetting(opts: GlobalOptions): boolean {
  if (opts.redact === false) return false;
  return !/^(?:off|0|false|no)$/i.test(process.env.ENGRAM_REDACT ?? '');
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
