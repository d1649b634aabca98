/** Search output (grep, rg): recognised line by line; previewed as its totals and the first match groups, those with the pattern first. */
import { formatBytes } from '../../util/format-bytes.js';
import { cleanLine, completeLines, HEAD_SAMPLE_CHARS, iterateLines, plural } from './text.js';

const GREP_SAMPLE_LINES = 200;
/**
 * Match and file totals are exact up to this much grep output and lower bounds beyond it: counting
 * costs ~20 ms per MB of short (18-byte) lines, and a 50 MB search result should not stall ingestion.
 */
const GREP_COUNT_MAX_CHARS = 8 * 1024 * 1024;
/** Share of non-empty sampled lines that must look like grep output (lower when the tool says grep). */
export const GREP_MIN_SHARE = 0.8;
export const GREP_MIN_SHARE_HINTED = 0.5;

export function isGrepTool(toolName: string | undefined): boolean {
  const name = toolName?.toLowerCase();
  return name === 'grep' || name === 'rg' || name === 'ripgrep';
}

type GrepKind = 'match' | 'context' | 'separator' | 'heading' | 'numbered-match' | 'numbered-context';

// `path:line:text` (grep -n, rg), `path-line-text` (context lines), `path:text` (grep -r without -n).
// Paths hold no whitespace and none of ():<>"'=, so `src/a.ts(12,5): error` (tsc) is not a match line.
const PATH_CHARS = String.raw`(?:[A-Za-z]:)?[^\s:()<>"'=,]+?`;
const LINE_MATCH = new RegExp(String.raw`^(${PATH_CHARS}):(\d+):`);
const LINE_CONTEXT = new RegExp(String.raw`^(${PATH_CHARS})-(\d+)-`);
// Not `path::name` (pytest -v node ids: `tests/test_a.py::test_b PASSED`).
const PATH_ONLY_MATCH = new RegExp(String.raw`^(${PATH_CHARS}):(?!:)`);
// `12:text` / `12-text` from grep -n on one file or under an rg --heading file name.
const NUMBERED_MATCH = /^\d+:/;
const NUMBERED_CONTEXT = /^\d+-/;
// ...but not times (`12:30:05 INFO`) or dates (`2024-05-01 ...`), which open many log lines.
const TIME_PREFIX = /^\d{1,2}:\d{2}\b/;
const DATE_PREFIX = /^\d{1,4}-\d{1,2}-\d{1,4}(?!\d)/;

/** A path with a directory separator or a file extension (`src/a.ts`, `README.md`). */
function isPathLike(p: string): boolean {
  return !p.startsWith('-') && (/[/\\]/.test(p) || /\.[A-Za-z0-9_]{1,10}$/.test(p));
}

/** `Makefile`, `Dockerfile`: accepted as a path only when a line number follows. */
function isBareFileName(p: string): boolean {
  return /^[A-Za-z_][\w.-]*$/.test(p);
}

function parseGrepLine(line: string): { kind: GrepKind; path?: string } | undefined {
  if (line === '--') return { kind: 'separator' };
  let m = LINE_MATCH.exec(line);
  if (m && (isPathLike(m[1]!) || isBareFileName(m[1]!))) return { kind: 'match', path: m[1]! };
  m = LINE_CONTEXT.exec(line);
  if (m && isPathLike(m[1]!)) return { kind: 'context', path: m[1]! };
  if (NUMBERED_MATCH.test(line) && !TIME_PREFIX.test(line)) return { kind: 'numbered-match' };
  if (NUMBERED_CONTEXT.test(line) && !DATE_PREFIX.test(line)) return { kind: 'numbered-context' };
  m = PATH_ONLY_MATCH.exec(line);
  if (m && isPathLike(m[1]!)) return { kind: 'match', path: m[1]! };
  if (!/\s/.test(line) && isPathLike(line)) return { kind: 'heading', path: line };
  return undefined;
}

interface GrepEntry {
  line: string;
  kind: GrepKind | undefined;
  /** File the line belongs to, from its own prefix or the preceding rg --heading line. */
  path: string | undefined;
}

/**
 * Parses lines in order, lazily (the whole content is scanned for totals). A path-only line counts as
 * an rg --heading file name only when a numbered line follows it; the name holds until a blank line.
 */
function* parseGrepLines(lines: Iterable<string>): Generator<GrepEntry> {
  let heading: string | undefined;
  let pending: GrepEntry | undefined;
  for (const raw of lines) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    const isBlank = line.trim() === '';
    const parsed = isBlank ? undefined : parseGrepLine(line);
    const entry: GrepEntry = { line, kind: parsed?.kind, path: parsed?.path };
    const isNumbered = entry.kind === 'numbered-match' || entry.kind === 'numbered-context';
    if (pending) {
      if (isNumbered) heading = pending.path;
      else pending.kind = undefined;
      yield pending;
      pending = undefined;
    }
    if (isNumbered) entry.path = heading;
    else if (isBlank) heading = undefined;
    if (entry.kind === 'heading') pending = entry;
    else yield entry;
  }
  if (pending) yield { ...pending, kind: undefined };
}

function isMatch(kind: GrepKind | undefined): boolean {
  return kind === 'match' || kind === 'numbered-match';
}

export function looksLikeGrep(headLines: string[], minShare: number): boolean {
  let nonEmpty = 0;
  let grepLike = 0;
  let matches = 0;
  for (const e of parseGrepLines(headLines.slice(0, GREP_SAMPLE_LINES))) {
    if (e.line.trim() === '') continue;
    nonEmpty++;
    if (e.kind !== undefined) grepLike++;
    if (isMatch(e.kind)) matches++;
  }
  return matches > 0 && nonEmpty >= 2 && grepLike >= nonEmpty * minShare;
}

export function renderGrep(text: string, sizeBytes: number, pattern: string | undefined, maxChars: number): string {
  // Totals, one line at a time; over a bounded prefix of huge output, where they become lower bounds.
  const isCounted = text.length <= GREP_COUNT_MAX_CHARS;
  const counted = isCounted ? text : text.slice(0, text.lastIndexOf('\n', GREP_COUNT_MAX_CHARS) + 1);
  let matchCount = 0;
  const files = new Set<string>();
  for (const e of parseGrepLines(iterateLines(counted))) {
    if (!isMatch(e.kind)) continue;
    matchCount++;
    if (e.path !== undefined) files.add(e.path);
  }
  const atLeast = isCounted ? '' : '≥';
  const where = files.size > 0 ? ` in ${atLeast}${plural(files.size, 'file')}` : '';
  const header = (shown: number): string =>
    `[grep: ${atLeast}${plural(matchCount, 'match', 'matches')}${where}, ${formatBytes(sizeBytes)}; ${
      isCounted && shown === matchCount ? 'all shown' : `first ${shown} shown`
    }]`;

  // Groups from the head of the output: runs of lines of one file, split at `--` and blank lines.
  const head = text.length > HEAD_SAMPLE_CHARS ? text.slice(0, HEAD_SAMPLE_CHARS) : text;
  const groups: Array<{ entries: GrepEntry[]; isAfterBreak: boolean }> = [];
  let current: GrepEntry[] = [];
  let isAfterBreak = false;
  for (const e of parseGrepLines(completeLines(head, head !== text))) {
    const isBreak = e.kind === 'separator' || e.kind === 'heading' || e.kind === undefined || e.line.trim() === '';
    if (isBreak || (current.length > 0 && current[current.length - 1]!.path !== e.path)) {
      if (current.length > 0) groups.push({ entries: current, isAfterBreak });
      current = [];
      isAfterBreak = isBreak;
    }
    if (!isBreak || (e.kind === undefined && e.line.trim() !== '')) current.push(e);
  }
  if (current.length > 0) groups.push({ entries: current, isAfterBreak });

  const needle = pattern?.trim().toLowerCase();
  const hasNeedle = (e: GrepEntry): boolean => !!needle && isMatch(e.kind) && e.line.toLowerCase().includes(needle);
  const isPreferred = groups.map((g) => g.entries.some(hasNeedle));
  // Groups with a line containing the pattern first, then the rest, each in output order.
  const order = groups.map((_, i) => i).sort((a, b) => Number(isPreferred[b]) - Number(isPreferred[a]) || a - b);

  // Each line is cleaned once, however many candidate renders it appears in.
  const cleanedLines = new Map<string, string>();
  const clean = (line: string): string => {
    let c = cleanedLines.get(line);
    if (c === undefined) {
      c = cleanLine(line, maxChars);
      cleanedLines.set(line, c);
    }
    return c;
  };
  const render = (chosen: Array<{ index: number; entries: GrepEntry[] }>): string => {
    const out: string[] = [];
    let shown = 0;
    let lastHeading: string | undefined;
    const sorted = [...chosen].sort((a, b) => a.index - b.index);
    sorted.forEach((c, i) => {
      // `--` where the original had a break or where groups were left out, as grep -C prints it.
      if (i > 0 && (c.index !== sorted[i - 1]!.index + 1 || groups[c.index]?.isAfterBreak !== false)) out.push('--');
      // Lines under an rg --heading file name carry no path: repeat the file name once per file.
      const first = c.entries[0];
      if (first && first.kind?.startsWith('numbered') && first.path !== undefined && first.path !== lastHeading) {
        out.push(clean(first.path));
        lastHeading = first.path;
      }
      for (const e of c.entries) {
        out.push(clean(e.line));
        if (isMatch(e.kind)) shown++;
      }
    });
    return [header(shown), ...out].join('\n');
  };

  // Greedy, in preference order: a group is kept when the exact render still fits. A group whose lines alone
  // cannot fit is skipped without rendering; re-rendering for every group made 20 KB of one-line groups
  // cost 1.5 ms (quadratic), this keeps it linear.
  const chosen: Array<{ index: number; entries: GrepEntry[] }> = [];
  let usedChars = render(chosen).length;
  for (const index of order) {
    const entries = groups[index]!.entries;
    let lowerBound = 0;
    for (const e of entries) {
      lowerBound += 1 + clean(e.line).length;
      if (usedChars + lowerBound > maxChars) break;
    }
    if (usedChars + lowerBound > maxChars) continue;
    const candidate = [...chosen, { index, entries }];
    const length = render(candidate).length;
    if (length <= maxChars) {
      chosen.push(candidate[candidate.length - 1]!);
      usedChars = length;
    }
  }
  if (chosen.length === 0 && order.length > 0) {
    // Not one group fits whole: as many lines of the best group as fit, from its first preferred match.
    const group = groups[order[0]!]!.entries;
    const firstPreferred = group.findIndex(hasNeedle);
    const from = Math.max(0, firstPreferred - 1);
    const fits = (n: number): boolean => render([{ index: 0, entries: group.slice(from, from + n) }]).length <= maxChars;
    // Binary search for the most lines that fit: a group can hold thousands of lines.
    let lo = 1;
    let hi = group.length - from;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (fits(mid)) lo = mid;
      else hi = mid - 1;
    }
    chosen.push({ index: 0, entries: group.slice(from, from + lo) });
  }
  return render(chosen);
}
