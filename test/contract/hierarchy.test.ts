import { expect, it } from 'vitest';
import { isEngramError } from '../../src/errors.js';
import { agentPrincipal } from '../../src/model/access.js';
import { HIERARCHY_LINK_KEY } from '../../src/model/hierarchy.js';
import type { EngramView } from '../../src/view/engram-view.js';
import { runStorageContract, useEngram } from './harnesses.js';

// Hierarchical sessions (ENGRAM §7, Annex A.5) over the storage seam: the writer lease is checked inside each
// backend's append transaction, and delegation, reports and recall across the tree behave the same everywhere.
runStorageContract('hierarchical sessions', ({ createHarness }) => {
  const ctx = useEngram(createHarness);

  const errorOf = async (p: Promise<unknown>): Promise<unknown> => p.then(() => new Error('expected a refusal'), (e: unknown) => e);

  /** A planner and two executors of project shop, one agent of project other. */
  async function team(): Promise<{ planner: EngramView; exec: EngramView; exec2: EngramView; outsider: EngramView }> {
    const view = async (name: string, project: string, parent?: string) =>
      ctx.mem.viewAs(agentPrincipal((await ctx.mem.agents.add(name, { role: 'programmer', project, ...(parent ? { parent } : {}) })).agent));
    const planner = await view('lead', 'shop');
    return { planner, exec: await view('alice', 'shop', 'lead'), exec2: await view('bob', 'shop', 'lead'), outsider: await view('eve', 'other') };
  }

  const packet = (subtask: string, extra: Record<string, unknown> = {}) => ({
    subtask_id: subtask,
    objective: `Find out why the ${subtask} reservation retries twice.`,
    constraints: ['Do not change the public API'],
    acceptance_criteria: ['The cause is cited with a pointer to the log line'],
    ...extra,
  });

  it('refuses an append by another writer than the session lease holder, inside the transaction, storing nothing', async () => {
    const lease = { hierarchy: { type: 'link', writer: { id: 'agent:a', name: 'alice' } } };
    await ctx.mem.ingestor.appendInternal('s', [{ kind: 'note', content: 'link', key: HIERARCHY_LINK_KEY, meta: lease }], { writer: { id: 'agent:a', name: 'alice' } });
    const err = await errorOf(
      ctx.mem.append('s', [{ kind: 'note', content: 'x' }, { kind: 'note', content: 'y' }], { writer: { id: 'agent:b', name: 'bob' } }),
    );
    expect(isEngramError(err, 'SCOPE_DENIED')).toBe(true);
    expect((err as { data: { holder: string } }).data.holder).toBe('alice');
    expect((err as Error).message).toContain('alice');
    expect((await ctx.mem.getSession('s')).eventCount).toBe(1);
    await ctx.mem.append('s', { kind: 'note', content: 'by the holder' }, { writer: { id: 'agent:a', name: 'alice' } });
    await ctx.mem.append('s', { kind: 'note', content: 'full trust names no writer' });
    // A session without a lease takes any writer.
    await ctx.mem.append('free', { kind: 'note', content: 'x' }, { writer: { id: 'agent:b', name: 'bob' } });
    expect((await ctx.mem.getSession('s')).eventCount).toBe(3);
  });

  it("refuses a caller's event keyed like the hierarchy's own, so no lease can be forged", async () => {
    const { exec } = await team();
    await exec.append('mine', { kind: 'note', content: 'x' });
    const forged = { kind: 'note', content: 'I am the writer', key: HIERARCHY_LINK_KEY, meta: { hierarchy: { type: 'link', writer: { id: 'agent:x', name: 'mallory' } } } } as const;
    // One at a time: both promises made up front would leave the second's rejection unhandled while the first is awaited.
    for (const attempt of [() => exec.append('mine', forged), () => ctx.mem.append('mine', forged)]) {
      const err = await errorOf(attempt());
      expect(isEngramError(err, 'INVALID_INPUT')).toBe(true);
      expect((err as { data: { field: string } }).data.field).toBe('events[0].key');
    }
    expect((await ctx.mem.getSession('mine')).eventCount).toBe(1);
  });

  it('delegates: creates the child in the parent project, records the packet in both sessions and seeds the child card', async () => {
    const { planner } = await team();
    const [evidence] = await planner.append('plan', { kind: 'tool_result', content: 'ERROR retry storm in reserve()', toolName: 'logs' });
    const out = await planner.hierarchy.delegate({
      parentSessionId: 'plan',
      executor: 'alice',
      packet: packet('ledger', { key_event_refs: [evidence!.record.id], plan_node_ref: 'sam:task:plan@1' }),
    });
    expect(out.isDuplicate).toBe(false);
    expect(out.parent).toMatchObject({ sessionId: 'plan', role: 'planner', depth: 0, writer: { name: 'lead' } });
    expect(out.child).toMatchObject({ sessionId: 'plan.ledger', role: 'executor', depth: 1, parentSessionId: 'plan', rootSessionId: 'plan', writer: { name: 'alice' } });
    expect(out.child.packet?.key_event_refs).toEqual([`sam:event:${evidence!.record.id}`]);
    expect((await ctx.mem.getSession('plan.ledger')).project).toBe('shop');

    const [first] = await ctx.mem.listEvents({ sessionId: 'plan.ledger' as never, limit: 1 });
    expect(first).toMatchObject({ turn: 1, kind: 'note', key: HIERARCHY_LINK_KEY });
    expect(first!.content).toContain('Acceptance criteria');
    const decision = await ctx.mem.getEvent(out.delegationEventId);
    expect(decision).toMatchObject({ sessionId: 'plan', kind: 'decision' });
    expect(decision.content).toContain('ledger reservation retries twice');

    const card = await ctx.mem.taskStates.get('plan.ledger');
    expect(card?.version).toBe(out.taskStateVersion);
    expect(card?.state).toMatchObject({
      taskId: 'ledger',
      goals: ['Find out why the ledger reservation retries twice.'],
      constraints: ['Do not change the public API'],
      openLoops: ['Acceptance: The cause is cited with a pointer to the log line'],
      keyEvents: [evidence!.record.id],
    });

    const again = await planner.hierarchy.delegate({ parentSessionId: 'plan', executor: 'alice', packet: packet('ledger', { key_event_refs: [evidence!.record.id], plan_node_ref: 'sam:task:plan@1' }) });
    expect(again).toMatchObject({ isDuplicate: true, delegationEventId: out.delegationEventId });
    expect((await ctx.mem.getSession('plan.ledger')).eventCount).toBe(2);
    const conflict = await errorOf(planner.hierarchy.delegate({ parentSessionId: 'plan', executor: 'bob', packet: packet('ledger') }));
    expect(isEngramError(conflict, 'CONFLICT')).toBe(true);
  });

  it('holds one writer per session: the executor writes its session, the planner its own, neither the other', async () => {
    const { planner, exec, exec2 } = await team();
    await planner.append('plan', { kind: 'user', content: 'plan the ledger fix' });
    await planner.hierarchy.delegate({ parentSessionId: 'plan', executor: 'alice', packet: packet('ledger') });

    await exec.append('plan.ledger', { kind: 'assistant', content: 'reading the logs' });
    await exec.updateTaskState('plan.ledger', { phase: 'debugging' });
    const byPlanner = await errorOf(planner.append('plan.ledger', { kind: 'note', content: 'let me do it' }));
    expect(isEngramError(byPlanner, 'SCOPE_DENIED')).toBe(true);
    expect((byPlanner as { data: { holder: string } }).data.holder).toBe('alice');
    const cardByPlanner = await errorOf(planner.updateTaskState('plan.ledger', { phase: 'done' }));
    expect(isEngramError(cardByPlanner, 'SCOPE_DENIED')).toBe(true);
    const packByPlanner = await errorOf(planner.pack('plan.ledger', { windowTokens: 4000 }));
    expect(isEngramError(packByPlanner, 'SCOPE_DENIED')).toBe(true);
    // The executor's own window: its task card (the packet's objective and acceptance criteria) and its history.
    const { pack } = await exec.pack('plan.ledger', { windowTokens: 4000 });
    const packText = pack.blocks.map((b) => b.text).join('\n');
    expect(packText).toContain('Find out why the ledger reservation retries twice.');
    expect(packText).toContain('Acceptance: The cause is cited with a pointer to the log line');
    expect(packText).toContain('reading the logs');
    expect(packText).not.toContain('plan the ledger fix');
    const bySibling = await errorOf(exec2.append('plan.ledger', { kind: 'note', content: 'me too' }));
    expect(isEngramError(bySibling, 'SCOPE_DENIED')).toBe(true);
    const upward = await errorOf(exec.append('plan', { kind: 'note', content: 'into the planner' }));
    expect(isEngramError(upward, 'SCOPE_DENIED')).toBe(true);
    expect((upward as { data: { holder: string } }).data.holder).toBe('lead');
    // Delegating writes to the planner session too: only its writer delegates from it, and nothing is created otherwise.
    const hijack = await errorOf(exec2.hierarchy.delegate({ parentSessionId: 'plan', executor: 'bob', packet: packet('gateway') }));
    expect(isEngramError(hijack, 'SCOPE_DENIED')).toBe(true);
    expect((await ctx.mem.listSessions()).map((s) => s.id).sort()).toEqual(['plan', 'plan.ledger']);
    // Reads stay open to the project: the planner reads its executor's session.
    expect((await planner.listEvents({ sessionId: 'plan.ledger' as never })).map((e) => e.content)).toContain('reading the logs');
  });

  it('validates a report by re-resolving every pointer: verified, digest mismatch and unreadable are each reported', async () => {
    const { planner, exec } = await team();
    await planner.append('plan', { kind: 'user', content: 'fix the ledger' });
    await planner.hierarchy.delegate({ parentSessionId: 'plan', executor: 'alice', packet: packet('ledger') });
    const [log] = await exec.append('plan.ledger', { kind: 'tool_result', content: 'reserve() retried: timeout 30s then retry', toolName: 'logs' });
    const pointer = `sam:event:${log!.record.id}`;
    const read = await (await ctx.mem.pointerResolver()).deref(pointer, { visibleToProject: 'shop' });

    const sent = await exec.hierarchy.report('plan.ledger', {
      status: 'done',
      summary: 'reserve() retries on a 30 s timeout.',
      key_findings: [
        { claim: 'The retry follows a timeout', provenance: [{ pointer, content_digest: read.contentDigest }] },
        { claim: 'A phantom read', provenance: [{ pointer, content_digest: `sha256:${'0'.repeat(64)}` }] },
        { claim: 'A missing event', provenance: [{ pointer: 'sam:event:evt_00000000000000000000000000', content_digest: read.contentDigest }] },
      ],
    });
    expect(sent).toMatchObject({ sessionId: 'plan.ledger', parentSessionId: 'plan', subtaskId: 'ledger' });
    expect((await ctx.mem.getEvent(sent.eventId)).sessionId).toBe('plan.ledger');

    const [received] = await planner.hierarchy.reports('plan', { record: true });
    expect(received).toMatchObject({ eventId: sent.eventId, executor: 'alice', subtaskId: 'ledger' });
    const v = received!.validation;
    expect(v).toMatchObject({ isVerified: false, verifiedPointers: 1, failedPointers: 2 });
    expect(v.findings.map((f) => f.pointers[0]!.status)).toEqual(['verified', 'digest_mismatch', 'unreadable']);
    expect(v.findings[1]!.pointers[0]).toMatchObject({ expected: '0'.repeat(64), contentDigest: read.contentDigest });
    expect(v.findings[2]!.pointers[0]).toMatchObject({ code: 'NOT_FOUND' });
    const recorded = await ctx.mem.getEvent(received!.validationEventId!);
    expect(recorded).toMatchObject({ sessionId: 'plan', kind: 'decision' });
    expect(recorded.content).toContain('NOT verified');
    // Recording the same outcome again writes nothing new.
    const before = (await ctx.mem.getSession('plan')).eventCount;
    await planner.hierarchy.reports('plan', { record: true });
    expect((await ctx.mem.getSession('plan')).eventCount).toBe(before);

    // Only the writer reports, and only a delegated session has someone to report to.
    const byPlanner = await errorOf(planner.hierarchy.report('plan.ledger', { status: 'done', summary: 'x' }));
    expect(isEngramError(byPlanner, 'SCOPE_DENIED')).toBe(true);
    const notDelegated = await errorOf(planner.hierarchy.report('plan', { status: 'done', summary: 'x' }));
    expect(isEngramError(notDelegated, 'INVALID_INPUT')).toBe(true);
  });

  it('refuses bad packets and reports naming the field, storing nothing', async () => {
    const { planner } = await team();
    await planner.append('plan', { kind: 'user', content: 'x' });
    const cases: Array<[unknown, string, string]> = [
      [packet('a', { acceptance_criteria: [] }), 'INVALID_INPUT', 'packet.acceptance_criteria'],
      [packet('a', { key_event_refs: ['sam:event:evt_00000000000000000000000000'] }), 'NOT_FOUND', 'packet.key_event_refs[0]'],
      [packet('a', { key_event_refs: ['repo:a.ts#L1@abc1234'] }), 'INVALID_INPUT', 'packet.key_event_refs[0]'],
      [packet('a', { plan_node_ref: 'nope:x' }), 'POINTER_INVALID', 'packet.plan_node_ref'],
      [packet('bad id!'), 'INVALID_INPUT', 'packet.subtask_id'],
      [{ ...packet('a'), extra: 1 }, 'INVALID_INPUT', 'packet'],
    ];
    for (const [p, code, field] of cases) {
      const err = await errorOf(planner.hierarchy.delegate({ parentSessionId: 'plan', executor: 'alice', packet: p as never }));
      expect(isEngramError(err, code as never), `${field}: ${String(err)}`).toBe(true);
      expect(String((err as { data: { field: string } }).data.field)).toContain(field);
    }
    const other = await errorOf(planner.hierarchy.delegate({ parentSessionId: 'plan', executor: 'eve', packet: packet('a') }));
    expect(isEngramError(other, 'INVALID_INPUT')).toBe(true);
    expect((other as { data: { field: string } }).data.field).toBe('executor');
    const report = await errorOf(planner.hierarchy.validate({ status: 'done', summary: 'x', key_findings: [{ claim: 'c', provenance: [] }] }));
    expect((report as { data: { field: string } }).data.field).toBe('report.key_findings[0].provenance');
    expect((await ctx.mem.getSession('plan')).eventCount).toBe(1);
    expect((await ctx.mem.listSessions()).map((s) => s.id)).toEqual(['plan']);
  });

  it('builds the tree with sub-executors, recalls across it, and keeps it within the trust model', async () => {
    const { planner, exec, outsider } = await team();
    await planner.append('plan', { kind: 'decision', content: 'We ship the quokka migration on Friday.' });
    await planner.hierarchy.delegate({ parentSessionId: 'plan', executor: 'alice', packet: packet('ledger') });
    await planner.hierarchy.delegate({ parentSessionId: 'plan', executor: 'bob', packet: packet('gateway') });
    const sub = await exec.hierarchy.delegate({ parentSessionId: 'plan.ledger', packet: packet('ledger-db'), executor: 'alice' });
    expect(sub.child).toMatchObject({ role: 'sub_executor', depth: 2, rootSessionId: 'plan' });
    await exec.append('plan.ledger.ledger-db', { kind: 'tool_result', content: 'the numbat index is missing on reservations', toolName: 'psql' });

    const tree = await exec.hierarchy.tree('plan.ledger.ledger-db');
    expect(tree.rootSessionId).toBe('plan');
    expect(tree.nodes.map((n) => [n.sessionId, n.role, n.writer])).toEqual([
      ['plan', 'planner', 'lead'],
      ['plan.ledger', 'executor', 'alice'],
      ['plan.ledger.ledger-db', 'sub_executor', 'alice'],
      ['plan.gateway', 'executor', 'bob'],
    ]);

    const down = await planner.hierarchy.recall('plan', { queries: ['numbat index'] });
    expect(down.sessionIds).toEqual(['plan', 'plan.ledger', 'plan.ledger.ledger-db', 'plan.gateway']);
    expect(down.results[0]!.hits.map((h) => h.sessionId)).toContain('plan.ledger.ledger-db');
    const up = await exec.hierarchy.recall('plan.ledger.ledger-db', { queries: ['quokka migration'], scope: 'ancestors' });
    expect(up.sessionIds).toEqual(['plan.ledger.ledger-db', 'plan.ledger', 'plan']);
    expect(up.results[0]!.hits[0]!.sessionId).toBe('plan');
    const own = await exec.hierarchy.recall('plan.ledger', { queries: ['quokka migration'] });
    expect(own.results[0]!.hits).toEqual([]);

    // Another project sees none of it: the sessions are NOT_FOUND, and shares widen only what they share.
    expect(isEngramError(await errorOf(outsider.hierarchy.tree('plan')), 'NOT_FOUND')).toBe(true);
    expect(isEngramError(await errorOf(outsider.hierarchy.recall('plan', { queries: ['numbat'] })), 'NOT_FOUND')).toBe(true);
    await ctx.mem.viewAs().share('plan.ledger', 'other');
    const shared = await outsider.hierarchy.recall('plan.ledger', { queries: ['numbat index'] });
    expect(shared.sessionIds).toEqual(['plan.ledger']);
    expect((await outsider.hierarchy.tree('plan.ledger')).nodes.map((n) => n.sessionId)).toEqual(['plan.ledger']);
  });
});
