import { describe, expect, it } from 'vitest';
import type { ChildToParentMessage, ParentToChildMessage } from './agent-message.js';
import { MAX_AGENT_MESSAGE_CHARS, MAX_MESSAGE_BRACKET_DEPTH, detectMessageFormat, parseAgentMessage } from './parse-agent-message.js';
import { renderAgentMessage } from './render-agent-message.js';
import {
  COMMIT,
  DIGEST,
  FILLED_CHILD_EXAMPLE,
  FILLED_PARENT_EXAMPLE,
  SEED_CHILD_EXAMPLE,
  SEED_PARENT_EXAMPLE,
  thrown,
  yamlToJson,
} from './test-support.js';

const MINIMAL_CHILD = 'ROLE: programmer\nTASK_STATUS: done\nOUTPUT:\n  summary: "Nothing to report."\n';
const pinnedRepo = `repo:services/ledger/reservation.py#L1-L220@${COMMIT}`;

function child(text: string): ChildToParentMessage {
  const m = parseAgentMessage(text);
  if (m.direction !== 'child-to-parent') throw new Error(`expected a child message, got ${m.direction}`);
  return m;
}

function parent(text: string): ParentToChildMessage {
  const m = parseAgentMessage(text);
  if (m.direction !== 'parent-to-child') throw new Error(`expected a parent message, got ${m.direction}`);
  return m;
}

function invalidField(fn: () => unknown): string | undefined {
  const err = thrown(fn);
  expect(err.code).toBe('INVALID_INPUT');
  return err.data.field;
}

describe('parseAgentMessage: child to parent (PAS Bus §7.1)', () => {
  it("rejects the seed's example verbatim at its empty ROLE slot", () => {
    expect(invalidField(() => parseAgentMessage(SEED_CHILD_EXAMPLE))).toBe('ROLE');
  });

  it("parses the seed's example with its slots filled", () => {
    const m = child(FILLED_CHILD_EXAMPLE);
    expect(m.role).toBe('programmer');
    expect(m.taskStatus).toBe('blocked');
    expect(m.engrams).toEqual([
      {
        kind: 'risk',
        claim: 'Potential contradiction between SPEC budget rules and current gateway reservation flow.',
        confidence: 0.72,
        ttl: 'P7D',
        scope: 'project',
        pointers: [
          { type: 'artifact', ref: `artifact:SPEC_Budget_Enforcement.md#sec=Rules@${DIGEST}` },
          { type: 'repo', ref: `repo:services/gateway/vendor_client.py#L280-L360@${COMMIT}` },
        ],
      },
    ]);
    expect(m.pointerPack).toEqual([{ type: 'repo', ref: `repo:services/gateway/routes/completions.py#L900-L1060@${COMMIT}` }]);
    expect(m.derefRequests).toEqual([{ pointer: { type: 'repo', ref: pinnedRepo }, reason: 'Need to confirm reservation atomicity behavior.' }]);
    expect(m.output).toEqual({ summary: 'Top risks identified; need deref grant for ledger code.', next: 'Await grant or alternative pointers.' });
  });

  it('parses the same message from JSON', () => {
    const json = yamlToJson(FILLED_CHILD_EXAMPLE);
    expect(detectMessageFormat(json)).toBe('json');
    expect(detectMessageFormat(FILLED_CHILD_EXAMPLE)).toBe('yaml');
    expect(parseAgentMessage(json)).toEqual(parseAgentMessage(FILLED_CHILD_EXAMPLE));
    expect(detectMessageFormat('\uFEFF  \n{"ROLE": "x"}')).toBe('json');
  });

  it('rejects an engram without pointers (§8.1 unanchored claims, §11.3)', () => {
    const noPointers = FILLED_CHILD_EXAMPLE.replace(/    pointers:\n(      - .*\n)+/, '    pointers: []\n');
    expect(noPointers).not.toBe(FILLED_CHILD_EXAMPLE);
    expect(invalidField(() => parseAgentMessage(noPointers))).toBe('ENGRAMS[0].pointers');
    const missing = FILLED_CHILD_EXAMPLE.replace(/    pointers:\n(      - .*\n)+/, '');
    expect(invalidField(() => parseAgentMessage(missing))).toBe('ENGRAMS[0].pointers');
    expect(invalidField(() => parseAgentMessage(yamlToJson(missing)))).toBe('ENGRAMS[0].pointers');
  });

  it('takes missing or empty list sections as empty lists', () => {
    expect(child(MINIMAL_CHILD)).toEqual({
      direction: 'child-to-parent',
      role: 'programmer',
      taskStatus: 'done',
      engrams: [],
      pointerPack: [],
      derefRequests: [],
      output: { summary: 'Nothing to report.' },
    });
    expect(child(`${MINIMAL_CHILD}ENGRAMS:\nPOINTER_PACK:\nDEREF_REQUESTS: []\n`).engrams).toEqual([]);
  });

  it('accepts a claim longer than the budget: its length is a budget, not a schema error', () => {
    const long = 'x'.repeat(501);
    const m = child(FILLED_CHILD_EXAMPLE.replace(/claim: ".*"/, `claim: "${long}"`));
    expect(m.engrams[0]?.claim).toBe(long);
  });

  it('names the field of a structural error', () => {
    expect(invalidField(() => parseAgentMessage(FILLED_CHILD_EXAMPLE.replace('kind: risk', 'kind: rumor')))).toBe('ENGRAMS[0].kind');
    expect(invalidField(() => parseAgentMessage(FILLED_CHILD_EXAMPLE.replace('confidence: 0.72', 'confidence: 1.5')))).toBe('ENGRAMS[0].confidence');
    expect(invalidField(() => parseAgentMessage(FILLED_CHILD_EXAMPLE.replace('ttl: "P7D"', 'ttl: "7 days"')))).toBe('ENGRAMS[0].ttl');
    expect(invalidField(() => parseAgentMessage(FILLED_CHILD_EXAMPLE.replace('{ type: "repo", ref: "repo:services/gateway/vendor', '{ type: "file", ref: "repo:services/gateway/vendor')))).toBe(
      'ENGRAMS[0].pointers[1].type',
    );
    expect(invalidField(() => parseAgentMessage(FILLED_CHILD_EXAMPLE.replace('    reason: "Need to confirm reservation atomicity behavior."\n', '')))).toBe(
      'DEREF_REQUESTS[0].reason',
    );
    expect(invalidField(() => parseAgentMessage(FILLED_CHILD_EXAMPLE.replace(/OUTPUT:\n(  .*\n)+/, 'OUTPUT:\n  next: later\n')))).toBe('OUTPUT.summary');
    expect(invalidField(() => parseAgentMessage(FILLED_CHILD_EXAMPLE.replace('TASK_STATUS: blocked', 'TASK_STATUS: "blocked\\nreally"')))).toBe('TASK_STATUS');
  });

  it('names an unknown field, and refuses engram ids and provenance, which the engine assigns', () => {
    expect(invalidField(() => parseAgentMessage(`${MINIMAL_CHILD}NOTES: hi\n`))).toBe('NOTES');
    expect(invalidField(() => parseAgentMessage(FILLED_CHILD_EXAMPLE.replace('  - kind: risk', '  - id: eng_1\n    kind: risk')))).toBe('ENGRAMS[0].id');
    expect(invalidField(() => parseAgentMessage(FILLED_CHILD_EXAMPLE.replace('    scope: "project"\n', '    scope: "project"\n    provenance: { source: agent }\n')))).toBe(
      'ENGRAMS[0].provenance',
    );
    expect(invalidField(() => parseAgentMessage(FILLED_CHILD_EXAMPLE.replace('next: ', 'nxt: ')))).toBe('OUTPUT.nxt');
  });
});

describe('parseAgentMessage: parent to child (PAS Bus §7.2)', () => {
  it("rejects the seed's example verbatim at its empty ROLE slot, then at its empty grant token", () => {
    expect(invalidField(() => parseAgentMessage(SEED_PARENT_EXAMPLE))).toBe('ROLE');
    expect(invalidField(() => parseAgentMessage(SEED_PARENT_EXAMPLE.replace('ROLE:\n', 'ROLE: programmer\n')))).toBe('GRANTS[0].budget_token');
  });

  it("parses the seed's example with its slots filled, BUDGETS in the engine's names", () => {
    const m = parent(FILLED_PARENT_EXAMPLE);
    expect(m).toEqual({
      direction: 'parent-to-child',
      role: 'programmer',
      sharedBriefMicro: ['Goal: implement Engram Bus with 5% context rule; pointer-first only.', 'Hard constraint: budget enforcement in gateway; reject oversize.'],
      budgets: { maxEngramsPerMessage: 10, maxRepoSpansPerTurn: 3, maxSamItemsPerTurn: 2, maxInlineTokens: 800 },
      grants: [{ budgetToken: 'grt_01hx3k9v2m', pointer: { type: 'repo', ref: pinnedRepo }, capTokens: 500 }],
      targetPointerPack: [{ type: 'artifact', ref: `artifact:SPEC_Engram_Bus_PAS_Shared_Memory.md#sec=Budgets@${DIGEST}` }],
      instructions: ['Confirm atomicity + idempotency; emit 3-5 Engrams max; no inline code.'],
    });
    expect(parseAgentMessage(yamlToJson(FILLED_PARENT_EXAMPLE))).toEqual(m);
  });

  it('names a bad budget, grant or brief line', () => {
    expect(invalidField(() => parseAgentMessage(FILLED_PARENT_EXAMPLE.replace('max_repo_spans: 3', 'max_repo_spans: -1')))).toBe('BUDGETS.max_repo_spans');
    expect(invalidField(() => parseAgentMessage(FILLED_PARENT_EXAMPLE.replace('max_repo_spans: 3', 'max_repo_span: 3')))).toBe('BUDGETS.max_repo_span');
    expect(invalidField(() => parseAgentMessage(FILLED_PARENT_EXAMPLE.replace('cap_tokens: 500', 'cap_tokens: 0')))).toBe('GRANTS[0].cap_tokens');
    const twoLineItem = FILLED_PARENT_EXAMPLE.replace('  - "Hard constraint', '  - "Hard\\nconstraint');
    expect(invalidField(() => parseAgentMessage(twoLineItem))).toBe('SHARED_BRIEF_MICRO[1]');
  });
});

describe('parseAgentMessage: direction and syntax', () => {
  it('tells the direction from the sections, or takes it from the caller', () => {
    expect(parseAgentMessage(MINIMAL_CHILD).direction).toBe('child-to-parent');
    expect(parseAgentMessage('ROLE: programmer\nINSTRUCTIONS: ["Stop."]\n').direction).toBe('parent-to-child');
    expect(invalidField(() => parseAgentMessage('ROLE: programmer\n'))).toBe('(root)');
    expect(parseAgentMessage('ROLE: programmer\n', { direction: 'parent-to-child' }).direction).toBe('parent-to-child');
    expect(invalidField(() => parseAgentMessage(MINIMAL_CHILD, { direction: 'parent-to-child' }))).toBe('TASK_STATUS');
  });

  it('rejects a message mixing both contracts, naming a section', () => {
    expect(invalidField(() => parseAgentMessage(`${MINIMAL_CHILD}GRANTS: []\n`))).toBe('GRANTS');
  });

  it('reports the line and column of a YAML syntax error', () => {
    const bad = 'ROLE: programmer\nTASK_STATUS: done\nENGRAMS:\n  - kind: risk\n   claim: "bad indent"\n';
    const err = thrown(() => parseAgentMessage(bad));
    expect(err.code).toBe('INVALID_INPUT');
    expect(err.data).toMatchObject({ field: '(root)', format: 'yaml', line: 5, column: 1 });
    expect(err.message).toContain('line 5, column 1');
  });

  it('reports a duplicate YAML section with its line', () => {
    const err = thrown(() => parseAgentMessage(`${MINIMAL_CHILD}ROLE: manager\n`));
    expect(err.data).toMatchObject({ format: 'yaml', line: 5, column: 1 });
  });

  it('reports the line and column of a JSON syntax error', () => {
    const err = thrown(() => parseAgentMessage('{\n  "ROLE": "programmer",\n  "OUTPUT": }\n'));
    expect(err.code).toBe('INVALID_INPUT');
    expect(err.data).toMatchObject({ field: '(root)', format: 'json', line: 3, column: 13 });
  });

  it('rejects a text that is not a mapping of sections', () => {
    expect(invalidField(() => parseAgentMessage(''))).toBe('(root)');
    expect(invalidField(() => parseAgentMessage('just some prose'))).toBe('(root)');
    expect(invalidField(() => parseAgentMessage('- ROLE: programmer\n'))).toBe('(root)');
  });

  it('refuses a text past the parse limit with BUDGET_EXCEEDED and what to resend', () => {
    const huge = `${MINIMAL_CHILD}# ${'x'.repeat(MAX_AGENT_MESSAGE_CHARS)}\n`;
    const err = thrown(() => parseAgentMessage(huge));
    expect(err.code).toBe('BUDGET_EXCEEDED');
    expect(err.data).toMatchObject({ limit: 'maxMessageChars', measured: huge.length, allowed: MAX_AGENT_MESSAGE_CHARS });
    expect(String(err.data.instruction)).toContain('pointers');
    expect(parseAgentMessage(MINIMAL_CHILD, { maxChars: MINIMAL_CHILD.length }).direction).toBe('child-to-parent');
    expect(thrown(() => parseAgentMessage(MINIMAL_CHILD, { maxChars: MINIMAL_CHILD.length - 1 })).code).toBe('BUDGET_EXCEEDED');
  });

  it('refuses a YAML alias bomb', () => {
    const bomb = ['ROLE: programmer', 'TASK_STATUS: done', 'a: &a ["x","x","x","x","x","x","x","x","x","x"]', 'b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]', 'c: [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]', 'OUTPUT: { summary: s }'].join('\n');
    expect(invalidField(() => parseAgentMessage(bomb))).toBe('(root)');
  });
});

describe('renderAgentMessage', () => {
  it('renders the canonical YAML form, which parses back to the same message', () => {
    for (const text of [FILLED_CHILD_EXAMPLE, FILLED_PARENT_EXAMPLE, MINIMAL_CHILD]) {
      const m = parseAgentMessage(text);
      const rendered = renderAgentMessage(m);
      expect(parseAgentMessage(rendered)).toEqual(m);
      expect(parseAgentMessage(renderAgentMessage(m, { format: 'json' }))).toEqual(m);
      // Same message from YAML or JSON: same canonical text.
      expect(renderAgentMessage(parseAgentMessage(yamlToJson(text)))).toBe(rendered);
    }
  });

  it('keeps sections in the seed order and pointers as one-line flow maps', () => {
    const rendered = renderAgentMessage(parseAgentMessage(FILLED_CHILD_EXAMPLE));
    const sections = rendered.split('\n').filter((l) => /^[A-Z_]+:/.test(l)).map((l) => l.split(':')[0]);
    expect(sections).toEqual(['ROLE', 'TASK_STATUS', 'ENGRAMS', 'POINTER_PACK', 'DEREF_REQUESTS', 'OUTPUT']);
    expect(rendered).toContain(`  - { type: repo, ref: repo:services/gateway/routes/completions.py#L900-L1060@${COMMIT} }\n`);
  });
});

describe('parseAgentMessage: nesting', () => {
  it('refuses brackets nested past MAX_MESSAGE_BRACKET_DEPTH before parsing, in JSON and YAML (a 5,000-deep message crashed the server)', () => {
    for (const text of ['{"a":' + '['.repeat(5000), 'ROLE: child\nENGRAMS: ' + '['.repeat(5000), "ROLE: 'x\nENGRAMS: " + '{a: '.repeat(200)]) {
      const err = thrown(() => parseAgentMessage(text));
      expect(err.code).toBe('INVALID_INPUT');
      expect(err.data).toMatchObject({ field: '(root)', limit: 'MAX_MESSAGE_BRACKET_DEPTH', max: MAX_MESSAGE_BRACKET_DEPTH });
    }
  });
});

describe('parseAgentMessage: text values', () => {
  it('refuses a lone surrogate or a NUL anywhere in a message, naming the field, in JSON and YAML', () => {
    const json = JSON.stringify({ ROLE: 'child', OUTPUT: { summary: 'half an emoji \ud83d' } });
    expect(thrown(() => parseAgentMessage(json))).toMatchObject({ code: 'INVALID_INPUT', data: { field: 'OUTPUT.summary', format: 'json' } });
    const yaml = 'ROLE: child\nOUTPUT:\n  summary: "NUL \\0 inside"\n';
    expect(thrown(() => parseAgentMessage(yaml))).toMatchObject({ code: 'INVALID_INPUT', data: { field: 'OUTPUT.summary', format: 'yaml' } });
  });
});
