import { EngramError, isEngramError } from './errors.js';
import type { EventInput, EventRecord, SessionRecord } from './model/event.js';
import type { ArtifactId, EventId, SessionId } from './model/ids.js';
import { ARTIFACT_ID_PREFIX, EVENT_ID_PREFIX } from './model/ids.js';
import { createGptTokenizer } from './providers/gpt-tokenizer.js';
import type { Tokenizer } from './providers/tokenizer.js';
import { decodeArtifact, decodeArtifactAsync, sha256Hex } from './memory/artifact-codec.js';
import { checkRehydrated } from './memory/artifact-lifecycle.js';
import type { ImportFileOptions, ImportReport, ImportSourceFile } from './memory/import-runner.js';
import type { IngestOptions } from './memory/ingest.js';
import { Ingestor, type IngestOutcome } from './memory/ingest.js';
import type { TextReindexProgress } from './memory/index-text.js';
import { catchUpIdentifierIndex, type IdentifierCatchUpProgress } from './memory/identifier-catch-up.js';
import { maskPrivate } from './memory/private-spans.js';
import type { PurgeOptions, PurgeReport, PurgeSelector } from './memory/purge.js';
import type { RecallBatchResult, RecallOptions, RecallResult } from './memory/recall.js';
import { Recaller } from './memory/recall.js';
import type { EmbeddingIndexerOptions, VectorStatus } from './memory/embedding-indexer.js';
import { EmbeddingIndexer } from './memory/embedding-indexer.js';
import type { Embedder } from './providers/embedder.js';
import { existsSync } from 'node:fs';
import { join, resolve as resolvePath } from 'node:path';
import { Bus, type BusOptions } from './bus/bus.js';
import type { BusAgent } from './bus/bus-agent.js';
import type { PointerResolver } from './bus/resolvers/pointer-resolver.js';
import type { RepoResolver } from './bus/resolvers/repo-resolver.js';
import type { AgentRecord } from './model/agent.js';
import { TaskStateStore } from './memory/task-state-store.js';
import { KarmaStore } from './memory/karma-store.js';
import { KnowledgeGraph } from './consolidate/graph/knowledge-graph.js';
import { GraphBuilder } from './consolidate/graph/graph-builder.js';
import { DeterministicExtractor } from './consolidate/graph/deterministic-extractor.js';
import type { EntityExtractor } from './consolidate/graph/extractor.js';
import { SummaryReader } from './consolidate/summary-reader.js';
import type { SummaryCounts } from './store/summary-storage.js';
import type { ArtifactTierCounts } from './store/artifact-tier-storage.js';
import { Consolidator, type ConsolidatorOptions } from './consolidate/consolidator.js';
import { AgentRegistry } from './memory/agent-registry.js';
import { ContextEngine } from './context/context-engine.js';
import { createFormatterRegistry } from './context/assembly/formatters.js';
import type { AppendOptions, AppendOutcome, ListEventsQuery, StorageBackend, StoreStats, VectorIndexStatus, PhrasePairIndexReport } from './store/backend.js';
import type { Principal } from './model/access.js';
import { LOCAL_PRINCIPAL } from './model/access.js';
import type { ReadScope } from './bus/resolvers/pointer-resolver.js';
import { EngramView, type ViewOptions } from './view/engram-view.js';
import type { HierarchyView } from './view/hierarchy-view.js';
import type { ArtifactContent, EngineParts } from './view/engine-parts.js';
import type { StoreLocation } from './store/open-store.js';
import { openStore } from './store/open-store.js';
import { LruCache } from './util/lru-cache.js';
import type { CopyOptions, CopyReport } from './memory/store-copy.js';
import { buildProjectBrief, type BriefOptions, type ProjectBrief } from './context/project-brief.js';
import { recallForPrompt, type PromptRecall, type PromptRecallOptions } from './memory/prompt-recall.js';
import { parseTurnRef, resolveTurnRef } from './memory/turn-refs.js';
import { CarryOver } from './context/carry-over.js';
import type { ChatModel } from './providers/llm/chat-model.js';

export type { ArtifactContent } from './view/engine-parts.js';

export interface OpenEngramOptions extends StoreLocation {
  /** Use this backend instead of opening one from `db`. The engine closes it on {@link Engram.close}. */
  backend?: StorageBackend;
  tokenizer?: Tokenizer;
  ingest?: IngestOptions;
  /**
   * Turns on semantic recall: events are queued for this embedder when stored, embedded by a worker and
   * fused with full-text results (hybrid). Without one, recall is full-text only. Like `backend`, the engine
   * closes it on {@link Engram.close}.
   */
  embedder?: Embedder;
  /**
   * Embedding worker knobs. `background` (default true) runs the worker inside this engine; false leaves
   * the queue to {@link Engram.indexer}`.drain()` or to another process (`engram serve`, `engram reindex`).
   */
  indexing?: EmbeddingIndexerOptions & { background?: boolean };
  /**
   * The Engram Bus: budgets, scope policy, and `repoRoot`, the git repository `repo:` and `diff:` pointers
   * address (default: the working directory, when it is a git repository).
   */
  bus?: BusOptions & { repoRoot?: string };
}

/** What {@link Engram.stats} reports about vectors. */
export interface VectorStats {
  /** The store's embedding model, or null when none was ever configured. */
  model: string | null;
  dimensions?: number;
  /** How vector search runs (see BackendCapabilities.vectorSearch). */
  search: string;
  /** Events waiting for their vector, and those set aside after repeated failures. */
  pending: number;
  failed: number;
  /** Set when this engine's embedder differs from the store's model. */
  mismatch?: string;
}

/** Session holding indexed codex documents (RAG mode). */
export const CODEX_SESSION = 'codex';
const CODEX_BATCH = 200;

// Decompressed artifact texts kept for recall excerpts: repeated recalls over the same logs are common.
const ARTIFACT_TEXT_CACHE_CHARS = 64 * 1024 * 1024;

/** Opens an Engram store (SQLite at `.engram/engram.db` by default) and wires the engine around it. */
export async function openEngram(options: OpenEngramOptions = {}): Promise<Engram> {
  const store = options.backend ?? (await openStore(options));
  const mem = new Engram(store, options.tokenizer ?? createGptTokenizer(), options.ingest ?? {}, options.bus ?? {});
  if (options.embedder) {
    try {
      await mem.useEmbedder(options.embedder, options.indexing);
    } catch (err) {
      await store.close();
      throw err;
    }
  }
  return mem;
}

/**
 * Copies one store into another (SQLite <-> PostgreSQL), losslessly and resumably, then verifies counts and
 * digests (see {@link copyStore}). The source is opened without creating anything.
 */
export async function migrateStore(from: StoreLocation, to: StoreLocation, options: CopyOptions = {}): Promise<CopyReport> {
  const source = await openStore({ ...from, sqlite: { ...from.sqlite, create: false }, postgres: { ...from.postgres, create: false } });
  try {
    const target = await openStore(to);
    try {
      const { copyStore } = await import('./memory/store-copy.js');
      return await copyStore(source, target, options);
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
}

/** The engine: wiring only. Each capability lives in its own module under memory/, context/, bus/. */
export class Engram implements EngineParts {
  readonly ingestor: Ingestor;
  /** Per-session task state cards (versioned, schema-checked, stored as events). */
  readonly taskStates: TaskStateStore;
  /** Verified facts promoted into every pack's karma block. */
  readonly karma: KarmaStore;
  /** Agents of the HTTP API and their bearer tokens (the PAS hierarchy: roles and parents). */
  readonly agents: AgentRegistry;
  /** The window as a cache: compaction, markers and context packs per session. */
  readonly context: ContextEngine;
  private readonly recaller: Recaller;
  private busInstance: Bus | undefined;
  private resolverInstance: Promise<PointerResolver> | undefined;
  private repoResolver: RepoResolver | undefined;
  private embedding: { indexer: EmbeddingIndexer; status: VectorStatus; background: boolean } | undefined;
  private readonly artifactTexts = new LruCache<string, string>(ARTIFACT_TEXT_CACHE_CHARS, (s) => s.length);

  constructor(
    readonly store: StorageBackend,
    readonly tokenizer: Tokenizer,
    ingestOptions: IngestOptions = {},
    private readonly busOptions: BusOptions & { repoRoot?: string } = {},
  ) {
    this.ingestor = new Ingestor(store, ingestOptions);
    this.taskStates = new TaskStateStore(store, this.ingestor);
    this.karma = new KarmaStore(store);
    this.agents = new AgentRegistry(store);
    this.context = new ContextEngine(
      store,
      tokenizer,
      async (id) => (await this.taskStates.get(id))?.state,
      createFormatterRegistry(),
      (docs) => this.indexCodex(docs),
    );
    this.recaller = new Recaller(
      store,
      tokenizer,
      (id) => this.readArtifactText(id),
      async () => {
        const e = this.embedding;
        if (!e) return { embedder: null, reason: 'no embedder is configured (see --embedder)' };
        if (e.status.state === 'ready') return { embedder: e.indexer.embedder };
        return {
          embedder: null,
          reason: `the store's vectors come from ${e.status.model.name}, not ${e.status.embedder.name} (run: engram reindex)`,
        };
      },
      this.ingestor.redaction,
    );
  }

  /**
   * Binds an embedder (see {@link OpenEngramOptions.embedder}). A store without vectors adopts its model and
   * queues every stored event; a store whose vectors come from another model keeps them, and recall stays
   * full-text until {@link reindex}.
   */
  async useEmbedder(embedder: Embedder, options: OpenEngramOptions['indexing'] = {}): Promise<VectorStatus> {
    await this.embedding?.indexer.stop();
    const indexer = new EmbeddingIndexer(this.store, embedder, options);
    const status = await indexer.attach();
    this.embedding = { indexer, status, background: options.background !== false };
    if (options.background !== false && status.state === 'ready') indexer.start();
    return status;
  }

  /** The Engram Bus (engrams, pointers, budgets, grants, brief, telemetry), created on first use. */
  get bus(): Bus {
    this.busInstance ??= new Bus(
      {
        storage: this.store.bus,
        countTokens: (text) => this.tokenizer.count(text),
        embedder: () => (this.embedding?.status.state === 'ready' ? this.embedding.indexer.embedder : null),
        resolver: () => this.pointerResolver(),
        agent: async (id) => {
          const record = await this.store.getAgent(id as never);
          return record && !record.revokedAt ? toBusAgent(record) : null;
        },
        children: async (id) => (await this.store.listAgents()).filter((a) => a.parentId === id && !a.revokedAt).map(toBusAgent),
        agentNamed: (nameOrId) => this.busAgent(nameOrId),
        redact: (text) => this.ingestor.redaction.redactText(text),
      },
      this.busOptions,
    );
    return this.busInstance;
  }

  /**
   * The pointer resolver the bus derefs through, opened on first use. It only reads and applies no budget: the
   * dashboard's admin click-through uses it; agents deref through `bus.enforcer`.
   */
  pointerResolver(): Promise<PointerResolver> {
    return (this.resolverInstance ??= this.openResolver());
  }

  /** An agent of the registry as the bus sees it, by name or id (NOT_FOUND, or FORBIDDEN when revoked). */
  async busAgent(nameOrId: string): Promise<BusAgent> {
    const record = await this.agents.get(nameOrId);
    if (record.revokedAt) throw new EngramError('FORBIDDEN', `agent ${record.name} was revoked`, { field: 'agent' });
    return toBusAgent(record);
  }

  private async openResolver(): Promise<PointerResolver> {
    const root = resolvePath(this.busOptions.repoRoot ?? process.cwd());
    // The resolvers (and import, purge, copy, text reindex below) load on first use: a CLI recall never needs them (issue #14, CLI start).
    const { createPointerResolver } = await import('./bus/resolvers/pointer-resolver.js');
    if (existsSync(join(root, '.git')) || existsSync(join(root, 'HEAD'))) {
      const { openRepoResolver } = await import('./bus/resolvers/repo-resolver.js');
      this.repoResolver = await openRepoResolver({ repository: root });
    }
    return createPointerResolver({
      countTokens: (text) => this.tokenizer.count(text),
      ...(this.repoResolver ? { repo: this.repoResolver } : {}),
      sam: {
        getEvent: async (id, scope) => {
          const event = await this.store.getEvent(id as EventId);
          if (!event || !(await this.scopeView(scope).mayRead([event.sessionId]))) return null;
          // Derefs serve agents: private spans stay hidden (memory/private-spans.ts).
          return { id: event.id, sessionId: event.sessionId, turn: event.turn, kind: event.kind, ts: event.ts, content: maskPrivate(event.content) };
        },
        getTaskState: async (sessionId, version, scope) => {
          if (!(await this.scopeView(scope).mayRead([sessionId]))) return null;
          return (await this.taskStates.history(sessionId)).find((v) => v.version === version) ?? null;
        },
      },
      artifacts: {
        getArtifact: async (nameOrId, _digest, scope) => {
          if (!nameOrId.startsWith(ARTIFACT_ID_PREFIX)) return null;
          // A bounded reader names artifacts by their full id: resolving a prefix among every artifact could answer
          // AMBIGUOUS_ID with another project's ids.
          if (scope?.visibleToProject !== undefined && nameOrId.length !== ARTIFACT_ID_PREFIX.length + 64) return null;
          try {
            if (!(await this.scopeView(scope).mayReadArtifact((await this.resolveId('artifact', nameOrId)) as ArtifactId))) return null;
            const { record, bytes } = await this.readArtifact(nameOrId);
            return { id: record.id, sha256: record.sha256, text: maskPrivate(bytes.toString('utf8')), mediaType: record.mediaType };
          } catch (err) {
            if (err instanceof EngramError && err.code === 'NOT_FOUND') return null;
            throw err;
          }
        },
      },
      tests: {
        // Test results are events whose meta names them: { testId, status }; the newest wins.
        getTestResult: async (id, scope) => {
          const filter = scope?.visibleToProject !== undefined ? { visibleToProject: scope.visibleToProject } : {};
          const hits = await this.store.searchText({ terms: [{ text: id }], filter, limit: 50 });
          const events = await this.store.getEvents(hits.map((h) => h.eventId));
          // Event ids are ULIDs: the greatest is the most recently stored result.
          const match = events.filter((e) => e.meta?.testId === id).sort((a, b) => (a.id < b.id ? 1 : -1))[0];
          if (!match) return null;
          return { id, status: String(match.meta?.status ?? 'unknown'), output: maskPrivate(match.content), ts: match.ts };
        },
      },
    });
  }

  /** The knowledge graph (entities, typed edges, expansion, impact) with full trust; `viewAs(p).knowledge` bounds it. */
  get knowledge(): KnowledgeGraph {
    return new KnowledgeGraph(this.store, this.tokenizer);
  }

  /** The summary DAG (session, arc, epoch summaries; the cold tier) with full trust; `viewAs(p).summaries` bounds it. */
  get summaries(): SummaryReader {
    return new SummaryReader(this.store, undefined, () => this.vectorEmbedder);
  }

  /** The embedder whose vectors the store holds (null: none configured, or the store's vectors are another model's). */
  get vectorEmbedder(): Embedder | null {
    const e = this.embedding;
    return e && e.status.state === 'ready' ? e.indexer.embedder : null;
  }

  /** Makes summaries (consolidate/consolidator.ts): with no model (`llm: null`) at the deterministic level. */
  consolidator(options: Omit<ConsolidatorOptions, 'tokenizer'> & { tokenizer?: ConsolidatorOptions['tokenizer'] } = { llm: null }): Consolidator {
    return new Consolidator(this.store, { tokenizer: this.tokenizer, ...options });
  }

  /** Builds the knowledge graph from stored events and from repositories at a commit (deterministic extraction by default). */
  graphBuilder(extractor: EntityExtractor = new DeterministicExtractor()): GraphBuilder {
    return new GraphBuilder(this.store, extractor);
  }

  /** Hierarchical sessions (planner / executor / sub-executor) with full trust; `viewAs(p).hierarchy` bounds them. */
  get hierarchy(): HierarchyView {
    return this.viewAs().hierarchy;
  }

  /** A view bounded like a deref's reader: its project's sessions and those shared with it (full trust without one). */
  private scopeView(scope: ReadScope | undefined): EngramView {
    const project = scope?.visibleToProject;
    return this.viewAs(project === undefined ? LOCAL_PRINCIPAL : { kind: 'agent', agentId: '', agentName: '(deref)', project, isAdmin: false });
  }

  /** The embedding worker, when an embedder is bound. */
  get indexer(): EmbeddingIndexer | undefined {
    return this.embedding?.indexer;
  }

  /** Whether recall can use vectors, and which model the store holds; undefined without an embedder. */
  get vectorStatus(): VectorStatus | undefined {
    return this.embedding?.status;
  }

  /**
   * Makes the bound embedder's model the store's: old vectors are dropped and every event is queued (the
   * worker or {@link EmbeddingIndexer.drain} embeds them). Recall meanwhile fuses the vectors already made
   * with full-text, so events not yet embedded are still found by their words.
   */
  /**
   * Writes every event's full-text row again as an append indexes it now, with the context of the events before
   * it (memory/turn-context.ts): for stores indexed before context-aware units. Events are untouched.
   */
  /**
   * Builds the approximate vector index when it is due (the store has grown past the threshold, or outgrown the
   * index): maintenance, as `engram reindex` runs it. Vector queries never build it; they search exactly until it
   * exists (docs/recall.md, "Vectors at scale").
   */
  maintainVectorIndex(): Promise<VectorIndexStatus> {
    return this.store.maintainVectorIndex();
  }

  /**
   * Builds (`true`) or drops (`false`) PostgreSQL's opt-in phrase-pair index (`engram reindex --phrase-pairs`;
   * docs/recall.md, "Full-text at scale"). A backend without one (SQLite, whose FTS5 index keeps positions) fails
   * with INVALID_INPUT naming the flag.
   */
  async setPhrasePairIndex(isOn: boolean): Promise<PhrasePairIndexReport> {
    if (!this.store.setPhrasePairIndex) {
      throw new EngramError(
        'INVALID_INPUT',
        `phrase-pairs: the phrase-pair index is PostgreSQL's only; this ${this.store.name} store does not need it (SQLite's full-text index keeps word positions, so phrases are checked there already)`,
        { field: 'phrase-pairs' },
      );
    }
    return this.store.setPhrasePairIndex(isOn);
  }

  /**
   * Indexes the events stored since the identifier index of full-text search last caught up (appends do not write
   * it; a store from before it existed, from its first event): maintenance, as `engram reindex` and `engram serve`'s
   * worker run it; resumable. `maxEvents` stops after about that many (default all), `pageEvents` sets the events per
   * transaction (default 1,000). docs/recall.md, "Full-text at scale".
   */
  async maintainTextIndex(onProgress?: (p: IdentifierCatchUpProgress) => void, options: { maxEvents?: number; pageEvents?: number } = {}): Promise<IdentifierCatchUpProgress> {
    return catchUpIdentifierIndex(this.store, (id) => this.artifactTextOrNull(id), onProgress, options);
  }

  private async artifactTextOrNull(id: ArtifactId): Promise<string | null> {
    try {
      return (await this.readArtifact(id)).bytes.toString('utf8');
    } catch (err) {
      if (isEngramError(err, 'NOT_FOUND')) return null;
      throw err;
    }
  }

  async reindexText(onProgress?: (p: TextReindexProgress) => void): Promise<TextReindexProgress> {
    const readText = async (id: ArtifactId): Promise<string | null> => {
      try {
        return (await this.readArtifact(id)).bytes.toString('utf8');
      } catch (err) {
        if (isEngramError(err, 'NOT_FOUND')) return null;
        throw err;
      }
    };
    const indexText = await import('./memory/index-text.js');
    return indexText.reindexText(this.store, readText, onProgress);
  }

  async reindex(): Promise<{ isChanged: boolean; queued: number }> {
    const e = this.embedding;
    if (!e) throw new EngramError('INVALID_INPUT', 'embedder: reindexing needs an embedder (see --embedder)', { field: 'embedder' });
    const out = await e.indexer.reindex();
    e.status = { state: 'ready', model: { name: e.indexer.embedder.name, dimensions: e.indexer.embedder.dimensions } };
    if (e.background) e.indexer.start();
    return out;
  }

  /**
   * Stores codex documents in the `codex` session so recall can serve them (the RAG side of the CAG/RAG
   * switch). Keyed by path and content hash: unchanged documents are stored once, edited ones again.
   */
  async indexCodex(docs: ReadonlyArray<{ id: string; title: string; text: string }>): Promise<void> {
    const events = docs.map((d) => ({
      kind: 'note' as const,
      content: `${d.title}\n\n${d.text}`,
      tags: ['codex'],
      key: `codex:${d.id.slice(0, 180)}:${sha256Hex(d.text).slice(0, 16)}`,
      meta: { codexId: d.id },
    }));
    for (let i = 0; i < events.length; i += CODEX_BATCH) await this.ingestor.append(CODEX_SESSION, events.slice(i, i + CODEX_BATCH));
  }

  /**
   * The engine as `principal` may use it (model/access.ts): what HTTP, MCP and any caller with a token go
   * through. Default: the local, full-trust principal.
   */
  viewAs(principal: Principal = LOCAL_PRINCIPAL, options: ViewOptions = {}): EngramView {
    return new EngramView(this, principal, options);
  }

  /**
   * Appends one event or a batch to a session (created on first use), in one transaction. `owner`: the
   * project a new session belongs to (default `default`) and the one an existing session must have.
   */
  async append(sessionId: string, events: EventInput | EventInput[], owner: AppendOptions = {}): Promise<IngestOutcome[]> {
    const out = await this.ingestor.append(sessionId, Array.isArray(events) ? events : [events], owner);
    this.embedding?.indexer.poke();
    return out;
  }

  recall(query: string, options: RecallOptions = {}): Promise<RecallResult> {
    return this.recaller.recall(query, options);
  }

  /**
   * Recall at a granularity with full trust (view/granular-recall.ts): the raw events plus the summaries and entities
   * the query's specificity puts first, the choice reported. `viewAs(principal).recallGranular` bounds it.
   */
  recallGranular(query: string, request: Parameters<EngramView['recallGranular']>[1] = {}): ReturnType<EngramView['recallGranular']> {
    return this.viewAs().recallGranular(query, request);
  }

  /**
   * The brief a new session of `project` starts with (context/project-brief.ts): the last sessions' summaries, the
   * decisions in force, verified facts and open task cards, cited, within a budget. The same store gives the same bytes.
   */
  projectBrief(options: BriefOptions): Promise<ProjectBrief> {
    return buildProjectBrief(
      {
        store: this.store,
        tokenizer: this.tokenizer,
        taskCard: (id) => this.taskStates.get(id),
        // Facts of the whole store; a fact bound to one session belongs to that session's packs.
        karma: async () => (await this.karma.list()).filter((k) => k.sessionId === undefined),
      },
      options,
    );
  }

  /**
   * Evidence for a prompt from the project's earlier sessions (memory/prompt-recall.ts): what clears the confidence
   * floor, within a budget, never what `alreadyGiven` holds; nothing for a prompt nothing matches.
   */
  recallForPrompt(prompt: string, options: PromptRecallOptions): Promise<PromptRecall> {
    return recallForPrompt({ store: this.store, tokenizer: this.tokenizer, recall: (q, o) => this.recall(q, o) }, prompt, options);
  }

  /**
   * Memory across sessions as agent hosts drive it (context/carry-over.ts): a new session's brief, a prompt's
   * evidence, the session's summary kept current. `llm` writes the summaries (default none: the deterministic level,
   * consolidate/work-log.ts for coding sessions).
   */
  carryOver(options: { llm?: ChatModel | null } = {}): CarryOver {
    return new CarryOver({
      store: this.store,
      append: (sessionId, events, owner) => this.append(sessionId, events, owner),
      brief: (o) => this.projectBrief(o),
      recallForPrompt: (prompt, o) => this.recallForPrompt(prompt, o),
      consolidate: async (sessionId) => {
        const { runConsolidation } = await import('./consolidate/consolidation-run.js');
        await runConsolidation(this.store, this.consolidator({ llm: options.llm ?? null }), { sessionId, workerId: `hook-${process.pid}` });
      },
    });
  }

  /** Several queries at once, sharing one token budget, each event returned once (ENGRAM §4.5). */
  recallBatch(queries: readonly string[], options: RecallOptions = {}): Promise<RecallBatchResult> {
    return this.recaller.recallBatch(queries, options);
  }

  /**
   * Imports a transcript file (generic JSONL, OpenAI, Anthropic or Claude Code), all or nothing: in one store
   * transaction, every problem named by file line and field (see runImport). Refused with INVALID_INPUT or
   * IDEMPOTENCY_CONFLICT (`data.issues` lists the bad lines) unless `skipInvalid`, which skips and reports them.
   */
  importFile(source: ImportSourceFile, options: ImportFileOptions = {}): Promise<ImportReport> {
    return import('./memory/import-runner.js').then(({ runImport }) => runImport(this.ingestor, source, options));
  }

  /** An event by id or unique id prefix. */
  async getEvent(idOrPrefix: string): Promise<EventRecord> {
    const ref = parseTurnRef(idOrPrefix);
    if (ref) return resolveTurnRef(this.store, ref);
    const id = (await this.resolveId('event', idOrPrefix)) as EventId;
    const event = await this.store.getEvent(id);
    if (!event) throw new EngramError('NOT_FOUND', `no event ${idOrPrefix}`, { field: 'id', id: idOrPrefix });
    return event;
  }

  /** An artifact's full original bytes, by id or unique id prefix. */
  async readArtifact(idOrPrefix: string): Promise<ArtifactContent> {
    const id = (await this.resolveId('artifact', idOrPrefix)) as ArtifactId;
    const stored = await this.store.getArtifact(id);
    if (!stored) throw new EngramError('NOT_FOUND', `no artifact ${idOrPrefix}`, { field: 'id', id: idOrPrefix });
    const bytes = await decodeArtifactAsync(stored.stored, stored.record.encoding);
    // Rehydrated from the cold tier (memory/artifact-lifecycle.ts): byte-identical or an error, never other bytes.
    if (stored.record.coldAt !== undefined) checkRehydrated(stored.record, bytes);
    return { record: stored.record, bytes };
  }

  async readArtifactText(id: ArtifactId): Promise<string> {
    const cached = this.artifactTexts.get(id);
    if (cached !== undefined) return cached;
    const text = (await this.readArtifact(id)).bytes.toString('utf8');
    this.artifactTexts.set(id, text);
    return text;
  }

  /** Which kind of object an id (or unique prefix, or a turn reference `<session>#<turn>`: memory/turn-refs.ts) names. */
  async resolve(idOrPrefix: string): Promise<{ kind: 'event' | 'artifact'; id: string }> {
    const ref = parseTurnRef(idOrPrefix);
    if (ref) return { kind: 'event', id: (await resolveTurnRef(this.store, ref)).id };
    if (idOrPrefix.startsWith(EVENT_ID_PREFIX)) return { kind: 'event', id: await this.resolveId('event', idOrPrefix) };
    if (idOrPrefix.startsWith(ARTIFACT_ID_PREFIX)) return { kind: 'artifact', id: await this.resolveId('artifact', idOrPrefix) };
    throw new EngramError('INVALID_INPUT', `id: "${idOrPrefix}" is neither an event id (evt_...), a turn of a session (<session>#<turn>) nor an artifact id (art_...)`, { field: 'id' });
  }

  listEvents(query: ListEventsQuery): Promise<EventRecord[]> {
    return this.store.listEvents(query);
  }

  async getSession(id: string): Promise<SessionRecord> {
    const session = await this.store.getSession(id as SessionId);
    if (!session) throw new EngramError('NOT_FOUND', `no session ${id}`, { field: 'session', id });
    return session;
  }

  listSessions(options: { limit?: number } = {}): Promise<SessionRecord[]> {
    return this.store.listSessions(options);
  }

  /**
   * The privacy purge (memory/purge.ts): the one destructive operation, for a person who asked for it. Selects a
   * session, events (ids or unique prefixes) or every event holding a literal; their content and everything
   * derived from it goes, tombstones stay, one purge-log row records it. `isDryRun` counts without changing.
   */
  async purge(selector: PurgeSelector, options: PurgeOptions): Promise<PurgeReport> {
    const resolved: PurgeSelector =
      'eventIds' in selector && Array.isArray(selector.eventIds)
        ? { eventIds: await Promise.all(selector.eventIds.map((id) => this.resolveId('event', String(id)))) }
        : selector;
    const readBytes = async (id: ArtifactId): Promise<Uint8Array | null> => {
      const stored = await this.store.getArtifact(id);
      return stored ? decodeArtifact(stored.stored, stored.record.encoding) : null;
    };
    const { purge } = await import('./memory/purge.js');
    const report = await purge(this.store, readBytes, resolved, options);
    // Decompressed artifact texts of this process may hold what was purged.
    if (!report.isDryRun) this.artifactTexts.clear();
    return report;
  }

  /** Counts of the store, with its vector model and embedding queue. */
  async stats(): Promise<StoreStats & { vectors: VectorStats; summaries: SummaryCounts; artifactTiers: ArtifactTierCounts }> {
    const [stats, model, queue, summaries, artifactTiers] = await Promise.all([
      this.store.stats(),
      this.store.getVectorModel(),
      this.store.embeddingQueueStats(),
      this.store.summaries.counts(),
      this.store.artifactTiers.counts(),
    ]);
    const search = this.store.capabilities.vectorSearch;
    return {
      ...stats,
      vectors: {
        model: model?.name ?? null,
        ...(model ? { dimensions: model.dimensions } : {}),
        search: this.store.capabilities.hasPgvector ? `${search} (pgvector is available on the server but not used yet)` : search,
        pending: queue.pending,
        failed: queue.failed,
        ...(this.embedding?.status.state === 'model-mismatch' ? { mismatch: `this engine embeds with ${this.embedding.status.embedder.name}; run engram reindex` } : {}),
      },
      summaries,
      artifactTiers,
    };
  }

  async close(): Promise<void> {
    await this.embedding?.indexer.stop();
    await this.busInstance?.flush();
    await this.repoResolver?.close();
    await this.embedding?.indexer.embedder.close?.();
    return this.store.close();
  }

  private async resolveId(kind: 'event' | 'artifact', idOrPrefix: string): Promise<string> {
    const prefix = kind === 'event' ? EVENT_ID_PREFIX : ARTIFACT_ID_PREFIX;
    const fullLength = prefix.length + (kind === 'event' ? 26 : 64);
    if (!idOrPrefix.startsWith(prefix)) {
      throw new EngramError('INVALID_INPUT', `id: "${idOrPrefix}" is not an ${kind} id (${prefix}...)`, { field: 'id' });
    }
    if (idOrPrefix.length === fullLength) return idOrPrefix;
    if (idOrPrefix.length < prefix.length + 4) {
      throw new EngramError('INVALID_INPUT', `id: give at least 4 characters after ${prefix}`, { field: 'id' });
    }
    const matches = await this.store.findIdsByPrefix(kind, idOrPrefix, 2);
    if (matches.length === 0) throw new EngramError('NOT_FOUND', `no ${kind} with id ${idOrPrefix}`, { field: 'id', id: idOrPrefix });
    if (matches.length > 1) {
      throw new EngramError('AMBIGUOUS_ID', `${idOrPrefix} matches several ${kind}s; give more characters`, { field: 'id', matches });
    }
    return matches[0]!;
  }
}

function toBusAgent(record: AgentRecord): BusAgent {
  return {
    id: record.id,
    name: record.name,
    role: record.role,
    isAdmin: record.isAdmin,
    ...(record.parentId ? { parentId: record.parentId } : {}),
    ...(record.project ? { project: record.project } : {}),
  };
}
