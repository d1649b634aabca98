/**
 * Detection of code pasted into the free text of an agent message (MAX_INLINE_CODE_CHARS, PAS Bus §3.1,
 * failure mode "context bloat: agent pastes code/spec text", §8.1). Code belongs in the repository or an
 * artifact and travels as a pointer; this finds what to move.
 *
 * Three shapes count, in this order of precedence (a line is counted at most once):
 * 1. Fenced blocks: a line starting with three or more backticks or tildes opens a block that ends at a line
 *    holding a fence of the same character at least as long, or at the end of the text. The body counts.
 * 2. Runs of two or more consecutive code-like lines outside fences (see `isCodeLikeLine`). A single line
 *    never counts: prose mentions code, and one line is not a paste.
 * 3. Backtick spans of at least `CODE_SPAN_MIN_CHARS` characters that contain whitespace. Short spans name an
 *    identifier, and a span without whitespace is a path or a pointer, which is what agents should send.
 *
 * Pure and deterministic; the character count of a block is the length of its lines joined with `\n`.
 */

/** Backtick spans shorter than this are references (`parsePointer`, `MAX_ENGRAMS`), not pasted code. */
export const CODE_SPAN_MIN_CHARS = 40;
/** Consecutive code-like lines that make a paste. */
export const CODE_LINE_RUN_MIN = 2;

export type InlineCodeShape = 'fenced' | 'lines' | 'span';

export interface InlineCodeBlock {
  shape: InlineCodeShape;
  /** 1-based line of the text where the block starts (the first body line of a fenced block). */
  line: number;
  /** Characters of code: the body of a fence, the joined lines of a run, the inside of a span. */
  chars: number;
}

const FENCE = /^\s*(`{3,}|~{3,})/;
// Keywords that open a statement or declaration in the languages agents paste most (TS/JS, Python, Go, Rust,
// Java/C#, C), matched case-sensitively so "If the ..." prose does not match; SQL only in capitals.
const KEYWORD_START =
  /^(?:def|class|function|import|from|export|const|let|var|return|if|elif|else|for|while|switch|case|try|catch|except|finally|with|async|await|public|private|protected|static|fn|func|package|using|namespace|struct|interface|type|enum|impl|pub|SELECT|INSERT|UPDATE|DELETE|CREATE|WITH)\b/;
// A call (`f(`), a brace, bracket, semicolon or `=`: prose uses "(see x)" with a space, code does not.
const CODE_PUNCTUATION = /\w\(|[{}[\];=]/;
const ASSIGNMENT = /^[A-Za-z_$][\w$.[\]'"]*\s*(?:=|\+=|-=|\*=|\/=|:=|\|=|&=)\s*[^=\s]/;
const DECORATOR_OR_DIRECTIVE = /^(?:@[A-Za-z_][\w.]*(?:\(|$)|#include\b|#define\b|#!\/)/;
// A Python block header before its colon: `else`, `class Foo`, a call or comparison, `for x in xs`, `with f as g`.
// "for example:" and "return value:" are prose.
const BLOCK_HEADER = /^(?:else|try|finally|except|class \w+|.*[(<>=!].*|\S+ \S+ in \S.*|.* as \w+)$/;

/**
 * A line that looks like source code: it ends with `;` or `{`, starts with `}`, is an assignment
 * (`total = a + b`), a decorator or preprocessor directive, or starts with a statement keyword and either
 * carries code punctuation or is a Python block header (`def f(x):`, `for item in items:`, `SELECT * FROM t
 * WHERE a=1`).
 * Lines are compared after trimming. A keyword alone is not enough: prose starts with "return", "for" too.
 */
export function isCodeLikeLine(line: string): boolean {
  const t = line.trim();
  if (t.length < 2) return t === '}' || t === '{';
  if (t.endsWith(';') || t.endsWith('{') || t.startsWith('}')) return true;
  if (ASSIGNMENT.test(t) || DECORATOR_OR_DIRECTIVE.test(t)) return true;
  return KEYWORD_START.test(t) && (CODE_PUNCTUATION.test(t) || (t.endsWith(':') && BLOCK_HEADER.test(t.slice(0, -1).trim())));
}

/** Every block of code in `text`, in order of position. */
export function findInlineCode(text: string): InlineCodeBlock[] {
  const lines = text.split(/\r\n|\r|\n/);
  const blocks: InlineCodeBlock[] = [];
  const isCounted = new Array<boolean>(lines.length).fill(false);

  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const fence = open[1]!;
    let end = i + 1;
    while (end < lines.length && !isClosingFence(lines[end]!, fence)) end++;
    const body = lines.slice(i + 1, end);
    for (let k = i; k <= Math.min(end, lines.length - 1); k++) isCounted[k] = true;
    const chars = body.join('\n').length;
    if (chars > 0) blocks.push({ shape: 'fenced', line: i + 2, chars });
    i = end;
  }

  for (let i = 0; i < lines.length; ) {
    if (isCounted[i] || !isCodeLikeLine(lines[i]!)) {
      i++;
      continue;
    }
    let end = i;
    while (end + 1 < lines.length && !isCounted[end + 1] && isCodeLikeLine(lines[end + 1]!)) end++;
    if (end - i + 1 >= CODE_LINE_RUN_MIN) {
      const run = lines.slice(i, end + 1).map((l) => l.trimEnd());
      blocks.push({ shape: 'lines', line: i + 1, chars: run.join('\n').length });
      for (let k = i; k <= end; k++) isCounted[k] = true;
    }
    i = end + 1;
  }

  for (let i = 0; i < lines.length; i++) {
    if (isCounted[i]) continue;
    for (const span of backtickSpans(lines[i]!)) {
      if (span.length >= CODE_SPAN_MIN_CHARS && /\s/.test(span)) blocks.push({ shape: 'span', line: i + 1, chars: span.length });
    }
  }

  return blocks.sort((a, b) => a.line - b.line);
}

/** Total characters of code in `text`. */
export function inlineCodeChars(text: string): number {
  return findInlineCode(text).reduce((sum, b) => sum + b.chars, 0);
}

function isClosingFence(line: string, fence: string): boolean {
  const t = line.trim();
  const ch = fence[0]!;
  if (t.length < fence.length) return false;
  for (const c of t) if (c !== ch) return false;
  return true;
}

/** Contents of backtick spans on one line: a run of n backticks closes at the next run of exactly n. */
function backtickSpans(line: string): string[] {
  const spans: string[] = [];
  let i = 0;
  while (i < line.length) {
    if (line[i] !== '`') {
      i++;
      continue;
    }
    let n = 0;
    while (line[i + n] === '`') n++;
    const start = i + n;
    let j = start;
    let close = -1;
    while (j < line.length) {
      if (line[j] !== '`') {
        j++;
        continue;
      }
      let m = 0;
      while (line[j + m] === '`') m++;
      if (m === n) {
        close = j;
        break;
      }
      j += m;
    }
    if (close === -1) break;
    spans.push(line.slice(start, close).trim());
    i = close + n;
  }
  return spans;
}
