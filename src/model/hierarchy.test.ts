import { describe, expect, it } from 'vitest';
import { DELEGATION_LIMITS, delegationPacketSchema, delegationReportSchema, roleAtDepth, writerLeaseOf } from './hierarchy.js';

const EVT = 'evt_01jz0000000000000000000000';

describe('delegation packet', () => {
  const base = { subtask_id: 'ledger', objective: 'Fix it', acceptance_criteria: ['cited'] };

  it('fills defaults and writes a bare event id as a sam:event pointer', () => {
    const p = delegationPacketSchema.parse({ ...base, key_event_refs: [EVT, `sam:event:${EVT}`] });
    expect(p).toEqual({ ...base, constraints: [], key_event_refs: [`sam:event:${EVT}`, `sam:event:${EVT}`], artifact_ids: [], recall_tool_access: true });
  });

  it('refuses what it cannot hold, naming the field', () => {
    const issues = (v: unknown) => delegationPacketSchema.safeParse(v).error?.issues.map((i) => i.path.join('.'));
    expect(issues({ ...base, acceptance_criteria: [] })).toEqual(['acceptance_criteria']);
    expect(issues({ ...base, key_event_refs: ['repo:a.py#L1@abc1234'] })).toEqual(['key_event_refs.0']);
    expect(issues({ ...base, artifact_ids: ['art_short'] })).toEqual(['artifact_ids.0']);
    expect(issues({ ...base, objective: 'x'.repeat(DELEGATION_LIMITS.objectiveChars + 1) })).toEqual(['objective']);
    expect(issues({ ...base, constraints: Array.from({ length: DELEGATION_LIMITS.constraints + 1 }, () => 'c') })).toEqual(['constraints']);
    expect(issues({ ...base, subtask_id: '../x' })).toEqual(['subtask_id']);
    expect(issues({ ...base, objective: 'bad \ud800 text' })).toEqual(['objective']);
    expect(issues({ ...base, budget: 1 })).toEqual(['']);
  });
});

describe('delegation report', () => {
  it('takes findings citing pointers with sha256 digests, prefixed or not', () => {
    const digest = 'ab'.repeat(32);
    const r = delegationReportSchema.parse({
      status: 'done',
      summary: 's',
      key_findings: [{ claim: 'c', provenance: [{ pointer: `sam:event:${EVT}`, content_digest: `sha256:${digest}` }, { pointer: 'p', content_digest: digest }] }],
    });
    expect(r.key_findings[0]!.provenance).toHaveLength(2);
  });

  it('refuses a finding without evidence, a bad digest and an unknown status', () => {
    const issues = (v: unknown) => delegationReportSchema.safeParse(v).error?.issues.map((i) => i.path.join('.'));
    expect(issues({ status: 'done', summary: 's', key_findings: [{ claim: 'c', provenance: [] }] })).toEqual(['key_findings.0.provenance']);
    expect(issues({ status: 'done', summary: 's', key_findings: [{ claim: 'c', provenance: [{ pointer: 'p', content_digest: 'abc' }] }] })).toEqual([
      'key_findings.0.provenance.0.content_digest',
    ]);
    expect(issues({ status: 'finished', summary: 's' })).toEqual(['status']);
  });
});

describe('roles and leases', () => {
  it('names the role by depth', () => {
    expect([0, 1, 2, 5].map(roleAtDepth)).toEqual(['planner', 'executor', 'sub_executor', 'sub_executor']);
  });

  it('reads a writer lease from link meta only when it is well formed', () => {
    expect(writerLeaseOf({ hierarchy: { writer: { id: 'agent:1', name: 'alice' } } })).toEqual({ id: 'agent:1', name: 'alice' });
    expect(writerLeaseOf({ hierarchy: { writer: null } })).toBeNull();
    expect(writerLeaseOf({ hierarchy: { writer: { id: 1 } } })).toBeNull();
    expect(writerLeaseOf(null)).toBeNull();
  });
});
