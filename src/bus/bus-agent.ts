import { EngramError } from '../errors.js';
import type { EngramScope } from '../model/engram.js';

/** The caller of a bus operation: an agent of the registry (see src/model/agent.ts), as the bus sees it. */
export interface BusAgent {
  id: string;
  name: string;
  role: string;
  parentId?: string;
  /** Engrams of one project are never visible from another (LESS §13.3). */
  project?: string;
  isAdmin: boolean;
}

/** Who may write or promote to which scope (LESS §4.3, §13.2, §13.3). */
export interface ScopePolicy {
  /** org/global scopes need explicit admin enablement (LESS §13.3). Default false. */
  allowOrgGlobal: boolean;
  /** Engrams promoted beyond run scope need at least this confidence (LESS §13.2). Default 0.5. */
  promotionConfidenceFloor: number;
}

export const DEFAULT_SCOPE_POLICY: Readonly<ScopePolicy> = Object.freeze({ allowOrgGlobal: false, promotionConfidenceFloor: 0.5 });

/**
 * Children write run and project scope; org and global are written only by a root or admin agent, and only
 * when the store enables them. Throws SCOPE_DENIED saying what is allowed.
 */
export function assertMayWriteScope(agent: BusAgent, scope: EngramScope, policy: ScopePolicy): void {
  if (scope === 'run' || scope === 'project') return;
  if (!policy.allowOrgGlobal) {
    throw new EngramError('SCOPE_DENIED', `scope: ${scope} engrams are disabled in this store (an admin enables them); write run or project`, {
      field: 'scope',
      scope,
    });
  }
  if (!agent.isAdmin && agent.parentId !== undefined) {
    throw new EngramError('SCOPE_DENIED', `scope: only a root or admin agent writes ${scope} engrams; write project and ask your parent to promote it`, {
      field: 'scope',
      scope,
    });
  }
}

/** Specificity of a scope: the closer to the reader's own work, the earlier in a tie (PAS Bus §5.1 "scope match"). */
export const SCOPE_RANK: Readonly<Record<EngramScope, number>> = { run: 0, project: 1, org: 2, global: 3 };
