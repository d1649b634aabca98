import { describe, expect, it } from 'vitest';
import { planNeedleRun } from './cli-options.js';

describe('planNeedleRun', () => {
  it('runs the full profile by default and names its report needle', () => {
    expect(planNeedleRun({}, '/repo')).toMatchObject({ kind: 'synthetic', profile: 'full', seeds: [1, 2], traces: 50, needlesPerType: 2, windowTokens: 32000, cycles: [1, 3, 5], outDir: '/repo/bench/results', reportName: 'needle', flags: '' });
  });

  it('never lets a quick or custom run overwrite the committed report', () => {
    expect(planNeedleRun({ quick: true }, '/repo')).toMatchObject({ profile: 'quick', seeds: [1], traces: 4, reportName: 'needle-quick', flags: '--quick' });
    expect(planNeedleRun({ seed: '7,8', window: '8192', cycles: '2,4' }, '/repo')).toMatchObject({
      profile: 'custom',
      seeds: [7, 8],
      windowTokens: 8192,
      cycles: [2, 4],
      reportName: 'needle-custom',
      flags: '--seed 7,8 --window 8192 --cycles 2,4',
    });
  });

  it('names a consolidated run\'s report apart and keeps the flag', () => {
    expect(planNeedleRun({ consolidate: true }, '/repo')).toMatchObject({ profile: 'full', consolidate: true, reportName: 'needle-consolidated', flags: '--consolidate' });
    expect(planNeedleRun({ quick: true, consolidate: true }, '/repo')).toMatchObject({ reportName: 'needle-quick-consolidated', flags: '--quick --consolidate' });
    expect(planNeedleRun({}, '/repo')).not.toHaveProperty('consolidate');
  });

  it('plans a replay with its format, session and out directory', () => {
    expect(planNeedleRun({ replay: 'x.jsonl', format: 'claude-code', window: '4000', out: 'tmp' }, '/repo')).toEqual({
      kind: 'replay',
      file: '/repo/x.jsonl',
      format: 'claude-code',
      windowTokens: 4000,
      cycles: [1, 3, 5],
      outDir: '/repo/tmp',
      reportName: 'needle-replay',
    });
  });

  it('names the flag of a bad value', () => {
    expect(() => planNeedleRun({ window: '100' })).toThrow(/--window/);
    expect(() => planNeedleRun({ cycles: '1,x' })).toThrow(/--cycles/);
    expect(() => planNeedleRun({ seed: '-3' })).toThrow(/--seed/);
    expect(() => planNeedleRun({ replay: 'x', format: 'csv' })).toThrow(/--format/);
    expect(() => planNeedleRun({ format: 'jsonl' })).toThrow(/only with --replay/);
    expect(() => planNeedleRun({ needlesPerType: '9' })).toThrow(/--needles-per-type/);
  });
});
