import { describe, expect, it } from 'vitest';
import { CODE_SPAN_MIN_CHARS, findInlineCode, inlineCodeChars, isCodeLikeLine } from './inline-code.js';

describe('inline code detection', () => {
  it("finds no code in the seed's own message texts", () => {
    const seedTexts = [
      'Potential contradiction between SPEC budget rules and current gateway reservation flow.',
      'Need to confirm reservation atomicity behavior.',
      'Top risks identified; need deref grant for ledger code.',
      'Await grant or alternative pointers.',
      'Goal: implement Engram Bus with 5% context rule; pointer-first only.\nHard constraint: budget enforcement in gateway; reject oversize.',
      'Confirm atomicity + idempotency; emit 3-5 Engrams max; no inline code.',
    ];
    for (const text of seedTexts) expect(findInlineCode(text)).toEqual([]);
  });

  it('does not count prose that starts with code keywords or mentions identifiers', () => {
    const text = [
      'return the top 3 risks (highest confidence first)',
      'for each child, list the pointers it used',
      'If the budget is exceeded, resend as engrams.',
      'Update the ledger docs (see the artifact) before merging.',
      'The fix lives in `parsePointer` and `MAX_ENGRAMS` handling.',
      'See `repo:services/ledger/reservation.py#L1-L220@3f9a1c2b7d4e5f60718293a4b5c6d7e8f9012345` for the flow.',
    ].join('\n');
    expect(findInlineCode(text)).toEqual([]);
  });

  it('counts the body of a fenced block, not its fences', () => {
    const body = 'def reserve(amount):\n    return ledger.hold(amount)';
    const text = `Here is the fix:\n\`\`\`python\n${body}\n\`\`\`\nDone.`;
    expect(findInlineCode(text)).toEqual([{ shape: 'fenced', line: 3, chars: body.length }]);
  });

  it('runs an unclosed fence to the end of the text and accepts tilde fences', () => {
    expect(findInlineCode('intro\n```\nx\ny')).toEqual([{ shape: 'fenced', line: 3, chars: 3 }]);
    expect(findInlineCode('~~~~\nabc\n~~~~\nafter')).toEqual([{ shape: 'fenced', line: 2, chars: 3 }]);
    // A shorter fence of the same character does not close a longer one.
    expect(findInlineCode('````\na\n```\nb\n````')).toEqual([{ shape: 'fenced', line: 2, chars: 'a\n```\nb'.length }]);
  });

  it('ignores an empty fenced block', () => {
    expect(findInlineCode('```\n```')).toEqual([]);
  });

  it('counts two or more consecutive code-like lines without fences', () => {
    const code = 'function hold(amount) {\n  const id = ledger.reserve(amount);\n  return id;\n}';
    const text = `The ledger does this:\n${code}\nwhich is not atomic.`;
    expect(findInlineCode(text)).toEqual([{ shape: 'lines', line: 2, chars: code.length }]);
    const python = 'def hold(amount):\n    total = amount + fee';
    expect(findInlineCode(python)).toEqual([{ shape: 'lines', line: 1, chars: python.length }]);
  });

  it('does not count a single code-like line', () => {
    expect(findInlineCode('The bug is total = amount + fee in the ledger.\nNothing else changed.')).toEqual([]);
    expect(findInlineCode('const x = 1;')).toEqual([]);
  });

  it(`counts backtick spans of ${CODE_SPAN_MIN_CHARS}+ characters with spaces, and only those`, () => {
    const span = 'if (budget.remaining < cost) { throw new Error() }';
    expect(findInlineCode(`The check \`${span}\` is wrong.`)).toEqual([{ shape: 'span', line: 1, chars: span.length }]);
    const short = 'a'.repeat(CODE_SPAN_MIN_CHARS - 2) + ' b';
    expect(short.length).toBe(CODE_SPAN_MIN_CHARS);
    expect(inlineCodeChars(`\`${short}\``)).toBe(CODE_SPAN_MIN_CHARS);
    expect(inlineCodeChars(`\`${short.slice(1)}\``)).toBe(0);
    expect(inlineCodeChars('``double `tick` span that is long enough to count here``')).toBe('double `tick` span that is long enough to count here'.length);
  });

  it('counts each line once when a fence holds code-like lines', () => {
    const text = '```\nconst a = 1;\nconst b = 2;\n```';
    expect(findInlineCode(text)).toEqual([{ shape: 'fenced', line: 2, chars: 'const a = 1;\nconst b = 2;'.length }]);
  });

  it('recognizes common code line shapes', () => {
    for (const line of ['x = compute(y)', '}', '} else {', '@app.route("/v1")', '#include <stdio.h>', 'import { z } from "zod";', 'SELECT id FROM engrams WHERE ttl > 0;', 'for item in items:', 'else:', 'class Budget:', 'with open(path) as f:', 'fn main() {']) {
      expect(isCodeLikeLine(line), line).toBe(true);
    }
    for (const line of ['Goal: ship it', 'return early when the budget is gone', 'Hard constraint: reject oversize.', 'for example:', 'return value:', '']) {
      expect(isCodeLikeLine(line), line).toBe(false);
    }
  });
});
