import { describe, expect, it } from 'vitest';
import { IDENTIFIER_PAGE_EVENTS, measureSqliteFloor, renderSqliteFloor } from './sqlite-floor.js';

describe('the SQLite + FTS5 floor of http-load', () => {
  it('measures appends (FTS5 alone, both indexes two ways) and queries on raw stores and sets them beside the targets', () => {
    const floor = measureSqliteFloor({ events: 400, agents: 4, batch: 4, queries: 40 });
    expect(floor).toMatchObject({ events: 400, agents: 4, batch: 4 });
    expect(floor.queries).toBeGreaterThan(40);
    for (const ms of [floor.appendMs, floor.appendBothMs, floor.appendBothPagedMs, floor.ordinaryQueryMs, floor.needleQueryMs]) expect(ms).toBeGreaterThan(0);
    expect(floor.recallMixMs).toBeCloseTo((floor.ordinaryQueryMs + floor.needleQueryMs) / 2, 2);
    const text = renderSqliteFloor({ ...floor, appendMs: 0.3, appendBothMs: 0.5, appendBothPagedMs: 0.42, recallMixMs: 1.85 }, { appendMs: 0.5, recallMs: 2 });
    expect(text).toContain('| append (4 events, one transaction): FTS5 alone | 0.3 | <= 0.5 | 0.2 |');
    expect(text).toContain(`| append: both indexes, the identifier index in pages of ${IDENTIFIER_PAGE_EVENTS} | 0.42 | <= 0.5 | 0.08 |`);
    expect(text).toContain('| append: both indexes, in the append\'s transaction | 0.5 | <= 0.5 | 0 |');
    expect(text).toContain('| recall: the runs\' mix (half each) | 1.85 | <= 2 | 0.15 |');
    // Without the HTTP floor there is no sum.
    expect(text).not.toContain('Under the targets');
  });

  it('adds the HTTP floor to the SQLite one under each target, and says where the sum is over it', () => {
    const floor = { events: 400, agents: 4, batch: 4, appendMs: 0.3, appendBothMs: 0.5, appendBothPagedMs: 0.42, ordinaryQueryMs: 2.4, needleQueryMs: 0.1, recallMixMs: 1.25, queries: 80 };
    const http = {
      agents: 32,
      batch: 4,
      seconds: 5,
      answerBytes: 6000,
      frameworks: [
        { framework: 'node-http' as const, appendMs: 0.1, appends: 1000, recallMs: 0.06, recalls: 2000 },
        { framework: 'hono' as const, appendMs: 0.12, appends: 900, recallMs: 0.07, recalls: 1800 },
      ],
    };
    const text = renderSqliteFloor({ ...floor, http }, { appendMs: 0.5, recallMs: 2 });
    expect(text).toContain('| node:http | 0.1 | 0.06 |');
    expect(text).toContain('| append (4 events): FTS5 alone | 0.3 + 0.1 = 0.4 | <= 0.5 | 0.1 |');
    expect(text).toContain('the identifier index in pages of 200 (as `engram serve` writes it) | 0.42 + 0.1 = 0.52 | <= 0.5 | -0.02 (**over the target**) |');
    expect(text).toContain("| recall: the runs' mix | 1.25 + 0.06 = 1.31 | <= 2 | 0.69 |");
  });
});
