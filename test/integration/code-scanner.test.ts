import { afterEach, describe, expect, it } from 'vitest';
import { CodeScanner } from '../../src/store/code-scanner.js';
import { CodeSet } from '../../src/store/vector-code-set.js';
import type { CodeFilter } from '../../src/store/vector-codes.js';
import { codeWords, encodeRotatedBlock, rotatedDims, rotatedQuery } from '../../src/store/vector-codes.js';
import { FILTERS, KINDS, prng, SESSIONS } from '../fixtures/code-sets.js';

function block(count: number, dims: number, rand: () => number, firstRowid: number) {
  const rows = Array.from({ length: count }, (_, i) => ({
    rowid: firstRowid + i,
    embedding: Float32Array.from({ length: dims }, (_, d) => (rand() - 0.5) * (d < 4 ? 6 : 1)),
    session_id: SESSIONS[Math.floor(rand() * SESSIONS.length)]!,
    kind: KINDS[Math.floor(rand() * KINDS.length)]!,
    ts_ms: 1_000 + Math.floor(rand() * 10_000),
  }));
  return encodeRotatedBlock(rows, new Float32Array(dims));
}

describe('code scanner (code-scanner.ts): the first pass on a worker thread', () => {
  const scanners: CodeScanner[] = [];
  const make = (minCodes: number, threads?: number): CodeScanner => {
    const s = new CodeScanner({ minCodes, ...(threads !== undefined ? { threads } : {}) });
    scanners.push(s);
    return s;
  };
  afterEach(async () => {
    for (const s of scanners.splice(0)) await s.close();
  });

  it.each([
    [48, 1],
    [256, 1],
    [256, 2],
  ])('answers what the calling thread answers, filters and the Hamming gate included (%i dimensions, %i workers)', async (dims, threads) => {
    const rand = prng(dims);
    const set = new CodeSet(codeWords(rotatedDims(dims)));
    for (let b = 0; b < 3; b++) set.append(block(1500, dims, rand, 1 + b * 10_000));
    const scanner = make(1, threads);
    for (let qi = 0; qi < 4; qi++) {
      const query = rotatedQuery(Float32Array.from({ length: dims }, () => rand() - 0.5));
      for (const filter of FILTERS) {
        for (const prefilter of [0, 800]) {
          const onWorker = await scanner.scan(set, query, filter, 60, { prefilter });
          expect(onWorker).toEqual(set.scan(query, filter, 60, { prefilter }));
        }
      }
    }
    expect(scanner.hasWorker).toBe(true);
  });

  it('breaks ties by position whatever the split: of equal codes, the first ones', async () => {
    const one = block(1, 256, prng(5), 1);
    const set = new CodeSet(codeWords(256));
    for (let i = 0; i < 3000; i++) set.append(one);
    const query = rotatedQuery(Float32Array.from({ length: 256 }, (_, d) => Math.sin(d)));
    const first = Array.from({ length: 30 }, (_, i) => i);
    expect(set.scan(query, null, 30, { prefilter: 0 })).toEqual(first);
    expect(await make(1, 2).scan(set, query, null, 30, { prefilter: 0 })).toEqual(first);
    expect(await make(1, 2).scan(set, query, null, 30, { prefilter: 1000 })).toEqual(first);
  });

  it('scans the slots a set held when asked, while the set grows into new arrays meanwhile', async () => {
    const rand = prng(9);
    const set = new CodeSet(codeWords(256));
    set.append(block(3000, 256, rand, 1));
    const query = rotatedQuery(Float32Array.from({ length: 256 }, () => rand() - 0.5));
    const before = set.scan(query, null, 50, { prefilter: 0 });
    const codesBefore = set.codes;
    const scanner = make(1);
    const scanning = scanner.scan(set, query, null, 50, { prefilter: 0 });
    // Grown past its capacity: new shared arrays, the old ones untouched.
    for (let b = 0; b < 4; b++) set.append(block(3000, 256, rand, 100_000 * (b + 1)));
    expect(set.codes).not.toBe(codesBefore);
    expect(await scanning).toEqual(before);
    expect(await scanner.scan(set, query, null, 50, { prefilter: 0 })).toEqual(set.scan(query, null, 50, { prefilter: 0 }));
  });

  it('keeps a set below its threshold on the calling thread, and a closed scanner too', async () => {
    const rand = prng(11);
    const set = new CodeSet(codeWords(256));
    set.append(block(500, 256, rand, 1));
    const query = rotatedQuery(Float32Array.from({ length: 256 }, () => rand() - 0.5));
    const scanner = make(501);
    expect(await scanner.scan(set, query, null, 20, { prefilter: 0 })).toEqual(set.scan(query, null, 20, { prefilter: 0 }));
    expect(scanner.hasWorker).toBe(false);
    // Started ahead of the first scan only for a set that will be scanned on it.
    scanner.prepare(500);
    expect(scanner.hasWorker).toBe(false);
    scanner.prepare(501);
    expect(scanner.hasWorker).toBe(true);
    const eager = make(1);
    await eager.scan(set, query, null, 20, { prefilter: 0 });
    expect(eager.hasWorker).toBe(true);
    await eager.close();
    expect(eager.hasWorker).toBe(false);
    expect(await eager.scan(set, query, null, 20, { prefilter: 0 })).toEqual(set.scan(query, null, 20, { prefilter: 0 }));
    expect(eager.hasWorker).toBe(false);
  });

  it('after repeated worker failures stays on the calling thread, answering the same', async () => {
    const rand = prng(13);
    const set = new CodeSet(codeWords(256));
    set.append(block(2000, 256, rand, 1));
    const query = rotatedQuery(Float32Array.from({ length: 256 }, () => rand() - 0.5));
    const want = set.scan(query, null, 30, { prefilter: 0 });
    const scanner = make(1, 1);
    const warnings: string[] = [];
    const onWarning = (w: Error & { code?: string }): void => void (w.code === 'ENGRAM_CODE_SCAN_WORKER' && warnings.push(w.message));
    process.on('warning', onWarning);
    try {
      for (let i = 0; i < 3; i++) {
        const scanning = scanner.scan(set, query, null, 30, { prefilter: 0 });
        await scanner.crashForTest();
        expect(await scanning).toEqual(want);
      }
      expect(scanner.usesWorker(set.count)).toBe(false);
      expect(await scanner.scan(set, query, null, 30, { prefilter: 0 })).toEqual(want);
      expect(scanner.hasWorker).toBe(false);
      await new Promise((r) => setImmediate(r));
      expect(warnings).toHaveLength(3);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
