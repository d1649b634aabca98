import { describe, expect, it } from 'vitest';
import { measureSqliteFloor, renderSqliteFloor } from './sqlite-floor.js';

describe('the SQLite + FTS5 floor of http-load', () => {
  it('measures appends and queries on a raw store and sets them beside the targets', () => {
    const floor = measureSqliteFloor({ events: 400, agents: 4, batch: 4, queries: 40 });
    expect(floor).toMatchObject({ events: 400, agents: 4, batch: 4 });
    expect(floor.queries).toBeGreaterThan(40);
    for (const ms of [floor.appendMs, floor.ordinaryQueryMs, floor.needleQueryMs]) expect(ms).toBeGreaterThan(0);
    expect(floor.recallMixMs).toBeCloseTo((floor.ordinaryQueryMs + floor.needleQueryMs) / 2, 2);
    const text = renderSqliteFloor({ ...floor, appendMs: 0.3, recallMixMs: 1.85 }, { appendMs: 0.5, recallMs: 2 });
    expect(text).toContain('| append (4 events, one transaction) | 0.3 | <= 0.5 | 0.2 |');
    expect(text).toContain('| recall: the runs\' mix (half each) | 1.85 | <= 2 | 0.15 |');
  });
});
