import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runEngram } from '../fixtures/cli.js';


let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-cli-semantic-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function engram(args: string[], env: Record<string, string> = {}) {
  return runEngram(args, { cwd: dir, env });
}

const NOTES = [
  'After comparing both, we chose PostgreSQL over MySQL because of its JSONB columns and partial indexes.',
  'The login page now shows a spinner while the request is in flight.',
  'Bumped the CI cache key so the node modules are rebuilt.',
  'Fixed a typo in the onboarding email template.',
];

function writeNotes(): string {
  const path = join(dir, 'notes.jsonl');
  writeFileSync(path, NOTES.map((content) => JSON.stringify({ kind: 'note', content })).join('\n') + '\n');
  return path;
}

describe('engram CLI: semantic recall', () => {
  it('reindex --text rewrites the full-text index and reports what it wrote', () => {
    expect(engram(['ingest', writeNotes(), '-s', 'demo', '--no-embed']).code).toBe(0);
    const r = engram(['reindex', '--text', '--json', '--embedder', 'none']);
    expect(r.code).toBe(0);
    // `engram ingest` already caught the identifier index up (docs/recall.md), so reindex finds nothing waiting; no embedder: vectors skipped.
    expect(JSON.parse(r.stdout)).toEqual({
      reindexed: NOTES.length,
      sessions: 1,
      identifierIndex: { state: 'complete', events: 0, total: 0 },
      vectors: 'skipped (no embedder: --embedder none)',
    });
    // Notes are records of their own (no context): the spinner note alone is found, by its words.
    const hits = JSON.parse(engram(['recall', 'spinner', '--retriever', 'fts', '--json']).stdout).hits as Array<{ excerpt: string }>;
    expect(hits.map((h) => h.excerpt)).toEqual([NOTES[1]]);
  });

  it('embeds on ingest with the built-in default and answers a paraphrase full-text misses', () => {
    expect(engram(['ingest', writeNotes(), '-s', 'demo']).code).toBe(0);
    const fts = JSON.parse(engram(['recall', 'which database did we pick', '--retriever', 'fts', '--json']).stdout);
    expect(fts.retriever).toBe('fts');
    expect(fts.hits.map((h: { excerpt: string }) => h.excerpt).join('\n')).not.toContain('PostgreSQL');
    const hybrid = JSON.parse(engram(['recall', 'which database did we pick', '--json']).stdout);
    expect(hybrid.retriever).toBe('hybrid');
    expect(hybrid.hits.slice(0, 2).map((h: { excerpt: string }) => h.excerpt).join('\n')).toContain('PostgreSQL');
    const stats = JSON.parse(engram(['stats', '--json']).stdout);
    expect(stats.vectors).toMatchObject({ model: 'builtin-glove-100d@1', dimensions: 256, search: 'sqlite-vec', pending: 0, failed: 0 });
  });

  it('--embedder none keeps recall full-text; a later reindex embeds the stored events', () => {
    expect(engram(['ingest', writeNotes(), '-s', 'demo', '--embedder', 'none']).code).toBe(0);
    const none = JSON.parse(engram(['recall', 'spinner', '--json', '--embedder', 'none']).stdout);
    expect(none.retriever).toBe('fts');
    const reindex = engram(['reindex', '--json']);
    expect(reindex.code).toBe(0);
    expect(JSON.parse(reindex.stdout)).toMatchObject({ model: 'builtin-glove-100d@1', embedded: NOTES.length, pending: 0, failed: 0 });
    expect(JSON.parse(engram(['recall', 'spinner', '--json']).stdout).retriever).toBe('hybrid');
  });

  it('rejects an unknown embedder, naming the flag', () => {
    const r = engram(['recall', 'x', '--embedder', 'word2vec']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('embedder: unknown "word2vec"');
  });

  it('a local ONNX model directory that does not exist fails, naming it', () => {
    expect(engram(['ingest', writeNotes(), '-s', 'demo']).code).toBe(0);
    // A local ONNX model directory that does not exist: the spec is parsed, loading fails clearly.
    const r = engram(['recall', 'x', '--embedder', 'onnx:./no-such-model']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/no-such-model/);
  });
});
