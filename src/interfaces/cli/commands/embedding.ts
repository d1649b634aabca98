import type { Command } from 'commander';
import type { CliContext, GlobalOptions } from '../cli-context.js';
import type { Engram } from '../../../engine.js';
import type { VectorIndexStatus } from '../../../store/backend.js';
import type { IdentifierCatchUpProgress } from '../../../memory/identifier-catch-up.js';
import { EXIT } from '../exit-codes.js';
import type { Io } from '../output.js';
import { formatPairs, printJson } from '../output.js';
import { createProgress } from '../progress.js';

/**
 * A CLI process is short-lived, so verbs that read vectors embed what is queued first, when that is quick;
 * a larger backlog is left to `engram reindex` or a running `engram serve` (recall then fuses the vectors
 * that exist with full-text, which still finds every event by its words).
 */
export const CLI_DRAIN_LIMIT = 5000;

/** Embeds queued events with a progress bar on a terminal; returns how many were embedded. */
export async function drainQueue(mem: Engram, io: Io, options: { limit?: number; quiet?: boolean } = {}): Promise<number> {
  const indexer = mem.indexer;
  if (!indexer || mem.vectorStatus?.state !== 'ready') return 0;
  // With a limit the count stops past it: a store with a large backlog is not counted in full on every recall.
  const { pending } = await mem.store.embeddingQueueStats(options.limit !== undefined ? { countUpTo: options.limit } : {});
  if (pending === 0) return 0;
  if (options.limit !== undefined && pending > options.limit) {
    if (!options.quiet) io.err(`engram: more than ${options.limit} events wait for their vectors; run \`engram reindex\` (or keep \`engram serve\` running) to embed them.`);
    return 0;
  }
  const progress = createProgress(io);
  try {
    const done = await indexer.drain((p) => progress.update(p.embedded + p.skipped + p.failed, pending, 'embed', p.embedded, 'events'));
    progress.stop();
    if (done.failed > 0 && !options.quiet) io.err(`engram: embedding failed for ${done.failed} events (they stay queued): ${indexer.error ?? 'unknown error'}`);
    return done.embedded;
  } finally {
    progress.stop();
  }
}

export interface ReindexArgs {
  retryFailed?: boolean;
  /** Rewrite the full-text index (context-aware units) instead of embedding. */
  text?: boolean;
  /** Build (true, --phrase-pairs) or drop (false, --no-phrase-pairs) PostgreSQL's phrase-pair index, and nothing else. */
  phrasePairs?: boolean;
  json?: boolean;
}

/**
 * `engram reindex`: catches the identifier index up (appends leave it to this and to `engram serve`'s worker), then
 * makes the chosen embedder's model the store's and embeds every queued event. Without an embedder
 * (`--embedder none`) it rewrites the full-text index instead, as `--text` does, and says that vectors were skipped.
 */
export async function reindexCommand(mem: Engram, args: ReindexArgs, io: Io): Promise<number> {
  if (args.phrasePairs !== undefined) return phrasePairsCommand(mem, args.phrasePairs, args, io);
  // The identifier index's catch-up is maintenance: here (and in a server's worker), never at open or in a query.
  const identifierIndex = await catchUpIdentifiers(mem, io);
  if (args.text || !mem.indexer) return reindexTextCommand(mem, args, io, identifierIndex, !mem.indexer);
  const previous = (await mem.store.getVectorModel())?.name ?? null;
  const switched = await mem.reindex();
  const retried = args.retryFailed ? await mem.store.retryFailedEmbeddings() : 0;
  const embedded = await drainQueue(mem, io);
  const stats = await mem.store.embeddingQueueStats();
  // The approximate index is maintenance work, here rather than in a query (docs/recall.md, "Vectors at scale").
  const index = await mem.maintainVectorIndex();
  const report = {
    model: mem.indexer.embedder.name,
    dimensions: mem.indexer.embedder.dimensions,
    previousModel: previous,
    isChanged: switched.isChanged,
    queued: switched.queued,
    retried,
    embedded,
    pending: stats.pending,
    failed: stats.failed,
    vectorIndex: index,
    identifierIndex,
  };
  if (args.json) printJson(io, report);
  else {
    io.out(
      formatPairs([
        ['model', `${report.model} (${report.dimensions} dimensions)`],
        ['previous model', previous ?? '-'],
        ['embedded now', embedded],
        ['still queued', stats.pending],
        ['failed (retry with --retry-failed)', stats.failed],
        ['vector index', describeIndex(index)],
        ['identifier index', describeIdentifierIndex(identifierIndex)],
      ]),
    );
  }
  // Events the embedder failed on (now or in earlier runs) are the provider failing: exit 8. Events still queued
  // without a failure are another worker's (a running `engram serve` holds their lease): reported, not an error.
  return stats.failed > 0 || (stats.pending > 0 && mem.indexer.error !== undefined) ? EXIT.PROVIDER : EXIT.OK;
}

function describeIndex(s: VectorIndexStatus): string {
  switch (s.state) {
    case 'built':
      return `built: ${s.vectors} vectors${s.lists !== undefined ? ` in ${s.lists} lists` : ''} (${(s.ms / 1000).toFixed(1)} s)`;
    case 'current':
      return `current (${s.vectors} vectors${s.lists !== undefined ? `, ${s.lists} lists` : ''})`;
    case 'not-needed':
      return `not needed yet (${s.vectors} vectors; exact search is fast at this size)`;
    case 'exact':
      return 'off (exact search)';
    case 'readonly':
      return 'due, but the store is read-only';
    case 'none':
      return '-';
  }
}

/** Catches the identifier index of full-text search up, with a progress bar on a terminal. */
async function catchUpIdentifiers(mem: Engram, io: Io): Promise<IdentifierCatchUpProgress> {
  const progress = createProgress(io);
  try {
    return await mem.maintainTextIndex((p) => progress.update(p.events, Math.max(1, p.total), 'identifiers', p.events, 'events'));
  } finally {
    progress.stop();
  }
}

function describeIdentifierIndex(p: IdentifierCatchUpProgress): string {
  if (p.state === 'none') return '-';
  return p.events > 0 ? `caught up: ${p.events} events indexed` : 'current';
}

/** `engram reindex --text`: every event's full-text row written again, with the context of the events before it. */
async function reindexTextCommand(mem: Engram, args: ReindexArgs, io: Io, identifierIndex: IdentifierCatchUpProgress, isWithoutEmbedder: boolean): Promise<number> {
  const progress = createProgress(io);
  try {
    const done = await mem.reindexText((p) => progress.update(p.events, p.total, 'index', p.events, 'events'));
    progress.stop();
    const vectors = isWithoutEmbedder ? 'skipped (no embedder: --embedder none)' : undefined;
    if (args.json) printJson(io, { reindexed: done.events, sessions: done.sessions, identifierIndex, ...(vectors ? { vectors } : {}) });
    else {
      const pairs: Array<[string, string | number]> = [['events re-indexed', done.events], ['sessions', done.sessions], ['identifier index', describeIdentifierIndex(identifierIndex)]];
      if (vectors) pairs.push(['vectors', vectors]);
      io.out(formatPairs(pairs));
    }
    return EXIT.OK;
  } finally {
    progress.stop();
  }
}

/**
 * `engram reindex --phrase-pairs` / `--no-phrase-pairs`: builds or drops PostgreSQL's opt-in phrase-pair index
 * (concurrently: appends and recalls go on), alone. On SQLite, INVALID_INPUT (its full-text index needs none).
 */
async function phrasePairsCommand(mem: Engram, isOn: boolean, args: ReindexArgs, io: Io): Promise<number> {
  if (isOn && !args.json) io.err('engram: building the phrase-pair index (appends and recalls go on meanwhile; minutes on a large store)...');
  const report = await mem.setPhrasePairIndex(isOn);
  if (args.json) printJson(io, { phrasePairs: report });
  else {
    const mb = (n: number): string => `${(n / 1048576).toFixed(1)} MB`;
    const state =
      report.action === 'dropped' ? 'dropped' : report.action === 'absent' ? 'absent (nothing to drop)' : `${report.action === 'present' ? 'already built' : report.action}: ${mb(report.indexBytes)}`;
    io.out(
      formatPairs([
        ['phrase-pair index', state],
        ['full-text index', mb(report.textIndexBytes)],
        ['took', `${(report.ms / 1000).toFixed(1)} s`],
      ]),
    );
  }
  return EXIT.OK;
}

/** `engram reindex`. */
export function register(program: Command, context: CliContext): void {
  const { io } = context;
  program
    .command('reindex')
    .description("embed every event with the chosen embedder's model (a new model replaces the old vectors; events are untouched), then build the approximate vector index when the store is large enough; first, catch the full-text identifier index up. With --embedder none: rewrite the full-text index instead (as --text), vectors skipped")
    .option('--retry-failed', 'queue events whose embedding failed repeatedly again')
    .option('--text', 'rewrite the full-text index instead (each event with the context of the events before it; for stores indexed before that existed)')
    .option('--phrase-pairs', 'PostgreSQL only: build the opt-in phrase-pair index (faster phrase queries, slower appends; docs/recall.md), and nothing else')
    .option('--no-phrase-pairs', 'PostgreSQL only: drop the phrase-pair index, and nothing else')
    .action(context.withStore((m, args: ReindexArgs & GlobalOptions) => reindexCommand(m, args, io), false, 'foreground'));
}
