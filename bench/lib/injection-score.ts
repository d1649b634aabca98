/**
 * Whether a piece of memory reached the agent: matching rules shared by the carry-over and session-summaries
 * benches. Everything is matched on normalised text (Unicode NFKC, typographic quotes made plain, markdown quote
 * markers dropped, runs of whitespace as one space, lower case), so line wrapping and quoting style do not count.
 */
import { isAbsolute, relative } from 'node:path';

/** A quote shorter than the whole turn counts when it is at least this long (and at least half the turn). */
export const MIN_EXCERPT_CHARS = 48;
/** An error line counts when its first this-many characters appear (a summary may cut a long line short). */
export const ERROR_PREFIX_CHARS = 60;

export function normalizeText(text: string): string {
  return text
    .normalize('NFKC')
    .replace(/[\u2018\u2019\u201B\u2032]/g, "'")
    .replace(/[\u201C\u201D\u201F\u2033]/g, '"')
    .replace(/^[ \t]*(?:>[ \t]?)+/gm, '')
    .replace(/\s+/g, ' ')
    .trim()
    .toLowerCase();
}

/**
 * Whether `turnText` is quoted in `injectedNormalized` (already {@link normalizeText}ed): the whole turn, or one
 * excerpt of it starting at a word that is at least half the turn and at least {@link MIN_EXCERPT_CHARS}
 * characters long. A turn shorter than that must appear whole: a short excerpt ("I went to the park") could be
 * any turn's.
 */
export function isQuoted(turnText: string, injectedNormalized: string): boolean {
  const turn = normalizeText(turnText);
  if (turn === '' || injectedNormalized === '') return false;
  if (injectedNormalized.includes(turn)) return true;
  const length = Math.max(MIN_EXCERPT_CHARS, Math.ceil(turn.length / 2));
  if (length >= turn.length) return false;
  for (let start = 0; start + length <= turn.length; start++) {
    if (start > 0 && turn[start - 1] !== ' ') continue;
    if (injectedNormalized.includes(turn.slice(start, start + length))) return true;
  }
  return false;
}

/**
 * Events and summaries cited in a text, each once, in order of first mention: events by id (`evt_...`) or by turn
 * (`<session>#<turn>`, from {@link citedTurnRefs}; `engram show` opens either), summaries by id (`sum_...`).
 */
export function citedIds(text: string): { events: string[]; summaries: string[] } {
  const events = new Set<string>();
  const summaries = new Set<string>();
  for (const m of text.matchAll(/\b(evt|sum)_[A-Za-z0-9]+/g)) (m[1] === 'evt' ? events : summaries).add(m[0]);
  for (const r of citedTurnRefs(text)) events.add(`${r.session}#${r.turn}`);
  return { events: [...events], summaries: [...summaries] };
}

/**
 * Events cited by turn: `- #<turn> ...` lines and `[#<turn>]` marks under a line naming their session, the prompt
 * injection's `<day> session <session>:` or the brief's `### Session <session>, <dates> [...]` (a `## ` section
 * heading ends it); each as the session id (or its prefix) and the turn, in order.
 */
export function citedTurnRefs(text: string): Array<{ session: string; turn: number }> {
  const out: Array<{ session: string; turn: number }> = [];
  let session: string | undefined;
  for (const line of text.split('\n')) {
    const group = /^\d{4}-\d{2}-\d{2} session (\S+):$/.exec(line) ?? /^### Session ([^\s,]+), /.exec(line);
    if (group) {
      session = group[1];
      continue;
    }
    if (line.startsWith('## ')) session = undefined;
    if (session === undefined) continue;
    const ref = /^- #(\d+) /.exec(line);
    if (ref) out.push({ session, turn: Number(ref[1]) });
    for (const m of line.matchAll(/\[#(\d+)\]/g)) out.push({ session, turn: Number(m[1]) });
  }
  return out;
}

export interface EvidenceOutcome {
  /** Evidence ids present: quoted or cited. */
  present: string[];
  /** Of those, the ones quoted. */
  quoted: string[];
  /** Of those, the ones cited by an event id. */
  cited: string[];
}

/**
 * Which evidence turns reached the agent: quoted in `injected` ({@link isQuoted}), or one of the turns an event id
 * cited in it maps to (`citedTurnIds`, resolved by the caller through the store).
 */
export function scoreEvidence(evidence: Array<{ id: string; text: string }>, injected: string, citedTurnIds: ReadonlySet<string>): EvidenceOutcome {
  const normalized = normalizeText(injected);
  const out: EvidenceOutcome = { present: [], quoted: [], cited: [] };
  for (const turn of evidence) {
    const isQuote = isQuoted(turn.text, normalized);
    const isCited = citedTurnIds.has(turn.id);
    if (isQuote) out.quoted.push(turn.id);
    if (isCited) out.cited.push(turn.id);
    if (isQuote || isCited) out.present.push(turn.id);
  }
  return out;
}

/**
 * Whether a file path is named in `text`: the path as recorded, or relative to the project root (`src/a.ts` for
 * `/repo/src/a.ts` when the root is `/repo`). Paths are matched as written (case matters), whitespace aside.
 */
export function mentionsPath(path: string, text: string, projectRoot?: string): boolean {
  const haystack = text.replace(/\s+/g, ' ');
  if (haystack.includes(path)) return true;
  if (projectRoot !== undefined && isAbsolute(path)) {
    const rel = relative(projectRoot, path);
    if (rel !== '' && !rel.startsWith('..') && haystack.includes(rel)) return true;
  }
  return false;
}

/** Whether an error line is present in `text`: its first {@link ERROR_PREFIX_CHARS} characters, normalised. */
export function mentionsError(errorLine: string, text: string): boolean {
  const line = normalizeText(errorLine).slice(0, ERROR_PREFIX_CHARS).trim();
  return line !== '' && normalizeText(text).includes(line);
}
