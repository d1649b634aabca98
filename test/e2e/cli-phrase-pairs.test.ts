import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runEngram } from '../fixtures/cli.js';
import { dropSchema, testPgUrl, uniqueSchema, withPgClient } from '../fixtures/postgres.js';

/**
 * `engram reindex --phrase-pairs` / `--no-phrase-pairs` (the built CLI): builds and drops PostgreSQL's opt-in
 * phrase-pair index (postgres-phrase-pairs.ts), and a phrase recall finds the same events before, with and after
 * it; on SQLite the flag is refused with INVALID_INPUT naming it (SQLite's full-text index needs no pair index).
 */
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-cli-pairs-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const engram = (args: string[]) => runEngram(args, { cwd: dir });

const EVENTS = [
  { kind: 'tool_result', toolName: 'bash', content: 'the retry build deploy step failed twice' },
  { kind: 'tool_result', toolName: 'bash', content: 'deploy build retry in the wrong order' },
  { kind: 'tool_result', toolName: 'bash', content: 'retry the build, then deploy' },
  { kind: 'user', content: 'RETRY BUILD DEPLOY again please' },
];

function ingest(store: string[]): void {
  const path = join(dir, 'events.jsonl');
  writeFileSync(path, EVENTS.map((e) => JSON.stringify(e)).join('\n') + '\n');
  expect(engram([...store, 'ingest', path, '-s', 'demo', '--embedder', 'none']).code).toBe(0);
}

function phraseHits(store: string[]): string[] {
  const r = engram([...store, 'recall', '"retry build deploy"', '--retriever', 'fts', '--json', '--embedder', 'none']);
  expect(r.code).toBe(0);
  return (JSON.parse(r.stdout).hits as Array<{ excerpt: string }>).map((h) => h.excerpt).sort();
}

describe('engram reindex --phrase-pairs on PostgreSQL', () => {
  let schema: string;
  let store: string[];
  beforeEach(() => {
    schema = uniqueSchema();
    store = ['--pg', `${testPgUrl()}${testPgUrl().includes('?') ? '&' : '?'}schema=${schema}`];
  });
  afterEach(async () => {
    await dropSchema(schema);
  });

  const hasIndex = (): Promise<boolean> =>
    withPgClient(async (c) => (await c.query(`SELECT 1 FROM pg_indexes WHERE schemaname = $1 AND indexname = 'event_text_pairs'`, [schema])).rows.length > 0);

  it('builds the index (once), drops it, and phrase recall finds the same events throughout', async () => {
    ingest(store);
    expect(await hasIndex()).toBe(false);
    const plain = phraseHits(store);
    expect(plain).toHaveLength(2);
    expect(plain.join('\n')).toContain('retry build deploy step');

    const built = engram([...store, 'reindex', '--phrase-pairs', '--json', '--embedder', 'none']);
    expect(built.stderr).toBe('');
    expect(built.code).toBe(0);
    const report = JSON.parse(built.stdout).phrasePairs;
    expect(report.action).toBe('built');
    expect(report.indexBytes).toBeGreaterThan(0);
    expect(report.textIndexBytes).toBeGreaterThan(0);
    expect(await hasIndex()).toBe(true);
    expect(phraseHits(store)).toEqual(plain);

    const again = engram([...store, 'reindex', '--phrase-pairs', '--embedder', 'none']);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/phrase-pair index\s+already built/);

    const dropped = engram([...store, 'reindex', '--no-phrase-pairs', '--embedder', 'none']);
    expect(dropped.code).toBe(0);
    expect(dropped.stdout).toMatch(/phrase-pair index\s+dropped/);
    expect(await hasIndex()).toBe(false);
    expect(phraseHits(store)).toEqual(plain);
  });
});

describe('engram reindex --phrase-pairs on SQLite', () => {
  it('is refused with INVALID_INPUT naming the flag, and the store is untouched', () => {
    ingest([]);
    const before = phraseHits([]);
    expect(before).toHaveLength(2);
    for (const flag of ['--phrase-pairs', '--no-phrase-pairs']) {
      const r = engram(['reindex', flag, '--embedder', 'none']);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('phrase-pairs');
      expect(r.stderr).toContain('does not need it');
    }
    expect(phraseHits([])).toEqual(before);
  });
});
