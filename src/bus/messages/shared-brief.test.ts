import { describe, expect, it } from 'vitest';
import { DEFAULT_BUDGET_LIMITS } from '../budget-limits.js';
import type { EngramKind } from '../../model/engram.js';
import type { Pointer } from '../../model/pointer.js';
import type { ParentToChildMessage } from './agent-message.js';
import { validateAgentMessage } from './message-validator.js';
import { buildSharedBrief, distinctSources, isContradiction, type BriefEngram } from './shared-brief.js';
import { COMMIT, DIGEST, countTokens, thrown } from './test-support.js';

const repo = (path: string, lines = 'L1-L9'): Pointer => ({ type: 'repo', ref: `repo:${path}#${lines}@${COMMIT}` });
const artifact = (name: string, section: string): Pointer => ({ type: 'artifact', ref: `artifact:${name}#sec=${section}@${DIGEST}` });

const BASE_MS = Date.UTC(2026, 0, 19, 12);
let nextId = 0;
function brief(overrides: Partial<BriefEngram> & { minute?: number } = {}): BriefEngram {
  const { minute = 0, ...rest } = overrides;
  nextId++;
  return {
    id: `eng_${String(nextId).padStart(3, '0')}`,
    role: 'programmer',
    kind: 'fact',
    claim: `Fact number ${nextId} about the ledger.`,
    confidence: 0.5,
    pointers: [repo(`services/f${nextId}.py`)],
    createdAt: new Date(BASE_MS + minute * 60_000).toISOString(),
    ...rest,
  };
}

const build = (engrams: BriefEngram[], extra: Partial<Parameters<typeof buildSharedBrief>[1]> = {}) => buildSharedBrief(engrams, { countTokens, ...extra });

describe('contradictions', () => {
  it('counts a risk citing two different sources as a contradiction, and two spans of one file as one source', () => {
    const both = [artifact('SPEC_Budget_Enforcement.md', 'Rules'), repo('services/gateway/vendor_client.py', 'L280-L360')];
    expect(distinctSources(both)).toEqual(['artifact:SPEC_Budget_Enforcement.md', 'file:services/gateway/vendor_client.py']);
    expect(isContradiction({ kind: 'risk', pointers: both })).toBe(true);
    expect(isContradiction({ kind: 'fact', pointers: both })).toBe(false);
    const sameFile = [repo('a.py', 'L1-L2'), repo('a.py', 'L50-L60'), { type: 'diff' as const, ref: `diff:${COMMIT}#a.py#L3-L4` }];
    expect(distinctSources(sameFile)).toEqual(['file:a.py']);
    expect(isContradiction({ kind: 'risk', pointers: sameFile })).toBe(false);
    expect(isContradiction({ kind: 'risk', pointers: sameFile, tags: ['contradiction'] })).toBe(true);
  });
});

describe('buildSharedBrief (LESS §5.3, PAS Bus §10.1)', () => {
  it('puts the lead first, then contradictions, constraints, risks, decisions, todos and facts', () => {
    const engrams = [
      brief({ kind: 'fact', minute: 9, confidence: 0.99 }),
      brief({ kind: 'todo', minute: 8 }),
      brief({ kind: 'decision', minute: 7 }),
      brief({ kind: 'risk', minute: 6 }),
      brief({ kind: 'policy', minute: 5 }),
      brief({ kind: 'constraint', minute: 4 }),
      brief({
        kind: 'risk',
        minute: 0,
        confidence: 0.3,
        claim: 'Potential contradiction between SPEC budget rules and current gateway reservation flow.',
        pointers: [artifact('SPEC_Budget_Enforcement.md', 'Rules'), repo('services/gateway/vendor_client.py', 'L280-L360')],
      }),
    ];
    const result = build(engrams, {
      lead: ['Goal: implement Engram Bus with 5% context rule; pointer-first only.'],
      limits: { maxSharedBriefLines: 30, maxSharedBriefTokens: 2000 },
    });
    expect(result.lines.map((l) => l.split(' ')[0])).toEqual(['Goal:', 'CONTRADICTION', 'POLICY', 'CONSTRAINT', 'RISK', 'DECISION', 'TODO', 'FACT']);
    expect(result.lines[1]).toBe(
      `CONTRADICTION (programmer 0.30): Potential contradiction between SPEC budget rules and current gateway reservation flow. -> artifact:SPEC_Budget_Enforcement.md#sec=Rules@${DIGEST}; repo:services/gateway/vendor_client.py#L280-L360@${COMMIT}`,
    );
    expect(result.contradictions).toBe(1);
    expect(result.tokens).toBe(countTokens(result.lines.join('\n')));
  });

  it('shows both sides of a contradiction even when one source has many pointers', () => {
    const e = brief({ kind: 'risk', pointers: [repo('a.py', 'L1-L2'), repo('a.py', 'L5-L6'), repo('a.py', 'L9-L10'), artifact('SPEC.md', 'Rules')] });
    const [line] = build([e], { maxPointersPerLine: 2 }).lines;
    expect(line).toContain(`repo:a.py#L1-L2@${COMMIT}; artifact:SPEC.md#sec=Rules@${DIGEST} +2 more`);
  });

  it('orders within a kind by recency, then confidence, then id', () => {
    const older = brief({ kind: 'risk', minute: 1, confidence: 0.9 });
    const newer = brief({ kind: 'risk', minute: 2, confidence: 0.1 });
    const tieLow = brief({ kind: 'risk', minute: 0, confidence: 0.4, id: 'eng_b' });
    const tieHigh = brief({ kind: 'risk', minute: 0, confidence: 0.8, id: 'eng_c' });
    const tieId = brief({ kind: 'risk', minute: 0, confidence: 0.4, id: 'eng_a' });
    expect(build([tieLow, older, tieId, newer, tieHigh]).included).toEqual([newer.id, older.id, 'eng_c', 'eng_a', 'eng_b']);
  });

  it('gives the same brief for any input order', () => {
    const engrams = Array.from({ length: 40 }, (_, i) =>
      brief({ kind: (['risk', 'fact', 'decision', 'constraint'] as EngramKind[])[i % 4]!, minute: i % 5, confidence: (i % 3) / 3, role: `child${i % 3}` }),
    );
    const first = build(engrams);
    const reversed = build([...engrams].reverse());
    const shuffled = build([...engrams].sort((a, b) => (a.claim.length % 7) - (b.claim.length % 7) || (a.id < b.id ? 1 : -1)));
    expect(reversed).toEqual(first);
    expect(shuffled).toEqual(first);
  });

  it('keeps at most 30 lines and says which engrams were left out', () => {
    const engrams = Array.from({ length: 50 }, (_, i) => brief({ minute: i, claim: `F${i}.`, pointers: [repo(`f${i}.py`, 'L1')] }));
    const result = build(engrams, { limits: { maxSharedBriefLines: 30, maxSharedBriefTokens: 4000 } });
    expect(result.lines).toHaveLength(30);
    expect(result.omitted).toHaveLength(20);
    expect(result.omitted.every((o) => o.reason === 'lines')).toBe(true);
    // Newest first: the twenty oldest are left out.
    expect(result.omitted.map((o) => o.id)).toEqual(engrams.slice(0, 20).reverse().map((e) => e.id));
    // A lower configured limit holds, and 30 is the ceiling even when asked for more.
    expect(build(engrams, { limits: { maxSharedBriefLines: 5, maxSharedBriefTokens: 4000 } }).lines).toHaveLength(5);
    expect(build(engrams, { limits: { maxSharedBriefLines: 40, maxSharedBriefTokens: 4000 } }).lines).toHaveLength(30);
  });

  it('counts lead lines against the line budget', () => {
    const engrams = Array.from({ length: 5 }, (_, i) => brief({ minute: i, claim: `F${i}.` }));
    const result = build(engrams, { lead: ['Goal: a.', 'Goal: b.'], limits: { maxSharedBriefLines: 4, maxSharedBriefTokens: 4000 } });
    expect(result.lines).toHaveLength(4);
    expect(result.included).toHaveLength(2);
  });

  it('skips a line that would overflow the token budget and fits a later, shorter one', () => {
    const long = brief({ kind: 'risk', minute: 2, claim: `Long claim ${'about the ledger and the gateway '.repeat(12)}` });
    const short = brief({ kind: 'fact', minute: 1, claim: 'Short.' });
    const shortLine = build([short]).lines[0]!;
    const budget = countTokens(shortLine) + 5;
    const result = build([long, short], { limits: { maxSharedBriefLines: 30, maxSharedBriefTokens: budget } });
    expect(result.included).toEqual([short.id]);
    expect(result.omitted).toEqual([{ id: long.id, reason: 'tokens' }]);
    expect(result.tokens).toBeLessThanOrEqual(budget);
  });

  it('fits exactly at the token budget', () => {
    const e = brief({ claim: 'Exactly.' });
    const line = build([e]).lines[0]!;
    const tokens = countTokens(line);
    expect(build([e], { limits: { maxSharedBriefLines: 30, maxSharedBriefTokens: tokens } }).included).toEqual([e.id]);
    expect(build([e], { limits: { maxSharedBriefLines: 30, maxSharedBriefTokens: tokens - 1 } }).omitted).toEqual([{ id: e.id, reason: 'tokens' }]);
  });

  it('merges the same claim from several children into one line naming each role', () => {
    const a = brief({ kind: 'risk', role: 'programmer', minute: 3, claim: 'Ledger hold is not idempotent.', pointers: [repo('ledger.py', 'L1-L20')] });
    const b = brief({ kind: 'risk', role: 'reviewer', minute: 2, claim: 'ledger hold is  NOT idempotent', pointers: [repo('ledger.py', 'L1-L20'), repo('ledger.py', 'L40')] });
    const result = build([b, a]);
    expect(result.lines).toHaveLength(1);
    expect(result.lines[0]).toBe(`RISK (programmer, reviewer 0.50): Ledger hold is not idempotent. -> repo:ledger.py#L1-L20@${COMMIT}; repo:ledger.py#L40@${COMMIT}`);
    expect(result.included).toEqual([a.id]);
    expect(result.omitted).toEqual([{ id: b.id, reason: 'duplicate' }]);
  });

  it('caps lines per role when asked, so one child cannot fill the brief', () => {
    const chatty = Array.from({ length: 6 }, (_, i) => brief({ role: 'programmer', minute: 10 + i, claim: `P${i}.` }));
    const quiet = brief({ role: 'reviewer', minute: 0, claim: 'R.' });
    const result = build([...chatty, quiet], { maxLinesPerRole: 2 });
    expect(result.included).toEqual([chatty[5]!.id, chatty[4]!.id, quiet.id]);
    expect(result.omitted.filter((o) => o.reason === 'role-cap')).toHaveLength(4);
  });

  it('writes each claim on one line', () => {
    const [line] = build([brief({ claim: 'First line.\nSecond   line.' })]).lines;
    expect(line).toContain('First line. Second line.');
    expect(line).not.toMatch(/\n/);
  });

  it('rejects bad input, naming the field', () => {
    expect(thrown(() => build([brief(), brief({ confidence: 1.5 })])).data.field).toBe('engrams[1].confidence');
    expect(thrown(() => build([brief({ pointers: [] })])).data.field).toBe('engrams[0].pointers');
    expect(thrown(() => build([brief({ createdAt: 'yesterday' })])).data.field).toBe('engrams[0].createdAt');
    expect(thrown(() => build([brief({ kind: 'rumor' as EngramKind })])).data.field).toBe('engrams[0].kind');
    expect(thrown(() => build([], { lead: ['a\nb'] })).data.field).toBe('lead[0]');
    expect(thrown(() => build([], { lead: ['x', 'y'], limits: { maxSharedBriefLines: 1, maxSharedBriefTokens: 400 } })).data.field).toBe('lead');
  });

  it('returns an empty brief for no engrams', () => {
    expect(build([])).toEqual({ lines: [], tokens: 0, included: [], omitted: [], contradictions: 0 });
  });

  it('builds a brief that passes as SHARED_BRIEF_MICRO in a parent message', () => {
    const engrams = Array.from({ length: 60 }, (_, i) =>
      brief({ kind: i % 7 === 0 ? 'risk' : 'fact', minute: i, claim: `Finding ${i}: the ledger retries twice.`, pointers: i % 7 === 0 ? [repo(`f${i}.py`), artifact('SPEC.md', 'Rules')] : [repo(`f${i}.py`)] }),
    );
    const result = build(engrams, { limits: DEFAULT_BUDGET_LIMITS });
    expect(result.lines.length).toBeGreaterThan(0);
    expect(result.lines.length).toBeLessThanOrEqual(30);
    expect(result.tokens).toBeLessThanOrEqual(DEFAULT_BUDGET_LIMITS.maxSharedBriefTokens);
    const message: ParentToChildMessage = {
      direction: 'parent-to-child',
      role: 'programmer',
      sharedBriefMicro: result.lines,
      budgets: {},
      grants: [],
      targetPointerPack: [],
      instructions: [],
    };
    expect(validateAgentMessage(message, { limits: DEFAULT_BUDGET_LIMITS, countTokens })).toMatchObject({ ok: true });
  });
});
