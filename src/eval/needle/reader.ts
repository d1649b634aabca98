/**
 * The simulated reader: how an agent answers a probe from the text in front of it. No LLM is involved, so
 * the same mechanical rule reads every condition's evidence:
 * 1. candidates are the strings of the probe's needle type in the evidence (needle-patterns.ts);
 * 2. each scores the probe words (stop words left out, light suffix stemming) found within
 *    {@link CUE_WINDOW_CHARS} characters of it, each distinct word weighted by how rare it is in the
 *    evidence (inverse line frequency): a rare word such as "crash" says more than a component name that
 *    occurs in every other log line; a line that lists several candidates (a command trying three
 *    settings) shares its words among them, since it does not say which one is meant;
 * 3. the answer is the best-scoring candidate, ties going to the earliest (evidence comes in priority
 *    order: the latest pull first); with no candidate scoring at least one probe word, the reader abstains.
 * An answer is exact when it equals the needle's value, and a false recall when it is any other string.
 */
import { findCandidates } from './needle-patterns.js';
import type { NeedleType } from './needle-types.js';

/** Characters on each side of a candidate in which probe words count. About two lines of tool output. */
export const CUE_WINDOW_CHARS = 160;

const STOP_WORDS = new Set(
  `a an and are as at back be been but by can did do does end ended for from give had has have how i in is it its
   me my need needed of on or our point remind rather than that the their them then there these this to up us was we
   were what when where which who why will with you again exactly exact tell instead using use used would could should
   about after before into out over some any all just also still`
    .split(/\s+/)
    .filter(Boolean),
);
/**
 * Words that name the form of the answer rather than what it is about ("the file and line", "the code and
 * address"): an answer is not more likely next to the word "line".
 */
const FORM_WORDS = new Set(['file', 'line', 'lines', 'hash', 'code', 'address', 'location', 'value', 'values', 'string', 'number']);

/** A word reduced to a comparable form: lowercase, common English suffixes removed. */
export function stem(word: string): string {
  const w = word.toLowerCase();
  for (const suffix of ['ing', 'ed', 'es', 's']) {
    if (w.endsWith(suffix) && w.length - suffix.length >= 4) return w.slice(0, -suffix.length);
  }
  return w;
}

function words(text: string): string[] {
  return text.split(/[^\p{L}\p{N}]+/u).filter((w) => w.length >= 2);
}

/** The probe words a reader looks for around a candidate: content words, stemmed, each once. */
export function cueTerms(question: string): string[] {
  const out = new Set<string>();
  for (const w of words(question)) {
    const lower = w.toLowerCase();
    if (STOP_WORDS.has(lower) || FORM_WORDS.has(lower) || (lower.length < 3 && !/\d/.test(lower))) continue;
    out.add(stem(lower));
  }
  return [...out];
}

export interface ReaderAnswer {
  /** The answer, or null when the reader abstains. */
  answer: string | null;
  /** Weight of the probe words around the answer. */
  cueScore: number;
  /** Index of the segment the answer came from, -1 when it abstained. */
  segment: number;
}

/** Reads `segments` (in priority order) and answers the probe, or abstains. */
export function readAnswer(type: NeedleType, question: string, segments: readonly string[]): ReaderAnswer {
  const weights = cueWeights(cueTerms(question), segments);
  let best: ReaderAnswer = { answer: null, cueScore: 0, segment: -1 };
  segments.forEach((text, segment) => {
    const candidates = findCandidates(text, type);
    const perLine = new Map<number, number>();
    for (const c of candidates) {
      const start = text.lastIndexOf('\n', c.index) + 1;
      perLine.set(start, (perLine.get(start) ?? 0) + 1);
    }
    for (const c of candidates) {
      // The candidate's line (a log line, a sentence of a remark), at most CUE_WINDOW_CHARS on each side.
      const lineStart = text.lastIndexOf('\n', c.index) + 1;
      const lineEnd = text.indexOf('\n', c.index + c.value.length);
      const from = Math.max(lineStart, c.index - CUE_WINDOW_CHARS);
      const to = Math.min(lineEnd < 0 ? text.length : lineEnd, c.index + c.value.length + CUE_WINDOW_CHARS);
      const seen = new Set<string>();
      for (const w of words(text.slice(from, to))) {
        const s = stem(w);
        if (weights.has(s)) seen.add(s);
      }
      const score = [...seen].reduce((sum, s) => sum + weights.get(s)!, 0) / perLine.get(lineStart)!;
      // Strictly greater: among equal scores the earliest candidate (in priority order) stays.
      if (score > best.cueScore) best = { answer: c.value, cueScore: score, segment };
    }
  });
  return best;
}

/** Each cue's weight: ln(1 + lines / (1 + lines containing it)) over all the evidence's lines. */
export function cueWeights(cues: readonly string[], segments: readonly string[]): Map<string, number> {
  const lines = segments.flatMap((s) => s.split('\n'));
  const df = new Map<string, number>(cues.map((c) => [c, 0]));
  for (const line of lines) {
    const seen = new Set<string>();
    for (const w of words(line)) {
      const s = stem(w);
      if (df.has(s) && !seen.has(s)) {
        seen.add(s);
        df.set(s, df.get(s)! + 1);
      }
    }
  }
  return new Map(cues.map((c) => [c, Math.log(1 + lines.length / (1 + df.get(c)!))]));
}

/** Whether the exact value occurs anywhere in the evidence (what a perfect reader could answer). */
export function isPresent(value: string, segments: readonly string[]): boolean {
  return segments.some((s) => s.includes(value));
}
