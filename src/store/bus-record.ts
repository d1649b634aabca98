import type { EngramClaim, EngramScope } from '../model/engram.js';
import { EngramError } from '../errors.js';
import type { BusEventQuery, DerefKind, DerefUsage, EngramRow } from './bus-storage.js';
import { DEREF_KINDS } from './bus-storage.js';

/** What both backends share of the Engram Bus tables (migration 7): row mapping and argument checks. */

/** Every scope: what a reader sees when it names no scopes. */
export const ALL_SCOPES: readonly EngramScope[] = ['run', 'project', 'org', 'global'];
/** Scopes visible from every project (LESS §4.3). */
export const SHARED_SCOPES: readonly EngramScope[] = ['org', 'global'];
/** Secrets (`getOrCreateSecret`) live in store_meta under `secret:<name>`. */
export const SECRET_KEY_PREFIX = 'secret:';
/** Telemetry events listed when no limit is given. */
export const DEFAULT_BUS_EVENT_LIMIT = 1000;

/** An engrams row as both backends return it (bigints may arrive as strings from PostgreSQL). */
export interface EngramColumns {
  id: string;
  project: string | null;
  run_id: string;
  scope: string;
  kind: string;
  created_by: string;
  created_ms: number | string;
  expires_ms: number | string;
  dedupe_key: string;
  index_keys: string[];
  body: EngramClaim;
  removed_ms: number | string | null;
  removed_by: string | null;
  scope_changed_by: string | null;
  scope_changed_ms: number | string | null;
}

/** The stored body is the engram as accepted; its scope is the current one (a promotion changes the column). */
export function rowFromColumns(c: EngramColumns): EngramRow {
  const row: EngramRow = {
    engram: { ...c.body, scope: c.scope as EngramScope },
    project: c.project,
    runId: c.run_id,
    createdBy: c.created_by,
    createdMs: Number(c.created_ms),
    expiresMs: Number(c.expires_ms),
    dedupeKey: c.dedupe_key,
    indexKeys: c.index_keys,
  };
  if (c.removed_ms !== null) row.removedMs = Number(c.removed_ms);
  if (c.removed_by !== null) row.removedBy = c.removed_by;
  if (c.scope_changed_by !== null) row.scopeChangedBy = c.scope_changed_by;
  if (c.scope_changed_ms !== null) row.scopeChangedMs = Number(c.scope_changed_ms);
  return row;
}

export interface DerefUsageColumns {
  repo: number;
  artifact: number;
  sam: number;
  other: number;
  tokens: number | string;
}

/** Usage of a turn; no row yet is no usage. */
export function usageFromColumns(r: DerefUsageColumns | undefined): DerefUsage {
  return {
    counts: { repo: r?.repo ?? 0, artifact: r?.artifact ?? 0, sam: r?.sam ?? 0, other: r?.other ?? 0 },
    tokens: Number(r?.tokens ?? 0),
  };
}

/** A row limit: a non-negative integer (INVALID_INPUT naming `field` otherwise). */
export function checkLimit(value: number, field: string): void {
  if (!Number.isSafeInteger(value) || value < 0) throw new EngramError('INVALID_INPUT', `${field}: must be a non-negative integer`, { field });
}

/** The deref kind names a column, so it is checked against the list before it reaches SQL. */
export function checkDerefAmount(kind: DerefKind, tokens: number): void {
  if (!DEREF_KINDS.includes(kind)) throw new EngramError('INVALID_INPUT', `kind: must be one of ${DEREF_KINDS.join(', ')}`, { field: 'kind' });
  checkLimit(tokens, 'tokens');
}

/**
 * Deref limits as bound parameters: non-negative integers, where `Infinity` (no limit) becomes the largest
 * safe integer, which both databases store and compare exactly.
 */
export function derefLimits(limits: { maxCount: number; maxTokens: number }): { maxCount: number; maxTokens: number } {
  const one = (value: number, field: string): number => {
    if (value === Number.POSITIVE_INFINITY) return Number.MAX_SAFE_INTEGER;
    checkLimit(value, field);
    return value;
  };
  return { maxCount: one(limits.maxCount, 'maxCount'), maxTokens: one(limits.maxTokens, 'maxTokens') };
}

export function busEventLimit(query: BusEventQuery): number {
  const limit = query.limit ?? DEFAULT_BUS_EVENT_LIMIT;
  checkLimit(limit, 'limit');
  return limit;
}

/** Another engram already has this id (the bus chooses ids, so this is a clash or a retry with changed content). */
export function engramIdConflict(id: string): EngramError {
  return new EngramError('CONFLICT', `id: an engram with id ${id} already exists`, { field: 'id', id });
}

export function grantIdConflict(id: string): EngramError {
  return new EngramError('CONFLICT', `id: a grant with id ${id} already exists`, { field: 'id', id });
}
