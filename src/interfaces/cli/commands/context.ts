import { Option, type Command } from 'commander';
import { atFilePath, type CliContext, type GlobalOptions } from '../cli-context.js';
import { MODEL_PROFILES } from '../../../context/assembly/governor.js';
import { EXIT } from '../exit-codes.js';
import { readFileSync } from 'node:fs';
import type { Engram } from '../../../engine.js';
import { EngramError } from '../../../errors.js';
import type { Io } from '../output.js';
import { formatPairs, printJson } from '../output.js';
import { parseInteger } from './recall.js';
import { loadCodex } from '../../../context/codex-loader.js';
import { contextPackSummary } from '../../shared/context-pack.js';

export interface ContextArgs {
  session: string;
  window: string;
  format?: string;
  query?: string;
  identity?: string;
  identityFile?: string;
  /** Files or directories of static knowledge. */
  codex?: string[];
  maxMessages?: string;
  maxChars?: string;
  modelProfile?: string;
  kvBudgetMb?: string;
  json?: boolean;
}

/** `engram context`: the context pack for the session's next turn (compacting first when over high water). */
export async function contextCommand(mem: Engram, args: ContextArgs, io: Io): Promise<number> {
  const format = args.format ?? 'text';
  const identity = args.identityFile ? readText(args.identityFile, 'identity-file') : (args.identity ?? '');
  const codex = args.codex && args.codex.length > 0 ? loadCodex(args.codex) : undefined;
  if (args.kvBudgetMb !== undefined && args.modelProfile === undefined) {
    throw new EngramError('INVALID_INPUT', '--kv-budget-mb needs --model-profile (one of the known profiles)', { field: 'model-profile' });
  }
  // A session nobody wrote is NOT_FOUND (exit 3), as over HTTP: an empty pack would read as an empty session.
  await mem.getSession(args.session);
  const result = await mem.context.pack(args.session, {
    windowTokens: parseInteger(args.window, 'window'),
    identity,
    ...(args.query ? { query: args.query } : {}),
    ...(codex ? { codex: codex.documents } : {}),
    ...(args.maxMessages !== undefined ? { maxHistoryMessages: parseInteger(args.maxMessages, 'max-messages') } : {}),
    ...(args.maxChars !== undefined ? { maxTotalChars: parseInteger(args.maxChars, 'max-chars') } : {}),
    ...(args.modelProfile !== undefined
      ? { kv: { profile: args.modelProfile as never, kvBudgetBytes: parseInteger(args.kvBudgetMb ?? '0', 'kv-budget-mb') * 1024 * 1024 } }
      : {}),
  });
  const formatted = mem.context.format(result.pack, format);
  if (args.json) {
    printJson(io, { ...contextPackSummary(args.session, result, format, formatted), codexSkipped: codex?.skipped ?? [] });
  } else {
    io.out(typeof formatted === 'string' ? formatted : JSON.stringify(formatted, null, 2));
  }
  return 0;
}

export interface CompactArgs {
  session: string;
  window: string;
  json?: boolean;
}

/** `engram compact`: compacts the session's window now if it is over its high-water mark. */
export async function compactCommand(mem: Engram, args: CompactArgs, io: Io): Promise<number> {
  await mem.getSession(args.session);
  const r = await mem.context.compact(args.session, { windowTokens: parseInteger(args.window, 'window') });
  if (args.json) {
    printJson(
      io,
      r.shouldCompact
        ? { compacted: true, cacheVersion: r.cacheVersion, evicted: r.evicted.length, tokensBefore: r.tokensBefore, tokensAfter: r.tokensAfter, markers: r.markerCount, merged: r.merged, isLowWaterReached: r.isLowWaterReached }
        : { compacted: false, cacheVersion: r.cacheVersion, reason: r.reason, tokens: r.tokensBefore },
    );
  } else if (r.shouldCompact) {
    io.out(
      formatPairs([
        ['evicted events', `${r.evicted.length} (still stored; recall finds them)`],
        ['window tokens', `${r.tokensBefore} -> ${r.tokensAfter}`],
        ['markers', `${r.markerCount}${r.merged > 0 ? ` (${r.merged} merges)` : ''}`],
        ['cache version', r.cacheVersion],
      ]),
    );
  } else {
    io.out(`Nothing to compact (${r.reason.replace(/_/g, ' ')}: ${r.tokensBefore} tokens in the window).`);
  }
  return 0;
}

export interface TaskArgs {
  action: string;
  session: string;
  json?: boolean;
  value?: string;
  turn?: string;
}

/** `engram task get|update|set|history`: the session's task state card. */
export async function taskCommand(mem: Engram, args: TaskArgs, io: Io): Promise<number> {
  switch (args.action) {
    case 'get': {
      const v = await mem.taskStates.get(args.session);
      if (args.json) printJson(io, v);
      else io.out(v ? `version ${v.version} (turn ${v.producedByTurn}, ${v.ts})\n${JSON.stringify(v.state, null, 2)}` : `No task state for session ${args.session} yet.`);
      return 0;
    }
    case 'update':
    case 'set': {
      if (args.value === undefined) {
        throw new EngramError('INVALID_INPUT', `task ${args.action}: give the card as JSON, @FILE, or - for standard input`, { field: 'value' });
      }
      const update = parseJsonValue(args.value);
      const v = await mem.taskStates.update(args.session, update as never, {
        replace: args.action === 'set',
        ...(args.turn !== undefined ? { producedByTurn: parseInteger(args.turn, 'turn') } : {}),
      });
      if (args.json) printJson(io, v);
      else io.out(`Task state of ${args.session} is now version ${v.version}.`);
      return 0;
    }
    case 'history': {
      const versions = await mem.taskStates.history(args.session);
      if (args.json) printJson(io, versions);
      else for (const v of versions) io.out(`v${v.version}  turn ${v.producedByTurn}  ${v.ts}  phase ${v.state.phase}  goals: ${v.state.goals.join('; ') || '-'}`);
      return 0;
    }
    default:
      throw new EngramError('INVALID_INPUT', `task: unknown action "${args.action}"; use get, update, set or history`, { field: 'action' });
  }
}

function parseJsonValue(value: string): unknown {
  const text = value === '-' ? readFileSync(0, 'utf8') : value.startsWith('@') ? readText(value.slice(1), 'value') : value;
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new EngramError('INVALID_INPUT', `value: not valid JSON (${(err as Error).message})`, { field: 'value' });
  }
}

function readText(path: string, field: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    throw new EngramError('NOT_FOUND', `--${field}: cannot read ${path}`, { field });
  }
}

/** `engram context`, `engram compact`, `engram pin` and `engram task`. */
export function register(program: Command, context: CliContext): void {
  const { io } = context;
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
    .action(context.withStore((m, args: ContextArgs & GlobalOptions) => contextCommand(m, args, io)));

  program
    .command('compact')
    .description("compact a session's window now if it is over its high-water mark (nothing is deleted)")
    .requiredOption('-s, --session <id>', 'session')
    .requiredOption('-w, --window <tokens>', "the model's context window in tokens")
    .action(context.withStore((m, args: CompactArgs & GlobalOptions) => compactCommand(m, args, io)));

  program
    .command('pin')
    .description('pin an event in the session window (never evicted or pruned); --unpin to release it')
    .argument('<event>', 'event id')
    .requiredOption('-s, --session <id>', 'session')
    .option('--unpin', 'release the pin')
    .action(
      context.withStore(async (m, args: GlobalOptions & { event: string; session: string; unpin?: boolean }) => {
        await m.context.pin(args.session, args.event, !args.unpin);
        if (args.json) io.out(JSON.stringify({ event: args.event, isPinned: !args.unpin }));
        else io.out(`${args.event} ${args.unpin ? 'unpinned' : 'pinned'} in the window of ${args.session}.`);
        return EXIT.OK;
      }),
    );

  program
    .command('task')
    .description("read or change a session's task state card (versioned; every version is kept)")
    .argument('<action>', 'get | update (merge fields) | set (replace the card) | history')
    .argument('[value]', 'for update/set: the card as JSON, @FILE, or - for standard input')
    .requiredOption('-s, --session <id>', 'session')
    .option('--turn <n>', 'the turn whose work produced this update (default: the latest)')
    .action(
      context.withStore(
        (m, args: TaskArgs & GlobalOptions) => taskCommand(m, args, io),
        (args) => args.action === 'update' || args.action === 'set',
        'none',
        (args) => atFilePath(args.value),
      ),
    );
}
