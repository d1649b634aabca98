import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { projectForDirectory } from '../../src/memory/project-identity.js';
import { claudeCodeDemoTranscript, DEMO_CODING_SESSION } from '../../scripts/dashboard-demo.js';
import { runEngram } from '../fixtures/cli.js';

// `engram sessions` through the built CLI on a store of real transcript samples (Codex, OpenHands, SWE-agent), a
// made-up Claude Code transcript and a plain append: each session's host, project, first request and summary line.
// A CLI process starts in about a second, several on a loaded machine: generous limits, no timing asserted.
let dir: string;
let shop: string;
const engram = (args: string[], input?: string) => runEngram(['--embedder', 'none', '--llm', 'none', ...args], { cwd: dir, ...(input !== undefined ? { input } : {}) });
const SAMPLES = resolve('test/fixtures/transcripts');

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-cli-sessions-'));
  for (const file of readdirSync(SAMPLES).filter((f) => !f.endsWith('.md'))) {
    const r = engram(['ingest', join(SAMPLES, file)]);
    expect(r.code, `${file}: ${r.stderr}`).toBe(0);
  }
  const transcript = join(dir, `${DEMO_CODING_SESSION}.jsonl`);
  writeFileSync(transcript, claudeCodeDemoTranscript(DEMO_CODING_SESSION, '/home/dev/shop'));
  expect(engram(['ingest', transcript]).code).toBe(0);
  expect(engram(['ingest', '-', '--session', 'notes'], `${JSON.stringify({ kind: 'note', content: 'appended by hand' })}\n`).code).toBe(0);
  shop = projectForDirectory('/home/dev/shop', { env: {} }).project;
}, 300_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Listed {
  id: string;
  project: string;
  eventCount: number;
  host: string | null;
  firstRequest: string | null;
  firstRequestId: string | null;
  summaryLine: string | null;
  summaryId: string | null;
}

it("lists each session's agent host, project and first request as JSON, before any summary", () => {
  const before = JSON.parse(engram(['sessions', '--json']).stdout) as Listed[];
  // The samples (README.md lists them), the made-up Claude Code session and the hand-appended notes.
  expect(before.map((s) => s.host ?? 'none').sort()).toEqual([
    'claude-code',
    'claude-code',
    'codex',
    'codex',
    'gemini',
    'gemini',
    'none',
    'openhands',
    'openhands',
    'openhands',
    'openhands',
    'openhands',
    'swe-agent',
  ]);
  const cc = before.find((s) => s.id === DEMO_CODING_SESSION)!;
  expect(cc).toMatchObject({ project: shop, host: 'claude-code', firstRequest: 'Make reservation retries idempotent: a retried debit must not charge twice.', summaryLine: null });
  expect(cc.firstRequestId).toMatch(/^evt_/);
  expect(before.find((s) => s.id === 'notes')).toMatchObject({ host: null, firstRequest: null, summaryLine: null });
  for (const s of before.filter((x) => x.host !== null)) expect(s.firstRequest, s.id).toMatch(/\w{4}/);
}, 120_000);

it('shows the summary line once the sessions are summarized, and the text keeps the old columns first', () => {
  expect(engram(['consolidate']).code).toBe(0);
  const after = JSON.parse(engram(['sessions', '--json']).stdout) as Listed[];
  const summarized = after.find((s) => s.id === DEMO_CODING_SESSION)!;
  expect(summarized.summaryLine).toMatch(/^Files created: tests\/test_reserve_retry\.py \[evt_[0-9a-z]{26}\]$/);
  expect(summarized.summaryId).toMatch(/^sum_/);

  // Text: the old one-line columns first (then the host), the request and the summary indented below, citations left out.
  const text = engram(['sessions']).stdout.split('\n');
  const at = text.findIndex((l) => l.startsWith(DEMO_CODING_SESSION));
  expect(text[at]).toMatch(new RegExp(`^${DEMO_CODING_SESSION}  project ${shop}  14 events  last 2026-11-20T10:01:10\\.000Z  host claude-code$`));
  expect(text[at + 1]).toBe('    asked: Make reservation retries idempotent: a retried debit must not charge twice.');
  expect(text[at + 2]).toBe('    summary: Files created: tests/test_reserve_retry.py');
  expect(text.find((l) => l.startsWith('notes  '))).toMatch(/^notes  project default  1 events  last \S+  host unknown$/);
}, 180_000);

it('filters by the owning project and limits the count', () => {
  const mine = JSON.parse(engram(['sessions', '--project', shop, '--json']).stdout) as Listed[];
  expect(mine.map((s) => s.id)).toEqual([DEMO_CODING_SESSION]);
  expect(JSON.parse(engram(['sessions', '--limit', '2', '--json']).stdout)).toHaveLength(2);
  const none = engram(['sessions', '--project', 'nobody']);
  expect(none.code).toBe(0);
  expect(none.stdout.trim()).toBe('No sessions of project nobody.');
}, 120_000);
