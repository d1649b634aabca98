/** Fixtures shared by the needle benchmark's tests (left out of the build). */

/** A Claude Code session: a few findings early on, then enough routine tool output to force compaction. */
export function claudeCodeTranscript(floodSteps = 40): string {
  const base = { sessionId: 'cc-replay-1', cwd: '/repo', version: '1.0.98', gitBranch: 'main', isSidechain: false, userType: 'external' };
  const lines: object[] = [{ type: 'summary', summary: 'Fix the payments deploy', leafUuid: 'u0' }];
  let n = 0;
  let t = Date.parse('2026-11-20T10:00:00.000Z');
  const push = (type: 'user' | 'assistant', content: unknown): void => {
    n++;
    t += 15_000;
    lines.push({ ...base, type, uuid: `u${n}`, parentUuid: n === 1 ? null : `u${n - 1}`, timestamp: new Date(t).toISOString(), message: { role: type, content } });
  };
  const tool = (command: string, output: string): void => {
    const id = `toolu_${n}`;
    push('assistant', [{ type: 'tool_use', id, name: 'Bash', input: { command } }]);
    push('user', [{ type: 'tool_result', tool_use_id: id, content: output }]);
  };
  push('user', 'The payments deploy fails since this morning, please investigate.');
  tool('git bisect run npm run build', 'Bisecting: 2 revisions left\n9c1d2e3f4a5b is the first bad commit\n    build(payments): pin lockfile resolution');
  push('assistant', [{ type: 'text', text: 'The bisect points at commit 9c1d2e3f4a5b, the lockfile pin in payments.' }]);
  tool('npm run migrate -w payments', 'migrating payments ledger\nError: connect ECONNREFUSED 10.0.3.7:5432 while opening the ledger database');
  tool('kubectl logs deploy/payments | tail', "TypeError: Cannot read properties of undefined (reading 'amount')\n    at refundHandler (src/payments/refund.ts:131:17)");
  push('assistant', [{ type: 'text', text: 'We keep polling for the refund sync because the partner API drops webhooks during deploys.' }]);
  tool('./bin/sync --env staging --max-retries=7 --timeout=3200ms', 'sync ok after 2 retries, sync settings stable');
  for (let i = 0; i < floodSteps; i++) {
    tool(`npm test -- shard ${i}`, Array.from({ length: 30 }, (_, k) => ` ✓ tests/unit/module${i}_${k}.test.ts > handles case ${k} (${(k * 7) % 90} ms)`).join('\n'));
  }
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
}
