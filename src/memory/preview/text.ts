/**
 * Text helpers shared by the detectors and renderers: the samples detection looks at, lines, cleaning a line as
 * a terminal shows it, fitting a preview to its length, and locale-free counts. Whole-content scans walk with
 * indexOf and never split the content into an array.
 */

/** Detection looks at most this much of the start and end of the content, so cost does not grow with size. */
export const HEAD_SAMPLE_CHARS = 64 * 1024;
export const TAIL_SAMPLE_CHARS = 16 * 1024;

/** Longest single line kept in a preview; longer lines end in `…`. */
export const LINE_MAX_CHARS = 240;

export const ELLIPSIS = '…';

/** The first plan whose text fits; failing all, the last plan cut to size. Plans go from richest to leanest. */
export function fitPlans(plans: Array<() => string>, maxChars: number): string {
  let last = '';
  for (const plan of plans) {
    last = plan();
    if (last.length <= maxChars) return last;
  }
  return hardCut(last, maxChars);
}

export function hardCut(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : truncateEnd(text, maxChars);
}

/** Cuts to at most `maxChars`, ending in `…`, without splitting a surrogate pair. */
export function truncateEnd(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  let end = Math.max(0, maxChars - 1);
  const c = text.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return text.slice(0, end) + ELLIPSIS;
}

const ANSI_ESCAPE = /\u001b\[[0-9;?]*[ -/]*[@-~]/g;

/** A line as a terminal would show it: no ANSI colours, only the last `\r`-overwritten segment, capped. */
export function cleanLine(line: string, maxChars: number): string {
  let l = line.replace(ANSI_ESCAPE, '');
  if (l.includes('\r')) {
    const parts = l.split('\r').filter((p) => p !== '');
    l = parts[parts.length - 1] ?? '';
  }
  return truncateEnd(l.trimEnd(), Math.min(LINE_MAX_CHARS, maxChars));
}

export function* iterateLines(text: string): Generator<string> {
  let start = 0;
  while (start < text.length) {
    const nl = text.indexOf('\n', start);
    const end = nl < 0 ? text.length : nl;
    yield text.slice(start, end);
    start = end + 1;
  }
}

/** Lines of a sample; when the sample was cut from a larger text, its last (partial) line is dropped. */
export function completeLines(sample: string, isCut: boolean): string[] {
  const lines = [...iterateLines(sample)];
  if (isCut && lines.length > 1) lines.pop();
  return lines;
}

export function firstLines(text: string, n: number): string[] {
  const out: string[] = [];
  for (const l of iterateLines(text)) {
    if (out.length >= n) break;
    out.push(l);
  }
  return out;
}

export function firstNonEmptyLines(text: string, n: number): string[] {
  const out: string[] = [];
  for (const l of iterateLines(text)) {
    if (out.length >= n) break;
    if (l.trim() !== '') out.push(l);
  }
  return out;
}

/** The last `n` lines, after dropping trailing blank lines; `isFromStart` when they are all there is. */
export function lastLines(text: string, n: number): { lines: string[]; isFromStart: boolean } {
  let end = text.length;
  while (end > 0 && isWhitespace(text.charCodeAt(end - 1))) end--;
  const lines: string[] = [];
  if (end === 0) return { lines, isFromStart: true };
  let pos = end;
  while (lines.length < n) {
    const nl = pos > 0 ? text.lastIndexOf('\n', pos - 1) : -1;
    lines.push(text.slice(nl + 1, pos));
    if (nl < 0) return { lines: lines.reverse(), isFromStart: true };
    pos = nl;
  }
  return { lines: lines.reverse(), isFromStart: false };
}

export function countLines(text: string): number {
  if (text.length === 0) return 0;
  let n = 0;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) n++;
  return text.endsWith('\n') ? n : n + 1;
}

/** Lines with at least one character other than `\r`; whitespace-only lines are rare enough to count. */
export function countNonEmptyLines(text: string): number {
  let n = 0;
  let start = 0;
  while (start < text.length) {
    const nl = text.indexOf('\n', start);
    const end = nl < 0 ? text.length : nl;
    if (end - start > (text.charCodeAt(end - 1) === 13 ? 1 : 0)) n++;
    start = end + 1;
  }
  return n;
}

function isWhitespace(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13) || c === 0xa0 || c === 0xfeff;
}

export function firstNonWhitespace(text: string): number {
  const m = /\S/.exec(text);
  return m ? m.index : text.length;
}

/** `from` down to `to`, inclusive. */
export function range(from: number, to: number): number[] {
  const out: number[] = [];
  for (let i = from; i >= to; i--) out.push(i);
  return out;
}

/** `1,234` regardless of locale, so previews are byte-identical everywhere. */
function formatCount(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

export function plural(n: number, singular: string, pluralForm = `${singular}s`): string {
  return `${formatCount(n)} ${n === 1 ? singular : pluralForm}`;
}
