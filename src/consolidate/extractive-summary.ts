/**
 * The deterministic level of escalation: an extractive summary that selects whole sentences of the sources,
 * ranked by salience, under a token budget, with no model. It never invents anything and always fits: it is the
 * level every derived text falls back to, and the only one when no LLM is configured.
 */
import type { Tokenizer } from '../providers/tokenizer.js';
import { identifiersIn } from './identifiers.js';

/** One source of a derived object: an event, or a lower summary (kind `summary`) when summaries are condensed. */
export interface SourceItem {
  id: string;
  /** An event kind (`user`, `assistant`, `tool_result`, `decision`, ...) or `summary`. */
  kind: string;
  text: string;
}

export interface ExtractiveOptions {
  /** Hard cap of the output, in tokens of `tokenizer`. */
  budgetTokens: number;
  /**
   * Share of the budget an `Identifiers:` line may take for identifiers of sentences that were not selected, so
   * names, paths and codes stay findable even when their sentences did not fit. Default 0.2; 0 turns it off.
   */
  identifierShare?: number;
}

/**
 * Weight of a sentence by the kind of its source: decisions and what the user asked first, then the assistant's
 * findings; tool output last, since it is long, repetitive and stays available as raw events and artifacts.
 */
const KIND_WEIGHT: Readonly<Record<string, number>> = {
  decision: 2,
  summary: 1.6,
  user: 1.5,
  note: 1.4,
  assistant: 1.3,
  tool_result: 0.8,
  tool_call: 0.7,
  system: 0.5,
};
/** Longest sentence kept whole; longer ones are cut with an ellipsis (a summary states findings, it does not paste logs). */
const MAX_SENTENCE_CHARS = 240;
/** Sentences scored per source: a 50,000-line tool result adds its first lines, not all of them. */
const MAX_SENTENCES_PER_ITEM = 40;
/** Bonus per identifier in a sentence (up to three), scaled by its kind: names, paths and codes are what recall looks for later. */
const IDENTIFIER_BONUS = 0.25;
const MIN_WORD_CHARS = 3;
/** Characters per token beyond which a sentence is taken not to fit without counting it (English prose: about 4). */
const MAX_CHARS_PER_TOKEN = 12;

interface Sentence {
  text: string;
  order: number;
  weight: number;
  words: string[];
  identifiers: string[];
  score: number;
}

/** Splits a source into sentences: at line breaks, and after `.`, `!` or `?` followed by a space and a capital or digit. */
export function splitSentences(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    for (const part of line.split(/(?<=[.!?])\s+(?=[\p{Lu}\p{N}"'`(])/u)) {
      const t = part.trim();
      if (t.length > 0) out.push(t);
    }
  }
  return out;
}

/**
 * Selects sentences best first while they fit `budgetTokens` and prints them in source order, one per line;
 * a sentence's score is its source kind's weight times (0.5 + its salience, the mean log document frequency of
 * its words over all sentences: the centroid heuristic), plus a bonus for identifiers. Identifiers of sentences
 * left out follow on an `Identifiers:` line within `identifierShare` of the budget (plus what the sentences left). The output's count by
 * `tokenizer` is at most `budgetTokens`; an empty input or a budget of 0 gives the empty string. Deterministic.
 */
export function extractiveSummary(items: readonly SourceItem[], tokenizer: Tokenizer, options: ExtractiveOptions): string {
  const budget = Math.max(0, Math.floor(options.budgetTokens));
  if (budget === 0) return '';
  const sentences: Sentence[] = [];
  // Document frequency over sources, not sentences: thirty near-identical log lines of one tool result would
  // otherwise make their own words the centre of the session and outrank every decision.
  const df = new Map<string, number>();
  for (const item of items) {
    const weight = KIND_WEIGHT[item.kind] ?? 1;
    const itemWords = new Set<string>();
    for (const raw of splitSentences(item.text).slice(0, MAX_SENTENCES_PER_ITEM)) {
      const text = raw.length > MAX_SENTENCE_CHARS ? `${raw.slice(0, MAX_SENTENCE_CHARS - 1)}…` : raw;
      const words = text.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((w) => w.length >= MIN_WORD_CHARS);
      for (const w of words) itemWords.add(w);
      sentences.push({ text, order: sentences.length, weight, words, identifiers: identifiersIn(raw), score: 0 });
    }
    for (const w of itemWords) df.set(w, (df.get(w) ?? 0) + 1);
  }
  if (sentences.length === 0) return '';
  const norm = Math.log(1 + Math.max(1, items.length));
  for (const s of sentences) {
    const salience = s.words.reduce((sum, w) => sum + Math.log(1 + (df.get(w) ?? 0)), 0) / Math.max(1, s.words.length) / norm;
    s.score = s.weight * (0.5 + salience + IDENTIFIER_BONUS * Math.min(3, s.identifiers.length));
  }
  const ranked = [...sentences].sort((a, b) => b.score - a.score || a.order - b.order);

  const share = options.identifierShare ?? 0.2;
  const identifierBudget = Math.floor(budget * Math.min(1, Math.max(0, share)));
  const sentenceBudget = budget - identifierBudget;
  const kept: Sentence[] = [];
  const seen = new Set<string>();
  // Each kept sentence costs its own tokens plus one for the line break; the join is checked at the end.
  let used = 0;
  for (const s of ranked) {
    // Nothing fits in fewer than two tokens (a word and its line break): stop counting the rest.
    if (sentenceBudget - used < 2) break;
    // A sentence of fewer than two words and no identifier ("Create:", a code fence) says nothing on its own.
    if (seen.has(s.text) || (s.words.length < 2 && s.identifiers.length === 0)) continue;
    // Not counted when it cannot fit: no token of o200k text runs this many characters in prose (this skip is a
    // speed-up of the scan once the budget is nearly full; the budget itself is kept by the counts below).
    if (s.text.length > (sentenceBudget - used) * MAX_CHARS_PER_TOKEN) continue;
    const cost = tokenizer.count(s.text) + 1;
    if (used + cost > sentenceBudget) continue;
    kept.push(s);
    seen.add(s.text);
    used += cost;
  }
  if (kept.length === 0) {
    // Not one sentence fits: the best one, cut to the budget (Pattern 2's hard truncation).
    return tokenizer.truncate(ranked[0]!.text, budget);
  }
  kept.sort((a, b) => a.order - b.order);
  const lines = kept.map((s) => s.text);

  // Identifiers left out, those of the weightiest sources first (a decision's names before a log line's timestamps).
  const present = new Set(kept.flatMap((s) => s.identifiers));
  const weightOf = new Map<string, number>();
  for (const s of sentences) for (const id of s.identifiers) if (!present.has(id)) weightOf.set(id, Math.max(weightOf.get(id) ?? 0, s.weight));
  const missing = [...weightOf.keys()].sort((a, b) => weightOf.get(b)! - weightOf.get(a)!);
  if (missing.length > 0 && identifierBudget > 0) {
    let line = 'Identifiers:';
    const room = identifierBudget + (sentenceBudget - used);
    // Counted piece by piece (each " id" apart): counting the growing line each time was quadratic, and the
    // pre-tokenizer splits at the spaces, so the pieces add up to the line's count; the final check below holds.
    let lineTokens = tokenizer.count(line);
    for (const id of missing) {
      if (room - lineTokens < 2) break;
      // A long identifier that does not fit leaves room for shorter ones after it.
      const cost = tokenizer.count(` ${id}`);
      if (lineTokens + cost > room) continue;
      line = `${line} ${id}`;
      lineTokens += cost;
    }
    if (line !== 'Identifiers:') lines.push(line);
  }
  let text = lines.join('\n');
  // Token counts of parts need not add up to the count of the joined text; drop lines from the end until it fits.
  while (tokenizer.count(text) > budget && lines.length > 1) {
    lines.pop();
    text = lines.join('\n');
  }
  return tokenizer.count(text) > budget ? tokenizer.truncate(text, budget) : text;
}
