import { describe, expect, it } from 'vitest';
import { isEventId, newEventId } from './ids.js';

describe('newEventId', () => {
  it('gives well-formed ids that sort by creation, within a millisecond and across them', () => {
    const ids: string[] = [];
    for (let ms = 1_700_000_000_000; ms < 1_700_000_000_000 + 300; ms++) for (let i = 0; i < 3; i++) ids.push(newEventId(ms));
    expect(ids.every(isEventId)).toBe(true);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('draws the random part of each new millisecond afresh, over the whole alphabet (the pool refills past 4 KiB)', () => {
    // 16 characters per id: 1,000 ids read 16,000 bytes, so the pool is refilled several times.
    const randomParts = Array.from({ length: 1000 }, (_, i) => newEventId(1_800_000_000_000 + i * 7).slice(4 + 10));
    expect(new Set(randomParts).size).toBe(randomParts.length);
    const counts = new Map<string, number>();
    for (const part of randomParts) for (const ch of part) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    // Crockford base32: 32 symbols, 500 of each expected; a broken source (constant, or only part of a byte) is far off.
    expect(counts.size).toBe(32);
    for (const n of counts.values()) expect(n).toBeGreaterThan(350);
    for (const n of counts.values()) expect(n).toBeLessThan(650);
  });
});
