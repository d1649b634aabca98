import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/interfaces/cli/exit-codes.js';
import { runEngram, type CliRun } from '../fixtures/cli.js';

// Issue #29, item 7, as a user meets it: the demo session stored with the built-in embedder (the default), then
// `engram recall` of a string stored nowhere, of an error code, and of a call that is stored only under another name.

const DEMO = resolve('examples/demo-session.jsonl');
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-recall-match-'));
  expect(engram(['ingest', DEMO]).code).toBe(0);
  const web = join(dir, 'web.jsonl');
  writeFileSync(web, `${JSON.stringify({ kind: 'tool_result', toolName: 'Read', content: "const btn = document.getElementById('pauseBtn');\nbtn.addEventListener('click', onPauseClick);" })}\n`);
  expect(engram(['ingest', web, '--session', 'web']).code).toBe(0);
}, 120_000);
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

function engram(args: string[]): CliRun {
  return runEngram(args, { cwd: dir });
}

describe('engram recall: when nothing matches', () => {
  it('reports no match for xyzzyqwerty on the demo session, with exit 9, on every retriever', () => {
    for (const retriever of [[], ['--retriever', 'fts'], ['--retriever', 'vector']]) {
      const text = engram(['recall', 'xyzzyqwerty', ...retriever]);
      expect(text.code, retriever.join(' ')).toBe(EXIT.NO_MATCH);
      expect(text.stdout).toBe('No event in memory matches "xyzzyqwerty".\n');
      const json = engram(['recall', 'xyzzyqwerty', '--json', ...retriever]);
      expect(json.code).toBe(EXIT.NO_MATCH);
      expect(JSON.parse(json.stdout)).toMatchObject({ match: 'none', hits: [] });
    }
  });

  it('finds an error code exactly, and says how many hits hold the query without calling the rest matches', () => {
    const r = engram(['recall', 'ECONNREFUSED']);
    expect(r.code).toBe(EXIT.OK);
    expect(r.stdout).toMatch(/^Recalled from memory for "ECONNREFUSED": \d+ of \d+ candidate events; \d+ holds? the query's terms \(\d+ exactly\)/);
    expect(r.stdout).not.toContain('matching events');
    const json = JSON.parse(engram(['recall', 'ECONNREFUSED', '--json']).stdout);
    expect(json.match).toBe('exact');
    expect(json.hits[0]).toMatchObject({ isExactMatch: true, coverage: 1 });
  });

  it("does not flag getElementById('pauseBtn') as an exact match for getElementById('pause')", () => {
    const r = engram(['recall', "getElementById('pause')", '--json']);
    const result = JSON.parse(r.stdout);
    expect(result.hits.some((h: { isExactMatch: boolean }) => h.isExactMatch)).toBe(false);
    expect(result.match).not.toBe('exact');
    expect(r.code).toBe(result.match === 'none' ? EXIT.NO_MATCH : EXIT.OK);
  });

  it('prints hits in the order of their printed scores', () => {
    const r = engram(['recall', 'database port configuration']);
    const scores = [...r.stdout.matchAll(/\| score (\d+\.\d+)/g)].map((m) => Number(m[1]));
    expect(scores.length).toBeGreaterThan(2);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
  });
});
