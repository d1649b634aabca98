import { EngramError } from '../../errors.js';

/**
 * Deep Memory §2: inline the whole codex (CAG) while it is under this share of the context window, else serve
 * it through recall (RAG). Configurable per call (`maxFraction`).
 */
export const DEFAULT_CAG_MAX_FRACTION = 0.7;

/** How the codex reaches the model: inlined in the prefix (`cag`) or searched on demand via recall (`rag`). */
export type CodexMode = 'cag' | 'rag';

/**
 * Why the mode was chosen: `fits` (under the threshold and the budget), `over_threshold` (at or above
 * `maxFraction` of the window), `over_budget` (under the threshold but larger than the codex block budget).
 */
export type CodexDecisionReason = 'fits' | 'over_threshold' | 'over_budget';

/** A CAG/RAG decision with the numbers behind it, for reports and `ContextPack.decisions`. */
export interface CodexDecision {
  mode: CodexMode;
  reason: CodexDecisionReason;
  /** Tokens of the codex as it would be inlined. */
  codexTokens: number;
  /** Smallest codex size, in tokens, that is at or above `maxFraction * windowTokens` (so goes to RAG). */
  thresholdTokens: number;
  /** The codex block's budget, in tokens. */
  codexBudgetTokens: number;
  windowTokens: number;
  maxFraction: number;
  /** One sentence with the numbers, for logs and the CLI. */
  explanation: string;
}

/** Options of `decideCodexMode`. */
export interface CodexModeOptions {
  /** Share of the window under which the codex may be inlined, in (0, 1]. Default `DEFAULT_CAG_MAX_FRACTION` (0.7). */
  maxFraction?: number;
  /** The codex block's hard budget, in tokens; an inlined codex must fit it. */
  codexBudgetTokens: number;
}

/**
 * Chooses CAG when `codexTokens < maxFraction * windowTokens` and `codexTokens <= codexBudgetTokens`, else RAG.
 * The threshold comparison is strict, as in Deep Memory §2 ("if tokens < context_window * 0.7"): a codex of
 * exactly 70 % of the window goes to RAG.
 * @throws EngramError `INVALID_INPUT` naming the field for a negative count, a non-positive window or a
 *   fraction outside (0, 1].
 */
export function decideCodexMode(codexTokens: number, windowTokens: number, options: CodexModeOptions): CodexDecision {
  const maxFraction = options.maxFraction ?? DEFAULT_CAG_MAX_FRACTION;
  requireInteger(codexTokens, 'codexTokens', 0);
  requireInteger(windowTokens, 'windowTokens', 1);
  requireInteger(options.codexBudgetTokens, 'codexBudgetTokens', 0);
  if (!Number.isFinite(maxFraction) || maxFraction <= 0 || maxFraction > 1) {
    throw new EngramError('INVALID_INPUT', `maxFraction: must be in (0, 1], got ${String(maxFraction)}`, { field: 'maxFraction' });
  }
  // 0.7 * W is not exact in binary floating point (0.7 * 128000 = 89599.99999999999 in some orders of
  // evaluation); round away that noise before taking the ceiling so that "exactly 70 %" is decided as RAG.
  const thresholdTokens = Math.ceil(Math.round(maxFraction * windowTokens * 1e6) / 1e6);
  const base = { codexTokens, thresholdTokens, codexBudgetTokens: options.codexBudgetTokens, windowTokens, maxFraction };
  const pct = `${Math.round(maxFraction * 100)} % of the ${windowTokens}-token window`;
  if (codexTokens >= thresholdTokens) {
    return {
      ...base,
      mode: 'rag',
      reason: 'over_threshold',
      explanation: `codex of ${codexTokens} tokens is at or above ${thresholdTokens} tokens (${pct}): served by recall`,
    };
  }
  if (codexTokens > options.codexBudgetTokens) {
    return {
      ...base,
      mode: 'rag',
      reason: 'over_budget',
      explanation: `codex of ${codexTokens} tokens is under ${pct} but over its ${options.codexBudgetTokens}-token budget: served by recall`,
    };
  }
  return {
    ...base,
    mode: 'cag',
    reason: 'fits',
    explanation: `codex of ${codexTokens} tokens is under ${thresholdTokens} tokens (${pct}) and its ${options.codexBudgetTokens}-token budget: inlined`,
  };
}

function requireInteger(value: number, field: string, min: number): void {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new EngramError('INVALID_INPUT', `${field}: must be an integer >= ${min}, got ${String(value)}`, { field });
  }
}
