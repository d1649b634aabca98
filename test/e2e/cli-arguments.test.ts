import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runEngram } from '../fixtures/cli.js';

const DEMO = resolve('examples/demo-session.jsonl');

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-args-'));
  expect(engram(['ingest', DEMO]).code).toBe(0);
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

function engram(args: string[]) {
  return runEngram(['--embedder', 'none', ...args], { cwd: dir });
}

describe('engram command line: arguments', () => {
  it('prints the version of package.json with --version', () => {
    const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    const r = engram(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(version);
  });

  it('takes a recall query that looks like an option as the query', () => {
    const r = engram(['recall', '--max-retries=7', '--json']);
    expect(r.code).toBe(0);
    const result = JSON.parse(r.stdout) as { query: string; hits: Array<{ turn: number }> };
    expect(result.query).toBe('--max-retries=7');
    expect(result.hits.map((h) => h.turn)).toContain(7);
  });

  it("still parses recall's own options around such a query, and keeps the words in order", () => {
    const r = engram(['recall', 'pool', '--max-retries=7', '--k', '1', 'gives', '--json']);
    expect(r.code).toBe(0);
    const result = JSON.parse(r.stdout) as { query: string; hits: unknown[] };
    expect(result.query).toBe('pool --max-retries=7 gives');
    expect(result.hits).toHaveLength(1);
    expect(JSON.parse(engram(['recall', '--json', '--', '--max-retries=7']).stdout).query).toBe('--max-retries=7');
  });

  it('says how to pass a value that starts with "-" to other commands, and takes it after --', () => {
    const refused = engram(['karma', 'add', '--force-push is banned on main']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("unknown option '--force-push is banned on main'");
    expect(refused.stderr).toContain('goes after "--"');
    const added = engram(['karma', 'add', '--', '--force-push is banned on main']);
    expect(added.code).toBe(0);
    expect(engram(['karma', 'list']).stdout).toContain('--force-push is banned on main');
  });
});
