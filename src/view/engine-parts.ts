import type { ArtifactRecord } from '../model/artifact.js';
import type { EventInput, EventRecord } from '../model/event.js';
import type { Tokenizer } from '../providers/tokenizer.js';
import type { Embedder } from '../providers/embedder.js';
import type { Ingestor, IngestOutcome } from '../memory/ingest.js';
import type { TaskStateStore } from '../memory/task-state-store.js';
import type { AgentRegistry } from '../memory/agent-registry.js';
import type { EmbeddingIndexer } from '../memory/embedding-indexer.js';
import type { RecallBatchResult, RecallOptions, RecallResult } from '../memory/recall.js';
import type { ContextEngine } from '../context/context-engine.js';
import type { Bus } from '../bus/bus.js';
import type { BusAgent } from '../bus/bus-agent.js';
import type { PointerResolver } from '../bus/resolvers/pointer-resolver.js';
import type { GraphBuilder } from '../consolidate/graph/graph-builder.js';
import type { AppendOptions, ListEventsQuery, StorageBackend } from '../store/backend.js';

/** An artifact's record and its full original bytes (decoded, and checked when rehydrated from the cold tier). */
export interface ArtifactContent {
  record: ArtifactRecord;
  bytes: Buffer;
}

/**
 * The parts of the engine (engine.ts, `Engram`) that its views use: the views under view/ take this instead of the
 * engine's class, so the engine can make its views without the two modules importing each other. `Engram`
 * implements it; each member is documented there.
 */
export interface EngineParts {
  readonly store: StorageBackend;
  readonly tokenizer: Tokenizer;
  readonly ingestor: Ingestor;
  readonly taskStates: TaskStateStore;
  readonly agents: AgentRegistry;
  readonly context: ContextEngine;
  readonly bus: Bus;
  readonly indexer: EmbeddingIndexer | undefined;
  readonly vectorEmbedder: Embedder | null;
  pointerResolver(): Promise<PointerResolver>;
  busAgent(nameOrId: string): Promise<BusAgent>;
  graphBuilder(): GraphBuilder;
  append(sessionId: string, events: EventInput | EventInput[], owner?: AppendOptions): Promise<IngestOutcome[]>;
  recall(query: string, options?: RecallOptions): Promise<RecallResult>;
  recallBatch(queries: readonly string[], options?: RecallOptions): Promise<RecallBatchResult>;
  getEvent(idOrPrefix: string): Promise<EventRecord>;
  readArtifact(idOrPrefix: string): Promise<ArtifactContent>;
  resolve(idOrPrefix: string): Promise<{ kind: 'event' | 'artifact'; id: string }>;
  listEvents(query: ListEventsQuery): Promise<EventRecord[]>;
}
