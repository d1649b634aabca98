import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mergeScaleSections, readPreviousScaleReport, type ScaleSections } from './scale-report-merge.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-scale-report-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const legacyMd = `# Scale

## Hybrid / vectors

<!-- Filled by bench/scale-vectors.ts (runScaleVectors), another part of issue #14. -->
| hybrid | row |

## Notes

- PostgreSQL ran on 100,000 events, not 1,000,000.
`;

function writeLegacy(): { json: string; md: string } {
  const json = join(dir, 'scale.json');
  const md = join(dir, 'scale.md');
  writeFileSync(
    json,
    JSON.stringify({
      when: '2026-11-25T19:50:52.264Z',
      args: { parts: ['fts', 'cli', 'hybrid'] },
      classes: [{ queryClass: 'rare term' }],
      cli: { events: 1_000_000 },
      hybrid: { rows: 1 },
      notes: ['PostgreSQL ran on 100,000 events, not 1,000,000.', 'Ingest was not measured: reused.'],
    }),
  );
  writeFileSync(md, legacyMd);
  return { json, md };
}

describe('scale report merge', () => {
  it('keeps the parts a run leaves out, with the run that measured them', () => {
    const { json, md } = writeLegacy();
    const previous = readPreviousScaleReport(json, md)!;
    const current: ScaleSections<unknown, unknown, unknown> = {
      classes: [],
      ingest: undefined,
      cli: { events: 1_000_000, fresh: true },
      hybrid: undefined,
      notes: {},
      measured: { cli: { when: 'now', command: '--parts cli' } },
    };
    const merged = mergeScaleSections(current, ['cli'], previous);
    expect(merged.classes).toEqual([{ queryClass: 'rare term' }]);
    expect(merged.cli).toEqual({ events: 1_000_000, fresh: true });
    expect(merged.hybrid).toEqual({ markdown: '| hybrid | row |', json: { rows: 1 } });
    expect(merged.measured.fts?.when).toBe('2026-11-25T19:50:52.264Z');
    expect(merged.measured.cli).toEqual({ when: 'now', command: '--parts cli' });
    expect(merged.notes.fts).toEqual(['PostgreSQL ran on 100,000 events, not 1,000,000.']);
    expect(merged.notes.ingest).toEqual(['Ingest was not measured: reused.']);
  });

  it('keeps the full-text rows and notes of a backend the run left out, in their place, naming the run that measured them', () => {
    const json = join(dir, 'scale.json');
    const fts = { when: 'then', command: '--backends sqlite,postgres --parts fts', loadAverage: 1.1 };
    const classes = [
      { backend: 'sqlite', queryClass: 'phrase', p95: 40 },
      { backend: 'postgres', queryClass: 'phrase', p95: 85 },
    ];
    writeFileSync(json, JSON.stringify({ when: 'then', args: { parts: ['fts'] }, classes, measured: { fts }, notes: { fts: ['sqlite: caught up 5 events.', 'postgres: caught up 2 events.'] } }));
    const previous = readPreviousScaleReport(json, join(dir, 'none.md'));
    const current: ScaleSections<unknown, unknown, unknown> = {
      classes: [{ backend: 'postgres', queryClass: 'phrase', p95: 45 }],
      ingest: undefined,
      cli: undefined,
      hybrid: undefined,
      notes: { fts: ['PostgreSQL ran on 100,000 events.'] },
      measured: { fts: { when: 'now', command: '--backends postgres --parts fts' } },
    };
    const merged = mergeScaleSections(current, ['fts'], previous, ['postgres']);
    expect(merged.classes).toEqual([classes[0], { backend: 'postgres', queryClass: 'phrase', p95: 45 }]);
    expect(merged.measured.fts).toEqual({ when: 'now', command: '--backends postgres --parts fts' });
    expect(merged.notes.fts).toEqual([
      'PostgreSQL ran on 100,000 events.',
      'sqlite: caught up 5 events.',
      'Full-text rows of sqlite kept from the run that measured them (then, `--backends sqlite,postgres --parts fts`, load average 1.1); this run measured postgres.',
    ]);
    // Every backend measured again: nothing kept.
    expect(mergeScaleSections(current, ['fts'], previous, ['sqlite', 'postgres']).classes).toEqual(current.classes);

    // A second run of postgres alone: sqlite's rows still come from the first run, and its note still says so.
    const json2 = join(dir, 'scale2.json');
    writeFileSync(json2, JSON.stringify({ when: 'now', args: { parts: ['fts'] }, classes: merged.classes, measured: merged.measured, notes: merged.notes }));
    const again = mergeScaleSections(
      { ...current, measured: { fts: { when: 'later', command: '--backends postgres --parts fts' } } },
      ['fts'],
      readPreviousScaleReport(json2, join(dir, 'none.md')),
      ['postgres'],
    );
    expect(again.notes.fts).toContain(
      'Full-text rows of sqlite kept from the run that measured them (then, `--backends sqlite,postgres --parts fts`, load average 1.1); this run measured postgres.',
    );
    expect(again.notes.fts!.filter((n) => n.startsWith('Full-text rows of'))).toHaveLength(1);
  });

  it('replaces a part the run measured, even with nothing', () => {
    const { json, md } = writeLegacy();
    const merged = mergeScaleSections({ classes: [], ingest: undefined, cli: undefined, hybrid: undefined, notes: {}, measured: {} }, ['fts', 'cli', 'hybrid'], readPreviousScaleReport(json, md));
    expect(merged.classes).toEqual([]);
    expect(merged.cli).toBeUndefined();
    expect(merged.hybrid).toBeUndefined();
  });

  it('keeps the http and cache parts of the previous report when a run leaves them out, and replaces them when it runs them', () => {
    const json = join(dir, 'scale.json');
    const http = { markdown: '| http |', json: { runs: [] } };
    const cache = { markdown: '| cache |', json: { rows: [] } };
    writeFileSync(json, JSON.stringify({ when: 'then', args: { parts: ['http', 'cache'] }, http, cache, measured: { http: { when: 'then', command: '--parts http,cache' } } }));
    const previous = readPreviousScaleReport(json, join(dir, 'none.md'));
    const empty = { classes: [], ingest: undefined, cli: undefined, hybrid: undefined, notes: {}, measured: {} };
    const kept = mergeScaleSections(empty, ['cli'], previous);
    expect(kept.http).toEqual(http);
    expect(kept.cache).toEqual(cache);
    expect(kept.measured.http).toEqual({ when: 'then', command: '--parts http,cache' });
    expect(kept.measured.cache?.when).toBe('then');
    const fresh = { markdown: '| new cache |', json: { rows: [1] } };
    const replaced = mergeScaleSections({ ...empty, cache: fresh, measured: { cache: { when: 'now', command: '--parts cache' } } }, ['cache'], previous);
    expect(replaced.cache).toEqual(fresh);
    expect(replaced.http).toEqual(http);
    expect(replaced.measured.cache?.when).toBe('now');
  });

  it('writes the run alone when there is no previous report', () => {
    expect(readPreviousScaleReport(join(dir, 'none.json'), join(dir, 'none.md'))).toBeUndefined();
  });
});
