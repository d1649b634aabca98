import type { Command } from 'commander';
import type { CliContext, GlobalOptions } from '../cli-context.js';
import { resolve } from 'node:path';
import { migrateStore } from '../../../engine.js';
import { EngramError } from '../../../errors.js';
import type { StoreLocation } from '../../../store/open-store.js';
import type { Io } from '../output.js';
import { formatPairs, printJson } from '../output.js';
import { createProgress } from '../progress.js';
import { parseInteger } from './recall.js';

export interface MigrateArgs {
  from: string;
  to: string;
  batch?: string;
  json?: boolean;
}

/** `sqlite:PATH`, a plain path, or a `postgres://` / `postgresql://` URL. */
export function parseStoreLocation(value: string, field: string): StoreLocation {
  if (/^postgres(ql)?:\/\//i.test(value)) return { pg: value };
  const path = value.startsWith('sqlite:') ? value.slice('sqlite:'.length) : value;
  if (path.length === 0 || /^[a-z][a-z0-9+.-]*:\/\//i.test(path)) {
    throw new EngramError('INVALID_INPUT', `--${field}: "${value}" is neither sqlite:PATH, a file path, nor a postgres:// URL`, { field });
  }
  return { db: resolve(path) };
}

/** `engram migrate --from A --to B`: copies a store losslessly, resumably, and verifies the copy. */
export async function migrateCommand(args: MigrateArgs, io: Io): Promise<number> {
  const from = parseStoreLocation(args.from, 'from');
  const to = parseStoreLocation(args.to, 'to');
  if (from.db !== undefined && from.db === to.db) {
    throw new EngramError('INVALID_INPUT', '--to: the target is the source itself', { field: 'to' });
  }
  const progress = createProgress(io);
  try {
    const report = await migrateStore(from, to, {
      ...(args.batch ? { batchSize: parseInteger(args.batch, 'batch') } : {}),
      onProgress: (p) => progress.update(p.eventsDone, Math.max(1, p.eventsTotal), p.phase, p.eventsDone, 'events'),
    });
    progress.stop();
    if (args.json) printJson(io, report);
    else {
      io.out(
        formatPairs([
          ['sessions', report.sessions],
          ['events copied', report.eventsCopied],
          ['already in target', report.eventsAlreadyThere],
          ['artifacts copied', report.artifactsCopied],
          ['graph copied', `${report.graph.entities} entities, ${report.graph.edges} edges, ${report.graph.citations} citations, ${report.graph.cursors} cursors`],
          ['verified', report.isVerified ? `yes (digest ${report.digest.slice(0, 16)}…)` : 'no'],
        ]),
      );
    }
    return 0;
  } finally {
    progress.stop();
  }
}

/** `engram migrate --from STORE --to STORE`. */
export function register(program: Command, context: CliContext): void {
  program
    .command('migrate')
    .description('copy a whole store to another (SQLite <-> PostgreSQL), resumably, and verify the copy')
    .requiredOption('--from <store>', 'source: sqlite:PATH, a file path, or a postgres:// URL')
    .requiredOption('--to <store>', 'target: sqlite:PATH, a file path, or a postgres:// URL (empty, or a copy interrupted earlier)')
    .option('--batch <n>', 'events per transaction (default 500)')
    .action(context.withoutStore((args: MigrateArgs & GlobalOptions) => migrateCommand(args, context.io)));
}
