import type { DateRange } from './date-expressions.js';

/**
 * Relative dates an event's text names ("yesterday", "last Friday", "two weeks ago", "last year", "next month"),
 * resolved against the event's own time (issue #13). In a conversation the speaker says "Yes, last Tuesday!" and a
 * later question asks "what did Caroline do on 2 May, 2023?": the turn holds no date, but its session date and the
 * expression name one. Ingest indexes the resolved dates as words in the low-weight context column (the turn's
 * own text stays as written), so full-text finds the turn by the date. (Counting them in recall's date boost as
 * well was measured and retired: docs/recall.md, "Retired techniques".) Hand-written for the shapes people use in
 * chat, like date-expressions.ts: one pass of a few regular expressions per event, no general date parser.
 */

/** A resolved expression: the range it names and how precise it is (what is indexed for it). */
export interface RelativeDate extends DateRange {
  precision: 'day' | 'week' | 'month' | 'year';
}

const DAY_MS = 24 * 3600 * 1000;
const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];
const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];
const COUNTS: Record<string, number> = {
  a: 1,
  an: 1,
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  'a couple of': 2,
  'a couple': 2,
  couple: 2,
  'a few': 3,
  few: 3,
};
const COUNT = `(\\d{1,2}|a couple of|a couple|couple|a few|few|an?|one|two|three|four|five|six|seven|eight|nine|ten)`;
const UNIT = '(day|week|weekend|month|year)s?';

/** Most expressions resolved per event: a chat turn names one or two; a pasted diary must not flood the index. */
export const MAX_RELATIVE_DATES = 4;

const PATTERNS: Array<{ pattern: RegExp; resolve: (m: RegExpMatchArray, day: number) => RelativeDate | undefined }> = [
  { pattern: /\b(yesterday|last night)\b/gi, resolve: (_m, day) => dayRange(day - 1) },
  { pattern: /\btomorrow\b/gi, resolve: (_m, day) => dayRange(day + 1) },
  { pattern: new RegExp(`\\b${COUNT}\\s+${UNIT}\\s+ago\\b`, 'gi'), resolve: (m, day) => ago(count(m[1]!), m[2]!.toLowerCase(), day) },
  { pattern: new RegExp(`\\bin\\s+${COUNT}\\s+${UNIT}\\b`, 'gi'), resolve: (m, day) => ago(-count(m[1]!), m[2]!.toLowerCase(), day) },
  {
    pattern: new RegExp(`\\b(last|past|previous|next|this coming)\\s+(${WEEKDAYS.join('|')})\\b`, 'gi'),
    resolve: (m, day) => weekday(m[1]!.toLowerCase().startsWith('next') || m[1]!.toLowerCase() === 'this coming' ? 1 : -1, WEEKDAYS.indexOf(m[2]!.toLowerCase()), day),
  },
  {
    pattern: /\b(last|past|previous|next)\s+(week|weekend|month|year)\b/gi,
    resolve: (m, day) => ago(m[1]!.toLowerCase() === 'next' ? -1 : 1, m[2]!.toLowerCase(), day),
  },
];

/**
 * A word every one of {@link PATTERNS} needs (yester*day*, the weekdays and the units, last *night*, *tomorrow*): one
 * scan that most text fails, instead of six (each event's dates are resolved at ingest).
 */
const NAMES_A_DATE = /day|week|month|year|night|tomorrow/i;

/**
 * The dates `text` names relative to `tsMs` (the event's time), in order of appearance, without repeats, at most
 * {@link MAX_RELATIVE_DATES}. A day is widened by a day each side like an absolute date of a question
 * (date-expressions.ts), a week by three days, since "last week" or "two weeks ago" is loose in speech.
 */
export function resolveRelativeDates(text: string, tsMs: number): RelativeDate[] {
  if (!Number.isFinite(tsMs) || !NAMES_A_DATE.test(text)) return [];
  const day = Math.floor(tsMs / DAY_MS);
  const found: Array<{ at: number; end: number; date: RelativeDate }> = [];
  for (const { pattern, resolve } of PATTERNS) {
    for (const m of text.matchAll(pattern)) {
      const at = m.index;
      const end = at + m[0].length;
      if (found.some((f) => at < f.end && end > f.at)) continue;
      const date = resolve(m, day);
      if (date) found.push({ at, end, date });
    }
  }
  const out = new Map<string, RelativeDate>();
  for (const f of found.sort((a, b) => a.at - b.at)) out.set(`${f.date.fromMs}:${f.date.toMs}`, f.date);
  return [...out.values()].slice(0, MAX_RELATIVE_DATES);
}

/**
 * The words indexed for the resolved dates: a day as "7 may 2023", a week as the day at its middle and its month,
 * a month as "may 2023", a year as "2022"; distinct words in order. Empty when the text names no relative date.
 */
export function relativeDateWords(text: string, tsMs: number): string {
  const words: string[] = [];
  for (const d of resolveRelativeDates(text, tsMs)) {
    const mid = new Date(d.precision === 'day' ? d.fromMs + DAY_MS : (d.fromMs + d.toMs - DAY_MS) / 2);
    const month = MONTHS[mid.getUTCMonth()]!;
    const year = String(mid.getUTCFullYear());
    if (d.precision === 'day' || d.precision === 'week') words.push(`${mid.getUTCDate()} ${month} ${year}`);
    else if (d.precision === 'month') words.push(`${month} ${year}`);
    else words.push(year);
  }
  return [...new Set(words)].join(' ');
}

/** The context column's text with the event's resolved relative dates on a line of their own (none: unchanged). */
export function withRelativeDates(context: string, text: string, tsMs: number): string {
  const dates = relativeDateWords(text, tsMs);
  if (dates.length === 0) return context;
  return context.length > 0 ? `${context}\n${dates}` : dates;
}

function count(word: string): number {
  const lower = word.toLowerCase().replace(/\s+/g, ' ');
  return /^\d+$/.test(lower) ? Number(lower) : (COUNTS[lower] ?? 1);
}

function dayRange(day: number): RelativeDate {
  return { fromMs: (day - 1) * DAY_MS, toMs: (day + 2) * DAY_MS, precision: 'day' };
}

/** `n` units before the day (after it when `n` is negative). */
function ago(n: number, unit: string, day: number): RelativeDate | undefined {
  if (n === 0 || Math.abs(n) > 60) return undefined;
  const unitName = unit.replace(/s$/, '');
  if (unitName === 'day') return dayRange(day - n);
  if (unitName === 'week') {
    const mid = day - 7 * n;
    return { fromMs: (mid - 3) * DAY_MS, toMs: (mid + 4) * DAY_MS, precision: 'week' };
  }
  if (unitName === 'weekend') {
    // The Saturday and Sunday of the weekend `n` back: the last weekend strictly before the day is n = 1.
    const weekdayOfDay = (day + 4) % 7; // 1 Jan 1970 was a Thursday (4).
    const lastSaturday = day - ((weekdayOfDay - 6 + 7) % 7 || 7);
    const saturday = n > 0 ? lastSaturday - 7 * (n - 1) : lastSaturday + 7 * -n;
    return { fromMs: saturday * DAY_MS, toMs: (saturday + 2) * DAY_MS, precision: 'week' };
  }
  const date = new Date(day * DAY_MS);
  if (unitName === 'month') {
    const from = Date.UTC(date.getUTCFullYear(), date.getUTCMonth() - n, 1);
    return { fromMs: from, toMs: Date.UTC(date.getUTCFullYear(), date.getUTCMonth() - n + 1, 1), precision: 'month' };
  }
  if (unitName === 'year') {
    const year = date.getUTCFullYear() - n;
    return { fromMs: Date.UTC(year, 0, 1), toMs: Date.UTC(year + 1, 0, 1), precision: 'year' };
  }
  return undefined;
}

/** The named weekday before the day (direction -1) or after it (1), never the day itself. */
function weekday(direction: 1 | -1, target: number, day: number): RelativeDate | undefined {
  if (target < 0) return undefined;
  const weekdayOfDay = (day + 4) % 7;
  const back = (weekdayOfDay - target + 7) % 7 || 7;
  const forward = (target - weekdayOfDay + 7) % 7 || 7;
  return dayRange(direction < 0 ? day - back : day + forward);
}
