import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Engram } from '../src/engine.js';
import { sessionStartEvent } from '../src/memory/host-sessions.js';

/**
 * A small agent team with something to show on every dashboard screen: a lead with two children in project
 * `shop` (engrams, one contradiction, derefs, a grant, a rejected message), an agent of project `bank`, an
 * admin, sessions with a compacted window (markers), task-state versions, karma and recalls. Used by the
 * browser test (test/e2e/dashboard-browser.test.ts) and the screenshot script (scripts/dashboard-screenshots.ts).
 * `repoRoot` must hold `services/ledger/reservation.py` and `services/gateway/routes.py` at commit `sha`.
 */
export interface DashboardDemo {
  tokens: Record<'root' | 'lead' | 'alice' | 'bob' | 'eve', string>;
  span(path: 'ledger' | 'gateway', from: number, to: number): string;
  longSession: string;
  /** A Claude Code session of project `shop`, as its hooks store it: a start record, then its transcript; summarized. */
  codingSession: string;
}

/** The id of the demo's Claude Code session (a UUID, as Claude Code names sessions). */
export const DEMO_CODING_SESSION = '7c1f3a52-93d4-4e0b-a6f2-5b8e0d4c2a19';

/**
 * A made-up Claude Code transcript (the JSONL lines Claude Code writes under ~/.claude/projects/) of a small coding
 * session in `cwd`: a prompt with an IDE note, a TodoWrite plan, an Edit, a Write, a failing Bash test run, a fix
 * and a passing run, and the final answer.
 */
export function claudeCodeDemoTranscript(sessionId: string, cwd = '/home/dev/shop', startMs = Date.UTC(2026, 10, 20, 10)): string {
  const base = { sessionId, cwd, version: '2.0.14', gitBranch: 'main', isSidechain: false, userType: 'external' };
  let n = 0;
  const at = (s: number) => new Date(startMs + s * 1000).toISOString();
  const lines: Array<Record<string, unknown>> = [];
  let parent: string | null = null;
  const push = (type: 'user' | 'assistant', content: unknown, extra: Record<string, unknown> = {}) => {
    const uuid = `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`;
    lines.push({ ...base, type, uuid, parentUuid: parent, timestamp: at(n * 5), message: { role: type, content }, ...extra });
    parent = uuid;
  };
  const call = (id: string, name: string, input: Record<string, unknown>) => push('assistant', [{ type: 'tool_use', id, name, input }]);
  const result = (id: string, content: string, extra: Record<string, unknown> = {}) => push('user', [{ type: 'tool_result', tool_use_id: id, content, ...(extra.is_error ? { is_error: true } : {}) }], extra.toolUseResult ? { toolUseResult: extra.toolUseResult } : {});
  push('user', `<ide_opened_file>The user opened ${cwd}/services/ledger/reservation.py in the IDE.</ide_opened_file>Make reservation retries idempotent: a retried debit must not charge twice.`);
  call('toolu_01', 'TodoWrite', {
    todos: [
      { content: 'Add an idempotency key to reserve()', status: 'in_progress', activeForm: 'Adding an idempotency key' },
      { content: 'Test a retried debit', status: 'pending', activeForm: 'Testing a retried debit' },
    ],
  });
  result('toolu_01', 'Todos have been modified successfully.');
  call('toolu_02', 'Edit', { file_path: `${cwd}/services/ledger/reservation.py`, old_string: 'ledger.debit(amount)', new_string: 'ledger.debit(amount, key=key)' });
  result('toolu_02', `The file ${cwd}/services/ledger/reservation.py has been updated.`, { toolUseResult: { type: 'update', filePath: `${cwd}/services/ledger/reservation.py` } });
  call('toolu_03', 'Write', { file_path: `${cwd}/tests/test_reserve_retry.py`, content: 'def test_retry_debits_once(ledger):\n    reserve(500, key="k1")\n    reserve(500, key="k1")\n    assert ledger.debits == [500]\n' });
  result('toolu_03', `File created successfully at: ${cwd}/tests/test_reserve_retry.py`, { toolUseResult: { type: 'create', filePath: `${cwd}/tests/test_reserve_retry.py` } });
  call('toolu_04', 'Bash', { command: 'pytest tests/test_reserve_retry.py -q', description: 'Run the retry test' });
  result('toolu_04', 'F\nFAILED tests/test_reserve_retry.py::test_retry_debits_once - AssertionError: debited twice: [500, 500]\n1 failed in 0.12s', { is_error: true });
  call('toolu_05', 'Edit', { file_path: `${cwd}/services/ledger/reservation.py`, old_string: 'def reserve(amount, key):', new_string: 'def reserve(amount, key):\n    if ledger.seen(key):\n        return' });
  result('toolu_05', `The file ${cwd}/services/ledger/reservation.py has been updated.`, { toolUseResult: { type: 'update', filePath: `${cwd}/services/ledger/reservation.py` } });
  call('toolu_06', 'Bash', { command: 'pytest tests/test_reserve_retry.py -q', description: 'Run the retry test again' });
  result('toolu_06', '.\n1 passed in 0.10s', { toolUseResult: { stdout: '1 passed', stderr: '', interrupted: false } });
  push('assistant', [{ type: 'text', text: 'A retried reservation now reuses its idempotency key, so the debit happens once; the retry test passes.' }]);
  return `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`;
}

export const DEMO_FILES = (lines: (count: number, prefix: string) => string) => ({
  'services/ledger/reservation.py': lines(220, 'ledger'),
  'services/gateway/routes.py': lines(300, 'routes'),
});

export async function seedDashboardDemo(mem: Engram, sha: string): Promise<DashboardDemo> {
  const tokens = {} as DashboardDemo['tokens'];
  const add = async (name: keyof DashboardDemo['tokens'], options: Parameters<Engram['agents']['add']>[1]) => {
    tokens[name] = (await mem.agents.add(name, options)).token;
  };
  await add('root', { role: 'admin', isAdmin: true });
  await add('lead', { role: 'manager', project: 'shop' });
  await add('alice', { role: 'programmer', parent: 'lead', project: 'shop' });
  await add('bob', { role: 'tester', parent: 'lead', project: 'shop' });
  await add('eve', { role: 'programmer', project: 'bank' });
  const span = (path: 'ledger' | 'gateway', from: number, to: number) =>
    `repo:services/${path === 'ledger' ? 'ledger/reservation.py' : 'gateway/routes.py'}#L${from}-L${to}@${sha}`;
  const agent = async (name: string) => mem.agents.get(name);
  const alice = await agent('alice');
  const bob = await agent('bob');
  const eve = await agent('eve');
  const lead = await agent('lead');
  const run = mem.bus.defaultRunId;
  const engram = (kind: string, claim: string, refs: string[], extra: Record<string, unknown> = {}) => ({
    kind,
    claim,
    pointers: refs.map((ref) => ({ type: ref.slice(0, ref.indexOf(':')), ref })),
    confidence: 0.8,
    ttl: 'P7D',
    scope: 'project',
    ...extra,
  });
  await mem.bus.engrams.put(alice, engram('risk', 'Reservation retries are not idempotent: a retried POST debits twice.', [span('ledger', 40, 52)]), run);
  await mem.bus.engrams.put(alice, engram('decision', 'Use the request id as the idempotency key in reserve().', [span('ledger', 60, 64)]), run);
  await mem.bus.engrams.put(
    bob,
    engram('risk', 'Gateway retries on 502 while the ledger says retries are safe: the two disagree.', [span('gateway', 120, 126), span('ledger', 40, 52)], { tags: ['contradiction'] }),
    run,
  );
  await mem.bus.engrams.put(bob, engram('test', 'test_reserve_retry fails on the second debit.', [span('ledger', 88, 95)]), run);
  await mem.bus.engrams.put(eve, engram('fact', 'Bank rounding uses banker’s rounding on cents.', [span('ledger', 10, 12)]), run);

  for (const [a, b] of [[40, 52], [60, 64], [88, 95]] as const) await mem.bus.enforcer.deref(alice, { pointer: span('ledger', a, b) });
  await mem.bus.enforcer.deref(alice, { pointer: span('ledger', 100, 110) }).catch(() => undefined);
  await mem.bus.issueGrantTo(lead, { child: 'alice', pointer: span('ledger', 100, 110), capTokens: 300 });
  const pasted = 'ROLE: tester\nTASK_STATUS: done\nOUTPUT:\n  summary: |\n    ```python\n    def reserve(amount):\n        return ledger.debit(amount)\n    ```\n  next: review\n';
  await mem.bus.enforcer.submitMessage(bob, pasted, { direction: 'child-to-parent' });
  const compliant = {
    ROLE: 'programmer',
    TASK_STATUS: 'done',
    ENGRAMS: [engram('risk', 'Retries debit twice.', [span('ledger', 40, 52)])],
    OUTPUT: { summary: 'One risk, see engram.', next: 'Await review.' },
  };
  await mem.bus.enforcer.submitMessage(alice, JSON.stringify(compliant), { direction: 'child-to-parent' });
  // alice's turn 1: two spans read, one left.
  for (const [a, b] of [[1, 20], [120, 140]] as const) await mem.bus.enforcer.deref(alice, { pointer: span('ledger', a, b) });

  // A long session whose window is compacted (markers), with task-state versions, karma and recalls.
  const shop = mem.viewAs({ kind: 'agent', agentId: alice.id, agentName: 'alice', project: 'shop', isAdmin: false });
  const longSession = 'shop-ledger-retries';
  const topics = ['ledger reservation', 'gateway retry policy', 'idempotency key', 'debit twice', 'test_reserve_retry', 'rollback plan'];
  for (let batch = 0; batch < 6; batch++) {
    const events = [];
    for (let i = 0; i < 30; i++) {
      const topic = topics[(batch + Math.floor(i / 10)) % topics.length]!;
      events.push({ kind: i % 2 === 0 ? 'user' : 'assistant', content: `Turn about the ${topic}: step ${batch * 30 + i} looks at ${topic} and what it changes for reservation ${batch}-${i}.` });
    }
    await shop.append(longSession, events as never);
  }
  await shop.updateTaskState(longSession, { goals: ['Make reservation retries idempotent'], phase: 'debugging', openLoops: ['gateway retry on 502'] });
  await shop.updateTaskState(longSession, { phase: 'testing', nextActions: ['run test_reserve_retry'] });
  await mem.context.pack(longSession, { windowTokens: 3000 });
  await shop.recall({ queries: ['idempotency key'], sessionIds: [longSession] });
  await shop.recall({ queries: ['gateway retry policy'], sessionIds: [longSession] });
  await mem.karma.add('The ledger service owns debits; the gateway never retries a debit itself.', { sessionId: longSession as never, verifiedBy: 'lead' });
  await shop.append('shop-checkout', [{ kind: 'user', content: 'Checkout shows the wrong total after a retry.' }, { kind: 'decision', content: 'Recompute totals server-side.' }] as never);
  const bank = mem.viewAs({ kind: 'agent', agentId: eve.id, agentName: 'eve', project: 'bank', isAdmin: false });
  await bank.append('bank-rounding', [{ kind: 'user', content: 'Rounding drifts by a cent on refunds.' }] as never);

  // A Claude Code session as the hooks store it: its start record (Engram's own), then its transcript, summarized.
  const codingSession = DEMO_CODING_SESSION;
  const startedMs = Date.now() - 2 * 3_600_000;
  await mem.append(
    codingSession,
    [sessionStartEvent({ host: 'claude-code', source: 'startup', cwd: '/home/dev/shop', project: 'shop', hostPids: [4242, 4241] }, startedMs)],
    { project: 'shop' },
  );
  const dir = mkdtempSync(join(tmpdir(), 'engram-demo-'));
  try {
    const file = join(dir, `${codingSession}.jsonl`);
    writeFileSync(file, claudeCodeDemoTranscript(codingSession, '/home/dev/shop', startedMs + 1000));
    await mem.importFile({ path: file }, { format: 'claude-code' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  await mem.consolidator().consolidateSession(codingSession);
  return { tokens, span, longSession, codingSession };
}
