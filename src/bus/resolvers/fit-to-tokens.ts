import type { Tokenizer } from '../../providers/tokenizer.js';
import { countLines } from './text-span.js';

/** Counts tokens of a text; pass `(text) => tokenizer.count(text)` for the project's tokenizer. */
export type CountTokens = Tokenizer['count'];

export interface FittedText {
  text: string;
  /** `countTokens(text)`. */
  tokens: number;
  isTruncated: boolean;
  /** Lines of the input kept (the last one possibly cut); 0 for empty text. */
  keptLines: number;
}

/**
 * Chars per token below which a text certainly fits without a line-by-line pass: code and prose average 3-5
 * characters per o200k token, so a span of up to `maxTokens * 8` characters is counted once, whole.
 */
const WHOLE_COUNT_CHARS_PER_TOKEN = 8;

/**
 * The longest prefix of whole lines of `text` within `maxTokens` tokens; when not even the first line fits,
 * the longest prefix of that line. Counts stay proportional to the kept text, not to the span: lines are
 * counted one at a time until the budget runs out, then the candidate prefix is counted exactly (BPE counts
 * are not quite additive across lines) and shortened line by line until it fits.
 */
export function fitToTokens(text: string, maxTokens: number, countTokens: CountTokens): FittedText {
  if (text.length <= maxTokens * WHOLE_COUNT_CHARS_PER_TOKEN) {
    const tokens = countTokens(text);
    if (tokens <= maxTokens) return { text, tokens, isTruncated: false, keptLines: countLines(text) };
  }
  // Where each line ends (the index of its '\n'), gathered only as far as the running estimate allows.
  const ends: number[] = [];
  let estimate = 0;
  let from = 0;
  let isWhole = false;
  for (;;) {
    const nl = text.indexOf('\n', from);
    if (nl < 0 && from === text.length && from > 0) {
      isWhole = true; // a final terminator does not start another line
      break;
    }
    const end = nl < 0 ? text.length : nl;
    const cost = countTokens(text.slice(from, nl < 0 ? end : end + 1));
    if (estimate + cost > maxTokens) break;
    estimate += cost;
    ends.push(end);
    if (nl < 0) {
      isWhole = true;
      break;
    }
    from = nl + 1;
  }
  for (let k = ends.length; k > 0; k--) {
    const isAll = isWhole && k === ends.length;
    const candidate = isAll ? text : text.slice(0, ends[k - 1]).replace(/\r$/, '');
    const tokens = countTokens(candidate);
    if (tokens <= maxTokens) return { text: candidate, tokens, isTruncated: !isAll, keptLines: k };
  }
  // Not even one line fits: binary search over the first line's characters.
  const nl = text.indexOf('\n');
  const first = nl < 0 ? text : text.slice(0, nl);
  let lo = 0;
  let hi = Math.min(first.length, maxTokens * 64);
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (countTokens(cutAt(first, mid)) <= maxTokens) lo = mid;
    else hi = mid - 1;
  }
  const cut = cutAt(first, lo);
  return { text: cut, tokens: countTokens(cut), isTruncated: true, keptLines: cut.length > 0 ? 1 : 0 };
}

/** `text.slice(0, n)` without splitting a surrogate pair. */
function cutAt(text: string, n: number): string {
  const code = text.charCodeAt(n - 1);
  return code >= 0xd800 && code <= 0xdbff ? text.slice(0, n - 1) : text.slice(0, n);
}
