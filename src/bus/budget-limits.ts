import { z } from 'zod';
import { EngramError } from '../errors.js';
import { invalidInputFromIssues } from './messages/field-path.js';

/**
 * The limits of the bus's "5 % rule" (Engram PAS Bus §3, LESS §6 and §13.2). Every field is a ceiling the
 * engine enforces; the seed's constant name is given for each. Defaults are the seed's example values
 * except where it names a limit without a value (noted on the field).
 */
export interface BudgetLimits {
  /** MAX_INLINE_TOKENS: tokens of one agent message as forwarded. Default 800 (§3.1, §10.1). */
  maxInlineTokens: number;
  /** MAX_ENGRAMS: engrams in one message. Default 12 (§3.1; LESS §6.1 says 10-12). */
  maxEngramsPerMessage: number;
  /** MAX_ENGRAM_CHARS: characters of one engram claim. Default 500, which is also the schema's cap (§4.1). */
  maxEngramChars: number;
  /** MAX_INLINE_CODE_CHARS: characters of code pasted into a message. Default 0: code only with a grant (§3.1). */
  maxInlineCodeChars: number;
  /** MAX_REPO_SPANS: repository spans one agent may dereference per turn. Default 3 (§3.2, §11.1). */
  maxRepoSpansPerTurn: number;
  /** MAX_ARTIFACT_SECTIONS: artifact sections dereferenced per turn. Default 2 (§3.2). */
  maxArtifactSectionsPerTurn: number;
  /** MAX_SAM_ITEMS: episodic (event store) items dereferenced per turn. Default 2 (§3.2). */
  maxSamItemsPerTurn: number;
  /** MAX_TOTAL_DEREF_TOKENS: tokens of all excerpts one agent receives per turn. Default 1200 (§3.2). */
  maxDerefTokensPerTurn: number;
  /**
   * Engrams one agent may put per minute (LESS §13.2 anti-spam). The seed names the limit without a value;
   * 30 lets an agent send two full 12-engram messages a minute with slack, and stops a runaway loop within
   * a minute.
   */
  maxEngramsPerAgentPerMinute: number;
  /** Lines of a SharedBriefMicro. Default and ceiling 30 (§10.1: "≤ 30 lines"; LESS §5.3). */
  maxSharedBriefLines: number;
  /**
   * Tokens of a SharedBriefMicro. The seed gives none; the brief travels inside a parent message, so the
   * default is half of `maxInlineTokens`, leaving the other half for budgets, grants, pointers and instructions.
   * Must not exceed `maxInlineTokens`.
   */
  maxSharedBriefTokens: number;
}

/** The seed's claim cap (§4.1 `claim.maxLength`); a configured `maxEngramChars` may only be lower. */
export const ENGRAM_CLAIM_CEILING_CHARS = 500;
/** The seed's acceptance bound for a SharedBriefMicro (§10.1); a configured `maxSharedBriefLines` may only be lower. */
export const SHARED_BRIEF_CEILING_LINES = 30;

export const DEFAULT_BUDGET_LIMITS: Readonly<BudgetLimits> = Object.freeze({
  maxInlineTokens: 800,
  maxEngramsPerMessage: 12,
  maxEngramChars: ENGRAM_CLAIM_CEILING_CHARS,
  maxInlineCodeChars: 0,
  maxRepoSpansPerTurn: 3,
  maxArtifactSectionsPerTurn: 2,
  maxSamItemsPerTurn: 2,
  maxDerefTokensPerTurn: 1200,
  maxEngramsPerAgentPerMinute: 30,
  maxSharedBriefLines: SHARED_BRIEF_CEILING_LINES,
  maxSharedBriefTokens: 400,
});

/** The seed's name for each limit, for messages that agents (which read the seed's vocabulary) see. */
export const BUDGET_LIMIT_SEED_NAMES: Readonly<Record<keyof BudgetLimits, string>> = Object.freeze({
  maxInlineTokens: 'MAX_INLINE_TOKENS',
  maxEngramsPerMessage: 'MAX_ENGRAMS',
  maxEngramChars: 'MAX_ENGRAM_CHARS',
  maxInlineCodeChars: 'MAX_INLINE_CODE_CHARS',
  maxRepoSpansPerTurn: 'MAX_REPO_SPANS',
  maxArtifactSectionsPerTurn: 'MAX_ARTIFACT_SECTIONS',
  maxSamItemsPerTurn: 'MAX_SAM_ITEMS',
  maxDerefTokensPerTurn: 'MAX_TOTAL_DEREF_TOKENS',
  maxEngramsPerAgentPerMinute: 'MAX_ENGRAMS_PER_AGENT_PER_MINUTE',
  maxSharedBriefLines: 'MAX_SHARED_BRIEF_LINES',
  maxSharedBriefTokens: 'MAX_SHARED_BRIEF_TOKENS',
});

const count = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
const atLeastOne = count.min(1);

/** Schema of a complete set of limits; cross-field rules are checked by `resolveBudgetLimits`. */
export const budgetLimitsSchema = z
  .object({
    // A zero inline budget would reject every message, including the resend it asks for.
    maxInlineTokens: atLeastOne,
    maxEngramsPerMessage: count,
    maxEngramChars: atLeastOne.max(ENGRAM_CLAIM_CEILING_CHARS),
    maxInlineCodeChars: count,
    maxRepoSpansPerTurn: count,
    maxArtifactSectionsPerTurn: count,
    maxSamItemsPerTurn: count,
    maxDerefTokensPerTurn: count,
    maxEngramsPerAgentPerMinute: count,
    maxSharedBriefLines: atLeastOne.max(SHARED_BRIEF_CEILING_LINES),
    maxSharedBriefTokens: atLeastOne,
  })
  .strict();

/** Overrides of some limits; unknown keys are rejected so a misspelt limit is not silently ignored. */
export const budgetLimitsOverridesSchema = budgetLimitsSchema.partial().strict();
export type BudgetLimitsOverrides = z.input<typeof budgetLimitsOverridesSchema>;

/**
 * The defaults with `overrides` applied, validated and frozen. Throws INVALID_INPUT naming the bad field
 * (`maxEngramChars`, or `<fieldPrefix>.maxEngramChars` when a prefix such as `budgets` is given).
 */
export function resolveBudgetLimits(overrides: unknown = {}, options: { fieldPrefix?: string } = {}): Readonly<BudgetLimits> {
  const prefix = options.fieldPrefix ?? '';
  const parsed = budgetLimitsOverridesSchema.safeParse(overrides ?? {});
  if (!parsed.success) throw invalidInputFromIssues(parsed.error.issues, prefix, 'budget limits');
  const limits: BudgetLimits = { ...DEFAULT_BUDGET_LIMITS };
  // zod's partial() output keeps keys that were present with an undefined value; they must not erase defaults.
  for (const [key, value] of Object.entries(parsed.data) as Array<[keyof BudgetLimits, number | undefined]>) {
    if (value !== undefined) limits[key] = value;
  }
  if (limits.maxSharedBriefTokens > limits.maxInlineTokens) {
    const field = prefix ? `${prefix}.maxSharedBriefTokens` : 'maxSharedBriefTokens';
    throw new EngramError(
      'INVALID_INPUT',
      `invalid budget limits: ${field}: ${limits.maxSharedBriefTokens} exceeds maxInlineTokens ${limits.maxInlineTokens}; the brief travels inside one message`,
      { field },
    );
  }
  return Object.freeze(limits);
}

/** Limits a parent may set for a child in its BUDGETS block (PAS message contract §7.2). */
export const PARENT_BUDGET_KEYS = [
  'maxInlineTokens',
  'maxEngramsPerMessage',
  'maxEngramChars',
  'maxRepoSpansPerTurn',
  'maxArtifactSectionsPerTurn',
  'maxSamItemsPerTurn',
  'maxDerefTokensPerTurn',
] as const satisfies ReadonlyArray<keyof BudgetLimits>;
export type ParentBudgetKey = (typeof PARENT_BUDGET_KEYS)[number];
export type ParentBudgets = Partial<Pick<BudgetLimits, ParentBudgetKey>>;

/**
 * The limits a child works under after its parent's BUDGETS block: each given value replaces the engine's
 * limit only when it is lower. A parent allocates attention within the engine's envelope; anything beyond it
 * takes a grant (§3.3), so a higher value is ignored here (and flagged by the message validator).
 */
export function narrowBudgetLimits(limits: Readonly<BudgetLimits>, budgets: ParentBudgets): Readonly<BudgetLimits> {
  const narrowed: BudgetLimits = { ...limits };
  for (const key of PARENT_BUDGET_KEYS) {
    const value = budgets[key];
    if (value !== undefined && value < narrowed[key]) narrowed[key] = value;
  }
  // A narrowed message budget still has to hold the brief, or no parent message could pass.
  narrowed.maxSharedBriefTokens = Math.min(narrowed.maxSharedBriefTokens, narrowed.maxInlineTokens);
  return Object.freeze(narrowed);
}

/** The per-turn dereference budgets (§3.2) that count items; `maxDerefTokensPerTurn` counts tokens of all types. */
export type DerefCountLimit = 'maxRepoSpansPerTurn' | 'maxArtifactSectionsPerTurn' | 'maxSamItemsPerTurn';

/**
 * Which per-turn count a dereference of each pointer type uses. The seed budgets three kinds of pull (§3.2);
 * `diff:` and `test:` pointers address spans of the repository, so they share its budget, and a `url:` is an
 * external document read by sections, like an artifact.
 */
export const DEREF_COUNT_LIMIT_BY_POINTER_TYPE: Readonly<Record<'repo' | 'artifact' | 'sam' | 'url' | 'test' | 'diff', DerefCountLimit>> =
  Object.freeze({
    repo: 'maxRepoSpansPerTurn',
    diff: 'maxRepoSpansPerTurn',
    test: 'maxRepoSpansPerTurn',
    artifact: 'maxArtifactSectionsPerTurn',
    url: 'maxArtifactSectionsPerTurn',
    sam: 'maxSamItemsPerTurn',
  });
