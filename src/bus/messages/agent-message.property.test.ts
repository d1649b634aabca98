import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isEngramError } from '../../errors.js';
import { DEFAULT_BUDGET_LIMITS } from '../budget-limits.js';
import { validateAgentMessage } from './message-validator.js';
import { parseAgentMessage } from './parse-agent-message.js';
import { COMMIT, countTokens, SEED_CHILD_EXAMPLE } from './test-support.js';

/**
 * Property tests of agent messages (PAS Bus §7): whatever an agent sends, parsing and validation either
 * accept it with usage figures, or refuse with a coded EngramError naming a field. Never a crash, a hang or
 * an uncoded error.
 */

const EXPECTED_CODES = ['INVALID_INPUT', 'BUDGET_EXCEEDED', 'POINTER_INVALID'];

/** Lines in the message's own vocabulary, shuffled and cut: reaches the YAML and schema branches. */
const LINES = [
  ...SEED_CHILD_EXAMPLE.split('\n'),
  'ENGRAMS: []',
  'POINTER_PACK: null',
  '  - { type: "repo", ref: "repo:../../etc/passwd@' + COMMIT + '" }',
  '    claim: "' + 'x'.repeat(600) + '"',
  '    confidence: 7',
  '```ts',
  'const secret = 1;',
  '```',
  '{"ROLE": "child", "ENGRAMS": [{"kind": "fact"}]}',
  '&anchor [*anchor, *anchor]',
  '!!binary AAAA',
  '- - - - - -',
  '\t\u0000\ud800',
];
const messageText = fc.oneof(
  fc.array(fc.oneof(fc.constantFrom(...LINES), fc.string({ maxLength: 40 })), { maxLength: 30 }).map((lines) => lines.join('\n')),
  fc.string({ maxLength: 2000 }),
  fc.json({ maxDepth: 6 }),
);

describe('agent messages (property-based)', () => {
  it('are parsed and validated, or refused with a coded error naming a field', () => {
    fc.assert(
      fc.property(messageText, (text) => {
        try {
          const message = parseAgentMessage(text);
          const verdict = validateAgentMessage(message, { limits: DEFAULT_BUDGET_LIMITS, countTokens });
          expect(verdict.usage.inlineTokens).toBeGreaterThanOrEqual(0);
        } catch (err) {
          if (!isEngramError(err) || !EXPECTED_CODES.includes(err.code)) throw err;
          expect(typeof err.message).toBe('string');
        }
      }),
      { numRuns: 1500 },
    );
  });
});
