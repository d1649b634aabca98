import type { Command } from 'commander';
import type { Engram } from '../../../engine.js';
import { defaultColdAfterMs, parseAge, runArtifactLifecycle } from '../../../memory/artifact-lifecycle.js';
import type { CliContext, GlobalOptions } from '../cli-context.js';
import { EXIT } from '../exit-codes.js';
import type { Io } from '../output.js';
import { formatBytes, formatPairs, printJson } from '../output.js';
import { parseInteger } from './recall.js';

interface LifecycleArgs extends GlobalOptions {
  olderThan?: string;
  dryRun?: boolean;
  limit?: string;
}

/**
 * `engram artifacts lifecycle`: artifacts older than `--older-than` (default `$ENGRAM_ARTIFACT_COLD_AFTER`, else
 * 30d) are compressed harder and moved to the cold tier; reads rehydrate them. Exit 1 when some could not move
 * (each stays hot and readable; listed).
 */
export async function artifactLifecycleCommand(mem: Engram, args: LifecycleArgs, io: Io): Promise<number> {
  const olderThanMs = args.olderThan !== undefined ? parseAge(args.olderThan) : defaultColdAfterMs();
  const report = await runArtifactLifecycle(mem.store, {
    olderThanMs,
    ...(args.dryRun ? { isDryRun: true } : {}),
    ...(args.limit !== undefined ? { limit: parseInteger(args.limit, 'limit') } : {}),
  });
  const code = report.failures.length > 0 ? EXIT.FAILURE : EXIT.OK;
  if (args.json) {
    printJson(io, { ...report, olderThanMs, coldLocation: mem.store.artifactTiers.coldLocation });
    return code;
  }
  const verb = report.isDryRun ? 'would move' : 'moved';
  io.out(
    formatPairs([
      ['cut-off', `${report.cutoff} (created more than ${formatAge(olderThanMs)} ago)`],
      ['artifacts', `${report.moved} of ${report.candidates} ${verb} to the cold tier (${mem.store.artifactTiers.coldLocation})`],
      [
        'bytes',
        `${formatBytes(report.originalBytes)} original; ${formatBytes(report.hotBytes)} stored hot -> ${formatBytes(report.coldBytes)} cold ` +
          `(${formatBytes(report.hotBytes - report.coldBytes)} saved)`,
      ],
      ...(report.orphansErased > 0 ? ([['orphans', `${report.orphansErased} cold copies of purged artifacts erased`]] as Array<[string, string]>) : []),
      ['failures', `${report.failures.length}${report.failures.length > 0 ? ' (each stays hot and readable)' : ''}`],
      ['time', `${(report.ms / 1000).toFixed(1)} s`],
    ]),
  );
  for (const f of report.failures) io.err(`${f.artifactId}: ${f.message}`);
  if (report.isDryRun) io.out('Dry run: nothing was moved. Run again without --dry-run to move them.');
  return code;
}

function formatAge(ms: number): string {
  if (ms % 86_400_000 === 0) return `${ms / 86_400_000} d`;
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${ms / 1000} s`;
}

/** `engram artifacts lifecycle`. */
export function register(program: Command, context: CliContext): void {
  const { io } = context;
  const artifacts = program.command('artifacts').description('the artifact lifecycle: old artifacts compressed harder and moved to the cold tier');
  artifacts
    .command('lifecycle')
    .description('move artifacts older than --older-than to the cold tier (previews, digests and search stay; reads rehydrate them)')
    .option('--older-than <age>', 'artifacts created longer ago than this: 30d, 12h, 90m (default $ENGRAM_ARTIFACT_COLD_AFTER, else 30d)')
    .option('--dry-run', 'count and measure what would move (compressing each), change nothing')
    .option('-n, --limit <n>', 'move at most this many')
    .action(context.withStore((m, args: LifecycleArgs) => artifactLifecycleCommand(m, args, io)));
}
