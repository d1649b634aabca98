/**
 * The baselines' context window, simulated on the same turns Engram ingests (ENGRAM §10.1, Annex A.8):
 * - `truncation`: at each trigger the oldest 60 % of the window's tokens are dropped;
 * - `narrative`: the oldest 60 % are replaced by one summary (earlier summaries included, so summaries of
 *   summaries compound), nothing else is kept;
 * - `dag` (what lossless-claw does by default): the oldest 60 % of the raw messages become a leaf summary
 *   placed after the earlier summaries; four summaries of one depth condense into one of the next depth;
 *   the raw messages are kept, but reachable only by keyword grep ({@link SimulatedWindow.grep}).
 * A trigger is the window holding more than `budgetTokens` after a turn; the policy runs until it fits,
 * each run counting as one compaction cycle.
 */
import { EngramError } from '../../errors.js';
import type { Tokenizer } from '../../providers/tokenizer.js';
import type { TraceEvent } from './needle-types.js';
import type { Summarizer } from './summarizer.js';

export const SIM_POLICIES = ['truncation', 'narrative', 'dag'] as const;
export type SimPolicy = (typeof SIM_POLICIES)[number];

/** Share of the window each trigger compacts (the paper's baselines, §10A.1). */
export const COMPACTED_SHARE = 0.6;
/** A leaf summary may use this share of the tokens it replaces (10:1, a typical narrative compaction). */
export const LEAF_SUMMARY_RATIO = 0.1;
/** A condensed summary may use this share of the summaries it replaces (lossless-claw: ~1.5-2K for several leaves). */
export const CONDENSED_SUMMARY_RATIO = 0.25;
export const MIN_SUMMARY_TOKENS = 256;
/** Summaries of one depth that condense into one of the next (lossless-claw's fanout, reduced for short traces). */
export const DAG_FANOUT = 4;
/** The newest raw items the DAG never summarizes (a fresh tail, as lossless-claw keeps one). */
const DAG_FRESH_TAIL_ITEMS = 4;
/** lcm_grep's defaults: at most 50 matching messages, a 200-character snippet each. */
const GREP_MAX_MATCHES = 50;
const GREP_SNIPPET_CHARS = 200;
/** Compactions one turn may trigger before the simulation is considered broken. */
const MAX_COMPACTIONS_PER_TURN = 20;

interface SimItem {
  /** `event` for a raw message, `summary` for a summary (with its depth). */
  type: 'event' | 'summary';
  text: string;
  tokens: number;
  depth: number;
}

export interface SimulatedWindowOptions {
  budgetTokens: number;
  tokenizer: Tokenizer;
  /** Required by `narrative` and `dag`. */
  summarizer?: Summarizer;
}

/** How a raw event reads in a baseline's window (the same facts as Engram's history rendering). */
export function renderSimEvent(e: TraceEvent['event']): string {
  return `[${e.kind}${e.toolName ? ` ${e.toolName}` : ''}] ${e.content}`;
}

export class SimulatedWindow {
  private items: SimItem[] = [];
  /** Every raw message ever appended, oldest first: the DAG's store (unused by the other policies). */
  private readonly raw: Array<{ label: string; text: string }> = [];
  private total = 0;
  /** Compaction cycles so far. */
  compactions = 0;

  constructor(
    readonly policy: SimPolicy,
    private readonly options: SimulatedWindowOptions,
  ) {
    if (policy !== 'truncation' && !options.summarizer) throw new EngramError('INVALID_INPUT', `summarizer: the ${policy} policy needs one`, { field: 'summarizer' });
  }

  /** Appends one turn's events, then compacts while the window is over budget. Returns the cycles this turn ran. */
  async append(events: readonly TraceEvent[]): Promise<number> {
    for (const e of events) {
      const text = renderSimEvent(e.event);
      this.push({ type: 'event', text, tokens: this.options.tokenizer.count(text), depth: 0 });
      if (this.policy === 'dag') this.raw.push({ label: e.label, text });
    }
    let cycles = 0;
    while (this.total > this.options.budgetTokens) {
      if (++cycles > MAX_COMPACTIONS_PER_TURN) throw new EngramError('INTERNAL', `${this.policy}: ${MAX_COMPACTIONS_PER_TURN} compactions in one turn did not fit the window`);
      // Nothing left to compact (the newest item alone overflows): the window stays over budget this turn.
      if (!(await this.compactOnce())) return cycles - 1;
      this.compactions++;
    }
    return cycles;
  }

  /** Tokens in the window now. */
  get tokens(): number {
    return this.total;
  }

  /** The window as the model reads it, oldest first. */
  text(): string {
    return this.items.map((i) => i.text).join('\n');
  }

  /**
   * lcm_grep in its default mode: a case-insensitive search for `keyword` over every raw message, newest
   * first, at most 50 matches of a 200-character snippet around the first occurrence, cut to `budgetTokens`.
   */
  grep(keyword: string, budgetTokens: number): string {
    const needle = keyword.toLowerCase();
    const header = `grep "${keyword}":`;
    const lines = [header];
    let used = this.options.tokenizer.count(header);
    let matches = 0;
    for (let i = this.raw.length - 1; i >= 0 && matches < GREP_MAX_MATCHES; i--) {
      const { label, text } = this.raw[i]!;
      const at = text.toLowerCase().indexOf(needle);
      if (at < 0) continue;
      matches++;
      const from = Math.max(0, at - GREP_SNIPPET_CHARS / 2);
      const line = `- [${label}] ${text.slice(from, from + GREP_SNIPPET_CHARS).replace(/\n/g, ' ')}`;
      const cost = this.options.tokenizer.count(line) + 1;
      if (used + cost > budgetTokens) break;
      lines.push(line);
      used += cost;
    }
    if (matches === 0) lines.push('No matches found.');
    return lines.join('\n');
  }

  private push(item: SimItem): void {
    this.items.push(item);
    this.total += item.tokens;
  }

  private replace(start: number, count: number, replacement: SimItem[]): void {
    const removed = this.items.splice(start, count, ...replacement);
    this.total += replacement.reduce((s, i) => s + i.tokens, 0) - removed.reduce((s, i) => s + i.tokens, 0);
  }

  /** The first `n` items from `start` whose tokens reach `share` of the window (at least one). */
  private oldestShare(start: number, end: number, targetTokens: number): number {
    let n = 0;
    let sum = 0;
    while (start + n < end && (n === 0 || sum < targetTokens)) sum += this.items[start + n++]!.tokens;
    return n;
  }

  /** One compaction; false when there was nothing the policy could compact. */
  private async compactOnce(): Promise<boolean> {
    const target = this.total * COMPACTED_SHARE;
    // The newest item is what the model is answering: it stays unless it is all there is.
    const end = this.items.length > 1 ? this.items.length - 1 : this.items.length;
    if (this.policy === 'truncation') {
      this.replace(0, this.oldestShare(0, end, target), []);
      return true;
    }
    if (this.policy === 'narrative') {
      const n = this.oldestShare(0, end, target);
      if (n === 1 && this.items[0]!.type === 'summary') return false;
      this.replace(0, n, [await this.summarize(this.items.slice(0, n), 0, LEAF_SUMMARY_RATIO)]);
      return true;
    }
    // dag: summaries first, then raw messages; a leaf pass over the oldest raw ones, then condensation.
    const firstRaw = this.items.findIndex((i) => i.type === 'event');
    const lastEligible = this.items.length - DAG_FRESH_TAIL_ITEMS;
    if (firstRaw >= 0 && firstRaw < lastEligible) {
      const n = this.oldestShare(firstRaw, lastEligible, target);
      this.replace(firstRaw, n, [await this.summarize(this.items.slice(firstRaw, firstRaw + n), 0, LEAF_SUMMARY_RATIO)]);
    } else {
      // Only summaries and the fresh tail are left: condense all summaries at once so the window shrinks.
      const summaries = this.items.filter((i) => i.type === 'summary').length;
      if (summaries === 0) {
        // The fresh tail alone overflows: its oldest message has to go, as in any window.
        this.replace(0, 1, []);
        return true;
      }
      if (summaries === 1) return false;
      const depth = Math.max(...this.items.filter((i) => i.type === 'summary').map((i) => i.depth)) + 1;
      this.replace(0, summaries, [await this.summarize(this.items.slice(0, summaries), depth, CONDENSED_SUMMARY_RATIO)]);
    }
    await this.condense();
    return true;
  }

  /** Condenses the oldest DAG_FANOUT summaries of one depth while there are that many. */
  private async condense(): Promise<void> {
    for (;;) {
      const summaries = this.items.flatMap((item, index) => (item.type === 'summary' ? [{ item, index }] : []));
      const byDepth = new Map<number, number[]>();
      for (const s of summaries) byDepth.set(s.item.depth, [...(byDepth.get(s.item.depth) ?? []), s.index]);
      const full = [...byDepth.entries()].filter(([, idx]) => idx.length >= DAG_FANOUT).sort((a, b) => a[0] - b[0])[0];
      if (!full) return;
      const [depth, indexes] = full;
      const take = indexes.slice(0, DAG_FANOUT);
      const merged = await this.summarize(take.map((i) => this.items[i]!), depth + 1, CONDENSED_SUMMARY_RATIO);
      // Summaries are contiguous at the front, oldest depth first, so the taken ones are adjacent.
      this.replace(take[0]!, take.length, [merged]);
    }
  }

  private async summarize(items: SimItem[], depth: number, ratio: number): Promise<SimItem> {
    const replaced = items.reduce((s, i) => s + i.tokens, 0);
    const budgetTokens = Math.max(MIN_SUMMARY_TOKENS, Math.floor(replaced * ratio));
    const body = await this.options.summarizer!.summarize({ items: items.map((i) => i.text), budgetTokens, depth });
    const text = `[summary] ${body}`;
    return { type: 'summary', text, tokens: this.options.tokenizer.count(text), depth };
  }
}
