import type { EventInput, EventRecord } from '../model/event.js';
import type { SessionId } from '../model/ids.js';
import type { DelegationPacket, DelegationReport, HierarchyLink, HierarchyRole, ReportValidation, WriterLease } from '../model/hierarchy.js';
import { HIERARCHY_LINK_KEY, roleAtDepth, writerLeaseOf } from '../model/hierarchy.js';
import type { StorageBackend } from '../store/backend.js';

/**
 * How a hierarchy is written into its sessions (ENGRAM §7, Annex A.5), and read back. Nothing is kept beside the
 * events: every session of a tree holds a `hierarchy:link` event (its role, parent and writer lease; in a
 * delegated session also the packet, as the session's first event), a planner holds one `delegation` decision per
 * child, an executor one `report` decision per report, and a planner that validated a report a `validation`
 * decision. All are ordinary events: recallable, exported by `engram migrate`, reached by a purge.
 */

/** Tags of hierarchy events: recall and `engram show` can filter on them. */
export const HIERARCHY_TAG = 'hierarchy';

interface LinkMeta {
  type: 'link';
  role: HierarchyRole;
  depth: number;
  parent_session: string | null;
  root_session: string;
  writer: WriterLease | null;
  delegated_by?: string;
  packet?: DelegationPacket;
}

/** The planner's record of one delegation. */
export interface DelegationRecord {
  eventId: string;
  childSessionId: string;
  executor: string | null;
  packet: DelegationPacket;
  ts: string;
}

/** One report an executor sent up. */
export interface ReportRecord {
  eventId: string;
  sessionId: string;
  parentSessionId: string;
  subtaskId: string;
  report: DelegationReport;
  ts: string;
}

/** The link event of a planner at the root of a tree. */
export function rootLinkEvent(sessionId: string, writer: WriterLease | null): EventInput {
  const meta: LinkMeta = { type: 'link', role: 'planner', depth: 0, parent_session: null, root_session: sessionId, writer };
  return {
    kind: 'note',
    content: `Planner session of a hierarchy${writer ? `; its single writer is ${writer.name}` : ''}.`,
    key: HIERARCHY_LINK_KEY,
    tags: [HIERARCHY_TAG],
    meta: { hierarchy: meta },
  };
}

/** The link event of a delegated session: its first event, holding the packet it was created from. */
export function childLinkEvent(input: {
  parent: HierarchyLink | { sessionId: string; depth: number; rootSessionId: string };
  packet: DelegationPacket;
  writer: WriterLease | null;
  delegatedBy: string;
}): EventInput {
  const depth = input.parent.depth + 1;
  const meta: LinkMeta = {
    type: 'link',
    role: roleAtDepth(depth),
    depth,
    parent_session: input.parent.sessionId,
    root_session: input.parent.rootSessionId,
    writer: input.writer,
    delegated_by: input.delegatedBy,
    packet: input.packet,
  };
  return {
    kind: 'note',
    content: `Delegated by ${input.delegatedBy} from session ${input.parent.sessionId}${input.writer ? ` to ${input.writer.name}` : ''}.\n${renderPacket(input.packet)}`,
    key: HIERARCHY_LINK_KEY,
    tags: [HIERARCHY_TAG, 'delegation'],
    meta: { hierarchy: meta },
  };
}

/** The planner's decision event recording a delegation. */
export function delegationEvent(childSessionId: string, packet: DelegationPacket, executor: string | null): EventInput {
  return {
    kind: 'decision',
    content: `Delegated subtask ${packet.subtask_id} to ${executor ?? 'an executor'} in session ${childSessionId}.\n${renderPacket(packet)}`,
    key: `hierarchy:delegate:${childSessionId}`,
    tags: [HIERARCHY_TAG, 'delegation'],
    meta: { hierarchy: { type: 'delegation', child_session: childSessionId, executor, packet } },
  };
}

/** The executor's decision event holding a report. */
export function reportEvent(parentSessionId: string, subtaskId: string, report: DelegationReport): EventInput {
  const findings = report.key_findings.map((f) => `- ${f.claim} [${f.provenance.map((p) => p.pointer).join(', ')}]`);
  return {
    kind: 'decision',
    content: [`Report on subtask ${subtaskId} to session ${parentSessionId}: ${report.status}.`, report.summary, ...findings].join('\n'),
    tags: [HIERARCHY_TAG, 'report'],
    meta: { hierarchy: { type: 'report', parent_session: parentSessionId, subtask_id: subtaskId, report } },
  };
}

/** The planner's decision event recording what validating a report found. */
export function validationEvent(report: ReportRecord, validation: ReportValidation, digest: string): EventInput {
  const failed = validation.findings.flatMap((f) => f.pointers.filter((p) => p.status !== 'verified').map((p) => `- ${p.status}: ${p.pointer}`));
  return {
    kind: 'decision',
    content: [
      `Report ${report.eventId} of session ${report.sessionId} (subtask ${report.subtaskId}, ${report.report.status}): ` +
        `${validation.isVerified ? 'verified' : 'NOT verified'}, ${validation.verifiedPointers} pointer(s) verified, ${validation.failedPointers} failed.`,
      ...failed,
    ].join('\n'),
    key: `hierarchy:validated:${report.eventId}:${digest}`,
    tags: [HIERARCHY_TAG, 'report-validation'],
    meta: {
      hierarchy: {
        type: 'validation',
        report_event: report.eventId,
        child_session: report.sessionId,
        is_verified: validation.isVerified,
        verified_pointers: validation.verifiedPointers,
        failed_pointers: validation.failedPointers,
      },
    },
  };
}

/** The packet as text: what recall finds and a reader of the session sees. */
export function renderPacket(p: DelegationPacket): string {
  const lines = [`Subtask ${p.subtask_id}. Objective: ${p.objective}`];
  if (p.constraints.length > 0) lines.push('Constraints:', ...p.constraints.map((c) => `- ${c}`));
  lines.push('Acceptance criteria:', ...p.acceptance_criteria.map((c) => `- ${c}`));
  if (p.key_event_refs.length > 0) lines.push(`Key events: ${p.key_event_refs.join(', ')}`);
  if (p.artifact_ids.length > 0) lines.push(`Artifacts: ${p.artifact_ids.join(', ')}`);
  if (p.plan_node_ref !== undefined) lines.push(`Plan node: ${p.plan_node_ref}`);
  return lines.join('\n');
}

/** A session's link, or null when it takes no part in a hierarchy. */
export async function readLink(store: StorageBackend, sessionId: SessionId): Promise<HierarchyLink | null> {
  const [keyed] = await store.getEventsByKeys(sessionId, [HIERARCHY_LINK_KEY]);
  if (!keyed) return null;
  const e = keyed.record;
  const h = e.meta?.hierarchy as LinkMeta | undefined;
  if (!h || h.type !== 'link') return null;
  return {
    sessionId,
    role: h.role,
    depth: h.depth,
    parentSessionId: h.parent_session,
    rootSessionId: h.root_session,
    writer: writerLeaseOf(e.meta),
    eventId: e.id,
    ...(h.packet ? { packet: h.packet } : {}),
    ...(h.delegated_by !== undefined ? { delegatedBy: h.delegated_by } : {}),
  };
}

/** The delegations a session made, oldest first. */
export async function listDelegations(store: StorageBackend, sessionId: SessionId): Promise<DelegationRecord[]> {
  const decisions = await store.listEvents({ sessionId, kinds: ['decision'] });
  const out: DelegationRecord[] = [];
  for (const e of decisions) {
    const h = hierarchyMeta(e);
    if (h?.type !== 'delegation') continue;
    out.push({ eventId: e.id, childSessionId: String(h.child_session), executor: (h.executor as string | null) ?? null, packet: h.packet as DelegationPacket, ts: e.ts });
  }
  return out;
}

/** The reports a delegated session sent up, oldest first. */
export async function listReports(store: StorageBackend, sessionId: SessionId): Promise<ReportRecord[]> {
  const decisions = await store.listEvents({ sessionId, kinds: ['decision'] });
  const out: ReportRecord[] = [];
  for (const e of decisions) {
    const h = hierarchyMeta(e);
    if (h?.type !== 'report') continue;
    out.push({
      eventId: e.id,
      sessionId,
      parentSessionId: String(h.parent_session),
      subtaskId: String(h.subtask_id),
      report: h.report as DelegationReport,
      ts: e.ts,
    });
  }
  return out;
}

function hierarchyMeta(e: EventRecord): Record<string, unknown> | undefined {
  const h = e.meta?.hierarchy;
  return h && typeof h === 'object' && !Array.isArray(h) ? (h as Record<string, unknown>) : undefined;
}
