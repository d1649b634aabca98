import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claudeCodeTranscript } from './test-support.js';

/** The built CLI, as a user runs it after `npm ci` (test/global-setup.ts builds dist/ first). */
const BIN = resolve('bin/engram.js');
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-needle-cli-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function engram(args: string[]) {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    cwd: dir,
    env: { ...process.env, ENGRAM_DB: '', ENGRAM_PG_URL: '', ENGRAM_LLM_URL: '' },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('engram bench needle (built CLI)', () => {
  it('runs a reduced quick run and prints per-condition fractions after the last cycle as JSON', () => {
    // Smaller than --quick (hidden flags) so CI machines finish it in seconds.
    const r = engram(['bench', 'needle', '--quick', '--traces', '1', '--needles-per-type', '1', '--json', '--out', 'results']);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(Object.keys(report.conditions).sort()).toEqual(['dag', 'engram', 'engram-fts', 'narrative', 'truncation']);
    for (const figures of Object.values(report.conditions) as Array<Record<string, unknown>>) {
      for (const key of ['oneHop', 'twoHop', 'falseRecall']) {
        expect(figures[key]).toBeGreaterThanOrEqual(0);
        expect(figures[key]).toBeLessThanOrEqual(1);
      }
    }
    expect(report.conditions.narrative.isSimulation).toBe(true);
    expect(report.conditions.engram.isSimulation).toBe(false);
    expect(report.config).toMatchObject({ traces: 1, needlesPerType: 1, cycles: [1, 3, 5], windowTokens: 32000, summarizer: 'extractive' });
    // The quick report goes to --out under its own name, never over the committed needle.md.
    for (const file of ['needle-custom.md', 'needle-custom.json', 'needle-custom-recall.svg', 'needle-custom-false-recall.svg']) {
      expect(existsSync(join(dir, 'results', file))).toBe(true);
    }
    expect(readFileSync(join(dir, 'results', 'needle-custom.md'), 'utf8')).toContain('simulation: extractive summarizer');
  });

  it('replays a Claude Code transcript and probes it', () => {
    writeFileSync(join(dir, 'session.jsonl'), claudeCodeTranscript());
    const r = engram(['bench', 'needle', '--replay', 'session.jsonl', '--window', '4000', '--cycles', '1,2', '--embedder', 'none', '--json', '--out', 'replay']);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.format).toBe('claude-code');
    expect(report.probes.length).toBeGreaterThanOrEqual(5);
    expect(report.conditions['engram-fts']).toMatchObject({ checkpoint: 2, oneHop: 1 });
    expect(existsSync(join(dir, 'replay', 'needle-replay.md'))).toBe(true);
  });

  it('names the bad flag and exits 2', () => {
    const r = engram(['bench', 'needle', '--cycles', 'x']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--cycles');
  });
});
