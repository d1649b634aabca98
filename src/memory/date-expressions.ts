/**
 * Absolute dates a question names ("in June 2022", "on 9 November, 2022", "on October 6, 2022", "2023-05-08"),
 * as time ranges to match against the events' own times (issue #13: time expressions matched against the date
 * field). Only absolute dates: a relative one ("last week") needs the time the question was asked, which recall
 * does not know (the caller's `since`/`until` says it). Hand-written for the few shapes that name a day or a
 * month, so a question's date costs one regular expression, not a general date parser's rule set.
 */

export interface DateRange {
  /** Inclusive start, epoch ms (UTC). */
  fromMs: number;
  /** Exclusive end, epoch ms (UTC). */
  toMs: number;
}

const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];
const MONTH = `(${MONTHS.join('|')}|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)\\.?`;
const DAY = '(\\d{1,2})(?:st|nd|rd|th)?';
const YEAR = '((?:19|20)\\d\\d)';
const SHAPES: Array<{ pattern: RegExp; parts: (m: RegExpMatchArray) => { year: string; month: string; day?: string } }> = [
  { pattern: /\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b/gi, parts: (m) => ({ year: m[1]!, month: m[2]!, day: m[3]! }) },
  { pattern: new RegExp(`\\b${DAY}\\s+(?:of\\s+)?${MONTH},?\\s+${YEAR}\\b`, 'gi'), parts: (m) => ({ day: m[1]!, month: m[2]!, year: m[3]! }) },
  { pattern: new RegExp(`\\b${MONTH}\\s+${DAY},?\\s+${YEAR}\\b`, 'gi'), parts: (m) => ({ month: m[1]!, day: m[2]!, year: m[3]! }) },
  { pattern: new RegExp(`\\b${MONTH},?\\s+${YEAR}\\b`, 'gi'), parts: (m) => ({ month: m[1]!, year: m[2]! }) },
];
const DAY_MS = 24 * 3600 * 1000;

/**
 * The day or month ranges of the absolute dates in `text`, in order, without repeats. A day's range is that UTC
 * day widened by a day each side (a turn's time is its session's, and the writer's time zone is unknown); a
 * month's is the month. A day that does not exist (31 June 2022) counts as its month.
 */
export function parseDateRanges(text: string): DateRange[] {
  const out = new Map<string, DateRange>();
  for (const m of dateExpressions(text)) out.set(`${m.range.fromMs}:${m.range.toMs}`, m.range);
  return [...out.values()];
}

/** One absolute date written in a text: where it is (`start` inclusive, `end` exclusive) and its range. */
export interface DateExpression {
  start: number;
  end: number;
  range: DateRange;
}

/** The absolute dates written in `text` ({@link parseDateRanges}), each with its place, in order of the shapes. */
export function dateExpressions(text: string): DateExpression[] {
  const out: DateExpression[] = [];
  for (const shape of SHAPES) {
    for (const m of text.matchAll(shape.pattern)) {
      const start = m.index;
      const end = start + m[0].length;
      // The longer shapes run first; "9 November, 2022" must not also count as "November, 2022".
      if (out.some((d) => start < d.end && end > d.start)) continue;
      const range = toRange(shape.parts(m));
      if (!range) continue;
      out.push({ start, end, range });
    }
  }
  return out;
}

function toRange(p: { year: string; month: string; day?: string }): DateRange | undefined {
  const year = Number(p.year);
  const month = /^\d+$/.test(p.month) ? Number(p.month) - 1 : MONTHS.findIndex((name) => name.startsWith(p.month.toLowerCase().replace(/\.$/, '').slice(0, 3)));
  if (month < 0 || month > 11) return undefined;
  if (p.day === undefined) return { fromMs: Date.UTC(year, month, 1), toMs: Date.UTC(year, month + 1, 1) };
  const day = Number(p.day);
  const ms = Date.UTC(year, month, day);
  if (day < 1 || new Date(ms).getUTCMonth() !== month) return undefined;
  return { fromMs: ms - DAY_MS, toMs: ms + 2 * DAY_MS };
}

/** Whether a time falls in any of the ranges. */
export function inDateRanges(ms: number, ranges: readonly DateRange[]): boolean {
  return ranges.some((r) => ms >= r.fromMs && ms < r.toMs);
}
