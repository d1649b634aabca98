import { entityId, edgeId, type EdgeType, type EntityKind } from '../../model/graph.js';
import type { EventRecord } from '../../model/event.js';
import type { SessionId } from '../../model/ids.js';
import type { StorageBackend } from '../../store/backend.js';
import type { CitationDraft, EdgeDraft, EntityDraft, GraphBatch, GraphWriteCounts } from '../../store/graph-storage.js';
import { maskPrivate } from '../../memory/private-spans.js';
import { decisionName } from './deterministic-extractor.js';
import type { EntityExtractor, Extraction, ExtractionInput } from './extractor.js';
import { readRepoCode } from './repo-code.js';

/** Events read and written per step (one transaction each, with the session's cursor). */
const EVENTS_PER_STEP = 200;
/** Sessions looked at by one build. */
const MAX_SESSIONS = 100_000;
/** Confidence of an edge read from code: the parser saw the import. */
const CODE_CONFIDENCE = 1;
/** Rows per write of a repository graph. */
const REPO_BATCH_ROWS = 2000;

export interface BuildReport {
  sessions: number;
  events: number;
  written: GraphWriteCounts;
  /** False when `maxEvents` stopped the build with events left to read: build again to go on (the cursors hold the place). */
  isComplete: boolean;
}

export interface RepoBuildReport {
  repository: string;
  commit: string;
  files: number;
  imports: number;
  exports: number;
  /** False when this commit was indexed already for the project (nothing was read again). */
  isBuilt: boolean;
  written: GraphWriteCounts;
}

/** A batch under construction: entities and edges by id, each with its citations. */
class BatchBuilder {
  private readonly entities = new Map<string, EntityDraft>();
  private readonly edges = new Map<string, EdgeDraft>();
  private citations: CitationDraft[] = [];
  private readonly cited = new Set<string>();

  entity(kind: EntityKind, name: string, cite: Omit<CitationDraft, 'targetId'>): string {
    const id = entityId(kind, name);
    if (!this.entities.has(id)) this.entities.set(id, { id, kind, name });
    this.cite(id, cite);
    return id;
  }

  edge(type: EdgeType, src: string, dst: string, confidence: number, cite: Omit<CitationDraft, 'targetId'>): void {
    const id = edgeId(type, src, dst);
    const prior = this.edges.get(id);
    if (!prior || prior.confidence < confidence) this.edges.set(id, { id, type, src, dst, confidence });
    this.cite(id, cite);
  }

  get size(): number {
    return this.citations.length;
  }

  take(cursors?: Record<string, number>): GraphBatch {
    const batch: GraphBatch = { entities: [...this.entities.values()], edges: [...this.edges.values()], citations: this.citations, ...(cursors ? { cursors } : {}) };
    this.entities.clear();
    this.edges.clear();
    this.citations = [];
    this.cited.clear();
    return batch;
  }

  private cite(targetId: string, cite: Omit<CitationDraft, 'targetId'>): void {
    const key = `${targetId}\0${cite.eventId ?? cite.pointer}`;
    if (this.cited.has(key)) return;
    this.cited.add(key);
    this.citations.push({ targetId, ...cite });
  }
}

/**
 * Builds the knowledge graph from what the store holds, incrementally: each session's events after its cursor
 * (`session:<id>`, the last turn read, stored in the same transaction as the rows), and repositories at a commit.
 * Extraction runs in a build step rather than at ingest: appends stay as fast as before, an extractor can change
 * (an LLM one) and the graph be built again, and a build that fails halfway resumes from the cursors.
 */
export class GraphBuilder {
  constructor(
    private readonly store: StorageBackend,
    private readonly extractor: EntityExtractor,
  ) {}

  /** Extracts entities and edges from every event not read yet (of `sessionIds`, or of every session). */
  async buildFromSessions(options: { sessionIds?: string[]; maxEvents?: number } = {}): Promise<BuildReport> {
    const sessions = options.sessionIds ?? (await this.store.listSessions({ limit: MAX_SESSIONS })).map((s) => s.id);
    const report: BuildReport = { sessions: 0, events: 0, written: { entities: 0, edges: 0, citations: 0 }, isComplete: true };
    const maxEvents = options.maxEvents ?? Number.POSITIVE_INFINITY;
    for (const sessionId of sessions) {
      const source = `session:${sessionId}`;
      let after = (await this.store.graph.getCursor(source)) ?? 0;
      let touched = false;
      for (;;) {
        const room = maxEvents - report.events;
        if (room <= 0) {
          // Bounded (a server request): stopped at a step's end. Complete only if nothing is left to read.
          if ((await this.store.listEvents({ sessionId: sessionId as SessionId, afterTurn: after, limit: 1 })).length > 0) report.isComplete = false;
          break;
        }
        const events = await this.store.listEvents({ sessionId: sessionId as SessionId, afterTurn: after, limit: Math.min(EVENTS_PER_STEP, room) });
        if (events.length === 0) break;
        touched = true;
        const batch = new BatchBuilder();
        const read = events.filter((e) => e.kind !== 'task_state');
        const inputs = read.map(extractionInput);
        const found = this.extractor.extractBatch ? await this.extractor.extractBatch(inputs) : await Promise.all(inputs.map((x) => this.extractor.extract(x)));
        for (const [i, e] of read.entries()) await this.citeEvent(e, inputs[i]!.content, found[i] ?? { entities: [], edges: [] }, batch);
        after = events[events.length - 1]!.turn;
        add(report.written, await this.store.graph.write(batch.take({ [source]: after })));
        report.events += events.length;
      }
      if (touched) report.sessions++;
      if (!report.isComplete) break;
    }
    return report;
  }

  private async citeEvent(e: EventRecord, content: string, found: Extraction, batch: BatchBuilder): Promise<void> {
    const tsMs = Date.parse(e.ts);
    const cite = (quote: string, confidence = 1) => ({ eventId: e.id, confidence, quote, tsMs });
    for (const x of found.entities) batch.entity(x.kind, x.name, cite(x.quote, x.confidence));
    for (const r of found.edges) {
      const src = batch.entity(r.src.kind, r.src.name, cite(r.quote));
      const dst = batch.entity(r.dst.kind, r.dst.name, cite(r.quote));
      batch.edge(r.type, src, dst, r.confidence, cite(r.quote, r.confidence));
    }
    // A decision that supersedes an earlier decision event: `supersedes` between the two decisions.
    if (e.kind === 'decision' && e.supersedes) {
      const prior = await this.store.getEvent(e.supersedes);
      // Only within one project (ingest refuses others; a store written before that check may hold one).
      const access = prior ? await this.store.getSessionAccess([e.sessionId, prior.sessionId]) : undefined;
      const sameProject = prior !== null && access?.get(e.sessionId)?.project === access?.get(prior.sessionId)?.project;
      if (prior && sameProject && prior.kind === 'decision') {
        const quote = `supersedes ${prior.id}`;
        const now = batch.entity('decision', decisionName(content), cite(quote));
        const old = batch.entity('decision', decisionName(maskPrivate(prior.content)), cite(quote));
        if (now !== old) batch.edge('supersedes', now, old, 1, cite(quote));
      }
    }
  }

  /**
   * Indexes the TypeScript/JavaScript module graph of a repository at a commit for a project: a `file` entity per
   * source file, `imports` edges between files and to the exported `symbol`s a file imports by name, each citing
   * the `repo:` span of the import or export statement with its digest. A commit already indexed for the project
   * is not read again.
   */
  async buildFromRepository(options: { repository: string; commit: string; project: string; gitBinary?: string }): Promise<RepoBuildReport> {
    const code = await readRepoCode(options);
    const source = `repo:${options.project}:${code.repository}@${code.commit}`;
    const base = { repository: code.repository, commit: code.commit, files: code.files.length, imports: code.imports.length, exports: code.exports.length };
    if ((await this.store.graph.getCursor(source)) !== null) return { ...base, isBuilt: false, written: { entities: 0, edges: 0, citations: 0 } };
    const written = { entities: 0, edges: 0, citations: 0 };
    const tsMs = Date.now();
    const cite = (s: { pointer: string; digest: string; quote: string }) => ({
      pointer: s.pointer,
      digest: s.digest,
      commit: code.commit,
      project: options.project,
      confidence: CODE_CONFIDENCE,
      quote: s.quote,
      tsMs,
    });
    let batch = new BatchBuilder();
    const flush = async (cursors?: Record<string, number>) => {
      add(written, await this.store.graph.write(batch.take(cursors)));
      batch = new BatchBuilder();
    };
    for (const x of code.exports) {
      if (x.name === 'default') continue;
      batch.entity('file', x.path, cite(x.span));
      batch.entity('symbol', x.name, cite(x.span));
      if (batch.size >= REPO_BATCH_ROWS) await flush();
    }
    for (const i of code.imports) {
      const from = batch.entity('file', i.from, cite(i.span));
      const to = batch.entity('file', i.to, cite(i.span));
      batch.edge('imports', from, to, CODE_CONFIDENCE, cite(i.span));
      for (const name of i.names) batch.edge('imports', from, batch.entity('symbol', name, cite(i.span)), CODE_CONFIDENCE, cite(i.span));
      if (batch.size >= REPO_BATCH_ROWS) await flush();
    }
    await flush({ [source]: 1 });
    return { ...base, isBuilt: true, written };
  }
}

/** What an extractor reads of a stored event: private spans masked. */
function extractionInput(e: EventRecord): ExtractionInput {
  return {
    id: e.id,
    kind: e.kind,
    content: maskPrivate(e.content),
    ...(e.toolName ? { toolName: e.toolName } : {}),
    tags: e.tags,
    ...(e.meta ? { meta: e.meta } : {}),
  };
}

function add(into: GraphWriteCounts, more: GraphWriteCounts): void {
  into.entities += more.entities;
  into.edges += more.edges;
  into.citations += more.citations;
}
