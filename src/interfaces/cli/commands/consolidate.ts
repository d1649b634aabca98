import type { Command } from 'commander';
import type { Engram } from '../../../engine.js';
import { EngramError } from '../../../errors.js';
import { runConsolidation } from '../../../consolidate/consolidation-run.js';
import { moveSummaryToCold } from '../../../consolidate/cold-tier.js';
import { logEscalationsTo, logLlmCallsTo } from '../../../consolidate/telemetry.js';
import { SUMMARY_DEPTH_NAMES, type SummaryDepth } from '../../../model/summary.js';
import type { CliContext, GlobalOptions } from '../cli-context.js';
import { openLlm } from '../llm-option.js';
import type { Io } from '../output.js';
import { formatPairs, printJson } from '../output.js';
import { createProgress } from '../progress.js';
import { parseInteger } from './recall.js';

interface ConsolidateArgs extends GlobalOptions {
  session?: string;
  project?: string;
  backfillSkipped?: boolean;
  sessionsPerArc?: string;
  arcsPerEpoch?: string;
  /** False with --no-gate. */
  gate?: boolean;
}

/** `engram consolidate`: summarizes sessions (the gate first), then makes the arcs and epochs that are due. */
export async function consolidateCommand(mem: Engram, args: ConsolidateArgs, io: Io): Promise<number> {
  if (args.session !== undefined && args.backfillSkipped) {
    throw new EngramError('INVALID_INPUT', '--session: not with --backfill-skipped (a named session is summarized whatever the gate said)', { field: 'session' });
  }
  const llm = await openLlm(args, { onCall: logLlmCallsTo(mem.bus) });
  const consolidator = mem.consolidator({
    llm,
    telemetry: logEscalationsTo(mem.bus, 'summary'),
    ...(args.sessionsPerArc !== undefined ? { sessionsPerArc: parseInteger(args.sessionsPerArc, 'sessions-per-arc') } : {}),
    ...(args.arcsPerEpoch !== undefined ? { arcsPerEpoch: parseInteger(args.arcsPerEpoch, 'arcs-per-epoch') } : {}),
    ...(args.gate === false ? { gate: false as const } : {}),
  });
  const progress = createProgress(io);
  let events = 0;
  const report = await runConsolidation(mem.store, consolidator, {
    ...(args.session !== undefined ? { sessionId: args.session } : {}),
    ...(args.project !== undefined ? { project: args.project } : {}),
    ...(args.backfillSkipped ? { backfillSkipped: true } : {}),
    onProgress: (done, total, out) => {
      events += out.summaries.reduce((n, s) => n + s.sourceEventIds.length, 0);
      progress.update(done, total, 'sessions', events, 'events');
    },
  }).finally(() => progress.stop());
  if (args.json) {
    printJson(io, { ...report, model: llm ? llm.name : null });
    return 0;
  }
  const b = report.byStatus;
  io.out(
    formatPairs([
      ['model', llm ? llm.name : 'none (deterministic level)'],
      ['sessions', `${report.sessions}: ${b.summarized} summarized, ${b.skipped} skipped by the gate, ${b.unchanged} unchanged, ${b.empty} empty`],
      ['summaries', `${report.summaries} session, ${report.arcs} arc, ${report.epochs} epoch`],
      ['model tokens', `${report.usage.inputTokens} in, ${report.usage.outputTokens} out`],
      ['time', `${(report.ms / 1000).toFixed(1)} s`],
    ]),
  );
  for (const k of report.skipped) io.out(`skipped ${k.sessionId}: ${k.reasons.join('; ') || 'by the gate'}`);
  if (b.skipped > report.skipped.length) io.out(`(${b.skipped - report.skipped.length} more skipped)`);
  if (b.skipped > 0) io.out('Skipped sessions keep all their events; summarize them anyway with: engram consolidate --backfill-skipped');
  if (b.held > 0) io.out(`${b.held} session${b.held === 1 ? ' was' : 's were'} being consolidated by another consolidator (engram serve's worker, another run) and left to it.`);
  return 0;
}

type SummariesArgs = GlobalOptions & {
  project?: string;
  depth?: string;
  session?: string;
  cold?: boolean;
  query?: string;
  limit?: string;
  expand?: string;
  prune?: string;
  reason?: string;
  /** Decision records instead of summaries (consolidate/decision-records.ts). */
  decisions?: boolean;
  subject?: string;
};

/** `engram summaries`: the summary DAG, newest first (or a search with --query); `--decisions`: the decision records. */
export async function summariesCommand(
  mem: Engram,
  args: SummariesArgs,
  io: Io,
): Promise<number> {
  if (args.prune !== undefined) {
    const moved = await moveSummaryToCold(mem.store, args.prune, args.reason ?? 'pruned by hand');
    if (args.json) printJson(io, moved);
    else io.out(`Summary ${moved.id} is in the cold tier (${moved.coldReason}); engram summaries --cold lists it.`);
    return 0;
  }
  if (args.expand !== undefined) {
    const answer = await mem.viewAs().expand(args.expand);
    if (args.json) printJson(io, answer.details);
    else io.out(answer.text);
    return 0;
  }
  const filter = {
    ...(args.project !== undefined ? { project: args.project } : {}),
    ...(args.depth !== undefined ? { depth: parseInteger(args.depth, 'depth') as SummaryDepth } : {}),
    ...(args.cold ? { includeCold: true } : {}),
    ...(args.limit !== undefined ? { limit: parseInteger(args.limit, 'limit') } : {}),
    ...(args.decisions ? { kind: 'decision' as const } : {}),
  };
  if (args.subject !== undefined && !args.decisions) throw new EngramError('INVALID_INPUT', '--subject: only with --decisions', { field: 'subject' });
  const summaries =
    args.query !== undefined
      ? (await mem.summaries.search(args.query, filter)).map((h) => h.summary)
      : await mem.summaries.list({ ...filter, ...(args.session !== undefined ? { sessionId: args.session } : {}), ...(args.subject !== undefined ? { subject: args.subject } : {}) });
  if (args.json) {
    printJson(io, summaries);
    return 0;
  }
  if (summaries.length === 0) {
    io.out(args.decisions ? 'No decision records yet. They are made from decision events by: engram consolidate' : 'No summaries yet. Make them with: engram consolidate');
    return 0;
  }
  for (const s of summaries) {
    const cold = s.coldAt !== null ? `  [cold: ${s.coldReason ?? 'superseded'}${s.coldSourceId ? ` -> ${s.coldSourceId}` : ''}]` : '';
    if (s.kind === 'decision') {
      io.out(`${s.id}  decision  project ${s.project}${s.subject ? `  subject ${s.subject}` : ''}  event ${s.sourceEventIds[0]}  ${s.level} ${s.confidence}${cold}`);
      io.out(`  ${s.text}`);
      continue;
    }
    const down = s.depth > 0 ? `children ${s.childIds.length}` : `events ${s.sourceEventIds.length}`;
    io.out(`${s.id}  ${SUMMARY_DEPTH_NAMES[s.depth]}  project ${s.project}  ${down}  ${s.tokens} tokens  ${s.level} ${s.confidence}${cold}`);
    io.out(`  ${s.text.split('\n').join('\n  ')}`);
  }
  return 0;
}

/** `engram consolidate` and `engram summaries`. */
export function register(program: Command, context: CliContext): void {
  const { io } = context;
  program
    .command('consolidate')
    .description('summarize sessions (session, arc and epoch summaries; the significance gate first), with the model of --llm or none')
    .option('--session <id>', 'only this session (summarized whatever the gate says)')
    .option('--project <name>', 'only sessions of this project')
    .option('--backfill-skipped', 'summarize the sessions the gate skipped')
    .option('--sessions-per-arc <n>', 'sessions per arc summary (default 8)')
    .option('--arcs-per-epoch <n>', 'arcs per epoch summary (default 4)')
    .option('--no-gate', 'summarize every session (no significance gate)')
    .action(
      context.withStore((m, args: ConsolidateArgs) =>
        consolidateCommand(m, args.session !== undefined ? { ...args, gate: false } : args, io),
      ),
    );
  program
    .command('summaries')
    .description('list summaries, newest first: session (depth 0), arc (1), epoch (2); --expand ID drills down one level')
    .option('--project <name>', 'only this project')
    .option('--depth <n>', 'only this depth: 0 session, 1 arc, 2 epoch')
    .option('--session <id>', "only this session's summaries")
    .option('--cold', 'include the cold tier (summaries replaced by newer ones)')
    .option('-q, --query <text>', 'full-text search instead of a list')
    .option('-n, --limit <n>', 'at most this many (default 50)')
    .option('--expand <id>', "one summary with its children's or source events' ids")
    .option('--prune <id>', 'move a summary to the cold tier (out of default lists and search; nothing is deleted)')
    .option('--reason <text>', 'with --prune: why')
    .option('--decisions', 'decision records instead of summaries (with --cold: the replaced ones too, each naming what replaced it)')
    .option('--subject <key>', 'with --decisions: only decisions on this subject')
    .action(context.withStore((m, args: SummariesArgs) => summariesCommand(m, args, io)));
}
