export type { ContextStateRecord, StoredCacheEntry } from '../model/context-state.js';
