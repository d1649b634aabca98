import type { SessionPack } from '../../context/context-engine.js';

/**
 * A context pack as JSON for callers (`engram context --json`, `GET /v1/sessions/{id}/context`): the blocks'
 * token accounting, what compaction and the governor did, and the pack rendered in `format`.
 */
export function contextPackSummary(sessionId: string, result: SessionPack, format: string, formatted: unknown) {
  return {
    session: sessionId,
    cacheVersion: result.cacheVersion,
    totalTokens: result.pack.totalTokens,
    windowTokens: result.pack.windowTokens,
    headroomTokens: result.pack.headroomTokens,
    blocks: result.pack.blocks.map(({ kind, tokens, budget, items, droppedItems }) => ({ kind, tokens, budget, items, droppedItems })),
    compaction: result.compaction
      ? {
          evicted: result.compaction.evicted.length,
          tokensBefore: result.compaction.tokensBefore,
          tokensAfter: result.compaction.tokensAfter,
          markers: result.compaction.markerCount,
        }
      : null,
    codex: result.pack.decisions.codex,
    governor: result.governor ?? null,
    format,
    formatted,
  };
}
