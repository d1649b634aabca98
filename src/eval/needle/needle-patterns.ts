/**
 * What a value of each needle type looks like in text. The reader (reader.ts) answers only with strings
 * these patterns find, so an answer is always a verbatim string of the evidence, never a paraphrase, and a
 * near miss (another hash, another port) is a wrong answer, not a partial one.
 */
import type { NeedleType } from './needle-types.js';

/** A needle-like string found in a text, with where it starts. */
export interface Candidate {
  value: string;
  /** Where the match starts (for a rationale: at "because"). */
  index: number;
  /** Where the match ends. */
  end: number;
}

const PATTERNS: Record<NeedleType, RegExp> = {
  // A hex fragment of 7-40 digits standing alone, with a digit and a letter (so neither a number nor a word
  // such as "defaced"); ids such as evt_01k... and 64-digit digests never match whole.
  hash: /(?<![0-9A-Za-z_])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}(?![0-9A-Za-z_])/g,
  // A file path with a line number: src/payments/refund.ts:131 (a trailing :column is left out).
  path: /(?<![\w./-])(?:\/?[\w.-]+\/)+[\w.-]+\.[a-z]{1,5}:\d+/g,
  // An error code with the address it names: ECONNREFUSED 10.0.3.7:5432.
  error: /\b(E[A-Z]{4,}) (\d{1,3}(?:\.\d{1,3}){3}:\d{2,5})\b/g,
  // Two or more --flag=value pairs in a row: --max-retries=7 --timeout=3200ms.
  parameter: /--[a-z][a-z-]*=[^\s"'`,;)\\]+(?:[ \t]+--[a-z][a-z-]*=[^\s"'`,;)\\]+)+/g,
  // The reason of a decision: what follows "because (of)" up to the end of the clause.
  rationale: /\bbecause (?:of )?([^.;\n"]+)/g,
};

/** Every needle-like string of `type` in `text`, in order of position. */
export function findCandidates(text: string, type: NeedleType): Candidate[] {
  const re = new RegExp(PATTERNS[type].source, PATTERNS[type].flags);
  const out: Candidate[] = [];
  for (const m of text.matchAll(re)) {
    const value = type === 'error' ? `${m[1]} ${m[2]}` : type === 'rationale' ? m[1]!.trim() : m[0].replace(/[ \t]+/g, ' ');
    out.push({ value, index: m.index, end: m.index + m[0].length });
  }
  return out;
}

/** Whether `value` is a well-formed value of `type` on its own (the generator checks every needle with it). */
export function isNeedleShaped(value: string, type: NeedleType): boolean {
  const probe = type === 'rationale' ? `because ${value}.` : value;
  const found = findCandidates(probe, type);
  return found.length === 1 && found[0]!.value === value;
}
