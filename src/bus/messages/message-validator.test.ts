import { describe, expect, it } from 'vitest';
import { DEFAULT_BUDGET_LIMITS, narrowBudgetLimits, resolveBudgetLimits, type BudgetLimits } from '../budget-limits.js';
import type { AgentMessage, ChildToParentMessage, MessageEngram, ParentToChildMessage } from './agent-message.js';
import { toBudgetError, validateAgentMessage, type MessageRejection, type MessageVerdict, type MessageViolation } from './message-validator.js';
import { parseAgentMessage } from './parse-agent-message.js';
import { renderAgentMessage } from './render-agent-message.js';
import { COMMIT, DIGEST, FILLED_CHILD_EXAMPLE, FILLED_PARENT_EXAMPLE, SEED_CHILD_EXAMPLE, countTokens, prose, yamlToJson } from './test-support.js';

const check = (message: AgentMessage, limits: Readonly<BudgetLimits> = DEFAULT_BUDGET_LIMITS, grantedInlineCodeChars?: number): MessageVerdict =>
  validateAgentMessage(message, { limits, countTokens, ...(grantedInlineCodeChars === undefined ? {} : { grantedInlineCodeChars }) });

function rejected(verdict: MessageVerdict): MessageRejection {
  if (verdict.ok) throw new Error('expected a rejection, the message passed');
  return verdict;
}

function violation(verdict: MessageVerdict, limit: MessageViolation['limit']): MessageViolation {
  const found = rejected(verdict).violations.find((v) => v.limit === limit);
  if (!found) throw new Error(`no ${limit} violation in ${JSON.stringify(rejected(verdict).violations.map((v) => v.limit))}`);
  return found;
}

const childExample = (): ChildToParentMessage => parseAgentMessage(FILLED_CHILD_EXAMPLE) as ChildToParentMessage;
const parentExample = (): ParentToChildMessage => parseAgentMessage(FILLED_PARENT_EXAMPLE) as ParentToChildMessage;

const engram = (i: number, claim = `Reservation step ${i} is not idempotent under retry.`): MessageEngram => ({
  kind: 'risk',
  claim,
  confidence: 0.5,
  ttl: 'P1D',
  scope: 'run',
  pointers: [{ type: 'repo', ref: `repo:services/ledger/reservation.py#L${i + 1}-L${i + 9}@${COMMIT}` }],
});

const withEngrams = (n: number, make: (i: number) => MessageEngram = (i) => engram(i)): ChildToParentMessage => ({
  ...childExample(),
  engrams: Array.from({ length: n }, (_, i) => make(i)),
});

describe('validateAgentMessage: compliant messages', () => {
  it("passes the seed's examples once their slots are filled (§7.1, §7.2)", () => {
    const childVerdict = check(childExample());
    expect(childVerdict.ok).toBe(true);
    expect(childVerdict.usage.engrams).toBe(1);
    expect(childVerdict.usage.inlineCodeChars).toBe(0);
    expect(childVerdict.usage.inlineTokens).toBe(countTokens(renderAgentMessage(childExample())));
    expect(childVerdict.usage.inlineTokens).toBeLessThan(800);
    const parentVerdict = check(parentExample());
    expect(parentVerdict).toMatchObject({ ok: true, usage: { sharedBriefLines: 2 } });
  });

  it('gives the same verdict for the YAML and JSON forms of a message, every time', () => {
    const limits = resolveBudgetLimits({ maxInlineTokens: 150, maxSharedBriefTokens: 150 });
    const fromYaml = check(parseAgentMessage(FILLED_CHILD_EXAMPLE), limits);
    const fromJson = check(parseAgentMessage(yamlToJson(FILLED_CHILD_EXAMPLE)), limits);
    expect(fromYaml.ok).toBe(false);
    expect(fromJson).toEqual(fromYaml);
    expect(check(parseAgentMessage(FILLED_CHILD_EXAMPLE), limits)).toEqual(fromYaml);
  });
});

describe('validateAgentMessage: inline tokens (§3.1 MAX_INLINE_TOKENS)', () => {
  it('rejects a message of 1200 inline tokens with BUDGET_EXCEEDED (§11.1)', () => {
    const message: ChildToParentMessage = { ...childExample(), output: { summary: prose(1200) } };
    const verdict = check(message);
    const v = violation(verdict, 'maxInlineTokens');
    expect(v).toMatchObject({ seedName: 'MAX_INLINE_TOKENS', field: '(message)', allowed: 800, unit: 'tokens' });
    expect(v.measured).toBeGreaterThanOrEqual(1200);
    expect(v.instruction).toContain(`Cut the message from ${v.measured.toLocaleString('en-US')} to at most 800 tokens`);
    expect(v.instruction).toContain('largest sections: OUTPUT');
    const err = toBudgetError(rejected(verdict));
    expect(err.code).toBe('BUDGET_EXCEEDED');
    expect(err.data.field).toBe('(message)');
    expect(err.data.resend).toMatchObject({ format: 'engrams-and-pointers', direction: 'child-to-parent', maxInlineTokens: 800 });
    expect(err.message).toContain('MAX_INLINE_TOKENS');
  });

  it('passes a message exactly at the token limit and rejects one token over', () => {
    const message = childExample();
    const tokens = countTokens(renderAgentMessage(message));
    expect(check(message, resolveBudgetLimits({ maxInlineTokens: tokens, maxSharedBriefTokens: 1 })).ok).toBe(true);
    const over = violation(check(message, resolveBudgetLimits({ maxInlineTokens: tokens - 1, maxSharedBriefTokens: 1 })), 'maxInlineTokens');
    expect(over).toMatchObject({ measured: tokens, allowed: tokens - 1 });
  });

  it('says how many engrams fit, and a resend with that many of the largest ones passes', () => {
    const big = (i: number) => engram(i, `Engram ${i}: ${prose(60)}`.slice(0, 480));
    const message = withEngrams(12, big);
    const verdict = rejected(check(message));
    const k = verdict.resend.maxEngrams!;
    expect(k).toBeGreaterThan(0);
    expect(k).toBeLessThan(12);
    expect(violation(verdict, 'maxInlineTokens').instruction).toContain(`Keep ENGRAMS <= ${k}`);
    expect(check({ ...message, engrams: message.engrams.slice(0, k) }).ok).toBe(true);
  });

  it('says when the engrams are not what to cut', () => {
    const message: ChildToParentMessage = { ...withEngrams(2), output: { summary: prose(900) } };
    const verdict = check(message);
    expect(violation(verdict, 'maxInlineTokens').instruction).toContain('Even without ENGRAMS the message is over budget');
    // Both engrams fit once OUTPUT is one line.
    expect(rejected(verdict).resend.maxEngrams).toBe(2);
  });
});

describe('validateAgentMessage: engrams (§3.1 MAX_ENGRAMS, MAX_ENGRAM_CHARS; §8.2, §11.3)', () => {
  // Twelve one-pointer engrams pinned to full commits take about 1,200 tokens, more than the seed's 800 (a 40-hex
  // commit alone is 31 tokens): the count limit is tested with room for tokens, so only it can fail.
  const roomy = resolveBudgetLimits({ maxInlineTokens: 5000 });

  it('with the default limits, the token budget binds before the engram count', () => {
    expect(countTokens(renderAgentMessage(withEngrams(12)))).toBeGreaterThan(800);
    expect(rejected(check(withEngrams(12))).violations.map((v) => v.limit)).toEqual(['maxInlineTokens']);
  });

  it('passes 12 engrams and rejects 13, saying how many to keep', () => {
    expect(check(withEngrams(12), roomy).ok).toBe(true);
    const verdict = check(withEngrams(13), roomy);
    expect(violation(verdict, 'maxEngramsPerMessage')).toMatchObject({ field: 'ENGRAMS', measured: 13, allowed: 12, unit: 'engrams' });
    expect(violation(verdict, 'maxEngramsPerMessage').instruction).toContain('Send at most 12 ENGRAMS (13 sent)');
    expect(rejected(verdict).resend.maxEngrams).toBe(12);
  });

  it("holds a child to its parent's lower max_engrams", () => {
    const limits = narrowBudgetLimits(roomy, parentExample().budgets);
    expect(limits.maxInlineTokens).toBe(800);
    const short = (i: number) => engram(i, `Step ${i} retries.`);
    const pointer = { type: 'repo' as const, ref: `repo:l.py#L1@${COMMIT.slice(0, 8)}` };
    const small = (n: number) => withEngrams(n, (i) => ({ ...short(i), pointers: [pointer] }));
    expect(check(small(10), limits).ok).toBe(true);
    expect(rejected(check(small(11), limits)).violations).toMatchObject([{ limit: 'maxEngramsPerMessage', measured: 11, allowed: 10 }]);
  });

  it('passes a 500-character claim and rejects 501, naming the engram (§11.3 "Engram over length")', () => {
    const at = (chars: number) => withEngrams(3, (i) => engram(i, i === 1 ? `A ${'b'.repeat(chars - 2)}` : undefined));
    expect(check(at(500)).ok).toBe(true);
    const v = violation(check(at(501)), 'maxEngramChars');
    expect(v).toMatchObject({ seedName: 'MAX_ENGRAM_CHARS', field: 'ENGRAMS[1].claim', measured: 501, allowed: 500, unit: 'chars' });
    expect(v.instruction).toContain('Shorten ENGRAMS[1].claim from 501 to at most 500 characters');
  });
});

describe('validateAgentMessage: inline code (§3.1 MAX_INLINE_CODE_CHARS, §8.1 context bloat)', () => {
  const code = Array.from({ length: 40 }, (_, i) => `    ledger.reserve(account_${i}, amount)`).join('\n');
  const pasted: ChildToParentMessage = { ...childExample(), output: { summary: `The ledger does:\n\`\`\`python\n${code}\n\`\`\`` } };

  it('rejects inline code without a grant (§11.1), naming the block and the pointer to send instead', () => {
    const v = violation(check(pasted), 'maxInlineCodeChars');
    expect(v).toMatchObject({ seedName: 'MAX_INLINE_CODE_CHARS', field: 'OUTPUT.summary', measured: code.length, allowed: 0, unit: 'chars' });
    expect(v.codeBlocks).toEqual([{ field: 'OUTPUT.summary', shape: 'fenced', line: 3, chars: code.length }]);
    expect(v.instruction).toContain(`move the ${code.length.toLocaleString('en-US')}-char code block in OUTPUT.summary (line 3) into an artifact`);
    expect(v.instruction).toContain('artifact:<name>#sec=<section>@<sha256 prefix>');
    expect(v.instruction).toContain('no inline code is allowed without a grant');
  });

  it('passes code up to the granted amount and rejects one character over', () => {
    expect(check(pasted, DEFAULT_BUDGET_LIMITS, code.length).ok).toBe(true);
    const v = violation(check(pasted, DEFAULT_BUDGET_LIMITS, code.length - 1), 'maxInlineCodeChars');
    expect(v).toMatchObject({ measured: code.length, allowed: code.length - 1 });
    expect(rejected(check(pasted, DEFAULT_BUDGET_LIMITS, code.length - 1)).resend.maxInlineCodeChars).toBe(code.length - 1);
    // A configured allowance counts like a grant.
    expect(check(pasted, resolveBudgetLimits({ maxInlineCodeChars: code.length })).ok).toBe(true);
  });

  it('refuses a grant that is not a count rather than letting code through', () => {
    for (const bad of [Number.NaN, -1, 1.5]) {
      expect(() => check(pasted, DEFAULT_BUDGET_LIMITS, bad)).toThrow(expect.objectContaining({ code: 'INVALID_INPUT', data: { field: 'grantedInlineCodeChars' } }));
    }
  });

  it('finds code in claims and deref reasons too', () => {
    const twoLines = 'if (ok) {\n  commit();';
    const message: ChildToParentMessage = {
      ...withEngrams(2, (i) => engram(i, i === 1 ? `Looks wrong:\n${twoLines}` : undefined)),
      derefRequests: [{ pointer: { type: 'repo', ref: `repo:a.py#L1-L2@${COMMIT}` }, reason: 'x = 1;\ny = 2;' }],
    };
    const v = violation(check(message), 'maxInlineCodeChars');
    expect(v.codeBlocks?.map((b) => b.field)).toEqual(['ENGRAMS[1].claim', 'DEREF_REQUESTS[0].reason']);
    expect(v.measured).toBe(twoLines.length + 'x = 1;\ny = 2;'.length);
  });
});

describe('validateAgentMessage: pointers (§8.2, §11.2)', () => {
  it("rejects the seed's unpinned pointers (\"pointer missing SHA\"), naming each", () => {
    const unpinned = parseAgentMessage(SEED_CHILD_EXAMPLE.replace('ROLE:\n', 'ROLE: programmer\n').replace('TASK_STATUS:\n', 'TASK_STATUS: blocked\n'));
    const verdict = check(unpinned);
    const v = violation(verdict, 'pointerFormat');
    expect(v).toMatchObject({ seedName: 'POINTER_FORMAT', field: 'ENGRAMS[0].pointers[0].ref', measured: 4, allowed: 0, unit: 'pointers' });
    expect(v.invalidPointers?.map((p) => [p.field, p.reason])).toEqual([
      ['ENGRAMS[0].pointers[0].ref', 'missing-digest'],
      ['ENGRAMS[0].pointers[1].ref', 'missing-commit'],
      ['POINTER_PACK[0].ref', 'missing-commit'],
      ['DEREF_REQUESTS[0].pointer.ref', 'missing-commit'],
    ]);
    expect(v.instruction).toContain('repo:<path>#L<a>-L<b>@<commit sha>');
    // Pointers are the only problem: interfaces answer POINTER_INVALID.
    expect(toBudgetError(rejected(verdict)).code).toBe('POINTER_INVALID');
  });

  it('rejects a pointer whose ref is of another type', () => {
    const message: ChildToParentMessage = { ...childExample(), pointerPack: [{ type: 'artifact', ref: `repo:a.py#L1@${COMMIT}` }] };
    expect(violation(check(message), 'pointerFormat').invalidPointers).toMatchObject([{ field: 'POINTER_PACK[0].type', reason: 'type-mismatch' }]);
  });

  it('answers BUDGET_EXCEEDED when a budget is broken along with pointers', () => {
    const message: ChildToParentMessage = { ...withEngrams(13), pointerPack: [{ type: 'repo', ref: 'repo:a.py@' }] };
    const err = toBudgetError(rejected(check(message, resolveBudgetLimits({ maxInlineTokens: 5000 }))));
    expect(err.code).toBe('BUDGET_EXCEEDED');
    expect(err.data.violations.map((v) => v.limit)).toEqual(['maxEngramsPerMessage', 'pointerFormat']);
    expect(err.data.field).toBe('ENGRAMS');
  });
});

describe('validateAgentMessage: parent messages (§7.2, §10.1)', () => {
  const brief = (n: number) => Array.from({ length: n }, (_, i) => `Risk ${i}`);

  it('passes a 30-line SharedBriefMicro and rejects 31 lines', () => {
    expect(check({ ...parentExample(), sharedBriefMicro: brief(30) }).ok).toBe(true);
    const v = violation(check({ ...parentExample(), sharedBriefMicro: brief(31) }), 'maxSharedBriefLines');
    expect(v).toMatchObject({ field: 'SHARED_BRIEF_MICRO', measured: 31, allowed: 30, unit: 'lines' });
    expect(v.instruction).toContain('at most 30 lines');
  });

  it('holds the brief to its token budget, inclusive', () => {
    const lines = brief(10);
    const tokens = countTokens(lines.join('\n'));
    expect(check({ ...parentExample(), sharedBriefMicro: lines }, resolveBudgetLimits({ maxSharedBriefTokens: tokens })).ok).toBe(true);
    const v = violation(check({ ...parentExample(), sharedBriefMicro: lines }, resolveBudgetLimits({ maxSharedBriefTokens: tokens - 1 })), 'maxSharedBriefTokens');
    expect(v).toMatchObject({ measured: tokens, allowed: tokens - 1 });
  });

  it("rejects BUDGETS above the engine's limits, naming the wire key", () => {
    const message: ParentToChildMessage = { ...parentExample(), budgets: { maxInlineTokens: 2000, maxRepoSpansPerTurn: 3 } };
    const verdict = rejected(check(message));
    expect(verdict.violations).toHaveLength(1);
    expect(verdict.violations[0]).toMatchObject({ limit: 'maxInlineTokens', field: 'BUDGETS.max_inline_tokens', measured: 2000, allowed: 800 });
    expect(verdict.violations[0]!.instruction).toContain('issue a grant');
    // The ceilings are the engine's, even when the parent's own limits are narrower.
    const narrow = resolveBudgetLimits({ maxRepoSpansPerTurn: 1 });
    expect(validateAgentMessage({ ...parentExample(), budgets: { maxRepoSpansPerTurn: 3 } }, { limits: narrow, countTokens, ceilings: DEFAULT_BUDGET_LIMITS }).ok).toBe(true);
  });

  it('finds code pasted one line per instruction, and bad grant pointers', () => {
    const message: ParentToChildMessage = {
      ...parentExample(),
      instructions: ['Apply this:', 'const hold = ledger.reserve(amount);', 'await hold.commit();'],
      grants: [{ budgetToken: 't', pointer: { type: 'repo', ref: 'repo:../etc/passwd@abcd' }, capTokens: 10 }],
    };
    const verdict = check(message);
    expect(violation(verdict, 'maxInlineCodeChars').codeBlocks).toEqual([
      { field: 'INSTRUCTIONS[1]', shape: 'lines', line: 1, chars: 'const hold = ledger.reserve(amount);\nawait hold.commit();'.length },
    ]);
    expect(violation(verdict, 'pointerFormat').invalidPointers).toMatchObject([{ field: 'GRANTS[0].pointer.ref', reason: 'path-traversal' }]);
  });
});

describe('validateAgentMessage: the reject and resend loop (§3.3, §10.2)', () => {
  /** A sender that follows the resend request mechanically: fewer engrams, code and prose moved behind a pointer. */
  function resendFrom(message: ChildToParentMessage, rejection: MessageRejection): ChildToParentMessage {
    const moved = rejection.violations.some((v) => v.limit === 'maxInlineCodeChars' || v.limit === 'maxInlineTokens');
    return {
      ...message,
      engrams: message.engrams.slice(0, rejection.resend.maxEngrams),
      pointerPack: moved ? [...message.pointerPack, { type: 'artifact', ref: `artifact:ledger-notes.md#sec=Hold@${DIGEST}` }] : message.pointerPack,
      output: moved ? { summary: 'Ledger hold is not idempotent; notes and code in the artifact.' } : message.output,
    };
  }

  it('accepts the resend that follows the rejection', () => {
    const code = 'def hold(amount):\n    return ledger.reserve(amount)\n';
    const bloated: ChildToParentMessage = { ...withEngrams(14), output: { summary: `${prose(700)}\n\`\`\`\n${code}\`\`\`` } };
    const first = rejected(check(bloated));
    expect(first.violations.map((v) => v.limit)).toEqual(['maxInlineTokens', 'maxEngramsPerMessage', 'maxInlineCodeChars']);
    expect(first.resend.instructions).toEqual(first.violations.map((v) => v.instruction));
    expect(first.resend.maxEngrams).toBeGreaterThan(0);
    const resent = resendFrom(bloated, first);
    expect(resent.engrams).toHaveLength(first.resend.maxEngrams!);
    expect(check(resent)).toMatchObject({ ok: true, usage: { inlineCodeChars: 0 } });
  });
});
