import type { Engram } from '../../../engine.js';
import { EngramError } from '../../../errors.js';
import type { EventKind } from '../../../model/event.js';
import type { Retriever } from '../../../memory/recall.js';
import type { Io } from '../output.js';
import { printJson } from '../output.js';

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
  json?: boolean;
}

export async function recallCommand(mem: Engram, args: RecallArgs, io: Io): Promise<number> {
  // The local CLI is full trust; the engine's view applies the task-card rule (one session: its card ranks).
  const { taskStateVersion: _version, ...result } = await mem.viewAs().recallOne(args.query.join(' '), {
    ...(args.ignoreTask ? { ignoreTask: true } : {}),
    ...(args.session ? { sessionIds: args.session } : {}),
    ...(args.kind ? { kinds: args.kind as EventKind[] } : {}),
    ...(args.since ? { fromMs: parseTime(args.since, 'since') } : {}),
    ...(args.until ? { toMs: parseTime(args.until, 'until') } : {}),
    ...(args.task ? { taskId: args.task } : {}),
    ...(args.k ? { k: parseInteger(args.k, 'k') } : {}),
    ...(args.budget ? { budgetTokens: parseInteger(args.budget, 'budget') } : {}),
    ...(args.retriever ? { retriever: args.retriever } : {}),
  });
  if (args.json) printJson(io, result);
  else io.out(result.hits.length > 0 ? result.text : `No matches for ${JSON.stringify(result.query)}.`);
  return 0;
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
