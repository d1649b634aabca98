import { z } from 'zod';
import { agentRoleSchema } from '../../model/agent.js';
import type { ParentBudgetKey, ParentBudgets } from '../budget-limits.js';
import { engramSchema, type EngramClaim } from '../../model/engram.js';
import { pointerSchema, type Pointer } from '../../model/pointer.js';

/**
 * The PAS message contracts (Engram PAS Bus §7; LESS §7): what a child sends its parent and what a parent
 * broadcasts to a child. Section names are the seed's (`ROLE`, `ENGRAMS`, ...) on the wire, in YAML or JSON;
 * parsed messages use camelCase fields. The schemas check structure only; sizes (inline tokens, number of
 * engrams, claim length, pasted code, brief lines) are budgets checked by `validateAgentMessage`, so that an
 * oversized message gets a resend instruction rather than a schema error.
 */

export const AGENT_MESSAGE_DIRECTIONS = ['child-to-parent', 'parent-to-child'] as const;
export type AgentMessageDirection = (typeof AGENT_MESSAGE_DIRECTIONS)[number];

/** Sections of a child's message, in the seed's order (§7.1). */
export const CHILD_TO_PARENT_SECTIONS = ['ROLE', 'TASK_STATUS', 'ENGRAMS', 'POINTER_PACK', 'DEREF_REQUESTS', 'OUTPUT'] as const;
/** Sections of a parent's message, in the seed's order (§7.2). */
export const PARENT_TO_CHILD_SECTIONS = ['ROLE', 'SHARED_BRIEF_MICRO', 'BUDGETS', 'GRANTS', 'TARGET_POINTER_PACK', 'INSTRUCTIONS'] as const;

/** Longest TASK_STATUS, in characters: a status word or a short phrase, not a report. */
export const MAX_TASK_STATUS_CHARS = 200;
/** Longest grant token, in characters. */
export const MAX_BUDGET_TOKEN_CHARS = 200;

/** BUDGETS keys on the wire: the seed's constant names in lower case (§3, §7.2). */
export const PARENT_BUDGET_WIRE_KEYS = Object.freeze({
  maxInlineTokens: 'max_inline_tokens',
  maxEngramsPerMessage: 'max_engrams',
  maxEngramChars: 'max_engram_chars',
  maxRepoSpansPerTurn: 'max_repo_spans',
  maxArtifactSectionsPerTurn: 'max_artifact_sections',
  maxSamItemsPerTurn: 'max_sam_items',
  maxDerefTokensPerTurn: 'max_total_deref_tokens',
} as const satisfies Record<ParentBudgetKey, string>);
export type ParentBudgetWireKey = (typeof PARENT_BUDGET_WIRE_KEYS)[ParentBudgetKey];

const hasNoNul = (v: string) => !v.includes('\u0000');
const text = z.string().min(1).refine(hasNoNul, 'must not contain a NUL character');
const singleLine = (max?: number) =>
  (max === undefined ? z.string().min(1) : z.string().min(1).max(max)).refine((v) => !/[\r\n\u0000]/.test(v), 'must be one line');
// A YAML section written with nothing after its colon is null; an empty list is what the sender meant.
const list = <T extends z.ZodType>(item: T) =>
  z
    .array(item)
    .nullish()
    .transform((v) => v ?? []);

/**
 * An engram as a child sends it (§7.1): the stored engram without `id` and `provenance`, which the engine
 * assigns (the authenticated agent, the time of receipt). The claim has no length cap here: its cap is the
 * `maxEngramChars` budget, reported with a resend instruction.
 */
export const messageEngramSchema = engramSchema.omit({ id: true, provenance: true }).extend({ claim: text });
export type MessageEngram = Omit<EngramClaim, 'id' | 'provenance'>;

const derefRequestSchema = z.object({ pointer: pointerSchema, reason: text }).strict();

const outputSchema = z.object({ summary: text, next: text.optional() }).strict();

/** A child's message on the wire (§7.1). Only ROLE, TASK_STATUS and OUTPUT are required; lists default to empty. */
export const childToParentWireSchema = z
  .object({
    ROLE: agentRoleSchema,
    TASK_STATUS: singleLine(MAX_TASK_STATUS_CHARS),
    ENGRAMS: list(messageEngramSchema),
    POINTER_PACK: list(pointerSchema),
    DEREF_REQUESTS: list(derefRequestSchema),
    OUTPUT: outputSchema,
  })
  .strict();

const budgetCount = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER).optional();
const budgetsWireSchema = z
  .object({
    max_inline_tokens: budgetCount,
    max_engrams: budgetCount,
    max_engram_chars: budgetCount,
    max_repo_spans: budgetCount,
    max_artifact_sections: budgetCount,
    max_sam_items: budgetCount,
    max_total_deref_tokens: budgetCount,
  } satisfies Record<ParentBudgetWireKey, typeof budgetCount>)
  .strict()
  .nullish();

const grantSchema = z
  .object({
    budget_token: singleLine(MAX_BUDGET_TOKEN_CHARS),
    pointer: pointerSchema,
    cap_tokens: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
  })
  .strict();

/** A parent's message on the wire (§7.2). Only ROLE is required; a brief line is one line of text. */
export const parentToChildWireSchema = z
  .object({
    ROLE: agentRoleSchema,
    SHARED_BRIEF_MICRO: list(singleLine()),
    BUDGETS: budgetsWireSchema,
    GRANTS: list(grantSchema),
    TARGET_POINTER_PACK: list(pointerSchema),
    INSTRUCTIONS: list(text),
  })
  .strict();

/** A request to dereference a pointer, with the reason the parent weighs when granting (§7.1). */
export interface DerefRequest {
  pointer: Pointer;
  reason: string;
}

/** A deref grant a parent passes down (§7.2): the token `issue_grant` returned, its pointer and token cap. */
export interface MessageGrant {
  budgetToken: string;
  pointer: Pointer;
  capTokens: number;
}

/** What a child reports (§7.1): tiny engrams and pointers instead of pasted context. */
export interface ChildToParentMessage {
  direction: 'child-to-parent';
  /** The sender's role (`programmer`). */
  role: string;
  taskStatus: string;
  engrams: MessageEngram[];
  pointerPack: Pointer[];
  derefRequests: DerefRequest[];
  output: { summary: string; next?: string };
}

/** What a parent broadcasts to one child (§7.2): the brief, budgets, grants and a role-targeted pointer pack. */
export interface ParentToChildMessage {
  direction: 'parent-to-child';
  /** The recipient's role. */
  role: string;
  /** One line per item; at most `maxSharedBriefLines` (30) lines. */
  sharedBriefMicro: string[];
  /** Limits the parent sets for the child; they can only lower the engine's limits (`narrowBudgetLimits`). */
  budgets: ParentBudgets;
  grants: MessageGrant[];
  targetPointerPack: Pointer[];
  instructions: string[];
}

export type AgentMessage = ChildToParentMessage | ParentToChildMessage;

type ChildWire = z.output<typeof childToParentWireSchema>;
type ParentWire = z.output<typeof parentToChildWireSchema>;

/** The typed message from a wire object that passed `childToParentWireSchema`. */
export function childFromWire(wire: ChildWire): ChildToParentMessage {
  return {
    direction: 'child-to-parent',
    role: wire.ROLE,
    taskStatus: wire.TASK_STATUS,
    engrams: wire.ENGRAMS,
    pointerPack: wire.POINTER_PACK,
    derefRequests: wire.DEREF_REQUESTS,
    output: wire.OUTPUT.next === undefined ? { summary: wire.OUTPUT.summary } : { summary: wire.OUTPUT.summary, next: wire.OUTPUT.next },
  };
}

/** The typed message from a wire object that passed `parentToChildWireSchema`. */
export function parentFromWire(wire: ParentWire): ParentToChildMessage {
  const budgets: ParentBudgets = {};
  for (const [key, wireKey] of Object.entries(PARENT_BUDGET_WIRE_KEYS) as Array<[ParentBudgetKey, ParentBudgetWireKey]>) {
    const value = wire.BUDGETS?.[wireKey];
    if (value !== undefined) budgets[key] = value;
  }
  return {
    direction: 'parent-to-child',
    role: wire.ROLE,
    sharedBriefMicro: wire.SHARED_BRIEF_MICRO,
    budgets,
    grants: wire.GRANTS.map((g) => ({ budgetToken: g.budget_token, pointer: g.pointer, capTokens: g.cap_tokens })),
    targetPointerPack: wire.TARGET_POINTER_PACK,
    instructions: wire.INSTRUCTIONS,
  };
}

/**
 * The wire object of a message, sections in the seed's order; empty optional sections are left out. Fields
 * inside engrams and pointers keep their given order.
 */
export function toWire(message: AgentMessage): Record<string, unknown> {
  if (message.direction === 'child-to-parent') {
    const wire: Record<string, unknown> = { ROLE: message.role, TASK_STATUS: message.taskStatus };
    if (message.engrams.length > 0) wire.ENGRAMS = message.engrams;
    if (message.pointerPack.length > 0) wire.POINTER_PACK = message.pointerPack;
    if (message.derefRequests.length > 0) wire.DEREF_REQUESTS = message.derefRequests.map((r) => ({ pointer: r.pointer, reason: r.reason }));
    wire.OUTPUT = message.output;
    return wire;
  }
  const wire: Record<string, unknown> = { ROLE: message.role };
  if (message.sharedBriefMicro.length > 0) wire.SHARED_BRIEF_MICRO = message.sharedBriefMicro;
  const budgets: Record<string, number> = {};
  for (const [key, wireKey] of Object.entries(PARENT_BUDGET_WIRE_KEYS) as Array<[ParentBudgetKey, ParentBudgetWireKey]>) {
    const value = message.budgets[key];
    if (value !== undefined) budgets[wireKey] = value;
  }
  if (Object.keys(budgets).length > 0) wire.BUDGETS = budgets;
  if (message.grants.length > 0) {
    wire.GRANTS = message.grants.map((g) => ({ budget_token: g.budgetToken, pointer: g.pointer, cap_tokens: g.capTokens }));
  }
  if (message.targetPointerPack.length > 0) wire.TARGET_POINTER_PACK = message.targetPointerPack;
  if (message.instructions.length > 0) wire.INSTRUCTIONS = message.instructions;
  return wire;
}
