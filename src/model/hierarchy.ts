import { z } from 'zod';
import { stringProblem } from './limits.js';

/**
 * Hierarchical sessions (ENGRAM §7, Annex A.5): a planner session delegates subtasks to executor sessions, which may
 * delegate further (sub-executors). Each is an ordinary session of the store, with its own cache and task card; the
 * hierarchy is recorded as events in the sessions themselves (lossless, recallable), see docs/hierarchy.md.
 */
export const HIERARCHY_ROLES = ['planner', 'executor', 'sub_executor'] as const;
export type HierarchyRole = (typeof HIERARCHY_ROLES)[number];

/** The role of a session at a depth of the tree: the root plans, its children execute, theirs are sub-executors. */
export function roleAtDepth(depth: number): HierarchyRole {
  return depth === 0 ? 'planner' : depth === 1 ? 'executor' : 'sub_executor';
}

/**
 * What a delegation packet and a report may hold. The packet seeds the child's task card, which is pushed into
 * every pack of the child (TASK_STATE_LIMITS: items of 500 characters), and both are stored as event meta
 * (MAX_META_JSON_CHARS, 64 KiB): at these limits a packet serializes to about 35,000 characters.
 */
export const DELEGATION_LIMITS = {
  /** The objective: a paragraph. The child's task card keeps its first 500 characters as its goal. */
  objectiveChars: 2000,
  /** Constraints become the child card's constraints (TASK_STATE_LIMITS.constraints). */
  constraints: 30,
  acceptanceCriteria: 20,
  itemChars: 500,
  /** Key events and artifacts the executor starts from: like an engram's pointers, at most 12 each. */
  keyEventRefs: 12,
  artifactIds: 12,
  /** A pointer ref (bus grammar), as long as an engram pointer may be. */
  refChars: 600,
  subtaskIdChars: 64,
  /** Planner -> executor -> sub-executors: deeper trees are a plan that wants splitting, not more levels. */
  maxDepth: 8,
  /** Children of one session, and sessions of one tree, read by `tree` and hierarchical recall. */
  maxChildren: 100,
  maxTreeSessions: 200,
  summaryChars: 2000,
  /** Findings of a report, and provenance pointers of one finding: each is re-resolved when the planner validates. */
  keyFindings: 12,
  provenancePerFinding: 4,
} as const;

const validText = (max: number, min = 1) =>
  z
    .string()
    .min(min)
    .max(max)
    .superRefine((v, ctx) => {
      const problem = stringProblem(v, false);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    });

const EVENT_ID = /^evt_[0-9a-z]{26}$/;
const SAM_EVENT_REF = /^sam:event:(evt_[0-9a-z]{26})$/;

/** A key event as a `sam:event:<id>` pointer; a bare event id is accepted and written as one. */
const keyEventRefSchema = z
  .string()
  .max(DELEGATION_LIMITS.refChars)
  .transform((v, ctx) => {
    if (EVENT_ID.test(v)) return `sam:event:${v}`;
    if (SAM_EVENT_REF.test(v)) return v;
    ctx.addIssue({ code: 'custom', message: 'must be an event pointer sam:event:evt_... (or an event id evt_...)' });
    return z.NEVER;
  });

/** The subtask's name: it becomes part of the child's session id by default. */
export const subtaskIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'must be 1-64 letters, digits and ._- starting with a letter or digit');

/**
 * The delegation packet of Annex A.5 line 3: what an executor needs and nothing else (§7.2: not the whole plan).
 * Snake_case, as the seeds' wire objects (the engram v0.1 schema) are.
 */
export const delegationPacketSchema = z
  .object({
    subtask_id: subtaskIdSchema,
    objective: validText(DELEGATION_LIMITS.objectiveChars),
    constraints: z.array(validText(DELEGATION_LIMITS.itemChars)).max(DELEGATION_LIMITS.constraints).default([]),
    /** How the planner will judge the report; at least one. */
    acceptance_criteria: z.array(validText(DELEGATION_LIMITS.itemChars)).min(1, 'give at least one acceptance criterion').max(DELEGATION_LIMITS.acceptanceCriteria),
    key_event_refs: z.array(keyEventRefSchema).max(DELEGATION_LIMITS.keyEventRefs).default([]),
    artifact_ids: z
      .array(z.string().regex(/^art_[0-9a-f]{64}$/, 'must be a full artifact id (art_ and 64 hex digits)'))
      .max(DELEGATION_LIMITS.artifactIds)
      .default([]),
    /** A pointer to the plan node this subtask implements (e.g. `sam:task:<planner session>@<version>`, `sam:event:<id>`). */
    plan_node_ref: validText(DELEGATION_LIMITS.refChars).optional(),
    /** Whether the executor may recall across the hierarchy (Annex A.5: `recall_tool_access: true`). */
    recall_tool_access: z.boolean().default(true),
  })
  .strict();
export type DelegationPacket = z.output<typeof delegationPacketSchema>;
export type DelegationPacketInput = z.input<typeof delegationPacketSchema>;

/** One provenance pointer of a finding: what the executor read and the digest of what it read. */
export const provenancePointerSchema = z
  .object({
    pointer: validText(DELEGATION_LIMITS.refChars),
    /** sha256 (hex, optionally `sha256:`-prefixed) of the excerpt or of the whole span, as a deref returned it. */
    content_digest: z.string().regex(/^(sha256:)?[0-9a-fA-F]{64}$/, 'must be a sha256 digest: 64 hex digits, optionally prefixed sha256:'),
    /** The `max_tokens` of the deref that produced `content_digest` when it was an excerpt's (default 400). */
    max_tokens: z.number().int().min(1).max(16_000).optional(),
  })
  .strict();
export type ProvenancePointer = z.output<typeof provenancePointerSchema>;

export const REPORT_STATUSES = ['done', 'partial', 'failed', 'blocked'] as const;
export type ReportStatus = (typeof REPORT_STATUSES)[number];

/** An executor's report up (§7.3 "compact report + provenance pointers"; Annex A.5 lines 7-8). */
export const delegationReportSchema = z
  .object({
    status: z.enum(REPORT_STATUSES),
    summary: validText(DELEGATION_LIMITS.summaryChars),
    key_findings: z
      .array(
        z
          .object({
            claim: validText(DELEGATION_LIMITS.itemChars),
            provenance: z.array(provenancePointerSchema).min(1, 'a finding cites at least one pointer').max(DELEGATION_LIMITS.provenancePerFinding),
          })
          .strict(),
      )
      .max(DELEGATION_LIMITS.keyFindings)
      .default([]),
  })
  .strict();
export type DelegationReport = z.output<typeof delegationReportSchema>;
export type DelegationReportInput = z.input<typeof delegationReportSchema>;

/** Who holds a session's writer lease: an agent (`agent:<id>`) or a label a full-trust library caller chose. */
export interface WriterLease {
  id: string;
  /** For messages: the agent's name or the label. */
  name: string;
}

/** A session's place in a hierarchy, as its link event records it. */
export interface HierarchyLink {
  sessionId: string;
  role: HierarchyRole;
  depth: number;
  /** Null for the planner at the root. */
  parentSessionId: string | null;
  rootSessionId: string;
  /** Null: no single writer is enforced (a full-trust caller delegated without naming an executor). */
  writer: WriterLease | null;
  /** The event that records the link (the session's lease). */
  eventId: string;
  /** Set for delegated sessions. */
  packet?: DelegationPacket;
  delegatedBy?: string;
}

/** Per pointer, what the planner found when it re-resolved it. */
export type ProvenanceCheck =
  | { pointer: string; status: 'verified'; digest: string }
  | { pointer: string; status: 'digest_mismatch'; expected: string; contentDigest: string; spanDigest: string }
  | { pointer: string; status: 'unreadable'; expected: string; code: string; reason: string };

export interface FindingCheck {
  claim: string;
  isVerified: boolean;
  pointers: ProvenanceCheck[];
}

/** A report as the planner validated it: verified only when every pointer of every finding is. */
export interface ReportValidation {
  isVerified: boolean;
  verifiedPointers: number;
  failedPointers: number;
  findings: FindingCheck[];
}

/**
 * The idempotency key of a session's link event: at most one per session (keys are unique per session), so a
 * session has one parent and one writer lease, and both backends find the lease with their key index inside
 * the append transaction.
 */
export const HIERARCHY_LINK_KEY = 'hierarchy:link';

/** Keys of the hierarchy's own events; callers' events may not use them (Engram's writers append them internally). */
export const HIERARCHY_KEY_PREFIX = 'hierarchy:';

/** The writer lease a link event's meta records, or null (none recorded, or not a link event's meta). */
export function writerLeaseOf(meta: Record<string, unknown> | undefined | null): WriterLease | null {
  const h = meta?.hierarchy as { writer?: unknown } | undefined;
  const w = h?.writer as { id?: unknown; name?: unknown } | null | undefined;
  return w && typeof w.id === 'string' && typeof w.name === 'string' ? { id: w.id, name: w.name } : null;
}
