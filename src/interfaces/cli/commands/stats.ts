import type { Command } from 'commander';
import type { CliContext, GlobalOptions } from '../cli-context.js';
import { parseInteger } from './recall.js';
import type { Engram } from '../../../engine.js';
import type { Io } from '../output.js';
import { formatBytes, formatPairs, printJson } from '../output.js';
import { withoutCitations } from '../../../view/session-overview.js';

export async function statsCommand(mem: Engram, args: { json?: boolean }, io: Io): Promise<number> {
  const s = await mem.stats();
  if (args.json) {
    printJson(io, s);
    return 0;
  }
  const kinds = Object.entries(s.eventsByKind)
    .sort(([, a], [, b]) => b - a)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  io.out(
    formatPairs([
      ['store', s.backend],
      ['schema version', s.schemaVersion],
      ['sessions', s.sessions],
      ['events', s.events],
      ['by kind', kinds || '-'],
      ['artifacts', `${s.artifacts} (${formatBytes(s.artifactBytes)} original, ${formatBytes(s.artifactStoredBytes)} stored)`],
      [
        'artifact tiers',
        `${s.artifactTiers.hot} hot (${formatBytes(s.artifactTiers.hotStoredBytes)}), ${s.artifactTiers.cold} cold (${formatBytes(s.artifactTiers.coldStoredBytes)}, ` +
          `${formatBytes(s.artifactTiers.coldBytesBefore - s.artifactTiers.coldStoredBytes)} saved by recompression)`,
      ],
      [
        'vectors',
        s.vectors.model
          ? `${s.vectors.model} (${s.vectors.dimensions} dimensions, ${s.vectors.search}); ${s.vectors.pending} queued, ${s.vectors.failed} failed`
          : `none (${s.vectors.search})`,
      ],
      ...(s.vectors.mismatch ? ([['note', s.vectors.mismatch]] as Array<[string, string]>) : []),
      [
        'summaries',
        `${s.summaries.byDepth[0]} session, ${s.summaries.byDepth[1]} arc, ${s.summaries.byDepth[2]} epoch; ${s.summaries.cold} cold; ${s.summaries.skipped} sessions skipped by the gate; ${s.summaries.jobs.pending} queued`,
      ],
    ]),
  );
  return 0;
}

/**
 * `engram sessions`: one line per session as before (`<id>  project <p>  <n> events  last <ts>`, now followed by its
 * agent host), then, indented, what the user first asked and the line its summary opens with, when there are such.
 * Scripts read `--json` (the same fields, citations kept) or the unindented lines.
 */
export async function sessionsCommand(mem: Engram, args: { json?: boolean; limit?: number; project?: string }, io: Io): Promise<number> {
  const sessions = await mem.viewAs().sessionOverviews({ ...(args.limit !== undefined ? { limit: args.limit } : {}), ...(args.project !== undefined ? { project: args.project } : {}) });
  if (args.json) printJson(io, sessions);
  else if (sessions.length === 0) io.out(args.project !== undefined ? `No sessions of project ${args.project}.` : 'No sessions yet. Import one with: engram ingest FILE');
  else {
    for (const s of sessions) {
      const shared = s.sharedWith.length > 0 ? ` (shared with ${s.sharedWith.join(', ')})` : '';
      io.out(`${s.id}  project ${s.project}${shared}  ${s.eventCount} events  last ${s.lastTs ?? s.createdAt}  host ${s.host ?? 'unknown'}`);
      if (s.firstRequest !== null) io.out(`    asked: ${cut(s.firstRequest, DETAIL_CHARS)}`);
      if (s.summaryLine !== null) io.out(`    summary: ${cut(withoutCitations(s.summaryLine), DETAIL_CHARS)}`);
    }
  }
  return 0;
}

/** Characters of a detail line's text in the listing (the JSON has the longer forms). */
const DETAIL_CHARS = 110;

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** `engram share SESSION PROJECT` / `engram unshare SESSION PROJECT`: read-only shares (the local CLI is full trust). */
export async function shareCommand(mem: Engram, args: { session: string; project: string; json?: boolean; isUnshare?: boolean }, io: Io): Promise<number> {
  const view = mem.viewAs();
  if (args.isUnshare) {
    const isRemoved = await view.unshare(args.session, args.project);
    if (args.json) printJson(io, { sessionId: args.session, project: args.project, isRemoved });
    else io.out(isRemoved ? `Session ${args.session} is no longer shared with project ${args.project}.` : `Session ${args.session} was not shared with project ${args.project}.`);
    return 0;
  }
  const session = await view.share(args.session, args.project);
  if (args.json) printJson(io, session);
  else io.out(`Session ${session.id} (project ${session.project}) is shared read-only with: ${session.sharedWith.join(', ')}.`);
  return 0;
}

/** `engram stats`, `engram sessions`, `engram share` and `engram unshare`. */
export function register(program: Command, context: CliContext): void {
  const { io } = context;
  program
    .command('stats')
    .description('counts of sessions, events by kind and artifacts')
    .action(context.withStore((m, args: GlobalOptions) => statsCommand(m, args, io)));

  program
    .command('sessions')
    .description('list sessions, most recent first, with each one\'s agent host, first request and summary line')
    .option('-n, --limit <n>', 'at most this many')
    .option('--project <name>', 'only the sessions this project owns')
    .action(
      context.withStore((m, args: GlobalOptions & { limit?: string; project?: string }) => {
        const { limit, ...rest } = args;
        return sessionsCommand(m, { ...rest, ...(limit !== undefined ? { limit: parseInteger(limit, 'limit') } : {}) }, io);
      }),
    );

  for (const isUnshare of [false, true]) {
    program
      .command(isUnshare ? 'unshare' : 'share')
      .description(isUnshare ? "end a session's read-only share with a project" : "share a session read-only with another project's agents")
      .argument('<session>', 'the session id')
      .argument('<project>', isUnshare ? 'the project whose read access ends' : 'the project whose agents may read it')
      .action(context.withStore((m, args: GlobalOptions & { session: string; project: string }) => shareCommand(m, { ...args, isUnshare }, io)));
  }
}
