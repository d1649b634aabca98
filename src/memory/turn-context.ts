import type { EventKind } from '../model/event.js';
import { maskPrivate } from './private-spans.js';
import { STOP_WORDS } from './query-terms.js';

/**
 * Context-aware index units. A turn is often unfindable on its own words: "Yes, last Tuesday!" answers a
 * question that holds the words a later query uses. So every dialogue turn is indexed with the words of the
 * dialogue turns just before it in its session, in the
 * low-weight column beside its kind, tool and tags (ingest.ts `searchMetaFor`): a query matching the
 * exchange finds the reply, which still ranks below a turn holding the words itself, and results point at
 * the exact event. Only earlier events, never later ones: appends stay append-only (no indexed row is
 * rewritten). Measured on the LoCoMo development split in bench/results/locomo.md (ablation).
 */

/**
 * Earlier turns an event is indexed with. Two: an answer often replies to the question before the last
 * turn ("How've you been using it?" follows the turn that names the clipboard). On the LoCoMo development
 * split two beat one on every conversation and three added nothing (bench/results/locomo.md).
 */
export const TURN_CONTEXT_EVENTS = 2;

/**
 * Most words of context: the distinct content words of those events, nearest first. A bag, not the text:
 * full-text ranking (FTS5's bm25, PostgreSQL's length normalisation) divides by the whole indexed length, so
 * 1,000 characters of a log before an event made the event's own words count less than a neighbour's
 * context (a needle ranked below the tool call after it). 32 distinct words hold a chat turn's content words
 * and the gist of the one before; on LoCoMo 32, 64 and 96 words scored within 0.3 points of each other and of
 * the whole text, and every word costs indexing time at ingest (bench/results/locomo.md, ingest-recall.md).
 */
export const TURN_CONTEXT_WORDS = 32;

/** Characters read from the end of each earlier event: enough for its last {@link TURN_CONTEXT_WORDS} words. */
const TAIL_CHARS = 4000;

/**
 * Kinds that take part in context, as the events indexed with it and as the events it comes from: dialogue. A
 * turn's meaning depends on the exchange it belongs to; tool calls and results, decisions and notes are records
 * that name what they are about. Giving them their neighbours' words made them match queries about other things
 * and, since full-text ranking divides by the whole indexed length, weakened their own words: on the agent trace of
 * `npm run bench -- context` (ablation) the right event came first for 54 % of probes with every kind in context,
 * 67 % with dialogue only and 67 % with no context at all (bench/results/context.md, section 3).
 */
export const TURN_CONTEXT_KINDS: readonly EventKind[] = ['user', 'assistant'];

/** Whether an event of this kind takes part in context ({@link TURN_CONTEXT_KINDS}). */
export function hasTurnContext(kind: EventKind): boolean {
  return TURN_CONTEXT_KINDS.includes(kind);
}

/** An earlier event's text, and whether its private spans are masked already. */
export interface ContextSource {
  text: string;
  isMasked: boolean;
}

/**
 * The context an event is indexed with: the distinct content words (no stop words, lower-cased) of the
 * earlier events, from the nearest event's end backwards, at most {@link TURN_CONTEXT_WORDS}, each event's
 * words in their order; private spans never included. Empty without earlier events.
 */
export function turnContext(earlier: readonly ContextSource[]): string {
  const seen = new Set<string>();
  const lines: string[] = [];
  for (let i = earlier.length - 1; i >= 0 && seen.size < TURN_CONTEXT_WORDS; i--) {
    const source = earlier[i]!;
    // Masked whole before it is read from the end: a cut could leave the end of a private span without its opening tag.
    const text = source.isMasked ? source.text : maskPrivate(source.text);
    const words = lastWords(text, seen);
    if (words.length > 0) lines.unshift(words.join(' '));
  }
  return lines.join('\n');
}

/**
 * The distinct content words of the end of `text` not in `seen`, read backwards token by token (white space
 * separates tokens) until `seen` holds {@link TURN_CONTEXT_WORDS} words or {@link TAIL_CHARS} characters are
 * read; returned in text order. Scans in place: splitting the whole tail of every event cost more than the rest
 * of an append's indexing.
 */
function lastWords(text: string, seen: Set<string>): string[] {
  const words: string[] = [];
  const stop = Math.max(0, text.length - TAIL_CHARS);
  let end = text.length;
  while (end > stop && seen.size < TURN_CONTEXT_WORDS) {
    while (end > stop && isSpace(text.charCodeAt(end - 1))) end--;
    let start = end;
    while (start > stop && !isSpace(text.charCodeAt(start - 1))) start--;
    if (start === end) break;
    const word = trimToWord(text.slice(start, end)).toLowerCase();
    end = start;
    if (word.length < 2 || STOP_WORDS.has(word) || seen.has(word)) continue;
    seen.add(word);
    words.push(word);
  }
  return words.reverse();
}

function isSpace(code: number): boolean {
  return code === 32 || code === 10 || code === 9 || code === 13 || code === 12 || code === 11 || code === 0xa0 || code === 0x2028 || code === 0x3000;
}

const WORD_CHAR = /[\p{L}\p{N}]/u;

/** The token without the punctuation around it (`"Tuesday!"` -> `Tuesday`); inner punctuation stays. */
function trimToWord(token: string): string {
  let start = 0;
  let end = token.length;
  while (start < end && !isWordChar(token.charCodeAt(start), token[start]!)) start++;
  while (end > start && !isWordChar(token.charCodeAt(end - 1), token[end - 1]!)) end--;
  return start === 0 && end === token.length ? token : token.slice(start, end);
}

function isWordChar(code: number, char: string): boolean {
  if (code < 128) return (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
  return WORD_CHAR.test(char);
}
