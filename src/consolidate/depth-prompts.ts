import type { SummaryDepth } from '../model/summary.js';

/**
 * What each depth of the summary DAG keeps (Lossless Context Patterns, Pattern 4): the deeper, the more it keeps
 * only what stays true. Passed as `instructions` to summarizeWithEscalation, which adds the budget and the rules
 * on identifiers.
 */
export const DEPTH_INSTRUCTIONS: Readonly<Record<SummaryDepth, string>> = {
  0: 'Summarize this working session (or one episode of it) for an engineer who will continue the work. Preserve operational detail: commands run, files changed, error messages, and each specific decision with its reason.',
  1: 'Summarize these session summaries as one arc of work. Keep the decisions and their outcomes: what was decided and why, what was tried, what worked and what failed. Drop step-by-step detail.',
  2: 'Summarize these arc summaries as one epoch of the project. Keep the architecture, the constraints and the decisions that are still in force, and say which earlier decisions were replaced and by what. Drop transient detail.',
};

/** Default token budgets of a summary's text, by depth. */
export const DEFAULT_DEPTH_BUDGETS: Readonly<Record<SummaryDepth, number>> = { 0: 400, 1: 600, 2: 800 };
