import { describe, expect, it } from 'vitest';
import { cliPhases } from './cli-start-profile.js';
import type { CpuProfile } from './cpu-profile.js';
import { cacheTargetRows, httpTargetRows, hybridTargetRows } from './scale-parts.js';

describe('scale report target rows', () => {
  it('puts each target of issue #14 beside the figure its part measured, with the verdict', () => {
    const hybrid = hybridTargetRows({
      rows: [
        { backend: 'sqlite', events: 1_000_000, hybrid: { exact: { p95: 1352 }, fast: { p95: 79.5 } }, recallAt10: 0.95 },
        { backend: 'postgres', events: 100_000, hybrid: { exact: { p95: 900 }, fast: { p95: 151 } }, recallAt10: 0.9 },
      ],
    });
    expect(hybrid).toHaveLength(2);
    expect(hybrid[0]).toContain('< 80 ms | 79.5 ms');
    expect(hybrid[0]).toMatch(/\| met \|$/);
    expect(hybrid[1]).toContain('< 150 ms | 151 ms');
    expect(hybrid[1]).toContain('**not met**');

    const run = { backend: 'sqlite', agents: 32, appendPerSec: 2100, appendP95Ms: 19, recallPerSec: 499, recallP95Ms: 40, errors: 0, exactlyOnce: true };
    const http = httpTargetRows({ runs: [{ ...run, agents: 8 }, run] });
    expect(http).toHaveLength(1); // the target is at 32 agents
    expect(http[0]).toContain('2,100 / 499 req/s, p95 19 / 40 ms');
    expect(http[0]).toContain('**not met**'); // recalls below 500/s

    // Issue #32's per-core rows, where the run has its server CPU per request.
    const perCore = httpTargetRows({ runs: [{ ...run, mode: 'recall', serverMsPerRequest: 1.8, storeEvents: 15_000 }, { ...run, mode: 'append', serverMsPerRequest: 0.89 }] });
    expect(perCore).toHaveLength(4);
    expect(perCore[1]).toBe('| `engram serve` server CPU per recall, 32 agents (sqlite, 15,000 events; issue #32, per core) | <= 2 ms (500/s per core) | 1.8 ms (556/s per core) | met |');
    expect(perCore[3]).toContain('<= 0.5 ms (2,000/s per core) | 0.89 ms (1,124/s per core) | **not met** |');

    const cache = cacheTargetRows({
      rows: [
        { source: 'synthetic', window: 8192, packs: 299, compactions: 10, cacheReadAllTurns: 0.7, cacheReadTokenWeighted: 0.714 },
        { source: 'synthetic', window: 16384, packs: 299, compactions: 5, cacheReadAllTurns: 0.8 },
        { source: 'synthetic', window: 32768, packs: 299, compactions: 2, cacheReadAllTurns: 0.897, cacheReadTokenWeighted: 0.928 },
      ],
    });
    // Judged per pack (the stricter figure) even where the token-weighted share is above the target.
    expect(cache).toEqual([
      '| modelled prompt-cache read over all turns, 8,192 window (synthetic) | >= 70.0 % | 70.0 % per pack (token-weighted 71.4 %) | met |',
      '| modelled prompt-cache read over all turns, 32,768 window (synthetic) | >= 90.0 % | 89.7 % per pack (token-weighted 92.8 %) | **not met** |',
    ]);
  });

  it('lists no rows for a part that was never measured', () => {
    expect(hybridTargetRows(undefined)).toEqual([]);
    expect(httpTargetRows(null)).toEqual([]);
    expect(cacheTargetRows({})).toEqual([]);
  });
});

describe('CLI start profile by phase', () => {
  it('charges each sample to the innermost frame that names a phase', () => {
    const frame = (id: number, functionName: string, url: string, children: number[] = [], lineNumber = 10) => ({ id, callFrame: { functionName, url, lineNumber }, children });
    const profile = {
      nodes: [
        frame(1, '(root)', '', [2, 3, 6, 8]),
        frame(2, 'moduleStrategy', 'node:internal/modules/esm/translators', []),
        frame(3, 'rank', 'file:///x/dist/memory/recall.js', [4, 5]),
        frame(4, 'searchText', 'file:///x/dist/store/sqlite/sqlite-backend.js', []),
        frame(5, 'encoder', 'file:///x/dist/providers/gpt-tokenizer.js', []),
        frame(6, 'createBuiltinEmbedder', 'file:///x/dist/providers/builtin-embedder.js', [7]),
        frame(7, 'readFileSync', 'node:fs', []),
        frame(8, '(garbage collector)', '', []),
      ],
      samples: [2, 3, 4, 5, 7, 7, 8],
      timeDeltas: [1000, 2000, 3000, 4000, 5000, 5000, 500],
      startTime: 0,
      endTime: 20_500,
    } as unknown as CpuProfile;
    const { totalMs, phases } = cliPhases(profile);
    expect(totalMs).toBe(20.5);
    const ms = Object.fromEntries(phases.map((p) => [p.phase.split(' (')[0], p.ms]));
    expect(ms).toEqual({ 'word vectors': 10, 'token table': 4, search: 3, 'recall: ranking, excerpts, packing': 2, 'module loading': 1, 'garbage collection': 0.5 });
    expect(phases[0]!.phase).toMatch(/^word vectors/); // largest first
  });
});
