import { EngramError } from '../errors.js';
import type { SummaryRecord } from '../model/summary.js';
import type { StorageBackend } from '../store/backend.js';
import { SummaryReader } from './summary-reader.js';

/** Longest reason stored with a move to the cold tier. */
const MAX_REASON_CHARS = 500;

/**
 * Moves a summary to the cold tier by hand (pruned: wrong, outdated, noise): it leaves lists and searches, stays
 * readable by id and with `includeCold`, and nothing is deleted. `replacedBy` names the object that replaces it
 * (a `cold_source_id` chain). Moving a cold summary again changes nothing. Full trust (the local CLI).
 */
export async function moveSummaryToCold(store: StorageBackend, id: string, reason: string, replacedBy?: string): Promise<SummaryRecord> {
  const reader = new SummaryReader(store);
  const summary = await reader.get(id);
  if (reason.trim() === '' || reason.length > MAX_REASON_CHARS) {
    throw new EngramError('INVALID_INPUT', `reason: must be 1 to ${MAX_REASON_CHARS} characters`, { field: 'reason' });
  }
  if (replacedBy !== undefined) await reader.get(replacedBy);
  if (summary.coldAt === null) await store.summaries.write({ summaries: [], cold: [{ id, reason: `pruned: ${reason.trim()}`, ...(replacedBy !== undefined ? { sourceId: replacedBy } : {}) }] });
  return reader.get(id);
}
