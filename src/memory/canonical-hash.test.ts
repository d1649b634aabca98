import { describe, expect, it } from 'vitest';
import type { ValidEventInput } from '../model/event.js';
import { canonicalHash } from './ingest.js';

describe('canonicalHash', () => {
  it('hashes the same bytes as stored hashes were made from: keys in code-unit order, undefined members left out', () => {
    // The digest was computed by the first implementation (Object.entries, filter, sort, map, join): a retry of an
    // event stored before any later rewrite must still match its stored input hash.
    const input = {
      kind: 'tool_result',
      content: 'exit 0 "quoted" é \u2028',
      toolName: 'bash',
      tags: ['b', 'a'],
      key: 'k-1',
      ts: '2026-01-02T03:04:05.000Z',
      meta: { z: 1, a: [null, { y: 'x', b: undefined }], '10': true, '9': false },
      taskId: undefined,
    } as unknown as ValidEventInput;
    expect(canonicalHash(input)).toBe('8fd02a9e92cff62593068a75a22819dc286d379c4b6ae0cad90d7a632908fb19');
  });
});
