import type { Command } from 'commander';
import type { CliContext, GlobalOptions } from '../cli-context.js';
import { userInfo } from 'node:os';
import type { Engram } from '../../../engine.js';
import { EngramError } from '../../../errors.js';
import type { PurgeReport, PurgeSelector } from '../../../memory/purge.js';
import type { PurgeCounts } from '../../../store/backend.js';
import { EXIT } from '../exit-codes.js';
import type { Io } from '../output.js';
import { printJson } from '../output.js';

export interface PurgeArgs {
  /** Purge this session whole; with `match`, only search it. */
  session?: string[];
  event?: string[];
  match?: string;
  yes?: boolean;
  dryRun?: boolean;
  /** List the purge log instead. */
  log?: boolean;
  json?: boolean;
}

/**
 * `engram purge`: the one destructive command (memory/purge.ts). Without `--yes` it only shows what would go
 * and exits 2, changing nothing; `--dry-run` shows it and exits 0. The local CLI is full trust: the purge is
 * recorded as the operating-system user.
 */
export async function purgeCommand(mem: Engram, args: PurgeArgs, io: Io): Promise<number> {
  if (args.log) {
    const rows = await mem.store.listPurgeLog();
    if (args.json) printJson(io, rows);
    else if (rows.length === 0) io.out('No purges.');
    else for (const r of rows) io.out(`${r.id}  ${r.ts}  ${r.actor}  ${JSON.stringify(r.selector)}\n  ${describeCounts(r.counts)}`);
    return EXIT.OK;
  }
  const selector = selectorOf(args);
  const actor = `os:${osUser()}`;
  const isConfirmed = args.yes === true && args.dryRun !== true;
  const report = await mem.purge(selector, { actor, isDryRun: !isConfirmed });
  if (args.json) printJson(io, report);
  else io.out(describeReport(report));
  if (report.scrub && !report.scrub.isComplete) io.err(`engram: warning: the purge committed, but the store's files still hold purged bytes: ${report.scrub.reason ?? 'scrub incomplete'}`);
  if (!isConfirmed && args.dryRun !== true) {
    io.err('engram: purge refused: it deletes content for good; run it again with --yes to purge (nothing was changed)');
    return EXIT.INVALID_INPUT;
  }
  return EXIT.OK;
}

function selectorOf(args: PurgeArgs): PurgeSelector {
  const sessions = args.session ?? [];
  const events = args.event ?? [];
  if (args.match !== undefined) {
    if (events.length > 0) throw new EngramError('INVALID_INPUT', '--match and --event: give one selector (--session may limit --match)', { field: 'match' });
    return { match: args.match, ...(sessions.length > 0 ? { sessionIds: sessions } : {}) };
  }
  if (events.length > 0) {
    if (sessions.length > 0) throw new EngramError('INVALID_INPUT', '--event and --session: give one selector', { field: 'event' });
    return { eventIds: events };
  }
  if (sessions.length === 1) return { sessionId: sessions[0]! };
  if (sessions.length > 1) throw new EngramError('INVALID_INPUT', '--session: purge one session at a time', { field: 'session' });
  throw new EngramError('INVALID_INPUT', 'purge: say what to purge: --session ID, --event ID..., or --match TEXT', { field: 'selector' });
}

function describeReport(r: PurgeReport): string {
  const sessions = Object.entries(r.bySession);
  const head = r.isDryRun ? `Would purge ${plural(r.counts.events, 'event')}` : `Purged ${plural(r.counts.events, 'event')} (${r.id})`;
  const lines = [sessions.length > 0 ? `${head}:` : `${head}.`];
  for (const [session, n] of sessions) lines.push(`  session ${session}: ${plural(n, 'event')}`);
  lines.push(`  ${describeCounts(r.counts)}`);
  if (!r.isDryRun) lines.push('Tombstones keep each event\'s id, session, turn, kind and time; the purge log records who, when and what (never the content).');
  if (r.scrub?.isComplete) {
    const steps = r.scrub.steps.length > 3 ? `${r.scrub.steps.length} tables vacuumed` : r.scrub.steps.join(', ');
    lines.push(`Store scrubbed after the purge (${steps}; ${r.scrub.ms} ms). What a purge cannot reach (backups, copies): docs/security.md.`);
  }
  return lines.join('\n');
}

function describeCounts(c: PurgeCounts): string {
  return [
    plural(c.events, 'event'),
    plural(c.artifacts, 'artifact'),
    plural(c.vectors, 'vector'),
    plural(c.embeddingJobs, 'embedding job'),
    plural(c.recallLog, 'recall-log row'),
    plural(c.contextStates, 'cache version'),
    plural(c.karma, 'karma fact'),
    plural(c.engrams, 'engram'),
  ].join(', ');
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function osUser(): string {
  try {
    return userInfo().username || process.env.USER || 'unknown';
  } catch {
    // No passwd entry (some containers).
    return process.env.USER || process.env.USERNAME || 'unknown';
  }
}

/** `engram purge`. */
export function register(program: Command, context: CliContext): void {
  const { io } = context;
  program
    .command('purge')
    .description('delete content for good (privacy): a session, events, or every event holding a text; leaves tombstones, logged')
    .option('-s, --session <id...>', 'purge this session whole (with --match: only search these sessions)')
    .option('-e, --event <id...>', 'purge these events (ids or unique prefixes)')
    .option('-m, --match <text>', 'purge every event holding this exact text (a literal, not a pattern; at least 4 characters)')
    .option('--yes', 'really purge (without it: show what would be purged, change nothing, exit 2)')
    .option('--dry-run', 'show what would be purged and exit 0')
    .option('--log', 'list past purges (who, when, what; never the content)')
    .action(context.withStore((m, args: PurgeArgs & GlobalOptions) => purgeCommand(m, args, io)));
}
