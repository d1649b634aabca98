import { describe, expect, it } from 'vitest';
import { ERROR_CODES, EngramError } from '../../errors.js';
import { toolErrorResult } from './errors.js';

describe('toolErrorResult', () => {
  it('gives every error code a next step for the model', () => {
    for (const code of ERROR_CODES) {
      const r = toolErrorResult(new EngramError(code, 'something'));
      expect(r.isError).toBe(true);
      expect(String(r.content[0]!.type === 'text' ? r.content[0]!.text : '')).toMatch(new RegExp(`^${code}: something\\n\\S`));
    }
  });

  it('passes a refused value on with the limit it broke, as structured content', () => {
    const e = new EngramError('INVALID_INPUT', 'events[0].content: 2000000 bytes exceed the 1 MiB limit (MAX_INLINE_CONTENT_BYTES)', {
      field: 'events[0].content',
      limit: 'MAX_INLINE_CONTENT_BYTES',
      max: 1048576,
    });
    const r = toolErrorResult(e);
    expect(r.structuredContent).toEqual({ error: e.toJSON() });
    expect(r.content[0]).toMatchObject({ type: 'text', text: expect.stringContaining('Fix the argument `events[0].content`') });
  });
});
