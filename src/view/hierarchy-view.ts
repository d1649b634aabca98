import type { EngineParts } from './engine-parts.js';
import { EngramError, invalidInputFromZod, isEngramError } from '../errors.js';
import { canWriteSession, DEFAULT_PROJECT } from '../model/access.js';
import type { ArtifactId, EventId, SessionId } from '../model/ids.js';
import type {
  DelegationPacket,
  DelegationPacketInput,
  DelegationReport,
  DelegationReportInput,
  FindingCheck,
  HierarchyLink,
  HierarchyRole,
  ProvenanceCheck,
  ProvenancePointer,
  ReportValidation,
  WriterLease,
} from '../model/hierarchy.js';
import { DELEGATION_LIMITS, delegationPacketSchema, delegationReportSchema, roleAtDepth } from '../model/hierarchy.js';
import { checkWriterLease, type AppendOptions } from '../store/backend.js';
import { validateSessionId } from '../memory/ingest.js';
import { TaskStateStore } from '../memory/task-state-store.js';
import type { DelegationRecord, ReportRecord } from '../memory/hierarchy-events.js';
import {
  childLinkEvent,
  delegationEvent,
  listDelegations,
  listReports,
  readLink,
  reportEvent,
  rootLinkEvent,
  validationEvent,
} from '../memory/hierarchy-events.js';
import { sha256Hex } from '../memory/artifact-codec.js';
import { parsePointerRef } from '../bus/pointer.js';
import { DEFAULT_DEREF_MAX_TOKENS } from '../bus/resolvers/pointer-resolver.js';
import type { RecallOutcome, RecallRequest } from './agent-recall.js';
import type { PrincipalReads } from './principal-reads.js';

export interface DelegateInput {
  /** The delegating (planner or executor) session; it must exist and be writable by the caller. */
  parentSessionId: string;
  packet: DelegationPacketInput;
  /** The child's session id. Default `<parent session>.<subtask_id>`. */
  childSessionId?: string;
  /**
   * The executor: an agent of the registry (name or id) of the parent session's project, which becomes the child
   * session's single writer. Without one, any writer the access rules allow may write to the child.
   */
  executor?: string;
}

export interface DelegateOutcome {
  parent: HierarchyLink;
  child: HierarchyLink;
  /** The planner's decision event recording the delegation. */
  delegationEventId: string;
  /** The child's task card version seeded from the packet. */
  taskStateVersion: number;
  /** True when this exact delegation was already stored (a retry): nothing was written. */
  isDuplicate: boolean;
}

export interface ReportOutcome {
  eventId: string;
  sessionId: string;
  parentSessionId: string;
  subtaskId: string;
}

/** A report as the planner receives it: the report, and what re-resolving its pointers found. */
export interface ReceivedReport extends ReportRecord {
  executor: string | null;
  validation: ReportValidation;
  /** The planner's decision event recording the validation, when `record` was asked. */
  validationEventId?: string;
}

export interface TreeNode {
  sessionId: string;
  role: HierarchyRole;
  depth: number;
  parentSessionId: string | null;
  /** The single writer, or null when none is enforced. */
  writer: string | null;
  subtaskId?: string;
  objective?: string;
  reports: number;
  lastReportStatus?: string;
}

export interface HierarchyTree {
  rootSessionId: string;
  /** False for a session that takes no part in a hierarchy: the tree is that session alone. */
  isLinked: boolean;
  /** Depth-first from the root; sessions the caller may not read are left out with their subtrees. */
  nodes: TreeNode[];
}

/** Which sessions of a tree a hierarchical recall searches, seen from the asking session. */
export const RECALL_SCOPES = ['subtree', 'tree', 'ancestors'] as const;
export type HierarchyRecallScope = (typeof RECALL_SCOPES)[number];

/**
 * Hierarchical sessions as one principal may use them (ENGRAM §7, Annex A.5): delegation, reports, their
 * validation by digest, the tree and recall across it. Reads and writes go through the principal's
 * view (view/engram-view.ts), so the trust model of model/access.ts holds unchanged: a session the principal may not read
 * is NOT_FOUND and is left out of trees and recall. Every append of an agent names the agent as writer, so the
 * backend refuses it inside the append transaction when the session's lease names someone else.
 */
export class HierarchyView {
  constructor(
    private readonly mem: EngineParts,
    private readonly view: PrincipalReads,
  ) {}

  /** The principal's writer lease: agents write as themselves; a full-trust caller holds no lease. */
  get writer(): WriterLease | null {
    const p = this.view.principal;
    return p.kind === 'agent' ? { id: `agent:${p.agentId}`, name: p.agentName } : null;
  }

  /**
   * Refuses (SCOPE_DENIED naming the holder) when the session's writer lease names another writer: for writes that
   * are not appends (a pack's compaction writes the session's cache). Appends are checked by the backend itself.
   */
  async checkWriter(sessionId: SessionId): Promise<void> {
    const w = this.writer;
    if (w === null) return;
    const link = await readLink(this.mem.store, sessionId);
    if (link) checkWriterLease(sessionId, { hierarchy: { writer: link.writer } }, w);
  }

  /**
   * Delegates a subtask (Annex A.5 lines 2-4): validates the packet, creates the child session in the parent's
   * project, records the packet in both sessions and seeds the child's task card (goal: the objective;
   * constraints; acceptance criteria as open loops; key events), all in one transaction. The parent becomes a
   * planner the first time it delegates, with the caller as its single writer. Retrying the same delegation
   * writes nothing; another delegation to an existing session id is a CONFLICT.
   */
  async delegate(input: DelegateInput): Promise<DelegateOutcome> {
    const parsed = delegationPacketSchema.safeParse(input.packet);
    if (!parsed.success) throw invalidInputFromZod(parsed.error.issues, 'packet');
    const packet = parsed.data;
    validateSessionId(input.parentSessionId, 'parentSessionId');
    const parentSession = await this.view.getSession(input.parentSessionId);
    const parentId = parentSession.id;
    if (!canWriteSession(this.view.principal, parentSession)) {
      throw new EngramError('SCOPE_DENIED', `session ${parentId} is shared read-only; only its own project delegates from it`, { field: 'parentSessionId' });
    }
    const project = parentSession.project ?? DEFAULT_PROJECT;
    // The child's name resolves like any other (model/session-names.ts), so a `<parent>.<subtask>` id another
    // project created first cannot block the delegation: it means this project's own session of that name.
    const childId = await this.view.resolveSessionId(input.childSessionId ?? `${parentId}.${packet.subtask_id}`, 'write', 'childSessionId');
    if (childId === parentId) throw new EngramError('INVALID_INPUT', 'childSessionId: must differ from the parent session', { field: 'childSessionId' });
    if (packet.plan_node_ref !== undefined) checkPointer(packet.plan_node_ref, 'packet.plan_node_ref');
    await this.checkPacketRefs(packet);
    const executor = input.executor !== undefined ? await this.executorLease(input.executor, project) : null;

    const parentLink = await readLink(this.mem.store, parentId);
    const depth = (parentLink?.depth ?? 0) + 1;
    if (depth > DELEGATION_LIMITS.maxDepth) {
      throw new EngramError('INVALID_INPUT', `parentSessionId: session ${parentId} is at depth ${depth - 1}; a hierarchy is at most ${DELEGATION_LIMITS.maxDepth} levels deep`, {
        field: 'parentSessionId',
        limit: 'DELEGATION_LIMITS.maxDepth',
        max: DELEGATION_LIMITS.maxDepth,
      });
    }

    const existing = await this.mem.store.getSession(childId);
    if (existing) return this.existingDelegation(childId, parentId, packet, executor);
    const delegations = await listDelegations(this.mem.store, parentId);
    if (delegations.length >= DELEGATION_LIMITS.maxChildren) {
      throw new EngramError('INVALID_INPUT', `parentSessionId: session ${parentId} already has ${delegations.length} children, the most one session may have`, {
        field: 'parentSessionId',
        limit: 'DELEGATION_LIMITS.maxChildren',
        max: DELEGATION_LIMITS.maxChildren,
      });
    }

    const parentOwner = this.ownerOf(project);
    const delegatedBy = this.writer?.name ?? 'local';
    const out = await this.mem.ingestor.inTransaction(async (ingestor, tx) => {
      if (!parentLink) await ingestor.appendInternal(parentId, [rootLinkEvent(parentId, this.writer)], parentOwner);
      const planner = parentLink ?? (await readLink(tx, parentId))!;
      const [delegation] = await ingestor.appendInternal(parentId, [delegationEvent(childId, packet, executor?.name ?? null)], parentOwner);
      // The child is new: it is created in the parent's project, its link event (which holds the lease) first.
      const childOwner: AppendOptions = { project, requireProject: project };
      await ingestor.appendInternal(childId, [childLinkEvent({ parent: planner, packet, writer: executor, delegatedBy })], childOwner);
      const card = await new TaskStateStore(tx, ingestor).update(childId, cardFromPacket(packet), {
        owner: { ...childOwner, ...(executor ? { writer: executor } : {}) },
      });
      return { planner, delegationEventId: delegation!.record.id, taskStateVersion: card.version, child: (await readLink(tx, childId))! };
    });
    this.mem.indexer?.poke();
    return { parent: out.planner, child: out.child, delegationEventId: out.delegationEventId, taskStateVersion: out.taskStateVersion, isDuplicate: false };
  }

  /**
   * An executor's report up (Annex A.5 line 7), stored as a decision in the executor's own session: the planner
   * receives it with {@link reports}. Only the session's writer may report. Pointers must parse; whether they
   * resolve to what the executor read is the planner's check.
   */
  async report(sessionId: string, input: DelegationReportInput): Promise<ReportOutcome> {
    const parsed = delegationReportSchema.safeParse(input);
    if (!parsed.success) throw invalidInputFromZod(parsed.error.issues, 'report');
    const report = parsed.data;
    report.key_findings.forEach((f, i) => f.provenance.forEach((p, j) => checkPointer(p.pointer, `report.key_findings[${i}].provenance[${j}].pointer`)));
    const session = await this.view.getSession(sessionId);
    const id = session.id;
    const link = await readLink(this.mem.store, id);
    if (!link || link.parentSessionId === null || !link.packet) {
      throw new EngramError('INVALID_INPUT', `sessionId: session ${id} was not delegated, so it has no planner to report to (engram delegate creates such sessions)`, {
        field: 'sessionId',
      });
    }
    const [stored] = await this.mem.ingestor.appendInternal(id, [reportEvent(link.parentSessionId, link.packet.subtask_id, report)], this.ownerOf(session.project ?? DEFAULT_PROJECT));
    this.mem.indexer?.poke();
    return { eventId: stored!.record.id, sessionId: id, parentSessionId: link.parentSessionId, subtaskId: link.packet.subtask_id };
  }

  /**
   * The reports a planner's children sent up, each validated (Annex A.5 line 8): every provenance pointer is
   * re-resolved as the caller may read it and its digest compared with the one the executor recorded; each
   * pointer's outcome is given (verified, digest_mismatch, unreadable), never dropped. With `record`, each
   * validation is also written as a decision in the planner's session (idempotent per outcome).
   */
  async reports(sessionId: string, options: { record?: boolean; childSessionId?: string } = {}): Promise<ReceivedReport[]> {
    const session = await this.view.getSession(sessionId);
    const id = session.id;
    let children = await this.readableDelegations(id);
    if (options.childSessionId !== undefined) {
      const child = await this.view.resolveSessionId(options.childSessionId, 'read', 'childSessionId');
      children = children.filter((d) => d.childSessionId === child);
      if (children.length === 0) throw new EngramError('NOT_FOUND', `session ${id} delegated nothing to a session ${child}`, { field: 'childSessionId' });
    }
    const out: ReceivedReport[] = [];
    for (const child of children) {
      for (const report of await listReports(this.mem.store, child.childSessionId as SessionId)) {
        if (report.parentSessionId !== id) continue;
        const validation = await this.validate(report.report);
        let validationEventId: string | undefined;
        if (options.record) {
          const digest = sha256Hex(JSON.stringify(validation)).slice(0, 16);
          const [stored] = await this.mem.ingestor.appendInternal(id, [validationEvent(report, validation, digest)], this.ownerOf(session.project ?? DEFAULT_PROJECT));
          this.mem.indexer?.poke();
          validationEventId = stored!.record.id;
        }
        out.push({ ...report, executor: child.executor, validation, ...(validationEventId ? { validationEventId } : {}) });
      }
    }
    return out;
  }

  /** Re-resolves every provenance pointer of a report and compares digests (what {@link reports} does per report). */
  async validate(input: DelegationReportInput): Promise<ReportValidation> {
    const parsed = delegationReportSchema.safeParse(input);
    if (!parsed.success) throw invalidInputFromZod(parsed.error.issues, 'report');
    const findings: FindingCheck[] = [];
    let verified = 0;
    let failed = 0;
    for (const f of parsed.data.key_findings) {
      const pointers: ProvenanceCheck[] = [];
      for (const p of f.provenance) {
        const check = await this.checkProvenance(p);
        if (check.status === 'verified') verified++;
        else failed++;
        pointers.push(check);
      }
      findings.push({ claim: f.claim, isVerified: pointers.every((p) => p.status === 'verified'), pointers });
    }
    return { isVerified: failed === 0, verifiedPointers: verified, failedPointers: failed, findings };
  }

  /** The tree a session belongs to, from its root, as far as the caller may read it. */
  async tree(sessionId: string): Promise<HierarchyTree> {
    const id = (await this.view.getSession(sessionId)).id;
    const link = await readLink(this.mem.store, id);
    if (!link) return { rootSessionId: id, isLinked: false, nodes: [await this.node(id, null)] };
    let root = link.rootSessionId as SessionId;
    // A root the caller may not read (a tree spanning shares) leaves the highest readable ancestor as the root.
    if (!(await this.view.mayRead([root]))) root = ((await this.ancestors(id)).at(-1) ?? id) as SessionId;
    const nodes: TreeNode[] = [];
    const visit = async (sid: SessionId, l: HierarchyLink | null): Promise<void> => {
      if (nodes.length >= DELEGATION_LIMITS.maxTreeSessions) return;
      nodes.push(await this.node(sid, l));
      for (const d of await this.readableDelegations(sid)) {
        const child = d.childSessionId as SessionId;
        await visit(child, await readLink(this.mem.store, child));
      }
    };
    await visit(root, await readLink(this.mem.store, root));
    return { rootSessionId: root, isLinked: true, nodes };
  }

  /**
   * Recall across the hierarchy (§7.1: "the shared recall tool for cross-level evidence retrieval"): over the
   * asking session's subtree (default), its whole tree, or its ancestors, each session filtered by what the
   * caller may read, ranked by the asking session's task card. A session whose packet withheld recall access
   * (`recall_tool_access: false`) recalls only its own session.
   */
  async recall(
    sessionId: string,
    request: Omit<RecallRequest, 'sessionIds' | 'askingSessionId' | 'taskCardSessionId'> & { scope?: HierarchyRecallScope },
  ): Promise<RecallOutcome & { sessionIds: string[] }> {
    const id = (await this.view.getSession(sessionId)).id;
    const { scope = 'subtree', ...rest } = request;
    if (!RECALL_SCOPES.includes(scope)) {
      throw new EngramError('INVALID_INPUT', `scope: expected one of ${RECALL_SCOPES.join(', ')}, got ${String(scope)}`, { field: 'scope' });
    }
    const link = await readLink(this.mem.store, id);
    let ids: string[];
    if (link?.packet?.recall_tool_access === false) ids = [id];
    else if (scope === 'ancestors') ids = [id, ...(await this.ancestors(id))];
    else if (scope === 'tree') ids = (await this.tree(id)).nodes.map((n) => n.sessionId);
    else ids = await this.subtree(id);
    const outcome = await this.view.recall({ ...rest, sessionIds: ids, askingSessionId: id, taskCardSessionId: id }, { idsAreStored: true });
    return { ...outcome, sessionIds: ids };
  }

  /** The session and its descendants the caller may read, depth-first. */
  async subtree(sessionId: string): Promise<string[]> {
    const out: string[] = [];
    const visit = async (sid: SessionId): Promise<void> => {
      if (out.length >= DELEGATION_LIMITS.maxTreeSessions) return;
      out.push(sid);
      for (const d of await this.readableDelegations(sid)) await visit(d.childSessionId as SessionId);
    };
    await visit(validateSessionId(sessionId));
    return out;
  }

  /** The session's ancestors the caller may read, nearest first (stops at the first it may not). */
  private async ancestors(id: SessionId): Promise<string[]> {
    const out: string[] = [];
    let link = await readLink(this.mem.store, id);
    while (link?.parentSessionId && out.length <= DELEGATION_LIMITS.maxDepth) {
      const parent = link.parentSessionId as SessionId;
      if (!(await this.view.mayRead([parent]))) break;
      out.push(parent);
      link = await readLink(this.mem.store, parent);
    }
    return out;
  }

  private async readableDelegations(id: SessionId): Promise<DelegationRecord[]> {
    const all = await listDelegations(this.mem.store, id);
    const out: DelegationRecord[] = [];
    for (const d of all) if (await this.view.mayRead([d.childSessionId])) out.push(d);
    return out;
  }

  private async node(id: SessionId, link: HierarchyLink | null): Promise<TreeNode> {
    const reports = link?.parentSessionId ? await listReports(this.mem.store, id) : [];
    const last = reports.at(-1);
    return {
      sessionId: id,
      role: link?.role ?? roleAtDepth(0),
      depth: link?.depth ?? 0,
      parentSessionId: link?.parentSessionId ?? null,
      writer: link?.writer?.name ?? null,
      ...(link?.packet ? { subtaskId: link.packet.subtask_id, objective: link.packet.objective } : {}),
      reports: reports.length,
      ...(last ? { lastReportStatus: last.report.status } : {}),
    };
  }

  private async checkProvenance(p: ProvenancePointer): Promise<ProvenanceCheck> {
    const expected = p.content_digest.toLowerCase().replace(/^sha256:/, '');
    try {
      const resolver = await this.mem.pointerResolver();
      const project = this.view.principal.kind === 'agent' && !this.view.principal.isAdmin ? this.view.principal.project : undefined;
      const r = await resolver.deref(p.pointer, { maxTokens: p.max_tokens ?? DEFAULT_DEREF_MAX_TOKENS, ...(project !== undefined ? { visibleToProject: project } : {}) });
      if (r.contentDigest === expected || r.spanDigest === expected) return { pointer: p.pointer, status: 'verified', digest: expected };
      return { pointer: p.pointer, status: 'digest_mismatch', expected, contentDigest: r.contentDigest, spanDigest: r.spanDigest };
    } catch (err) {
      if (!isEngramError(err)) throw err;
      return { pointer: p.pointer, status: 'unreadable', expected, code: err.code, reason: err.message };
    }
  }

  private async checkPacketRefs(packet: DelegationPacket): Promise<void> {
    for (const [i, ref] of packet.key_event_refs.entries()) {
      const id = ref.slice('sam:event:'.length) as EventId;
      const event = await this.mem.store.getEvent(id);
      if (!event || !(await this.view.mayRead([event.sessionId]))) {
        throw new EngramError('NOT_FOUND', `packet.key_event_refs[${i}]: no event ${id}`, { field: `packet.key_event_refs[${i}]`, id });
      }
    }
    if (packet.artifact_ids.length > 0) {
      const stored = await this.mem.store.hasArtifacts(packet.artifact_ids as ArtifactId[]);
      for (const [i, id] of packet.artifact_ids.entries()) {
        if (!stored.has(id as ArtifactId) || !(await this.view.mayReadArtifact(id as ArtifactId))) {
          throw new EngramError('NOT_FOUND', `packet.artifact_ids[${i}]: no artifact ${id}`, { field: `packet.artifact_ids[${i}]`, id });
        }
      }
    }
  }

  /** The executor's lease: a live agent of the registry that may write the parent's project. */
  private async executorLease(nameOrId: string, project: string): Promise<WriterLease> {
    if (typeof nameOrId !== 'string' || nameOrId.length === 0) throw new EngramError('INVALID_INPUT', 'executor: give an agent name or id', { field: 'executor' });
    let agent;
    try {
      agent = await this.mem.agents.get(nameOrId);
    } catch (err) {
      if (isEngramError(err, 'NOT_FOUND')) throw new EngramError('NOT_FOUND', `executor: no agent ${nameOrId}`, { field: 'executor' });
      throw err;
    }
    if (agent.revokedAt) throw new EngramError('INVALID_INPUT', `executor: agent ${agent.name} was revoked`, { field: 'executor' });
    const agentProject = agent.project ?? DEFAULT_PROJECT;
    if (!agent.isAdmin && agentProject !== project) {
      throw new EngramError('INVALID_INPUT', `executor: agent ${agent.name} belongs to project ${agentProject}, so it could not write a session of project ${project}`, {
        field: 'executor',
      });
    }
    return { id: `agent:${agent.id}`, name: agent.name };
  }

  /** A retried delegation answers with what is stored; anything else at that session id is a CONFLICT. */
  private async existingDelegation(childId: SessionId, parentId: SessionId, packet: DelegationPacket, executor: WriterLease | null): Promise<DelegateOutcome> {
    const [child, parent] = await Promise.all([readLink(this.mem.store, childId), readLink(this.mem.store, parentId)]);
    const delegation = (await listDelegations(this.mem.store, parentId)).find((d) => d.childSessionId === childId);
    const isSame =
      child !== null && parent !== null && delegation !== undefined && child.parentSessionId === parentId &&
      canonicalJson(child.packet) === canonicalJson(packet) && (child.writer?.id ?? null) === (executor?.id ?? null);
    if (!isSame) {
      throw new EngramError('CONFLICT', `childSessionId: session ${childId} already exists; choose another id (or another subtask_id)`, { field: 'childSessionId', sessionId: childId });
    }
    const card = await this.mem.taskStates.get(childId);
    return { parent, child, delegationEventId: delegation.eventId, taskStateVersion: card?.version ?? 0, isDuplicate: true };
  }

  private ownerOf(project: string): AppendOptions {
    const w = this.writer;
    const bounded = this.view.principal.kind === 'agent' && !this.view.principal.isAdmin;
    return { project, ...(bounded ? { requireProject: project } : {}), ...(w ? { writer: w } : {}) };
  }
}

/** The child's first task card (§7.3: "local objective, steps, checkpoints"). */
function cardFromPacket(p: DelegationPacket) {
  return {
    taskId: p.subtask_id,
    goals: [clip(p.objective, 500)],
    constraints: p.constraints,
    openLoops: p.acceptance_criteria.map((c) => clip(`Acceptance: ${c}`, 500)),
    nextActions: ['Report to the planner with provenance pointers (engram report)'],
    keyEvents: p.key_event_refs.map((r) => r.slice('sam:event:'.length)),
    phase: 'planning' as const,
  };
}

/** JSON with object keys sorted: stored meta may come back with its keys in another order (PostgreSQL jsonb). */
function canonicalJson(v: unknown): string {
  return JSON.stringify(v, (_k, value: unknown) =>
    value && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : value,
  );
}

function clip(s: string, max: number): string {
  return s.length <= max ? s : `${s.slice(0, max - 1)}…`;
}

function checkPointer(ref: string, field: string): void {
  try {
    parsePointerRef(ref);
  } catch (err) {
    if (isEngramError(err)) throw new EngramError(err.code, `${field}: ${err.message}`, { ...(err.data as object), field });
    throw err;
  }
}
