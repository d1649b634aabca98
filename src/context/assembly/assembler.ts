import { EngramError } from '../../errors.js';
import type { Tokenizer } from '../../providers/tokenizer.js';
import { DEFAULT_BLOCK_ORDER, defaultBudgets, validateBlockOrder, validateBudgets } from './blocks.js';
import type { BlockKind, PackBudgets } from './blocks.js';
import { DEFAULT_CAG_MAX_FRACTION, decideCodexMode } from './cag-rag.js';
import type { CodexDecision } from './cag-rag.js';
import { HISTORY_ROLES } from './context-pack.js';
import type { AssembleOptions, CodexDocument, ContextPack, HistoryItem, KarmaItem, PackBlock, PackDecisions, PackHistoryItem, PackInput } from './context-pack.js';
import { isPlainObject, renderTaskState } from './task-state-yaml.js';

/**
 * Builds a pack: each block fitted to its hard budget with the real tokenizer.
 * - `identity`, `task_state`, `query`: never cut; over budget is an error.
 * - `codex`: inlined whole when `decideCodexMode` says CAG, else an index of the documents for recall (RAG).
 * - `karma`: sorted by `verifiedAt` then `id` (stable across turns; a new promotion appends), dropped from the end.
 * - `markers`: the newest that fit.
 * - `history`: the newest whole items that fit; if the newest alone does not fit, its text is cut with an
 *   explicit `[…truncated N tokens…]` notice (never silently).
 * Pure and deterministic: the same input and options give a byte-identical pack.
 * @throws EngramError `INVALID_INPUT` naming the field for malformed input or options; `BUDGET_EXCEEDED` when the
 *   budgets break the pack bound, or identity / task state / query exceed their budget (`data.field` names which).
 */
export function assemblePack(input: PackInput, options: AssembleOptions): ContextPack {
  const { tokenizer, windowTokens } = options;
  const order = validateBlockOrder(options.order ?? DEFAULT_BLOCK_ORDER);
  const budgets = options.budgets ?? defaultBudgets(windowTokens);
  validateBudgets(budgets, windowTokens);
  validateInput(input);

  const fitted = new Map<BlockKind, PackBlock>();
  fitted.set('identity', fitWhole('identity', 'identity', input.identity, budgets.identity, tokenizer));
  const taskStateText = input.taskState === undefined ? '' : typeof input.taskState === 'string' ? input.taskState : renderTaskState(input.taskState);
  fitted.set('task_state', fitWhole('task_state', 'taskState', taskStateText, budgets.task_state, tokenizer));
  fitted.set('query', fitWhole('query', 'query', input.query, budgets.query, tokenizer));

  const codex = fitCodex(input.codex ?? [], budgets.codex, windowTokens, options.maxCodexFraction ?? DEFAULT_CAG_MAX_FRACTION, tokenizer);
  fitted.set('codex', codex.block);

  const karmaLines = sortKarma(input.karma ?? []).map(renderKarmaItem);
  const karma = fitRun(karmaLines, budgets.karma, tokenizer, 'start');
  fitted.set('karma', block('karma', karma.text, karma.tokens, budgets.karma, karma.kept, karmaLines.length - karma.kept));

  const markerTexts = input.markers ?? [];
  const markers = fitRun(markerTexts, budgets.markers, tokenizer, 'end');
  fitted.set('markers', block('markers', markers.text, markers.tokens, budgets.markers, markers.kept, markerTexts.length - markers.kept));

  const history = fitHistory(input.history ?? [], budgets.history, tokenizer);
  fitted.set('history', history.block);

  const blocks = order.map((kind) => fitted.get(kind) as PackBlock);
  const totalTokens = blocks.reduce((sum, b) => sum + b.tokens, 0);
  if (totalTokens + budgets.headroomTokens > windowTokens) {
    // Unreachable while every block respects its budget and validateBudgets passed.
    throw new EngramError('INTERNAL', `pack of ${totalTokens} tokens + headroom exceeds the ${windowTokens}-token window`, {
      totalTokens,
      windowTokens,
    });
  }
  return {
    blocks,
    history: history.items,
    totalTokens,
    windowTokens,
    headroomTokens: budgets.headroomTokens,
    tokenizer: tokenizer.name,
    decisions: {
      order: [...order],
      budgets: { ...budgets },
      codex: codex.decision,
      truncatedNewest: history.truncatedNewest,
      droppedPinnedHistoryIds: history.droppedPinnedIds,
    },
  };
}

/** Renders a history item as one entry of the history block: `[T12 tool grep #call_1] text`. */
export function renderHistoryItem(item: HistoryItem): string {
  return `${historyLabel(item)} ${item.text}`;
}

/**
 * Tokens the karma block takes with all of `items`: the larger of the assembler's per-fact estimate (each fact
 * plus a separator, which decides what `fitRun` keeps) and the count of the joined block, so a budget of this
 * size holds every fact.
 */
export function karmaBlockTokens(items: readonly KarmaItem[], tokenizer: Tokenizer): number {
  if (items.length === 0) return 0;
  const lines = sortKarma(items).map(renderKarmaItem);
  const estimate = lines.reduce((sum, line) => sum + tokenizer.count(line), 0) + (lines.length - 1) * tokenizer.count(SEPARATOR);
  return Math.max(estimate, tokenizer.count(lines.join(SEPARATOR)));
}

/** Renders a codex document for the codex block (CAG). */
export function renderCodexDocument(doc: CodexDocument): string {
  return `<document id="${escapeAttribute(doc.id)}" title="${escapeAttribute(doc.title)}">\n${doc.text}\n</document>`;
}

/** Renders a karma fact as a list entry: `- [id] text`, continuation lines indented by two spaces. */
export function renderKarmaItem(item: KarmaItem): string {
  return `- [${item.id}] ${item.text.replace(/\n/g, '\n  ')}`;
}

/** True for an assistant item that is a tool call (has a `toolCallId`). */
export function isToolCall(item: HistoryItem): boolean {
  return item.role === 'assistant' && item.toolCallId !== undefined;
}

// ---------------------------------------------------------------------------------------------------------

function block(kind: BlockKind, text: string, tokens: number, budget: number, items: number, droppedItems: number): PackBlock {
  return { kind, text, tokens, budget, items, droppedItems };
}

/** Identity, task state and query: placed whole or refused, never cut. */
function fitWhole(kind: BlockKind, field: string, text: string, budget: number, tokenizer: Tokenizer): PackBlock {
  const tokens = tokenizer.count(text);
  if (tokens > budget) {
    throw new EngramError('BUDGET_EXCEEDED', `${field}: ${tokens} tokens exceed its ${budget}-token budget; it is never cut`, {
      field,
      block: kind,
      tokens,
      budgetTokens: budget,
    });
  }
  return block(kind, text, tokens, budget, text === '' ? 0 : 1, 0);
}

/** Joins the items of a block (history entries, markers, karma facts). */
export const HISTORY_SEPARATOR = '\n';
const SEPARATOR = HISTORY_SEPARATOR;

/**
 * Keeps the longest contiguous run of `lines`, anchored at the start or the end, whose joined text fits
 * `budget` tokens. Counts per line first (cheap, an upper bound in practice since BPE merges rarely cross a
 * newline), then verifies the joined text exactly and drops more while it is over.
 */
function fitRun(
  lines: readonly string[],
  budget: number,
  tokenizer: Tokenizer,
  anchor: 'start' | 'end',
): { kept: number; text: string; tokens: number } {
  const at = (i: number): string => lines[anchor === 'start' ? i : lines.length - 1 - i] as string;
  const sepTokens = tokenizer.count(SEPARATOR);
  let kept = 0;
  let estimate = 0;
  while (kept < lines.length) {
    const add = tokenizer.count(at(kept)) + (kept > 0 ? sepTokens : 0);
    if (estimate + add > budget) break;
    estimate += add;
    kept++;
  }
  const join = (k: number): string => (anchor === 'start' ? lines.slice(0, k) : lines.slice(lines.length - k)).join(SEPARATOR);
  let text = join(kept);
  let tokens = tokenizer.count(text);
  while (tokens > budget && kept > 0) {
    kept--;
    text = join(kept);
    tokens = tokenizer.count(text);
  }
  return { kept, text, tokens };
}

function fitCodex(
  docs: readonly CodexDocument[],
  budget: number,
  windowTokens: number,
  maxFraction: number,
  tokenizer: Tokenizer,
): { block: PackBlock; decision: CodexDecision } {
  const rendered = docs.map(renderCodexDocument).join(SEPARATOR);
  const codexTokens = tokenizer.count(rendered);
  const decision = decideCodexMode(codexTokens, windowTokens, { maxFraction, codexBudgetTokens: budget });
  if (decision.mode === 'cag') {
    return { block: block('codex', rendered, codexTokens, budget, docs.length, 0), decision };
  }
  // RAG: the documents stay out of the window; list them so the model knows what recall can reach.
  const lines = [RAG_INDEX_HEADER, ...docs.map((d) => `- ${d.id}: ${d.title.replace(/\n/g, ' ')}`)];
  const fit = fitRun(lines, budget, tokenizer, 'start');
  const listed = Math.max(0, fit.kept - 1);
  return { block: block('codex', fit.text, fit.tokens, budget, listed, docs.length - listed), decision };
}

const RAG_INDEX_HEADER = 'These documents are too large to include here; search them with the recall tool:';

function fitHistory(
  items: readonly HistoryItem[],
  budget: number,
  tokenizer: Tokenizer,
): {
  block: PackBlock;
  items: PackHistoryItem[];
  truncatedNewest: PackDecisions['truncatedNewest'];
  droppedPinnedIds: string[];
} {
  const lines = items.map(renderHistoryItem);
  const fit = fitRun(lines, budget, tokenizer, 'end');
  let kept: PackHistoryItem[] = items.slice(items.length - fit.kept);
  let text = fit.text;
  let tokens = fit.tokens;
  let truncatedNewest: PackDecisions['truncatedNewest'] = null;
  const newest = items[items.length - 1];
  if (fit.kept === 0 && newest !== undefined) {
    const cut = truncateNewest(newest, budget, tokenizer);
    if (cut) {
      kept = [cut.item];
      text = cut.text;
      tokens = cut.tokens;
      truncatedNewest = { id: newest.id, droppedTokens: cut.item.truncatedTokens ?? 0 };
    }
  }
  const firstKept = items.length - kept.length;
  const droppedPinnedIds = items.slice(0, firstKept).filter((i) => i.isPinned === true).map((i) => i.id);
  return {
    block: block('history', text, tokens, budget, kept.length, firstKept),
    items: kept,
    truncatedNewest,
    droppedPinnedIds,
  };
}

/**
 * Cuts the newest item's text to fit the budget, keeping its head and ending with `[…truncated N tokens…]`.
 * Returns undefined when not even the label and the notice fit (a budget of a few tokens).
 */
function truncateNewest(
  item: HistoryItem,
  budget: number,
  tokenizer: Tokenizer,
): { item: PackHistoryItem; text: string; tokens: number } | undefined {
  const fullTokens = tokenizer.count(item.text);
  const overhead = tokenizer.count(`${historyLabel(item)} \n`) + tokenizer.count(truncationNotice(fullTokens));
  let allowance = Math.max(0, budget - overhead);
  for (;;) {
    const head = tokenizer.truncate(item.text, allowance);
    const droppedTokens = fullTokens - tokenizer.count(head);
    const notice = truncationNotice(droppedTokens);
    const cutItem: PackHistoryItem = { ...item, text: head === '' ? notice : `${head}\n${notice}`, truncatedTokens: droppedTokens };
    const text = renderHistoryItem(cutItem);
    const tokens = tokenizer.count(text);
    if (tokens <= budget) return { item: cutItem, text, tokens };
    if (allowance === 0) return undefined;
    allowance = Math.max(0, allowance - Math.max(1, tokens - budget));
  }
}

function truncationNotice(droppedTokens: number): string {
  return `[…truncated ${droppedTokens} tokens…]`;
}

function historyLabel(item: HistoryItem): string {
  const parts = [`T${item.turn}`, item.role];
  if (isToolCall(item)) parts.push('tool_call');
  if (item.toolName !== undefined) parts.push(item.toolName);
  if (item.toolCallId !== undefined) parts.push(`#${item.toolCallId}`);
  return `[${parts.join(' ')}]`;
}

function sortKarma(items: readonly KarmaItem[]): KarmaItem[] {
  // Code-unit comparison, not localeCompare: the order must not depend on the machine's locale.
  return items
    .map((item) => ({ item, ms: toMs(item.verifiedAt) }))
    .sort((a, b) => a.ms - b.ms || (a.item.id < b.item.id ? -1 : a.item.id > b.item.id ? 1 : 0))
    .map((x) => x.item);
}

function toMs(ts: string | number): number {
  return typeof ts === 'number' ? ts : Date.parse(ts);
}

function escapeAttribute(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/\n/g, ' ');
}

// --- input validation --------------------------------------------------------------------------------------

function validateInput(input: PackInput): void {
  requireString(input.identity, 'identity');
  requireString(input.query, 'query');
  if (input.taskState !== undefined && typeof input.taskState !== 'string' && !isPlainObject(input.taskState)) {
    throw invalid('taskState', 'must be a string or a plain object');
  }
  const codexIds = new Set<string>();
  for (const [i, doc] of (input.codex ?? []).entries()) {
    requireString(doc?.id, `codex[${i}].id`);
    requireString(doc.title, `codex[${i}].title`);
    requireString(doc.text, `codex[${i}].text`);
    if (codexIds.has(doc.id)) throw invalid(`codex[${i}].id`, `duplicate document id ${JSON.stringify(doc.id)}`);
    codexIds.add(doc.id);
  }
  const karmaIds = new Set<string>();
  for (const [i, item] of (input.karma ?? []).entries()) {
    requireString(item?.id, `karma[${i}].id`);
    requireString(item.text, `karma[${i}].text`);
    if (!Number.isFinite(toMs(item.verifiedAt))) throw invalid(`karma[${i}].verifiedAt`, 'must be epoch milliseconds or ISO-8601');
    if (karmaIds.has(item.id)) throw invalid(`karma[${i}].id`, `duplicate karma id ${JSON.stringify(item.id)}`);
    karmaIds.add(item.id);
  }
  for (const [i, marker] of (input.markers ?? []).entries()) requireString(marker, `markers[${i}]`);
  let lastTurn = -Infinity;
  for (const [i, item] of (input.history ?? []).entries()) {
    requireString(item?.id, `history[${i}].id`);
    requireString(item.text, `history[${i}].text`);
    if (!(HISTORY_ROLES as readonly string[]).includes(item.role)) {
      throw invalid(`history[${i}].role`, `must be one of ${HISTORY_ROLES.join(', ')}`);
    }
    if (!Number.isSafeInteger(item.turn) || item.turn < 0) throw invalid(`history[${i}].turn`, 'must be a non-negative integer');
    if (item.turn < lastTurn) throw invalid(`history[${i}].turn`, `turn ${item.turn} comes after turn ${lastTurn}; give history oldest first`);
    lastTurn = item.turn;
    if (typeof item.ts !== 'number' && typeof item.ts !== 'string') throw invalid(`history[${i}].ts`, 'must be epoch milliseconds or ISO-8601');
    if (item.toolName !== undefined) requireString(item.toolName, `history[${i}].toolName`);
    if (item.toolCallId !== undefined) requireString(item.toolCallId, `history[${i}].toolCallId`);
  }
}

function requireString(value: unknown, field: string): void {
  if (typeof value !== 'string') throw invalid(field, 'must be a string');
}

function invalid(field: string, problem: string): EngramError {
  return new EngramError('INVALID_INPUT', `${field}: ${problem}`, { field });
}
