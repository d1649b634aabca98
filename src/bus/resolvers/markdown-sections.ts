/**
 * Sections of a markdown document, for `artifact:<name>#sec=<section>` pointers. A section is a heading and
 * its body, up to the next heading of the same or a higher level. Only ATX headings (`## Title`) count;
 * `#` lines inside fenced code blocks are code, not headings. Setext headings (a line underlined with
 * `===` or `---`) are not recognised: specs and agent notes use ATX, and `---` is ambiguous with a rule.
 */

export interface MarkdownHeading {
  /** 1 for `#`, up to 6. */
  level: number;
  /** The heading text, without the `#` marks and closing `#`s. */
  text: string;
  /** GitHub's anchor for the heading, numbered `-1`, `-2` for repeats. */
  slug: string;
  /** 1-based line of the heading. */
  line: number;
}

export interface MarkdownSection {
  heading: MarkdownHeading;
  startLine: number;
  /** The last line of the section, trailing blank lines excluded. */
  endLine: number;
}

const ATX = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;

export function listMarkdownHeadings(text: string): MarkdownHeading[] {
  const lines = text.split('\n');
  const headings: MarkdownHeading[] = [];
  const slugCounts = new Map<string, number>();
  let fence: string | undefined;
  lines.forEach((raw, i) => {
    const line = raw.replace(/\r$/, '');
    const fenceMark = FENCE.exec(line)?.[1];
    if (fence !== undefined) {
      // A fence closes with at least as many of the same character.
      if (fenceMark && fenceMark[0] === fence[0] && fenceMark.length >= fence.length && line.trim() === fenceMark) fence = undefined;
      return;
    }
    if (fenceMark) {
      fence = fenceMark;
      return;
    }
    const m = ATX.exec(line);
    if (!m) return;
    const headingText = (m[2] ?? '').trim();
    const base = slugify(headingText);
    const seen = slugCounts.get(base) ?? 0;
    slugCounts.set(base, seen + 1);
    headings.push({ level: m[1]!.length, text: headingText, slug: seen === 0 ? base : `${base}-${seen}`, line: i + 1 });
  });
  return headings;
}

/**
 * The section `query` names. Tried in order, first heading in document order wins within a step: the exact
 * heading text; the text ignoring case; the slug (`budget-rules`); the text without spaces and punctuation
 * (`BudgetRules`, as the seed's pointers write it); a section number (`4.2` for `4.2 Pointer Schema`).
 */
export function findMarkdownSection(text: string, query: string, headings = listMarkdownHeadings(text)): MarkdownSection | undefined {
  const q = query.trim();
  const lower = q.toLowerCase();
  const compactQuery = compact(q);
  const isNumber = /^\d+(?:\.\d+)*\.?$/.test(q);
  const number = q.replace(/\.$/, '');
  const tests: Array<(h: MarkdownHeading) => boolean> = [
    (h) => h.text === q,
    (h) => h.text.toLowerCase() === lower,
    (h) => h.slug === lower,
    (h) => compactQuery.length > 0 && compact(h.text) === compactQuery,
    (h) => isNumber && new RegExp(`^${number.replace(/\./g, '\\.')}(?:[.):]|\\s|$)`).test(h.text),
  ];
  for (const test of tests) {
    const index = headings.findIndex(test);
    if (index < 0) continue;
    const heading = headings[index]!;
    const next = headings.slice(index + 1).find((h) => h.level <= heading.level);
    const lines = text.split('\n');
    let endLine = next ? next.line - 1 : lines.length - (text.endsWith('\n') ? 1 : 0);
    while (endLine > heading.line && (lines[endLine - 1] ?? '').trim() === '') endLine--;
    return { heading, startLine: heading.line, endLine };
  }
  return undefined;
}

/** GitHub's heading anchors: lowercase, punctuation dropped (letters, digits, `-`, `_` kept), spaces to `-`. */
export function slugify(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function compact(text: string): string {
  return text.toLowerCase().replace(/[^\p{L}\p{N}]/gu, '');
}
