import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runEngram } from '../fixtures/cli.js';

// Decision records through the built CLI: engram consolidate makes them, engram summaries --decisions lists them.
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-cli-decisions-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const engram = (args: string[], input?: string) => runEngram(['--embedder', 'none', '--llm', 'none', ...args], { cwd: dir, ...(input !== undefined ? { input } : {}) });

function session(day: number, decision: string): string {
  const t0 = Date.UTC(2026, 2, day, 9);
  const lines: string[] = [];
  for (let i = 0; i < 5; i++) {
    lines.push(JSON.stringify({ kind: 'user', ts: t0 + i * 60_000, content: `Step ${i}: work out where the queue should keep its jobs and why.` }));
    lines.push(JSON.stringify({ kind: 'assistant', ts: t0 + i * 60_000 + 30_000, content: `Step ${i}: compared the options for src/queue/store${i}.ts; results noted.` }));
  }
  lines.push(JSON.stringify({ kind: 'decision', ts: t0 + 600_000, content: decision, meta: { subject: 'queue store' } }));
  return `${lines.join('\n')}\n`;
}

it('lists decision records, the one in force and, with --cold, the one it replaced', () => {
  expect(engram(['ingest', '-', '--session', 'q1'], session(2, 'Decision: the queue keeps its jobs in SQLite.')).code).toBe(0);
  expect(engram(['ingest', '-', '--session', 'q2'], session(3, 'Decision: the queue keeps its jobs in PostgreSQL from now on.')).code).toBe(0);
  const run = engram(['consolidate']);
  expect(run.code, run.stderr).toBe(0);

  const human = engram(['summaries', '--decisions']);
  expect(human.code, human.stderr).toBe(0);
  expect(human.stdout).toMatch(/sum_\w{26}  decision  project default  subject queue store  event evt_\w{26}  deterministic 1\n/);
  expect(human.stdout).toContain('Decision (session q2, turn 11, 3 March 2026; subject queue store): the queue keeps its jobs in PostgreSQL from now on.');
  expect(human.stdout).not.toContain('in SQLite');
  const all = JSON.parse(engram(['summaries', '--decisions', '--cold', '--subject', 'Queue Store', '--json']).stdout) as Array<{ id: string; sessionId: string; coldSourceId: string | null; kind: string }>;
  expect(all.map((d) => [d.sessionId, d.kind])).toEqual([
    ['q2', 'decision'],
    ['q1', 'decision'],
  ]);
  expect(all[1]!.coldSourceId).toBe(all[0]!.id);
  // Summaries are listed apart from decision records; --subject needs --decisions.
  expect((JSON.parse(engram(['summaries', '--json']).stdout) as Array<{ kind?: string }>).some((s) => s.kind === 'decision')).toBe(false);
  const bad = engram(['summaries', '--subject', 'queue store']);
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain('--subject');
});
