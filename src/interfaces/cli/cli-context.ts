import type { Command } from 'commander';
import type { Engram } from '../../engine.js';
import type { StoreLocation } from '../../store/open-store.js';
import type { Io } from './output.js';

/** The program's own options, merged into every command's arguments (`--db`, `--json` may stand anywhere). */
export interface GlobalOptions {
  db?: string;
  pg?: string;
  json?: boolean;
  embedder?: string;
  /** `--llm <spec>`: the model consolidation derives summaries with (see llm-option.ts). */
  llm?: string;
  repo?: string;
  /** False with --no-redact. */
  redact?: boolean;
}

/**
 * Which verbs load an embedder: `none` (the built-in one costs ~100 ms and 130 MB), `foreground` (vectors
 * embedded by the verb itself) or `background` (a worker embeds while a server runs).
 */
export type VectorUse = 'none' | 'foreground' | 'background';

/** A commander action: positional values, then the options object, then the command. */
export type CommandAction = (this: Command, ...args: unknown[]) => Promise<void>;

/** What `main` lends each command when it registers: output, the package version and the two action wrappers. */
export interface CliContext {
  readonly io: Io;
  /** The version in package.json, reported by `--version`, `engram serve` and `engram mcp`. */
  readonly version: string;
  /**
   * An action that opens the store (`--pg`, `--db`, `$ENGRAM_PG_URL`, `$ENGRAM_DB`, else the default file),
   * runs `run` and records its exit code; `main` closes the store. Only writing verbs pass `createStore` (a
   * read verb on a missing store fails with NOT_FOUND). `inputFiles`: the files the verb will read; when it creates
   * the store, they are checked first, so a bad path leaves no empty store behind.
   */
  withStore<A extends GlobalOptions>(
    run: (mem: Engram, args: A) => Promise<number>,
    createStore?: boolean | ((args: A) => boolean),
    vectors?: VectorUse | ((args: A) => VectorUse),
    inputFiles?: (args: A) => string[],
  ): CommandAction;
  /** An action that touches no store of the user's (migrate names its own, bench makes temporary ones). */
  withoutStore<A extends GlobalOptions>(run: (args: A) => Promise<number>): CommandAction;
  /**
   * Opens the store as {@link withStore} does, for an action that maps its own errors (`hooks run`); `main`
   * closes it. Defaults: no create, no embedder.
   */
  openStore<A extends GlobalOptions>(args: A, options?: { create?: boolean; vectors?: VectorUse }): Promise<Engram>;
  /** Runs another command line with this CLI (`main`): the resident hook process runs each hook call through it. */
  run(argv: string[], io: Io, options?: { store?: Engram; hookCall?: HookCall }): Promise<number>;
  /** Set when a hook runs on behalf of another process (the resident hook process): that process's stdin, directory and host. */
  readonly hookCall?: HookCall;
  /** The store the global options name (`--pg`, `--db`, `$ENGRAM_PG_URL`, `$ENGRAM_DB`, else the default file), SQLite paths absolute. */
  storeLocation(args: GlobalOptions): StoreLocation;
}

/** A hook call run on behalf of the hook's own process (interfaces/hook-daemon): what that process would have read itself. */
export interface HookCall {
  /** The hook's JSON input, as the host wrote it to the hook's stdin. */
  stdin: string;
  /** The hook process's working directory (where the host started it). */
  cwd: string;
  /** The host's process ids, as seen from the hook's process (util/process-parents.ts). */
  hostPids: number[];
}

/** Each file under commands/ exports one: it adds its commands to the program. */
export type RegisterCommands = (program: Command, context: CliContext) => void;

/** The file an `@FILE` argument names (as a one-element list for {@link CliContext.withStore}'s `inputFiles`), else none. */
export function atFilePath(value: unknown): string[] {
  return typeof value === 'string' && value.length > 1 && value.startsWith('@') ? [value.slice(1)] : [];
}
