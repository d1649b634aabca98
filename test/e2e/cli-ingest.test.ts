import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEngram } from '../../src/engine.js';
import { runEngram } from '../fixtures/cli.js';
import { dropSchema, testPgUrl, uniqueSchema } from '../fixtures/postgres.js';
import { refuseEventsContaining } from '../fixtures/refuse-events.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-cli-ingest-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** The CLI without embedding: these tests are about what is stored, not about vectors. */
function engram(args: string[]) {
  return runEngram([...args, '--embedder', 'none'], { cwd: dir });
}

/** A 1,000-line Engram JSONL file (line i: key `k-i`, content `line i`), with overrides by line. */
function writeTranscript(overrides: Record<number, unknown> = {}, name = 'transcript.jsonl'): string {
  const lines: string[] = [];
  for (let i = 1; i <= 1000; i++) {
    const line = overrides[i] ?? { kind: 'user', content: `line ${i}`, key: `k-${i}` };
    lines.push(typeof line === 'string' ? line : JSON.stringify(line));
  }
  writeFileSync(join(dir, name), lines.join('\n') + '\n');
  return name;
}

function storedEvents(extra: string[] = []): number {
  const stats = engram([...extra, 'stats', '--json']);
  expect(stats.code).toBe(0);
  return JSON.parse(stats.stdout).events;
}

describe('engram ingest: all or nothing', () => {
  it('refuses a file whose line 901 reuses an earlier key with other content: exit 5, the line named, nothing stored', () => {
    engram(['init']);
    const r = engram(['ingest', writeTranscript({ 901: { kind: 'user', content: 'other content', key: 'k-17' } })]);
    expect(r.code).toBe(5);
    expect(r.stderr).toContain('transcript.jsonl:901: key "k-17" was already used on line 17 of this file with other content');
    expect(r.stderr).toContain('nothing was imported');
    expect(storedEvents()).toBe(0);
  });

  it('refuses line 901 superseding an event that does not exist: exit 2, the line and field named, nothing stored', () => {
    engram(['init']);
    const r = engram(['ingest', writeTranscript({ 901: { kind: 'note', content: 'x', key: 'k-901', supersedes: 'evt_01jbbbbbbbbbbbbbbbbbbbbbbb' } }), '--json']);
    expect(r.code).toBe(2);
    const { error } = JSON.parse(r.stderr);
    expect(error.code).toBe('INVALID_INPUT');
    expect(error.message).toMatch(/^transcript\.jsonl:901: supersedes: no event evt_01jbbbbbbbbbbbbbbbbbbbbbbb exists/);
    expect(error.data).toMatchObject({ file: 'transcript.jsonl', line: 901, field: 'supersedes', issueCount: 1 });
    expect(error.data.issues).toHaveLength(1);
    expect(storedEvents()).toBe(0);
  });

  it('with --skip-invalid skips and lists every bad line, stores the rest and exits 7', () => {
    engram(['init']);
    const file = writeTranscript({
      3: { kind: 'yell', content: 'x', key: 'k-3' },
      500: '{"kind": "user", oops}',
      901: { kind: 'user', content: 'other content', key: 'k-17' },
      950: { kind: 'note', content: 'x', key: 'k-950', supersedes: 'evt_01jbbbbbbbbbbbbbbbbbbbbbbb' },
    });
    const json = engram(['ingest', file, '--skip-invalid', '--json']);
    expect(json.code).toBe(7);
    const report = JSON.parse(json.stdout);
    expect(report.stored).toBe(996);
    expect(report.issueCount).toBe(4);
    expect(report.issues.map((i: { line: number; field?: string }) => [i.line, i.field ?? null])).toEqual([
      [3, 'kind'],
      [500, null],
      [901, 'key'],
      [950, 'supersedes'],
    ]);
    expect(storedEvents()).toBe(996);

    // The same file again: the valid lines are already stored, the bad ones listed again, in text.
    const text = engram(['ingest', file, '--skip-invalid']);
    expect(text.code).toBe(7);
    expect(text.stdout).toContain('4 invalid record(s) were left out');
    expect(text.stdout).toContain('transcript.jsonl:901: key "k-17" was already used on line 17 of this file with other content');
    expect(text.stdout).toContain('transcript.jsonl:950: supersedes: no event evt_01jbbbbbbbbbbbbbbbbbbbbbbb exists');
    expect(storedEvents()).toBe(996);
  });

  it('stores nothing when the store fails on the second batch, with or without --skip-invalid (exit 4)', async () => {
    engram(['init']);
    await refuseEventsContaining({ sqlitePath: join(dir, '.engram/engram.db') }, 'POISON');
    const file = writeTranscript({ 750: { kind: 'user', content: 'POISON', key: 'k-750' } });
    for (const extra of [[], ['--skip-invalid']]) {
      const r = engram(['ingest', file, ...extra]);
      expect(r.code).toBe(4);
      expect(r.stderr).toContain('transcript.jsonl: storing lines 501-1000 failed, so nothing was imported');
      expect(storedEvents()).toBe(0);
    }
  });
});

describe('engram ingest: all or nothing on PostgreSQL', () => {
  let schema: string;
  let url: string;
  beforeEach(() => {
    schema = uniqueSchema();
    url = `${testPgUrl()}${testPgUrl().includes('?') ? '&' : '?'}schema=${schema}`;
  });
  afterEach(async () => {
    await dropSchema(schema);
  });

  it('refuses line 901 reusing a stored key with other content and keeps the store as it was', () => {
    expect(engram(['--pg', url, 'ingest', writeTranscript({}, 'first.jsonl'), '--session', 'shared']).code).toBe(0);
    const r = engram(['--pg', url, 'ingest', writeTranscript({ 901: { kind: 'user', content: 'changed', key: 'k-901' } }), '--session', 'shared']);
    expect(r.code).toBe(5);
    expect(r.stderr).toMatch(/transcript\.jsonl:901: key "k-901" was already stored with other content \(event evt_/);
    expect(storedEvents(['--pg', url])).toBe(1000);
  });
});

describe('engram ingest: the identifier index', () => {
  it('catches the identifier index up after an import (appends leave it to a catch-up), so nothing waits for the plain path', async () => {
    engram(['init']);
    const lines: Record<number, unknown> = {};
    for (let i = 1; i <= 1000; i++) lines[i] = { kind: 'tool_result', content: `read src/orders/client-${i}.ts:${i} ok`, key: `k-${i}` };
    expect(engram(['ingest', writeTranscript(lines), '--no-embed']).code).toBe(0);
    const mem = await openEngram({ db: join(dir, '.engram/engram.db') });
    try {
      const status = await mem.store.identifierIndexStatus();
      expect(status).toMatchObject({ state: 'complete', backlog: 0 });
      const hits = await mem.recall('src/orders/client-417.ts:417', { retriever: 'fts', k: 3 });
      expect(hits.hits[0]?.excerpt).toContain('client-417.ts:417');
    } finally {
      await mem.close();
    }
  });
});
