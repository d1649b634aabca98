import { Option, type Command } from 'commander';
import type { CliContext, GlobalOptions } from '../cli-context.js';
import { EVENT_KINDS } from '../../../model/event.js';
import { CLI_DRAIN_LIMIT, drainQueue } from './embedding.js';
import type { Engram } from '../../../engine.js';
import { EngramError } from '../../../errors.js';
import type { EventKind } from '../../../model/event.js';
import type { Retriever } from '../../../memory/recall.js';
import { EXIT } from '../exit-codes.js';
import type { Io } from '../output.js';
import { printJson } from '../output.js';
import { checkGranularity, GRANULARITIES, granularText, type Granularity } from '../../../view/granular-recall.js';

export interface RecallArgs {
  query: string[];
  session?: string[];
  kind?: string[];
  since?: string;
  until?: string;
  task?: string;
  k?: string;
  budget?: string;
  /** Do not condition on the session's task card. */
  ignoreTask?: boolean;
  retriever?: Retriever;
  /** auto, events, summaries or entities (view/granular-recall.ts); absent: events, reported as before (no header). */
  granularity?: Granularity;
  json?: boolean;
}

/**
 * `engram recall`: prints the pack (or the JSON result) and exits 0, or {@link EXIT.NO_MATCH} (9) when no event matches
 * the query (`match: "none"`; with `--granularity`, only when no summary or entity answers either).
 */
export async function recallCommand(mem: Engram, args: RecallArgs, io: Io): Promise<number> {
  // The local CLI is full trust; the engine's view applies the task-card rule (one session: its card ranks).
  const request = {
    ...(args.ignoreTask ? { ignoreTask: true } : {}),
    ...(args.session ? { sessionIds: args.session } : {}),
    ...(args.kind ? { kinds: args.kind as EventKind[] } : {}),
    ...(args.since ? { fromMs: parseTime(args.since, 'since') } : {}),
    ...(args.until ? { toMs: parseTime(args.until, 'until') } : {}),
    ...(args.task ? { taskId: args.task } : {}),
    ...(args.k ? { k: parseInteger(args.k, 'k') } : {}),
    ...(args.budget ? { budgetTokens: parseInteger(args.budget, 'budget') } : {}),
    ...(args.retriever ? { retriever: args.retriever } : {}),
  };
  if (args.granularity !== undefined) {
    const { taskStateVersion: _v, ...out } = await mem.viewAs().recallGranular(args.query.join(' '), { ...request, granularity: checkGranularity(args.granularity) });
    if (args.json) printJson(io, out);
    else io.out(granularText(out.granular, out.text));
    const layers = out.granular.summaries.length + out.granular.entities.length;
    return out.match === 'none' && layers === 0 ? EXIT.NO_MATCH : EXIT.OK;
  }
  const { taskStateVersion: _version, ...result } = await mem.viewAs().recallOne(args.query.join(' '), request);
  // The text says so itself when nothing matches (`No event in memory matches "..."`).
  if (args.json) printJson(io, result);
  else io.out(result.text);
  return result.match === 'none' ? EXIT.NO_MATCH : EXIT.OK;
}

export function parseInteger(value: string, field: string): number {
  if (!/^-?\d+$/.test(value)) throw new EngramError('INVALID_INPUT', `--${field}: "${value}" is not a whole number`, { field });
  return Number(value);
}

/** ISO-8601 (`2025-09-03`, `2025-09-03T10:00Z`) or a relative age (`30m`, `12h`, `7d`). */
export function parseTime(value: string, field: string, nowMs = Date.now()): number {
  const rel = /^(\d+)([smhd])$/.exec(value);
  if (rel) {
    const unit = { s: 1e3, m: 6e4, h: 36e5, d: 864e5 }[rel[2] as 's' | 'm' | 'h' | 'd'];
    return nowMs - Number(rel[1]) * unit;
  }
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) {
    throw new EngramError('INVALID_INPUT', `--${field}: "${value}" is neither an ISO-8601 time nor an age like 12h or 7d`, { field });
  }
  return ms;
}

/** `engram recall`. */
export function register(program: Command, context: CliContext): void {
  const { io } = context;
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
    .addOption(
      new Option('--granularity <level>', 'auto picks by the query (identifier or quoted phrase: events; broad question: summaries, entities; an entity name: its expansion) and reports it; default: events, as before').choices([...GRANULARITIES]),
    )
    .addOption(new Option('--retriever <name>', 'fts, vector or hybrid (default: hybrid when the store has vectors of the embedder)').choices(['fts', 'vector', 'hybrid']))
    // A query may be an identifier that looks like an option (`engram recall --max-retries=7`): a token that is
    // not one of recall's options is part of the query, in order. recall's own options still parse anywhere.
    .allowUnknownOption()
    .action(
      context.withStore(
        async (m, args: RecallArgs & GlobalOptions) => {
          if (args.retriever !== 'fts') await drainQueue(m, io, { limit: CLI_DRAIN_LIMIT, quiet: args.json === true });
          return recallCommand(m, args, io);
        },
        false,
        // `--retriever fts` needs no embedder: not loading the built-in one saves ~100-250 ms of CLI start.
        (args: RecallArgs & GlobalOptions) => (args.retriever === 'fts' ? 'none' : 'foreground'),
      ),
    );
}
