import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runEngram } from '../fixtures/cli.js';
import { dropSchema, testPgUrl, uniqueSchema } from '../fixtures/postgres.js';

const DEMO = resolve('examples/demo-session.jsonl');

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-cli-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function engram(args: string[], options: { input?: string; env?: Record<string, string> } = {}) {
  return runEngram(args, { cwd: dir, ...options });
}

/** A small Claude Code session in the documented JSONL shape. */
function claudeCodeTranscript(): string {
  const base = { sessionId: 'cc-session-1', cwd: '/repo', version: '1.0.98', gitBranch: 'main', isSidechain: false, userType: 'external' };
  const lines = [
    { type: 'summary', summary: 'Fix flaky payment test', leafUuid: 'u4' },
    { ...base, type: 'user', uuid: 'u1', parentUuid: null, timestamp: '2026-11-20T10:00:00.000Z', message: { role: 'user', content: 'run the payment tests' } },
    {
      ...base,
      type: 'assistant',
      uuid: 'u2',
      parentUuid: 'u1',
      timestamp: '2026-11-20T10:00:05.000Z',
      message: { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_01', name: 'Bash', input: { command: 'pytest tests/payments -x' } }] },
    },
    {
      ...base,
      type: 'user',
      uuid: 'u3',
      parentUuid: 'u2',
      timestamp: '2026-11-20T10:00:30.000Z',
      message: {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 'toolu_01', content: 'FAILED tests/payments/test_capture.py::test_refund - AssertionError: expected 4999 got 5000\nsha 7c4a8d09ca3762af61e59520943dc26494f8941b' }],
      },
    },
    {
      ...base,
      type: 'assistant',
      uuid: 'u4',
      parentUuid: 'u3',
      timestamp: '2026-11-20T10:01:00.000Z',
      message: { role: 'assistant', content: [{ type: 'text', text: 'The refund rounds half-up in src/payments/refund.py:131.' }] },
    },
  ];
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
}

describe('engram CLI', () => {
  it('prints help and exits 0', () => {
    const r = engram(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('recall');
    expect(r.stdout).toContain('Exit codes');
  });

  it('creates the default store under .engram/ with init', () => {
    const r = engram(['init']);
    expect(r.code).toBe(0);
    expect(existsSync(join(dir, '.engram/engram.db'))).toBe(true);
  });

  it('ingests the demo session and recalls an exact error, path and hash', () => {
    expect(engram(['ingest', DEMO]).code).toBe(0);
    const err = engram(['recall', 'ECONNREFUSED']);
    expect(err.code).toBe(0);
    expect(err.stdout).toContain('ECONNREFUSED 10.0.4.12:5433');
    expect(engram(['recall', 'src/api/client.ts:88']).stdout).toContain('src/api/client.ts:88');
    expect(engram(['recall', 'e3b0c44']).stdout).toContain('e3b0c44 fix(db)');
    // The build log was large enough to become an artifact; its error line is still found.
    const build = JSON.parse(engram(['recall', 'TS2345', '--kind', 'tool_result', '--json']).stdout);
    expect(build.hits[0].artifactId).toMatch(/^art_/);
    expect(build.hits[0].excerpt).toContain('TS2345');
  });

  it('imports a Claude Code transcript into its own session and finds a hash from it', () => {
    writeFileSync(join(dir, 'cc.jsonl'), claudeCodeTranscript());
    const r = engram(['ingest', 'cc.jsonl', '--json']);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.format).toBe('claude-code');
    expect(report.sessions.map((s: { id: string }) => s.id)).toEqual(['cc-session-1']);
    const hit = JSON.parse(engram(['recall', '7c4a8d09ca37', '--json']).stdout).hits[0];
    expect(hit.sessionId).toBe('cc-session-1');
    expect(hit.kind).toBe('tool_result');
    expect(hit.toolName).toBe('Bash');
  });

  it('stores nothing twice when the same file is ingested again', () => {
    engram(['ingest', DEMO]);
    const again = JSON.parse(engram(['ingest', DEMO, '--json']).stdout);
    expect(again.stored).toBe(0);
    expect(again.duplicates).toBe(15);
    expect(JSON.parse(engram(['stats', '--json']).stdout).events).toBe(15);
  });

  it('reads standard input with -', () => {
    const r = engram(['ingest', '-', '--session', 'piped', '--json'], { input: '{"kind":"user","content":"from a pipe zanzibar"}\n' });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).sessions[0].id).toBe('piped');
    expect(engram(['recall', 'zanzibar', '--session', 'piped']).stdout).toContain('from a pipe zanzibar');
  });

  it('rejects a file with a malformed line, naming the line, and stores nothing', () => {
    engram(['ingest', DEMO]);
    writeFileSync(join(dir, 'bad.jsonl'), '{"kind":"user","content":"ok"}\n{"kind":"user", oops}\n{"kind":"user","content":"ok too"}\n');
    const r = engram(['ingest', 'bad.jsonl']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('bad.jsonl:2: malformed JSON');
    expect(r.stderr).toContain('nothing was imported');
    expect(JSON.parse(engram(['stats', '--json']).stdout).events).toBe(15);
  });

  it('stores the valid lines with --skip-invalid, lists the rest and exits 7', () => {
    writeFileSync(join(dir, 'mixed.jsonl'), '{"kind":"user","content":"ok"}\n{"kind":"yell","content":"x"}\n{"kind":"user","content":"fine"}\n');
    const r = engram(['ingest', 'mixed.jsonl', '--skip-invalid', '--json']);
    expect(r.code).toBe(7);
    const report = JSON.parse(r.stdout);
    expect(report.stored).toBe(2);
    expect(report.issues[0].line).toBe(2);
  });

  it('rejects an empty file', () => {
    writeFileSync(join(dir, 'empty.jsonl'), '');
    const r = engram(['ingest', 'empty.jsonl']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('empty');
  });

  it('shows an event and the full content of its artifact', () => {
    engram(['ingest', DEMO]);
    const hit = JSON.parse(engram(['recall', 'webpack compiled with 1 error', '--json']).stdout).hits[0];
    const event = engram(['show', hit.eventId]);
    expect(event.code).toBe(0);
    expect(event.stdout).toContain(`artifact: ${hit.artifactId}`);
    const artifact = engram(['show', hit.artifactId.slice(0, 12)]);
    expect(artifact.stdout).toContain('[webpack]   1/160 compiled');
    expect(artifact.stdout).toContain('webpack 5.97.1 compiled with 1 error');
  });

  it('uses --db and ENGRAM_DB', () => {
    expect(engram(['--db', 'custom/a.db', 'ingest', DEMO]).code).toBe(0);
    expect(existsSync(join(dir, 'custom/a.db'))).toBe(true);
    const viaEnv = engram(['stats', '--json'], { env: { ENGRAM_DB: join(dir, 'custom/a.db') } });
    expect(JSON.parse(viaEnv.stdout).events).toBe(15);
  });

  it('exits 3 for read verbs when there is no store yet', () => {
    const r = engram(['recall', 'anything']);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('engram init');
    expect(existsSync(join(dir, '.engram/engram.db'))).toBe(false);
  });

  it('exits 4 for a file that is not an Engram store', () => {
    writeFileSync(join(dir, 'x.db'), 'plain text');
    const r = engram(['--db', 'x.db', 'stats']);
    expect(r.code).toBe(4);
    expect(r.stderr).toContain('NOT_AN_ENGRAM_STORE');
  });

  it('exits 2 on unknown commands and bad option values', () => {
    expect(engram(['frobnicate']).code).toBe(2);
    engram(['init']);
    const r = engram(['recall', 'x', '--k', 'ten']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--k');
  });

  it('prints errors as JSON with --json', () => {
    const r = engram(['show', 'evt_0000', '--json'], { env: {} });
    expect(r.code).toBe(3);
    expect(JSON.parse(r.stderr).error.code).toBe('NOT_FOUND');
  });
});

describe('engram CLI: context engine', () => {
  it('maintains a task card, compacts a small window and prints packs in three formats', () => {
    engram(['ingest', DEMO]);
    expect(engram(['task', 'get', '--session', 'demo-session']).stdout).toContain('No task state');
    const up = engram(['task', 'update', '--session', 'demo-session', '{"goals":["fix checkout DB"],"phase":"debugging"}']);
    expect(up.code).toBe(0);
    const bad = engram(['task', 'update', '--session', 'demo-session', '{"phase":"napping"}']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('taskState.phase');
    expect(JSON.parse(engram(['task', 'get', '--session', 'demo-session', '--json']).stdout).version).toBe(1);

    // The demo's history (~650 tokens) overflows the history of an 800-token window, which also gets what the
    // empty identity, codex and karma leave of their budgets.
    const packed = JSON.parse(engram(['context', '--session', 'demo-session', '--window', '800', '--json']).stdout);
    expect(packed.compaction.evicted).toBeGreaterThan(0);
    expect(packed.totalTokens + packed.headroomTokens).toBeLessThanOrEqual(800);
    const text = engram(['context', '--session', 'demo-session', '--window', '800', '--query', 'what port?']).stdout;
    expect(text).toMatch(/\[Events T1-T\d+ evicted\. Key topics: /);
    expect(text).toContain('fix checkout DB');
    const anthropic = JSON.parse(engram(['context', '--session', 'demo-session', '--window', '800', '--format', 'anthropic']).stdout);
    expect(JSON.stringify(anthropic.system)).toContain('cache_control');
    const openai = JSON.parse(engram(['context', '--session', 'demo-session', '--window', '800', '--format', 'openai']).stdout);
    expect(openai.messages[0].role).toBe('system');
    // Evicted, not lost.
    expect(engram(['recall', 'ECONNREFUSED']).stdout).toContain('10.0.4.12:5433');
    // Recall within the session is conditioned on its card: debugging weighs tool output up.
    const conditioned = JSON.parse(engram(['recall', 'ECONNREFUSED', '--session', 'demo-session', '--json']).stdout).hits[0];
    expect(conditioned.kind).toBe('tool_result');
    expect(conditioned.factors.phase).toBeGreaterThan(1);
    const plain = JSON.parse(engram(['recall', 'ECONNREFUSED', '--session', 'demo-session', '--ignore-task', '--json']).stdout).hits[0];
    expect(plain.modifier).toBe(1);
    expect(JSON.parse(engram(['compact', '--session', 'demo-session', '--window', '800', '--json']).stdout).compacted).toBe(false);
  });

  it('refuses a window whose budgets cannot hold the task card', () => {
    engram(['ingest', DEMO]);
    engram(['task', 'update', '--session', 'demo-session', '{"goals":["a long goal that takes more than a handful of tokens to write out"]}']);
    const r = engram(['context', '--session', 'demo-session', '--window', '600']);
    expect(r.code).toBe(6);
    expect(r.stderr).toContain('BUDGET_EXCEEDED');
  });
});

describe('engram CLI on PostgreSQL', () => {
  let schema: string;
  let url: string;
  beforeEach(() => {
    schema = uniqueSchema('engram_cli');
    url = `${testPgUrl()}${testPgUrl().includes('?') ? '&' : '?'}schema=${schema}`;
  });
  afterEach(async () => {
    await dropSchema(schema);
  });

  it('ingests and recalls with --pg, and reads ENGRAM_PG_URL', () => {
    expect(engram(['--pg', url, 'ingest', DEMO]).code).toBe(0);
    expect(engram(['--pg', url, 'recall', 'ECONNREFUSED']).stdout).toContain('ECONNREFUSED 10.0.4.12:5433');
    const stats = JSON.parse(engram(['stats', '--json'], { env: { ENGRAM_PG_URL: url } }).stdout);
    expect(stats.events).toBe(15);
    expect(stats.backend).toContain('postgres');
    expect(existsSync(join(dir, '.engram'))).toBe(false);
  });

  it('migrates a SQLite store to PostgreSQL and verifies it', () => {
    engram(['ingest', DEMO]);
    const r = engram(['migrate', '--from', 'sqlite:.engram/engram.db', '--to', url, '--json']);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report).toMatchObject({ sessions: 1, eventsCopied: 15, isVerified: true });
    expect(engram(['--pg', url, 'recall', 'e3b0c44']).stdout).toContain('e3b0c44 fix(db)');
    // Running it again copies nothing and still verifies.
    expect(JSON.parse(engram(['migrate', '--from', '.engram/engram.db', '--to', url, '--json']).stdout)).toMatchObject({ eventsCopied: 0, eventsAlreadyThere: 15, isVerified: true });
  });

  it('refuses --db and --pg together', () => {
    const r = engram(['--db', 'a.db', '--pg', url, 'stats']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--db and --pg');
  });
});
