/** Public API of the `engram` package. */
export { openEngram, Engram } from './engine.js';
export type { OpenEngramOptions, ArtifactContent } from './engine.js';
export { EngramError, isEngramError, ERROR_CODES } from './errors.js';
export type { ErrorCode, ErrorData } from './errors.js';
export { EVENT_KINDS, eventInputSchema, sessionIdSchema } from './model/event.js';
export type { EventInput, EventKind, EventRecord, SessionRecord, EventArtifactRef } from './model/event.js';
export type { ArtifactRecord, Preview, PreviewKind } from './model/artifact.js';
export type { EventId, ArtifactId, SessionId } from './model/ids.js';
export type { RecallOptions, RecallResult, RecallHit } from './memory/recall.js';
export type { IngestOptions } from './memory/ingest.js';
export type { ImportFileOptions, ImportReport, ImportProgress } from './memory/import-runner.js';
export { IMPORT_FORMATS } from './memory/importers/types.js';
export type { ImportFormat } from './memory/importers/types.js';
export type { StorageBackend, BackendCapabilities, StoreStats } from './store/backend.js';
export { openStore, DEFAULT_DB_PATH } from './store/open-store.js';
export type { StoreLocation } from './store/open-store.js';
export type { Tokenizer } from './providers/tokenizer.js';
export { createGptTokenizer } from './providers/gpt-tokenizer.js';
