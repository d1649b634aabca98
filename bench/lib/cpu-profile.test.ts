import { describe, expect, it } from 'vitest';
import { profileWindow, shortUrl, summarizeCpuProfile, type CpuProfile } from './cpu-profile.js';

const frame = (functionName: string, url: string, lineNumber = 0) => ({ functionName, url, lineNumber });

describe('summarizeCpuProfile', () => {
  const profile: CpuProfile = {
    nodes: [
      { id: 1, callFrame: frame('(root)', '') },
      { id: 2, callFrame: frame('compact', 'file:///repo/src/context/compactor.ts', 9) },
      { id: 3, callFrame: frame('count', 'file:///repo/node_modules/gpt-tokenizer/cjs/x.js', 4) },
      { id: 4, callFrame: frame('', 'file:///repo/src/context/compactor.ts', 30) },
      { id: 5, callFrame: frame('(garbage collector)', '') },
    ],
    samples: [2, 3, 3, 4, 5, 2],
    timeDeltas: [1000, 2000, 2000, 500, 1500, 1000],
    startTime: 0,
    endTime: 8000,
  };

  it('charges each sample its time delta and ranks functions and files by self time', () => {
    const s = summarizeCpuProfile(profile);
    expect(s.totalMs).toBe(8);
    expect(s.functions.map((f) => [f.name, f.selfMs])).toEqual([
      ['count (node_modules/gpt-tokenizer/cjs/x.js:5)', 4],
      ['compact (src/context/compactor.ts:10)', 2],
      ['(garbage collector)', 1.5],
      ['(anonymous) (src/context/compactor.ts:31)', 0.5],
    ]);
    expect(s.files.map((f) => [f.name, f.selfMs, f.share])).toEqual([
      ['node_modules/gpt-tokenizer/cjs/x.js', 4, 0.5],
      ['src/context/compactor.ts', 2.5, 2.5 / 8],
      ['(garbage collector)', 1.5, 1.5 / 8],
    ]);
  });

  it('falls back to hit counts spread over the duration when there are no samples', () => {
    const s = summarizeCpuProfile({ ...profile, samples: undefined, timeDeltas: undefined, nodes: profile.nodes.map((n) => ({ ...n, hitCount: n.id === 2 ? 3 : n.id === 3 ? 1 : 0 })) });
    expect(s.functions.map((f) => [f.name, f.selfMs])).toEqual([
      ['compact (src/context/compactor.ts:10)', 6],
      ['count (node_modules/gpt-tokenizer/cjs/x.js:5)', 2],
    ]);
  });

  it('keeps the top entries only', () => {
    expect(summarizeCpuProfile(profile, 1).functions).toHaveLength(1);
  });

  it('keeps only the samples stamped inside a window of the profile clock', () => {
    // Sample times from startTime 100: 1100, 3100, 5100, 5600, 7100, 8100.
    const w = profileWindow({ ...profile, startTime: 100, endTime: 8100 }, 3000, 5600);
    expect(w.samples).toEqual([3, 3, 4]);
    expect(w.timeDeltas).toEqual([2000, 2000, 500]);
    expect([w.startTime, w.endTime]).toEqual([3000, 5600]);
    expect(summarizeCpuProfile(w).functions.map((f) => [f.name, f.selfMs])).toEqual([
      ['count (node_modules/gpt-tokenizer/cjs/x.js:5)', 4],
      ['(anonymous) (src/context/compactor.ts:31)', 0.5],
    ]);
  });
});

describe('shortUrl', () => {
  it('shortens project, dependency and node URLs', () => {
    expect(shortUrl('file:///work/main/src/memory/recall.ts')).toBe('src/memory/recall.ts');
    expect(shortUrl('file:///work/main/node_modules/a/node_modules/b/index.js')).toBe('node_modules/b/index.js');
    expect(shortUrl('node:internal/fs/utils')).toBe('node:internal/fs/utils');
    expect(shortUrl('')).toBe('');
  });
});
