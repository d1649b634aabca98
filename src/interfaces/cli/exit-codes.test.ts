import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../errors.js';
import { EXIT, exitCodeFor } from './exit-codes.js';

describe('exitCodeFor', () => {
  it('maps every error code to a documented exit code', () => {
    const documented = new Set<number>(Object.values(EXIT));
    for (const code of ERROR_CODES) expect(documented.has(exitCodeFor(code))).toBe(true);
  });

  it('treats refused values and unreadable bodies as bad input (exit 2), never as a failure of the store', () => {
    expect(exitCodeFor('INVALID_INPUT')).toBe(EXIT.INVALID_INPUT);
    expect(exitCodeFor('PAYLOAD_TOO_LARGE')).toBe(EXIT.INVALID_INPUT);
    expect(exitCodeFor('UNSUPPORTED_MEDIA_TYPE')).toBe(EXIT.INVALID_INPUT);
  });
});
