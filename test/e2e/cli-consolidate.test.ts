import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runEngram } from '../fixtures/cli.js';

// engram consolidate / summaries / stats through the built CLI, at the deterministic level (no model).
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-cli-consolidate-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const engram = (args: string[], input?: string) => runEngram(['--embedder', 'none', '--llm', 'none', ...args], { cwd: dir, ...(input !== undefined ? { input } : {}) });

function session(topic: string, day: number, turns: number): string {
  const t0 = Date.UTC(2026, 2, day, 9);
  const lines: string[] = [];
  for (let i = 0; i < turns; i++) {
    lines.push(JSON.stringify({ kind: 'user', ts: t0 + i * 60_000, content: `Step ${i}: find out why the ${topic} export breaks and fix it.` }));
    lines.push(JSON.stringify({ kind: 'assistant', ts: t0 + i * 60_000 + 30_000, content: `The ${topic} export broke on ERR_${topic.toUpperCase()}_${i}; fixed in src/${topic}.ts, tests pass.` }));
  }
  return `${lines.join('\n')}\n`;
}

it('consolidates sessions (skipping an insignificant one), lists and expands summaries, backfills, and counts them in stats', { timeout: 120_000 }, () => {
  for (const [id, topic, day] of [['c1', 'invoice', 2], ['c2', 'report', 3], ['c3', 'ledger', 4]] as const) {
    const r = engram(['ingest', '-', '--session', id], session(topic, day, 6));
    expect(r.code, r.stderr).toBe(0);
  }
  expect(engram(['ingest', '-', '--session', 'tiny'], session('ping', 5, 1)).code).toBe(0);

  const run = engram(['consolidate', '--sessions-per-arc', '2']);
  expect(run.code, run.stderr).toBe(0);
  expect(run.stdout).toMatch(/sessions\s+4: 3 summarized, 1 skipped by the gate, 0 unchanged, 0 empty/);
  expect(run.stdout).toMatch(/summaries\s+3 session, 1 arc, 0 epoch/);
  expect(run.stdout).toContain('engram consolidate --backfill-skipped');
  // The skipped session is named with the gate's reasons.
  expect(run.stdout).toMatch(/skipped tiny: \d+ substantive turns? \(fewer than 5\)/);
  const again = engram(['consolidate', '--json']);
  expect(JSON.parse(again.stdout)).toMatchObject({ sessions: 4, byStatus: { unchanged: 4 }, summaries: 0, model: null });

  const listed = engram(['summaries', '--depth', '1', '--json']);
  expect(listed.code, listed.stderr).toBe(0);
  const [arc] = JSON.parse(listed.stdout) as Array<{ id: string; sessionIds: string[]; childIds: string[] }>;
  expect(arc!.sessionIds).toEqual(['c1', 'c2']);
  const human = engram(['summaries']);
  expect(human.stdout).toMatch(/sum_\w{26}  arc  project default  children 2/);
  expect(human.stdout).toContain('Session c3, turns 1-12, 4 March 2026:');
  const expanded = engram(['summaries', '--expand', arc!.id]);
  expect(expanded.code, expanded.stderr).toBe(0);
  expect(expanded.stdout).toContain(`- ${arc!.childIds[0]}  Session c1, turns 1-12, 2 March 2026:`);
  const searched = engram(['summaries', '-q', 'ERR_LEDGER_3', '--json']);
  expect((JSON.parse(searched.stdout) as Array<{ sessionId: string }>).map((s) => s.sessionId)).toEqual(['c3']);

  const stats = engram(['stats']);
  expect(stats.stdout).toMatch(/summaries\s+3 session, 1 arc, 0 epoch; 0 cold; 1 sessions skipped by the gate/);
  const back = engram(['consolidate', '--backfill-skipped', '--sessions-per-arc', '2', '--json']);
  expect(JSON.parse(back.stdout)).toMatchObject({ sessions: 1, byStatus: { summarized: 1 } });
  expect(JSON.parse(engram(['stats', '--json']).stdout).summaries).toMatchObject({ byDepth: { 0: 4, 1: 2 }, skipped: 0 });

  const pruned = engram(['summaries', '--prune', arc!.id, '--reason', 'superseded by hand']);
  expect(pruned.code, pruned.stderr).toBe(0);
  expect(pruned.stdout).toContain(`Summary ${arc!.id} is in the cold tier (pruned: superseded by hand)`);
  expect((JSON.parse(engram(['summaries', '--depth', '1', '--json']).stdout) as Array<{ id: string }>).map((s) => s.id)).not.toContain(arc!.id);
  expect((JSON.parse(engram(['summaries', '--depth', '1', '--cold', '--json']).stdout) as Array<{ id: string }>).map((s) => s.id)).toContain(arc!.id);
  expect(JSON.parse(engram(['stats', '--json']).stdout).summaries.cold).toBe(1);

  const bad = engram(['summaries', '--depth', 'x']);
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain('--depth');
  const missing = engram(['consolidate', '--session', 'nope']);
  expect(missing.code).not.toBe(0);
  expect(missing.stderr).toContain('no session nope');
});
