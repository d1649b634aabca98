import type { Engram } from '../../../engine.js';
import type { Io } from '../output.js';
import { formatBytes, formatPairs, printJson } from '../output.js';

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
        'vectors',
        s.vectors.model
          ? `${s.vectors.model} (${s.vectors.dimensions} dimensions, ${s.vectors.search}); ${s.vectors.pending} queued, ${s.vectors.failed} failed`
          : `none (${s.vectors.search})`,
      ],
      ...(s.vectors.mismatch ? ([['note', s.vectors.mismatch]] as Array<[string, string]>) : []),
    ]),
  );
  return 0;
}

export async function sessionsCommand(mem: Engram, args: { json?: boolean; limit?: number }, io: Io): Promise<number> {
  const sessions = await mem.listSessions(args.limit !== undefined ? { limit: args.limit } : {});
  if (args.json) printJson(io, sessions);
  else if (sessions.length === 0) io.out('No sessions yet. Import one with: engram ingest FILE');
  else for (const s of sessions) io.out(`${s.id}  ${s.eventCount} events  last ${s.lastTs ?? s.createdAt}`);
  return 0;
}
