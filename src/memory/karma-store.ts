import { monotonicFactory } from 'ulid';
import { stringProblem } from '../model/limits.js';
import { EngramError } from '../errors.js';
import type { EventId, SessionId } from '../model/ids.js';
import type { KarmaRecord } from '../model/karma.js';
import { MAX_KARMA_CHARS } from '../model/karma.js';
import type { StorageBackend } from '../store/backend.js';
import { validateSessionId } from './ingest.js';

const nextUlid = monotonicFactory();

export interface KarmaAddOptions {
  /** Only this session's packs carry it. Default: every session of the store. */
  sessionId?: string;
  /** The event the fact was verified from. */
  sourceEventId?: string;
  /** Who verified it. Default `user`. */
  verifiedBy?: string;
}

/**
 * Verified facts ("karma", Deep Memory §3): a person marks something true, and it is promoted into the
 * stable karma block of every pack of its scope, oldest verification first (a stable order keeps the
 * prompt prefix cacheable). Removal is recorded, never a deletion.
 */
export class KarmaStore {
  constructor(private readonly store: StorageBackend) {}

  async add(text: string, options: KarmaAddOptions = {}): Promise<KarmaRecord> {
    const trimmed = typeof text === 'string' ? text.trim() : '';
    if (trimmed.length === 0 || trimmed.length > MAX_KARMA_CHARS || trimmed.includes('\u0000')) {
      throw new EngramError('INVALID_INPUT', `text: a verified fact is 1-${MAX_KARMA_CHARS} characters of text`, { field: 'text' });
    }
    // A lone surrogate would come back as U+FFFD from PostgreSQL and as invalid bytes from SQLite (model/limits.ts).
    const problem = stringProblem(trimmed, false);
    if (problem) throw new EngramError('INVALID_INPUT', `text: ${problem}`, { field: 'text' });
    const record: KarmaRecord = {
      id: `kar_${nextUlid().toLowerCase()}`,
      text: trimmed,
      verifiedBy: options.verifiedBy ?? 'user',
      verifiedAt: new Date().toISOString(),
    };
    if (options.sessionId !== undefined) {
      const sessionId = validateSessionId(options.sessionId);
      if (!(await this.store.getSession(sessionId))) {
        throw new EngramError('NOT_FOUND', `session: no session ${sessionId}`, { field: 'session' });
      }
      record.sessionId = sessionId;
    }
    if (options.sourceEventId !== undefined) {
      const event = await this.store.getEvent(options.sourceEventId as EventId);
      if (!event) throw new EngramError('NOT_FOUND', `sourceEventId: no event ${options.sourceEventId}`, { field: 'sourceEventId' });
      record.sourceEventId = event.id;
    }
    await this.store.addKarma(record);
    return record;
  }

  /** Live facts for a session (its own and the store-wide ones); `includeRemoved` lists removed ones too. */
  list(options: { sessionId?: string; includeRemoved?: boolean } = {}): Promise<KarmaRecord[]> {
    return this.store.listKarma({
      ...(options.sessionId !== undefined ? { sessionId: validateSessionId(options.sessionId) as SessionId } : {}),
      ...(options.includeRemoved ? { includeRemoved: true } : {}),
    });
  }

  async remove(id: string, removedBy = 'user'): Promise<void> {
    if (!(await this.store.removeKarma(id, removedBy, Date.now()))) {
      throw new EngramError('NOT_FOUND', `no live karma fact ${id}`, { field: 'id' });
    }
  }
}
