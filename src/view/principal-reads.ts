import type { Principal } from '../model/access.js';
import type { SessionRecord } from '../model/event.js';
import type { ArtifactId, SessionId } from '../model/ids.js';
import type { RecallOutcome, RecallRequest } from './agent-recall.js';

/**
 * The reads of a principal's view (engram-view.ts, `EngramView`) that the parts it hands work to use: the hierarchy
 * (hierarchy-view.ts) and a graph build (graph-build-as.ts) read through it, so a session the principal may not read
 * stays NOT_FOUND there too. Its own leaf so those parts do not import the view that makes them. `EngramView`
 * implements it; each member is documented there.
 */
export interface PrincipalReads {
  readonly principal: Principal;
  resolveSessionId(name: string, intent?: 'read' | 'write', field?: string): Promise<SessionId>;
  listSessions(options?: { limit?: number }): Promise<SessionRecord[]>;
  getSession(sessionId: string): Promise<SessionRecord>;
  mayRead(sessionIds: readonly string[]): Promise<boolean>;
  mayReadArtifact(id: ArtifactId): Promise<boolean>;
  recall(request: RecallRequest, options?: { idsAreStored?: boolean }): Promise<RecallOutcome>;
}
