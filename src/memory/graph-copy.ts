import { EngramError } from '../errors.js';
import type { StorageBackend } from '../store/backend.js';
import type { GraphRows, GraphWriteCounts } from '../store/graph-storage.js';

/** Rows read and written per step of a graph copy (one transaction each in the target). */
const GRAPH_COPY_PAGE = 1000;

export interface GraphCopyReport {
  /** Rows written to the target by this run (rows it held already, from an interrupted run, are not counted). */
  entities: number;
  edges: number;
  citations: number;
  cursors: number;
  /** The target holds as many entities, edges and citations as the source. */
  isVerified: boolean;
}

/**
 * Copies the knowledge graph (entities, edges, citations, extraction cursors) as it is: first-seen times,
 * citation counts, confidences, quotes and cursor positions unchanged, so the copy needs no `graph build` and a
 * later build reads only events added after it. Entities first, then edges (their ends exist), then citations
 * (their events were copied before: run after the events), then cursors. Each row is written once; a rerun
 * after an interruption adds what is missing. Ends by comparing row counts.
 */
export async function copyGraph(from: StorageBackend, to: StorageBackend, pageSize = GRAPH_COPY_PAGE): Promise<GraphCopyReport> {
  const report: GraphCopyReport = { entities: 0, edges: 0, citations: 0, cursors: 0, isVerified: false };
  const tables: Array<keyof GraphRows> = ['entities', 'edges', 'citations', 'cursors'];
  for (const table of tables) {
    let after: string | null = null;
    for (;;) {
      const page: GraphRows[typeof table] = await from.graph.exportRows(table, after, pageSize);
      if (page.length === 0) break;
      const written = await to.graph.importRows({ [table]: page });
      report[table] += written[table as keyof typeof written];
      after = page[page.length - 1]!.key;
      if (page.length < pageSize) break;
    }
  }
  const [a, b] = await Promise.all([from.graph.counts(), to.graph.counts()]);
  const differs = (Object.keys(a) as Array<keyof GraphWriteCounts>).filter((k) => a[k] !== b[k]);
  if (differs.length > 0) {
    throw new EngramError(
      'STORAGE_ERROR',
      `verification of the knowledge graph copy failed: ${differs.map((k) => `${k} source ${a[k]}, target ${b[k]}`).join('; ')} (a target with a graph of its own? copy into an empty store)`,
      { field: 'to' },
    );
  }
  report.isVerified = true;
  return report;
}
