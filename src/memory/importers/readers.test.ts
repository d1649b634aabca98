import { describe, expect, it } from 'vitest';
import { locateJsonValues } from './json-locator.js';
import { firstInvalidUtf8Offset } from './line-reader.js';

describe('firstInvalidUtf8Offset', () => {
  it('accepts well-formed text of every sequence length', () => {
    expect(firstInvalidUtf8Offset(Buffer.from('a é € 😀 \uFFFD', 'utf8'))).toBe(-1);
  });

  it('finds stray, overlong, surrogate, out-of-range and truncated sequences at their first byte', () => {
    expect(firstInvalidUtf8Offset(Buffer.from([0x61, 0x80]))).toBe(1);
    expect(firstInvalidUtf8Offset(Buffer.from([0x61, 0xc0, 0x80]))).toBe(1);
    expect(firstInvalidUtf8Offset(Buffer.from([0xe0, 0x80, 0x80]))).toBe(0);
    expect(firstInvalidUtf8Offset(Buffer.from([0x61, 0x62, 0xed, 0xa0, 0x80]))).toBe(2);
    expect(firstInvalidUtf8Offset(Buffer.from([0xf4, 0x90, 0x80, 0x80]))).toBe(0);
    expect(firstInvalidUtf8Offset(Buffer.from([0x61, 0xf0, 0x9f, 0x98]))).toBe(1);
  });
});

describe('locateJsonValues', () => {
  const text = '{\n  "messages": [\n    {"role": "user"},\n\n    {"role": "a\\"b", "x": [1, {"y": null}]}\n  ],\n  "system": "s"\n}';

  it('records the start lines of the values matching the patterns only', () => {
    const { lines, errorLine } = locateJsonValues(text, ['messages/*', 'system']);
    expect(errorLine).toBeUndefined();
    expect([...lines]).toEqual([
      ['messages/0', 3],
      ['messages/1', 5],
      ['system', 7],
    ]);
  });

  it('finds the line of a syntax error', () => {
    expect(locateJsonValues('[\n1,\n2,\n]', []).errorLine).toBe(4);
    expect(locateJsonValues('{"a":\n"b\nc"}', []).errorLine).toBe(2);
    expect(locateJsonValues('{"a": 1}\n\n x', []).errorLine).toBe(3);
    expect(locateJsonValues('', []).errorLine).toBe(1);
    expect(locateJsonValues(' [ ] ', []).errorLine).toBeUndefined();
    expect(locateJsonValues('{"a": {}, "b": [], "c": -1.5e3, "d": true}', []).errorLine).toBeUndefined();
  });
});
