import { Option, type Command } from 'commander';
import type { CliContext, GlobalOptions } from '../cli-context.js';
import { IMPORT_FORMATS } from '../../../memory/importers/types.js';
import type { BenchLocomoArgs, BenchNeedleArgs } from './bench-run.js';

/** `engram bench locomo` and `engram bench needle`. */
export function register(program: Command, context: CliContext): void {
  const { io } = context;
  const bench = program
    .command('bench')
    .description('measure recall on a benchmark (no store is touched: each conversation or trace gets a temporary one)');
  bench
    .command('locomo')
    .description('LoCoMo evidence recall@k overall and per category, for any file of that shape (embedder: --embedder)')
    .requiredOption('--data <file>', 'LoCoMo-shaped JSON: a list of {sample_id, conversation: {session_N, session_N_date_time}, qa}')
    .option('-k, --k <list>', 'depths, comma-separated (default 5,10,25,50)')
    .addOption(new Option('--retriever <name>', 'fts, vector or hybrid (default: hybrid, fts with --embedder none)').choices(['fts', 'vector', 'hybrid']))
    .action(context.withoutStore((args: BenchLocomoArgs & GlobalOptions) => import('./bench-run.js').then((run) => run.benchLocomoCommand(args, io))));
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
    .option('--consolidate', 'consolidate each session before probing and read matching summaries with each pull (report: needle-consolidated)')
    .addOption(new Option('--traces <n>', 'traces per seed').hideHelp())
    .addOption(new Option('--needles-per-type <n>', 'needles of each type per trace').hideHelp())
    .action(context.withoutStore((args: BenchNeedleArgs & GlobalOptions) => import('./bench-run.js').then((run) => run.benchNeedleCommand(args, io))));
}
