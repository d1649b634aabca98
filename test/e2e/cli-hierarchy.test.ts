import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTempRepo, type TempRepo } from '../../src/bus/resolvers/test-support.js';
import { runEngram } from '../fixtures/cli.js';

// engram delegate / report / reports / tree / recall-tree through the built CLI, with a real git repository for
// the repo: pointer a report cites.
let dir: string;
let repo: TempRepo;
let sha: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-cli-hierarchy-'));
  repo = createTempRepo();
  sha = repo.commit({ 'ledger/reserve.py': Array.from({ length: 30 }, (_, i) => `reserve line ${i + 1}`).join('\n') + '\n' });
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  repo.remove();
});

const engram = (args: string[], input?: string) => runEngram(['--embedder', 'none', '--repo', repo.dir, ...args], { cwd: dir, ...(input !== undefined ? { input } : {}) });

it('delegates, reports with provenance, validates each pointer by digest, shows the tree and recalls across it', () => {
  expect(engram(['agent', 'add', 'lead', '--role', 'manager', '--project', 'shop']).code).toBe(0);
  expect(engram(['agent', 'add', 'alice', '--role', 'programmer', '--parent', 'lead', '--project', 'shop']).code).toBe(0);
  const seeded = engram(['ingest', '-', '--session', 'plan', '--project', 'shop'], JSON.stringify({ kind: 'decision', content: 'The wallaby ledger ships on Monday.' }) + '\n');
  expect(seeded.code, seeded.stderr).toBe(0);

  const noCriteria = engram(['delegate', 'plan', '--as', 'lead', '--subtask', 'ledger', '--objective', 'Fix reserve retries']);
  expect(noCriteria.code).toBe(2);
  expect(noCriteria.stderr).toContain('packet.acceptance_criteria');

  const d = engram(['delegate', 'plan', '--as', 'lead', '--subtask', 'ledger', '--objective', 'Fix reserve retries', '--accept', 'Cite the line', '--executor', 'alice', '--json']);
  expect(d.code, d.stderr).toBe(0);
  expect(JSON.parse(d.stdout).child).toMatchObject({ sessionId: 'plan.ledger', role: 'executor', writer: { name: 'alice' } });

  const ref = `repo:ledger/reserve.py#L3-L4@${sha}`;
  const deref = engram(['bus', 'deref', '--as', 'alice', ref, '--json']);
  expect(deref.code, deref.stderr).toBe(0);
  const digest = JSON.parse(deref.stdout).contentDigest as string;

  const report = {
    status: 'done',
    summary: 'reserve() retries at lines 3-4.',
    key_findings: [
      { claim: 'The retry is at line 3', provenance: [{ pointer: ref, content_digest: digest }] },
      { claim: 'Misquoted', provenance: [{ pointer: ref, content_digest: 'a'.repeat(64) }] },
    ],
  };
  const sent = engram(['report', 'plan.ledger', '--as', 'alice', JSON.stringify(report)]);
  expect(sent.code, sent.stderr).toBe(0);
  expect(sent.stdout).toContain('to session plan');
  const byPlanner = engram(['report', 'plan.ledger', '--as', 'lead', '--status', 'done', '--summary', 'mine now']);
  expect(byPlanner.code).toBe(6);
  expect(byPlanner.stderr).toContain('SCOPE_DENIED');
  expect(byPlanner.stderr).toContain('alice');

  const received = engram(['reports', 'plan', '--as', 'lead', '--record']);
  expect(received.code).toBe(0);
  expect(received.stdout).toContain('NOT VERIFIED (1 verified, 1 failed)');
  expect(received.stdout).toContain(`verified: ${ref}`);
  expect(received.stdout).toContain(`digest_mismatch: ${ref}`);
  expect(received.stdout).toContain('recorded as evt_');

  const tree = engram(['tree', 'plan.ledger']);
  expect(tree.code).toBe(0);
  expect(tree.stdout.split('\n')).toEqual(expect.arrayContaining(['plan  planner  writer lead  reports 0', '  plan.ledger  executor  writer alice  subtask ledger  reports 1 (last done)']));

  const up = engram(['recall-tree', 'plan.ledger', 'wallaby ledger', '--scope', 'ancestors', '--as', 'alice', '--json']);
  expect(up.code, up.stderr).toBe(0);
  const answer = JSON.parse(up.stdout);
  expect(answer.sessionIds).toEqual(['plan.ledger', 'plan']);
  expect(answer.results[0].hits[0].sessionId).toBe('plan');
});
