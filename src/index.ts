/** Public API of the `engram` package. */
export { openEngram, Engram } from './engine.js';
export type { OpenEngramOptions, ArtifactContent } from './engine.js';
export { EngramError, isEngramError, ERROR_CODES } from './errors.js';
export type { ErrorCode, ErrorData } from './errors.js';
export { EVENT_KINDS, eventInputSchema, sessionIdSchema } from './model/event.js';
export type { EventInput, EventKind, EventRecord, SessionRecord, EventArtifactRef } from './model/event.js';
export type { ArtifactRecord, Preview, PreviewKind } from './model/artifact.js';
export type { EventId, ArtifactId, SessionId } from './model/ids.js';
export type { RecallOptions, RecallResult, RecallHit, RecallBatchResult } from './memory/recall.js';
export { taskStateSchema, taskStateUpdateSchema, TASK_PHASES } from './model/task-state.js';
export type { TaskState, TaskStateUpdate, TaskStateVersion, TaskPhase } from './model/task-state.js';
export type { SessionPack, PackOptions } from './context/context-engine.js';
export type { OpenAiMessage, OpenAiToolCall, OpenAiChatPayload } from './context/assembly/formatters.js';
export { MODIFIER_FACTORS, DEFAULT_PHASE_SALIENCE, MODIFIER_DEFAULTS, taskModifier } from './memory/task-modifier.js';
export type { ModifierFactor, ModifierFactors, ModifierOptions, PhaseSalienceTable } from './memory/task-modifier.js';
export { mmrSelect } from './memory/mmr.js';
export type { MmrCandidate, MmrOptions } from './memory/mmr.js';
export { DEFAULT_TYPE_QUOTAS } from './memory/type-quotas.js';
export type { TypeQuotas } from './memory/type-quotas.js';
export type { IngestOptions } from './memory/ingest.js';
export type { ImportFileOptions, ImportReport, ImportProgress } from './memory/import-runner.js';
export { IMPORT_FORMATS } from './memory/importers/types.js';
export type { ImportFormat } from './memory/importers/types.js';
export type { StorageBackend, BackendCapabilities, StoreStats, RecallLogRecord, RecallLogInput, RecallLogHit, RecallLogQuery } from './store/backend.js';
export { openStore, DEFAULT_DB_PATH } from './store/open-store.js';
export type { StoreLocation } from './store/open-store.js';
export type { Tokenizer } from './providers/tokenizer.js';
export { createGptTokenizer } from './providers/gpt-tokenizer.js';
export type { AgentId, AgentRecord, AgentInput } from './model/agent.js';
export { KNOWN_AGENT_ROLES } from './model/agent.js';
export type { AgentAddOptions, AgentWithToken } from './memory/agent-registry.js';
export { startHttpServer, DEFAULT_HTTP_PORT, DEFAULT_HTTP_HOST } from './interfaces/http/server.js';
export type { HttpServerOptions, RunningHttpServer } from './interfaces/http/server.js';
export type { VectorStats } from './engine.js';
export { RETRIEVERS, HYBRID_VECTOR_WEIGHT } from './memory/recall.js';
export type { Retriever } from './memory/recall.js';
export { MATCH_SIMILARITY_FLOOR, RECALL_MATCHES } from './memory/recall-match.js';
export type { RecallMatch } from './memory/recall-match.js';
export { eventCoverage } from './memory/term-coverage.js';
export type { Embedder } from './providers/embedder.js';
export { createBuiltinEmbedder, BUILTIN_EMBEDDER_NAME } from './providers/builtin-embedder.js';
export { createOpenAiEmbedder } from './providers/openai-embedder.js';
export type { OpenAiEmbedderOptions } from './providers/openai-embedder.js';
export { createOnnxEmbedder } from './providers/onnx-embedder.js';
export type { OnnxEmbedderOptions } from './providers/onnx-embedder.js';
export { parseEmbedderSpec, createEmbedderFromSpec, DEFAULT_EMBEDDER_SPEC } from './providers/embedder-spec.js';
export type { EmbedderSpec } from './providers/embedder-spec.js';
export type { EmbeddingIndexer, EmbeddingIndexerOptions, VectorStatus, IndexProgress } from './memory/embedding-indexer.js';
export type { VectorModel, VectorHit, EmbeddingQueueStats } from './store/backend.js';
export { Bus } from './bus/bus.js';
export type { BusOptions } from './bus/bus.js';
export type { BusAgent, ScopePolicy } from './bus/bus-agent.js';
export type { EngramQuery, RankedEngram, EngramInput } from './bus/engram-bus.js';
export type { DerefRequest, DerefOutcome } from './bus/budget-enforcer.js';
export { validateEngram, validatePointer } from './bus/validation.js';
export { engramSchema, ENGRAM_KINDS, ENGRAM_SCOPES } from './model/engram.js';
export type { EngramClaim, EngramKind, EngramScope } from './model/engram.js';
export { pointerSchema } from './model/pointer.js';
export type { Pointer } from './model/pointer.js';
export { parsePointerRef, formatPointerRef } from './bus/pointer.js';
export { createPointerResolver } from './bus/resolvers/pointer-resolver.js';
export { openRepoResolver } from './bus/resolvers/repo-resolver.js';
export { resolveBudgetLimits, DEFAULT_BUDGET_LIMITS } from './bus/budget-limits.js';
export type { BudgetLimits } from './bus/budget-limits.js';
export { parseAgentMessage, validateAgentMessage, buildSharedBrief } from './bus/messages/index.js';
export type { BusMetrics } from './bus/bus-metrics.js';
export { evaluateLocomo } from './eval/locomo-eval.js';
export {
  delegationPacketSchema,
  delegationReportSchema,
  provenancePointerSchema,
  DELEGATION_LIMITS,
  HIERARCHY_ROLES,
  REPORT_STATUSES,
} from './model/hierarchy.js';
export type {
  DelegationPacket,
  DelegationPacketInput,
  DelegationReport,
  DelegationReportInput,
  HierarchyLink,
  HierarchyRole,
  ProvenanceCheck,
  ReportValidation,
  WriterLease,
} from './model/hierarchy.js';
export { RECALL_SCOPES } from './view/hierarchy-view.js';
export type { HierarchyView, DelegateInput, DelegateOutcome, ReportOutcome, ReceivedReport, HierarchyTree, TreeNode, HierarchyRecallScope } from './view/hierarchy-view.js';
export type { ChatModel, ChatMessage, ChatRequest, ChatResult, LlmUsage, LlmCallRecord } from './providers/llm/chat-model.js';
export { createOpenAiChatModel } from './providers/llm/openai-chat.js';
export type { OpenAiChatOptions } from './providers/llm/openai-chat.js';
export { createAnthropicChatModel } from './providers/llm/anthropic-chat.js';
export type { AnthropicChatOptions } from './providers/llm/anthropic-chat.js';
export { createGuardedChatModel } from './providers/llm/guarded-chat-model.js';
export type { GuardedChatModel, GuardedChatModelOptions, SpendLimits, CircuitBreakerOptions, GuardState } from './providers/llm/guarded-chat-model.js';
export { completeStructured, extractJson } from './providers/llm/structured-output.js';
export type { StructuredOptions, StructuredResult } from './providers/llm/structured-output.js';
export { parseLlmSpec, resolveLlmSpec, createChatModelFromSpec, llmLimitsFromEnv } from './providers/llm/llm-spec.js';
export type { LlmSpec } from './providers/llm/llm-spec.js';
export { escalate, createEscalationCounter, LEVEL_CONFIDENCE, ESCALATION_LEVELS } from './consolidate/escalation.js';
export type { EscalationLevel, Escalated, EscalationSteps, EscalationStats, EscalationTelemetry, LevelAttempt } from './consolidate/escalation.js';
export { summarizeWithEscalation } from './consolidate/bounded-summary.js';
export type { BoundedSummary, BoundedSummaryRequest, BoundedSummaryDeps } from './consolidate/bounded-summary.js';
export { extractiveSummary } from './consolidate/extractive-summary.js';
export type { SourceItem } from './consolidate/extractive-summary.js';
export { significanceGate, toSessionSkippedRecord, meanVector, DEFAULT_SIGNIFICANCE_THRESHOLDS } from './consolidate/significance-gate.js';
export type { SignificanceDecision, SignificanceInput, SignificanceThresholds, SessionSkippedRecord, GateCheck } from './consolidate/significance-gate.js';
export { logLlmCallsTo, logEscalationsTo } from './consolidate/telemetry.js';
export { deriveWithEscalation } from './consolidate/structured-escalation.js';
export { LlmEntityExtractor, GRAPH_EXTRACTION_EVENT } from './consolidate/graph/llm-extractor.js';
export type { LlmExtractorOptions, LlmExtractionStats, DropCounts } from './consolidate/graph/llm-extractor.js';
export { Consolidator } from './consolidate/consolidator.js';
export type { ConsolidatorOptions, SessionOutcome, SessionStatus, RollUpOutcome } from './consolidate/consolidator.js';
export { runConsolidation } from './consolidate/consolidation-run.js';
export type { ConsolidationRunOptions, ConsolidationReport } from './consolidate/consolidation-run.js';
export { ConsolidationWorker } from './consolidate/consolidation-worker.js';
export type { ConsolidationWorkerOptions, WorkerRound } from './consolidate/consolidation-worker.js';
export { SummaryReader } from './consolidate/summary-reader.js';
export type { SummaryExpansion, SummaryListOptions, SummarySearchOptions } from './consolidate/summary-reader.js';
export { segmentEpisodes } from './consolidate/episodes.js';
export { DEPTH_INSTRUCTIONS, DEFAULT_DEPTH_BUDGETS } from './consolidate/depth-prompts.js';
export { SUMMARY_DEPTHS, SUMMARY_DEPTH_NAMES, isSummaryId } from './model/summary.js';
export type { SummaryRecord, SummaryDepth, StoredSkip } from './model/summary.js';
export type { SummaryStorage, SummaryCounts, SummaryHit, ConsolidationJob, ColdMove } from './store/summary-storage.js';
export { KnowledgeGraph } from './consolidate/graph/knowledge-graph.js';
export type { EntityListQuery } from './consolidate/graph/knowledge-graph.js';
export { GraphBuilder } from './consolidate/graph/graph-builder.js';
export type { BuildReport, RepoBuildReport } from './consolidate/graph/graph-builder.js';
export { DeterministicExtractor } from './consolidate/graph/deterministic-extractor.js';
export type { EntityExtractor, Extraction, ExtractionInput, ExtractedEntity, ExtractedEdge } from './consolidate/graph/extractor.js';
export { formatImpact, DEFAULT_MIN_CONFIDENCE, DEFAULT_MAX_DEPTH } from './consolidate/graph/impact.js';
export type { ImpactAnswer, ImpactGroup, ImpactEntry, ImpactOptions } from './consolidate/graph/impact.js';
export type { EntityExpandAnswer, EntityExpandGroup, EntityExpandLine, EntityExpandOptions } from './consolidate/graph/entity-expand.js';
export { ENTITY_KINDS, EDGE_TYPES, entityId, edgeId, parseEntityRef } from './model/graph.js';
export type { EntityKind, EdgeType, EntityRecord, EdgeRecord, CitationRecord } from './model/graph.js';
export type { StructuredEscalationRequest, StructuredEscalated } from './consolidate/structured-escalation.js';
export { sourceItemsFromEvents, sourceItemFromEvent } from './consolidate/source-items.js';
export { agentPrincipal, LOCAL_PRINCIPAL } from './model/access.js';
export type { Principal } from './model/access.js';
export type { EngramView } from './view/engram-view.js';
export type { SessionOverview } from './view/session-overview.js';
