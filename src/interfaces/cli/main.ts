import { Command, CommanderError } from 'commander';
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { openEngram, type Engram } from '../../engine.js';
import { EngramError, isEngramError } from '../../errors.js';
import { DEFAULT_DB_PATH, type StoreLocation } from '../../store/open-store.js';
import { createEmbedderFromSpec, DEFAULT_EMBEDDER_SPEC, implicitEmbedderSpec, parseEmbedderSpec } from '../../providers/embedder-spec.js';
import { PACKAGE_VERSION } from '../shared/package-version.js';
import { LLM_OPTION_DESCRIPTION } from './llm-option.js';
import type { CliContext, CommandAction, GlobalOptions, HookCall, VectorUse } from './cli-context.js';
import { registerCommands } from './command-registry.js';
import { EXIT, exitCodeFor } from './exit-codes.js';
import type { Io } from './output.js';
import { formatPairs, processIo, quietOnClosedPipes } from './output.js';

/**
 * The `engram` command line. Parses arguments, opens the store, calls the engine, and maps errors to
 * exit codes in one place ({@link exitCodeFor}). Returns the exit code instead of calling process.exit,
 * so pending writes finish and the store closes cleanly.
 */
export async function main(argv: string[], io: Io = processIo, options: MainOptions = {}): Promise<number> {
  if (io === processIo) quietOnClosedPipes();
  const asJson = argv.includes('--json');
  let exitCode: number = EXIT.OK;
  let mem: Engram | undefined;
  // The resident hook process's engine: handed to every command, closed by its owner, not here.
  const shared = options.store;
  /** `--embedder`, else `$ENGRAM_EMBEDDER`, else the default (full-text only, with a note, when its package is missing). */
  const embedderSpec = (args: GlobalOptions): string => {
    const given = args.embedder || process.env.ENGRAM_EMBEDDER;
    if (given) return given;
    const implicit = implicitEmbedderSpec();
    if (implicit.note !== undefined && !asJson) io.err(`engram: ${implicit.note}`);
    return implicit.spec;
  };
  const openStore = async <A extends GlobalOptions>(args: A, options: { create?: boolean; vectors?: VectorUse } = {}): Promise<Engram> => {
    if (shared) return shared;
    const create = options.create ?? false;
    const vectors = options.vectors ?? 'none';
    // Only verbs that embed or search vectors load an embedder (the built-in one costs ~100 ms and 130 MB).
    const embedder = vectors === 'none' ? null : await createEmbedderFromSpec(parseEmbedderSpec(embedderSpec(args)));
    mem = await openEngram({
      ...storeLocation(args),
      sqlite: { create },
      postgres: { create },
      ...(embedder ? { embedder, indexing: { background: vectors === 'background' } } : {}),
      ...busRepo(args),
      ingest: { redact: redactSetting(args) },
    });
    return mem;
  };
  const withStore = <A extends GlobalOptions>(
    run: (mem: Engram, args: A) => Promise<number>,
    createStore: boolean | ((args: A) => boolean) = false,
    vectors: VectorUse | ((args: A) => VectorUse) = 'none',
    inputFiles?: (args: A) => string[],
  ): CommandAction =>
    merged(async (args: A): Promise<void> => {
      // Only writing verbs create a store; read verbs on a missing store fail with NOT_FOUND.
      const create = typeof createStore === 'function' ? createStore(args) : createStore;
      if (create && inputFiles) checkInputFiles(inputFiles(args));
      exitCode = await run(await openStore(args, { create, vectors: typeof vectors === 'function' ? vectors(args) : vectors }), args);
    });
  const withoutStore = <A extends GlobalOptions>(run: (args: A) => Promise<number>): CommandAction =>
    merged(async (args: A): Promise<void> => {
      exitCode = await run(args);
    });
  const cliContext: CliContext = {
    io,
    version: PACKAGE_VERSION,
    withStore,
    withoutStore,
    openStore,
    storeLocation,
    run: main,
    ...(options.hookCall ? { hookCall: options.hookCall } : {}),
  };

  const program = new Command()
    .name('engram')
    .description('Lossless memory and context engine for LLM agents.')
    .version(PACKAGE_VERSION)
    .option('--db <path>', `SQLite store (default: $ENGRAM_DB or ${DEFAULT_DB_PATH})`)
    .option('--pg <url>', 'PostgreSQL store, postgres://user:pass@host/db[?schema=name] (default: $ENGRAM_PG_URL; wins over the SQLite default)')
    .option('--json', 'machine-readable output on stdout')
    .option(
      '--embedder <spec>',
      `semantic recall: builtin (offline, default), none, onnx:<model id or directory> (options: 'onnx[pooling=cls,dtype=q8]:<...>'), openai:<model> (default: $ENGRAM_EMBEDDER or ${DEFAULT_EMBEDDER_SPEC})`,
    )
    .option('--llm <spec>', LLM_OPTION_DESCRIPTION)
    .option('--repo <path>', 'the git repository that repo: and diff: pointers address (default: $ENGRAM_REPO, else the working directory)')
    .option('--no-redact', 'store credentials verbatim instead of replacing them with [REDACTED:kind:hash] (default: redact; $ENGRAM_REDACT=off)')
    // With --json, a parser error is reported once, as the JSON error object reportError prints.
    .configureOutput({
      writeOut: (s) => io.out(s.replace(/\n$/, '')),
      writeErr: (s) => io.err(s.replace(/\n$/, '')),
      outputError: (s, write) => (asJson ? undefined : write(s)),
    })
    .exitOverride()
    .showHelpAfterError(asJson ? false : '(run engram --help for usage)');

  // Only the invoked command's module graph is loaded (command-registry.ts); help loads every command.
  await registerCommands(program, cliContext, argv);

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
    exitCode = reportError(err, io, asJson);
  } finally {
    await mem?.close();
  }
  return exitCode;
}

/** What `main` may be lent besides its arguments: by the resident hook process (interfaces/hook-daemon), and by bin/engram.js for a hook whose stdin it read. */
export interface MainOptions {
  /** An open engine every command uses instead of opening the store (it stays open). */
  store?: Engram;
  /** A hook call's own process context, when `main` runs it on its behalf (cli-context.ts {@link HookCall}). */
  hookCall?: HookCall;
}

/** A commander action whose arguments are the subcommand's options merged with the program's global ones and its positional values. */
function merged<A>(fn: (args: A & GlobalOptions) => Promise<void>): CommandAction {
  return function (this: Command, ...rest: unknown[]): Promise<void> {
    const cmd = rest[rest.length - 1] as Command;
    const positional = rest.slice(0, -2);
    return fn({ ...cmd.optsWithGlobals(), ...positionalArgs(cmd, positional) } as A & GlobalOptions);
  };
}

/**
 * Before a writing verb opens, and so creates, the store: the files it will read (ingest's transcript, an `@FILE`
 * value) must be readable files, so that a mistyped path fails with NOT_FOUND and leaves no empty store behind
 * (issue #31). Standard input (`-`) is not a file to check.
 */
function checkInputFiles(paths: readonly string[]): void {
  for (const path of paths.filter((p) => p !== '-')) {
    let isFile: boolean;
    try {
      isFile = statSync(path).isFile();
      if (isFile) accessSync(path, constants.R_OK);
    } catch (err) {
      const reason = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message;
      throw new EngramError('NOT_FOUND', `${path}: ${reason} (no store was created)`, { field: 'file', path });
    }
    if (!isFile) throw new EngramError('INVALID_INPUT', `${path} is not a file (no store was created)`, { field: 'file', path });
  }
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

/**
 * Said after an unknown option: the token may be a value that starts with "-" (a query like --max-retries=7);
 * `recall` takes those as they are, other commands need them after "--".
 */
const DASH_VALUE_HINT = 'engram: a value that starts with "-" goes after "--", e.g. engram karma add -- "--force is never used on main"';

/** Prints an error and returns its exit code. The one place CLI errors are mapped. */
function reportError(err: unknown, io: Io, asJson: boolean): number {
  if (err instanceof CommanderError) {
    // Help and version "errors" are normal exits; commander already printed the message.
    if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return EXIT.OK;
    // Commander printed its message (in text mode); an argument the parser refused is invalid input.
    const message = err.message.replace(/^error: /, '');
    if (asJson) io.err(JSON.stringify({ error: new EngramError('INVALID_INPUT', message, { parserCode: err.code }).toJSON() }));
    else if (err.code === 'commander.unknownOption') io.err(DASH_VALUE_HINT);
    return exitCodeFor('INVALID_INPUT');
  }
  const e = isEngramError(err) ? err : new EngramError('INTERNAL', err instanceof Error ? (err.stack ?? err.message) : String(err));
  if (asJson) io.err(JSON.stringify({ error: e.toJSON() }));
  else io.err(`engram: ${e.code}: ${e.message}`);
  return exitCodeFor(e.code);
}
