import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTempRepo, type TempRepo } from '../../src/bus/resolvers/test-support.js';
import { runEngram } from '../fixtures/cli.js';


let dir: string;
let repo: TempRepo;
let sha: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-cli-bus-'));
  repo = createTempRepo();
  sha = repo.commit({ 'services/ledger/reservation.py': Array.from({ length: 50 }, (_, i) => `reserve line ${i + 1}`).join('\n') + '\n' });
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  repo.remove();
});

function engram(args: string[]) {
  return runEngram(['--embedder', 'none', '--repo', repo.dir, ...args], { cwd: dir });
}

describe('engram bus (CLI)', () => {
  it('puts, queries, dereferences under the budget, grants, validates messages, briefs and reports metrics', () => {
    expect(engram(['agent', 'add', 'lead', '--role', 'manager', '--project', 'shop']).code).toBe(0);
    expect(engram(['agent', 'add', 'alice', '--role', 'programmer', '--parent', 'lead', '--project', 'shop']).code).toBe(0);
    const ref = (a: number, b: number) => `repo:services/ledger/reservation.py#L${a}-L${b}@${sha}`;

    const engram1 = { kind: 'risk', claim: 'Reservation is not idempotent on retry.', confidence: 0.8, ttl: 'P7D', scope: 'project', pointers: [{ type: 'repo', ref: ref(1, 10) }] };
    const put = engram(['bus', 'put', '--as', 'alice', JSON.stringify(engram1), '--json']);
    expect(put.code).toBe(0);
    expect(JSON.parse(put.stdout)).toMatchObject({ status: 'stored', engram: { kind: 'risk' } });

    const query = JSON.parse(engram(['bus', 'query', '--as', 'lead', 'is the reservation idempotent', '--json']).stdout);
    expect(query.engrams[0].engram.claim).toBe(engram1.claim);

    for (let i = 0; i < 3; i++) {
      const d = engram(['bus', 'deref', '--as', 'alice', ref(i * 5 + 1, i * 5 + 2), '--json']);
      expect(d.code).toBe(0);
      expect(JSON.parse(d.stdout).excerpt).toContain(`reserve line ${i * 5 + 1}`);
    }
    const denied = engram(['bus', 'deref', '--as', 'alice', ref(40, 41)]);
    expect(denied.code).toBe(6);
    expect(denied.stderr).toContain('DEREF_DENIED');

    const grant = JSON.parse(engram(['bus', 'grant', '--as', 'lead', '--child', 'alice', ref(40, 41), '--cap', '100', '--json']).stdout);
    const paid = engram(['bus', 'deref', '--as', 'alice', ref(40, 41), '--grant', grant.token, '--json']);
    expect(paid.code).toBe(0);
    expect(JSON.parse(paid.stdout).excerpt).toContain('reserve line 40');
    expect(engram(['bus', 'deref', '--as', 'alice', ref(40, 41), '--grant', grant.token]).code).toBe(6);

    const messagePath = join(dir, 'message.yaml');
    writeFileSync(messagePath, `ROLE: programmer\nTASK_STATUS: done\nOUTPUT:\n  summary: "${'pasted log line '.repeat(400)}"\n  next: review\n`);
    const rejected = engram(['bus', 'validate-message', '--as', 'alice', `@${messagePath}`]);
    expect(rejected.code).toBe(6);
    expect(rejected.stdout).toContain('MAX_INLINE_TOKENS');

    const brief = engram(['bus', 'brief', '--as', 'lead']);
    expect(brief.stdout).toContain('Reservation is not idempotent on retry.');

    const metrics = JSON.parse(engram(['bus', 'metrics', '--json']).stdout);
    expect(metrics.rejectionRate).toBe(1);
    expect(metrics.topEngramKinds).toEqual([{ kind: 'risk', count: 1 }]);
  });

  it('names the missing agent and refuses an unknown action', () => {
    const noAgent = engram(['bus', 'query', 'x']);
    expect(noAgent.code).toBe(2);
    expect(noAgent.stderr).toContain('--as');
    const unknown = engram(['bus', 'publish', '--as', 'lead']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown "publish"');
  });
});
