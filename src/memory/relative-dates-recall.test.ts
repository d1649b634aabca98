import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../engine.js';

// Relative dates end to end on a real SQLite store: ingest indexes what "yesterday" means, recall finds the turn.

let dir: string;
let mem: Engram | undefined;
afterEach(async () => {
  await mem?.close();
  mem = undefined;
  rmSync(dir, { recursive: true, force: true });
});

const open = async (relativeDates?: boolean): Promise<Engram> => {
  dir = mkdtempSync(join(tmpdir(), 'engram-reldates-'));
  mem = await openEngram({ db: join(dir, 'engram.db'), ...(relativeDates !== undefined ? { ingest: { relativeDates } } : {}) });
  return mem;
};

// Monday 15 May 2023 and a month later.
const MAY_15 = Date.UTC(2023, 4, 15, 13, 56);
const JUNE_20 = Date.UTC(2023, 5, 20, 10, 0);

describe('relative dates in recall (issue #13)', () => {
  it('finds a turn that says "yesterday" by the date it means, and points at that exact turn', async () => {
    const m = await open();
    const [, race] = await m.append('chat', [
      { kind: 'user', ts: MAY_15 - 60_000, content: 'Melanie: How was your weekend?' },
      { kind: 'assistant', ts: MAY_15, content: 'Caroline: I ran a charity race yesterday, it was great!' },
      { kind: 'user', ts: JUNE_20, content: 'Melanie: I went to a charity gala on Saturday.' },
    ]);
    const r = await m.recall('What did Caroline do on 14 May 2023?', { retriever: 'fts', logRecall: false });
    expect(r.hits[0]!.eventId).toBe(race!.record.id);
    expect(r.hits[0]!.excerpt).toContain('yesterday');
    expect(r.hits[0]!.excerpt).not.toContain('14 may');
  });

  it('does not index the dates when ingest is told not to', async () => {
    const m = await open(false);
    await m.append('chat', [{ kind: 'assistant', ts: MAY_15, content: 'Caroline: I ran a charity race yesterday!' }]);
    expect((await m.recall('14 May 2023', { retriever: 'fts', logRecall: false })).hits).toEqual([]);
  });

  it('leaves the date boost to when a turn was said, not the dates it speaks of', async () => {
    const m = await open();
    const [said, spoke] = await m.append('chat', [
      // Said in April about April; said on 15 May about last month: both resolve into April 2023.
      { kind: 'user', ts: Date.UTC(2023, 3, 10), content: 'Melanie: the pottery class is fun' },
      { kind: 'user', ts: MAY_15, content: 'Caroline: last month I started a pottery class too' },
    ]);
    const hits = async (dateBoost: number) =>
      (await m.recall('pottery class in April 2023', { retriever: 'fts', logRecall: false, recencyWeight: 0, dateBoost, speakerBoost: 0 })).hits;
    const relevanceOf = (hs: Awaited<ReturnType<typeof hits>>, id: string): number => hs.find((h) => h.eventId === id)!.relevance;
    const off = await hits(0);
    const on = await hits(0.5);
    // Only the April turn is preferred: the May turn that speaks of April has its relevance divided by 1.5.
    expect(relevanceOf(on, spoke!.record.id) / relevanceOf(on, said!.record.id)).toBeCloseTo(relevanceOf(off, spoke!.record.id) / relevanceOf(off, said!.record.id) / 1.5, 3);
  });
});
