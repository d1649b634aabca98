/**
 * A summary read beside the raw events it was made from: the lines that only repeat what the reader already has
 * verbatim are collapsed into those events. A summary is a derived view; when its source event is among the
 * recall's hits, the event is the better copy (exact, with provenance), and the summary's repetition adds no fact:
 * it only makes the repeated words look common, and a look-alike elsewhere look as likely. What the hits do not
 * hold stays: the header (what the summary covers), decisions of events not recalled, every other sentence.
 *
 * A line is collapsed when it cites an event among the hits (a decision line's `[evt_...]`), or when its text
 * (after a `Decision: ` prefix and its links) is quoted verbatim in a hit's excerpt. Lines that are short (an
 * `Identifiers:` list, a fragment) are never matched by text.
 */

/** What the reader already has: a recalled event's id and the excerpt shown for it. */
export interface RecalledEvidence {
  eventId: string;
  excerpt: string;
}

export interface CollapsedSummary {
  /** The summary's text without the collapsed lines, and one line that names the events they were folded into. */
  text: string;
  /** Lines left out. */
  collapsed: number;
  /** The recalled events those lines repeat (each once, in order of first use). */
  intoEventIds: string[];
}

/** Shortest line text matched against the hits' excerpts: shorter lines are too generic to call a quotation. */
export const MIN_QUOTED_CHARS = 24;

const CITED_ID = /\[(evt_[0-9a-z]{26})\]\s*$/;
const LINKS = /(?:\s\((?:replaces|replaced by) evt_[0-9a-z]{26}\))+/g;

/** The summary `text` with the lines that repeat `hits` collapsed into them. The first line (the header) always stays. */
export function collapseIntoRecalled(text: string, hits: readonly RecalledEvidence[]): CollapsedSummary {
  const lines = text.split('\n');
  if (hits.length === 0 || lines.length <= 1) return { text, collapsed: 0, intoEventIds: [] };
  const ids = new Set(hits.map((h) => h.eventId));
  const excerpts = hits.map((h) => ({ id: h.eventId, text: squash(h.excerpt) }));
  const kept: string[] = [lines[0]!];
  const into: string[] = [];
  let collapsed = 0;
  for (const line of lines.slice(1)) {
    const target = quotedIn(line, ids, excerpts);
    if (target === null) {
      kept.push(line);
      continue;
    }
    collapsed++;
    if (!into.includes(target)) into.push(target);
  }
  if (collapsed === 0) return { text, collapsed: 0, intoEventIds: [] };
  kept.push(`(${collapsed} line${collapsed === 1 ? '' : 's'} left out: quoted in the recalled events ${into.join(', ')})`);
  return { text: kept.join('\n'), collapsed, intoEventIds: into };
}

/** The recalled event a summary line repeats, or null. */
function quotedIn(line: string, ids: ReadonlySet<string>, excerpts: ReadonlyArray<{ id: string; text: string }>): string | null {
  const cited = CITED_ID.exec(line)?.[1];
  if (cited !== undefined && ids.has(cited)) return cited;
  const body = squash(line.replace(CITED_ID, '').replace(LINKS, '').replace(/^Decision:\s*/, ''));
  if (body.length < MIN_QUOTED_CHARS) return null;
  return excerpts.find((e) => e.text.includes(body))?.id ?? null;
}

/** Whitespace runs as one space: an excerpt is quoted with `> ` line prefixes and the summary joins lines. */
function squash(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}
