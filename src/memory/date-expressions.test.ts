import { describe, expect, it } from 'vitest';
import { dateExpressions, inDateRanges, parseDateRanges } from './date-expressions.js';

const DAY = 24 * 3600 * 1000;

describe('parseDateRanges', () => {
  it('reads a day in the shapes questions use, widened by a day each side', () => {
    const nov9 = Date.UTC(2022, 10, 9);
    for (const q of ['What dish did Nate make on 9 November, 2022?', 'on November 9, 2022', 'on the 9th of November 2022', 'on 2022-11-09', 'Nov. 9, 2022']) {
      expect(parseDateRanges(q), q).toEqual([{ fromMs: nov9 - DAY, toMs: nov9 + 2 * DAY }]);
    }
  });

  it('reads a month, and a day does not count again as its month', () => {
    expect(parseDateRanges('What event is Nate organizing in June 2022?')).toEqual([{ fromMs: Date.UTC(2022, 5, 1), toMs: Date.UTC(2022, 6, 1) }]);
    expect(parseDateRanges('on 9 November, 2022 and in May 2023')).toHaveLength(2);
  });

  it('finds nothing in relative or incomplete dates; a day that does not exist counts as its month', () => {
    expect(parseDateRanges('what did she do last week?')).toEqual([]);
    expect(parseDateRanges('in June')).toEqual([]);
    expect(parseDateRanges('the 2022 release')).toEqual([]);
    expect(parseDateRanges('on 31 June 2022')).toEqual([{ fromMs: Date.UTC(2022, 5, 1), toMs: Date.UTC(2022, 6, 1) }]);
    expect(parseDateRanges('on 2022-13-01')).toEqual([]);
  });
});

describe('inDateRanges', () => {
  it('is inclusive at the start and exclusive at the end', () => {
    const [june] = parseDateRanges('June 2022');
    expect(inDateRanges(Date.UTC(2022, 5, 1), [june!])).toBe(true);
    expect(inDateRanges(Date.UTC(2022, 6, 1), [june!])).toBe(false);
    expect(inDateRanges(Date.UTC(2022, 5, 15), [])).toBe(false);
  });
});

describe('dateExpressions', () => {
  it('gives each absolute date with its place in the text, the longer shape once', () => {
    const text = 'What happened on 9 November, 2022 and in June 2023?';
    const found = dateExpressions(text);
    expect(found.map((d) => text.slice(d.start, d.end))).toEqual(['9 November, 2022', 'June 2023']);
    expect(found[1]!.range).toEqual({ fromMs: Date.UTC(2023, 5, 1), toMs: Date.UTC(2023, 6, 1) });
  });
});
