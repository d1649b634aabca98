import { EngramError } from '../errors.js';
import type { EventRecord } from '../model/event.js';
import type { EventId, SessionId } from '../model/ids.js';
import { isSummaryId, SUMMARY_DEPTHS, SUMMARY_KINDS, type SummaryDepth, type SummaryKind, type SummaryRecord } from '../model/summary.js';
import { maskPrivate } from '../memory/private-spans.js';
import { parseQuery } from '../memory/query-terms.js';
import type { Embedder } from '../providers/embedder.js';
import type { StorageBackend } from '../store/backend.js';
import type { SummaryCounts, SummaryHit } from '../store/summary-storage.js';
import { searchSummariesHybrid } from './summary-search.js';

export interface SummaryListOptions {
  project?: string;
  depth?: SummaryDepth;
  sessionId?: string;
  /** `decision`: decision records instead of summaries (decision-records.ts). */
  kind?: SummaryKind;
  /** Decision records of this subject only (lower case, as stored). */
  subject?: string;
  /** Include the cold tier (superseded summaries). */
  includeCold?: boolean;
  limit?: number;
}

export interface SummarySearchOptions {
  project?: string;
  depth?: SummaryDepth;
  /** `decision`: search decision records instead of summaries. */
  kind?: SummaryKind;
  includeCold?: boolean;
  limit?: number;
}

/** What a summary expands to: its children (arc, epoch) or its source events (session). */
export interface SummaryExpansion {
  summary: SummaryRecord;
  children: SummaryRecord[];
  events: EventRecord[];
}

export const DEFAULT_SUMMARY_LIMIT = 50;
export const MAX_SUMMARY_LIMIT = 1_000;
/** Most source events an expansion returns (the rest stay reachable by id through expand/recall). */
export const MAX_EXPANDED_EVENTS = 500;

/**
 * The summary DAG as one reader may see it: a reader bounded by a project sees a summary only when it may read
 * every session the summary covers; another is NOT_FOUND, as if it did not exist.
 */
export class SummaryReader {
  constructor(
    private readonly store: StorageBackend,
    /** The project that bounds reads; absent: full trust. */
    private readonly visibleToProject?: string,
    /** The embedder whose vectors the store holds (null: full-text only), as event recall resolves it. */
    private readonly embedder: () => Embedder | null = () => null,
  ) {}

  async list(o: SummaryListOptions = {}): Promise<SummaryRecord[]> {
    return this.scrub(await this.store.summaries.list({
      ...this.visibility(),
      ...(o.project !== undefined ? { project: o.project } : {}),
      ...(o.depth !== undefined ? { depth: checkDepth(o.depth) } : {}),
      ...(o.sessionId !== undefined ? { sessionId: o.sessionId } : {}),
      ...(o.kind !== undefined ? { kind: checkKind(o.kind) } : {}),
      ...(o.subject !== undefined ? { subject: o.subject.replace(/\s+/g, ' ').trim().toLowerCase() } : {}),
      ...(o.includeCold ? { includeCold: true } : {}),
      order: 'desc',
      limit: checkLimit(o.limit),
    }));
  }

  /** A summary by id, cold ones included, or NOT_FOUND. */
  async get(id: string): Promise<SummaryRecord> {
    if (!isSummaryId(id)) throw new EngramError('INVALID_INPUT', `id: ${JSON.stringify(id.slice(0, 40))} is not a summary id (sum_ and 26 characters)`, { field: 'id' });
    const [found] = await this.store.summaries.get([id], this.visibility());
    if (!found) throw new EngramError('NOT_FOUND', `no summary with id ${id}`, { field: 'id', id });
    return (await this.scrub([found]))[0]!;
  }

  /**
   * Search over summaries (not the cold tier unless `includeCold`), best first: full-text, fused with vector
   * similarity when an embedder is configured (summary-search.ts).
   */
  async search(query: string, o: SummarySearchOptions = {}): Promise<SummaryHit[]> {
    if (typeof query !== 'string' || query.trim() === '') throw new EngramError('INVALID_INPUT', 'query: must be a non-empty string', { field: 'query' });
    const parsed = parseQuery(query);
    const filter = {
      ...this.visibility(),
      ...(o.project !== undefined ? { project: o.project } : {}),
      ...(o.depth !== undefined ? { depth: checkDepth(o.depth) } : {}),
      ...(o.kind !== undefined ? { kind: checkKind(o.kind) } : {}),
      ...(o.includeCold ? { includeCold: true } : {}),
      limit: checkLimit(o.limit),
    };
    const hits = await searchSummariesHybrid(this.store.summaries, this.embedder(), query, parsed, filter);
    const scrubbed = await this.scrub(hits.map((h) => h.summary));
    return hits.map((h, i) => ({ ...h, summary: scrubbed[i]! }));
  }

  /** Drill down one level: an arc's or epoch's children, or a session summary's source events (private spans hidden). */
  async expand(id: string, o: { maxEvents?: number } = {}): Promise<SummaryExpansion> {
    const summary = await this.get(id);
    const children = summary.childIds.length > 0 ? await this.scrub(await this.store.summaries.get(summary.childIds, this.visibility())) : [];
    const ids = summary.sourceEventIds.slice(0, Math.min(o.maxEvents ?? MAX_EXPANDED_EVENTS, MAX_EXPANDED_EVENTS)) as EventId[];
    const events = (await this.store.getEvents(ids)).map((e) => {
      const content = maskPrivate(e.content);
      return content === e.content ? e : { ...e, content };
    });
    return { summary, children, events };
  }

  /** Counts for `engram stats` and the API (all projects: full-trust readers only call it). */
  counts(): Promise<SummaryCounts> {
    return this.store.summaries.counts();
  }

  /**
   * For a bounded reader, the fields that name what it may not read are left out (null): the predecessor session
   * of another project, the arc or epoch above that covers sessions it may not read, the summary that replaced
   * this one when it is not visible (issue 31: a summary of a shared session named its owner's private session
   * and arc). What it may read keeps its ids; full-trust readers get the records unchanged.
   */
  private async scrub(records: SummaryRecord[]): Promise<SummaryRecord[]> {
    const project = this.visibleToProject;
    if (project === undefined || records.length === 0) return records;
    const sessions = [...new Set(records.flatMap((r) => (r.predecessorSessionId !== null ? [r.predecessorSessionId] : [])))] as SessionId[];
    const access = sessions.length > 0 ? await this.store.getSessionAccess(sessions) : new Map();
    const readableSessions = new Set(
      [...access.entries()].filter(([, f]) => f.project === project || f.sharedWith.includes(project)).map(([id]) => id as string),
    );
    const linked = [...new Set(records.flatMap((r) => [r.parentId, r.coldSourceId].filter((id): id is string => id !== null && isSummaryId(id))))];
    const visible = new Set(linked.length > 0 ? (await this.store.summaries.get(linked, this.visibility())).map((s) => s.id) : []);
    return records.map((r) => {
      const predecessor = r.predecessorSessionId !== null && !readableSessions.has(r.predecessorSessionId) ? null : r.predecessorSessionId;
      const parent = r.parentId !== null && !visible.has(r.parentId) ? null : r.parentId;
      const cold = r.coldSourceId !== null && !visible.has(r.coldSourceId) ? null : r.coldSourceId;
      if (predecessor === r.predecessorSessionId && parent === r.parentId && cold === r.coldSourceId) return r;
      // A reason may quote the replacing record's id ("superseded by decision sum_..."): it goes with the id.
      const reason = cold === r.coldSourceId || r.coldReason === null ? r.coldReason : r.coldReason.replaceAll(r.coldSourceId!, '(a record you may not read)');
      return { ...r, predecessorSessionId: predecessor, parentId: parent, coldSourceId: cold, coldReason: reason };
    });
  }

  private visibility(): { visibleToProject?: string } {
    return this.visibleToProject !== undefined ? { visibleToProject: this.visibleToProject } : {};
  }
}

function checkDepth(depth: number): SummaryDepth {
  if (!(SUMMARY_DEPTHS as readonly number[]).includes(depth)) throw new EngramError('INVALID_INPUT', 'depth: must be 0 (session), 1 (arc) or 2 (epoch)', { field: 'depth' });
  return depth as SummaryDepth;
}

function checkKind(kind: string): SummaryKind {
  if (!(SUMMARY_KINDS as readonly string[]).includes(kind)) throw new EngramError('INVALID_INPUT', 'kind: must be summary or decision', { field: 'kind' });
  return kind as SummaryKind;
}

function checkLimit(limit: number | undefined): number {
  const n = limit ?? DEFAULT_SUMMARY_LIMIT;
  if (!Number.isInteger(n) || n < 1 || n > MAX_SUMMARY_LIMIT) throw new EngramError('INVALID_INPUT', `limit: must be a whole number from 1 to ${MAX_SUMMARY_LIMIT}`, { field: 'limit' });
  return n;
}
