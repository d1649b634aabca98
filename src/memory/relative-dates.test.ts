import { describe, expect, it } from 'vitest';
import { parseDateRanges } from './date-expressions.js';
import { relativeDateWords, resolveRelativeDates, withRelativeDates } from './relative-dates.js';

// Monday 15 May 2023, 13:56 UTC (a LoCoMo session time).
const MONDAY = Date.UTC(2023, 4, 15, 13, 56);
const iso = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

describe('resolveRelativeDates', () => {
  it('resolves yesterday to that day widened by a day each side', () => {
    const [d] = resolveRelativeDates('Yes, I went there yesterday!', MONDAY);
    expect(d!.precision).toBe('day');
    expect([iso(d!.fromMs), iso(d!.toMs)]).toEqual(['2023-05-13', '2023-05-16']);
  });

  it('resolves a named weekday to the one before the event, never the same day', () => {
    const [friday] = resolveRelativeDates('last Friday we painted', MONDAY);
    expect(iso(friday!.fromMs + 24 * 3600 * 1000)).toBe('2023-05-12');
    const [monday] = resolveRelativeDates('last Monday', MONDAY);
    expect(iso(monday!.fromMs + 24 * 3600 * 1000)).toBe('2023-05-08');
    const [next] = resolveRelativeDates('next Tuesday', MONDAY);
    expect(iso(next!.fromMs + 24 * 3600 * 1000)).toBe('2023-05-16');
  });

  it('resolves counts of weeks, months and years ago, in words or digits', () => {
    const dates = resolveRelativeDates('two weeks ago, 3 months ago and a year ago', MONDAY);
    expect(dates.map((d) => d.precision)).toEqual(['week', 'month', 'year']);
    expect(iso(dates[0]!.fromMs)).toBe('2023-04-28');
    expect([iso(dates[1]!.fromMs), iso(dates[1]!.toMs)]).toEqual(['2023-02-01', '2023-03-01']);
    expect(iso(dates[2]!.fromMs)).toBe('2022-01-01');
  });

  it('resolves last and next month and year as calendar units', () => {
    const [last, next, year] = resolveRelativeDates('Last month I quit; next month I start; last year was hard', MONDAY);
    expect([iso(last!.fromMs), iso(last!.toMs)]).toEqual(['2023-04-01', '2023-05-01']);
    expect(iso(next!.fromMs)).toBe('2023-06-01');
    expect([iso(year!.fromMs), iso(year!.toMs)]).toEqual(['2022-01-01', '2023-01-01']);
  });

  it('resolves weekends back to their Saturday and Sunday', () => {
    const [last] = resolveRelativeDates('last weekend', MONDAY);
    expect([iso(last!.fromMs), iso(last!.toMs)]).toEqual(['2023-05-13', '2023-05-15']);
    const [two] = resolveRelativeDates('two weekends ago', MONDAY);
    expect(iso(two!.fromMs)).toBe('2023-05-06');
    const [next] = resolveRelativeDates('next weekend', MONDAY);
    expect(iso(next!.fromMs)).toBe('2023-05-20');
  });

  it('finds every form in any case (the one scan for a word they need ignores case as they do)', () => {
    const text = 'YESTERDAY; Last NIGHT; TOMORROW; Two WEEKS Ago; in a Few MONTHS; last FRIDAY; next Weekend; past YEAR';
    const dates = resolveRelativeDates(text, MONDAY);
    expect(dates).toEqual(resolveRelativeDates(text.toLowerCase(), MONDAY));
    expect(dates.length).toBe(4);
    expect(resolveRelativeDates('In 2 Months', MONDAY).map((d) => d.precision)).toEqual(['month']);
    expect(resolveRelativeDates('SUNDAY? last sunday', MONDAY).map((d) => d.precision)).toEqual(['day']);
  });

  it('finds nothing in text without relative dates, and nothing without a valid time', () => {
    expect(resolveRelativeDates('I love painting sunsets', MONDAY)).toEqual([]);
    expect(resolveRelativeDates('yesterday', Number.NaN)).toEqual([]);
  });
});

describe('relativeDateWords', () => {
  it('names a day, a month and a year in the words a question uses', () => {
    expect(relativeDateWords('yesterday', MONDAY)).toBe('14 may 2023');
    expect(relativeDateWords('last month', MONDAY)).toBe('april 2023');
    expect(relativeDateWords('last year', MONDAY)).toBe('2022');
    expect(withRelativeDates('camping trip', 'we went yesterday', MONDAY)).toBe('camping trip\n14 may 2023');
    expect(withRelativeDates('camping trip', 'we went there', MONDAY)).toBe('camping trip');
  });
});
