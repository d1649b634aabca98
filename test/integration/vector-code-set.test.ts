import { describe, expect, it } from 'vitest';
import { CodeSet, hammingAll, scoreCode } from '../../src/store/vector-code-set.js';
import type { CodeFilter } from '../../src/store/vector-codes.js';
import { codeWords, encodeRotatedBlock, queryTable, rotatedDims, rotatedQuery, rotateInto, TopScores } from '../../src/store/vector-codes.js';
import { FILTERS, KINDS, prng, SESSIONS } from '../fixtures/code-sets.js';

function naivePopcount(x: number): number {
  let n = 0;
  for (let b = 0; b < 32; b++) n += (x >>> b) & 1;
  return n;
}

/** Random vectors in a few clusters, with weight concentrated in a few dimensions (as the built-in embedder's are). */
function rows(count: number, dims: number, rand: () => number, firstRowid: number) {
  const centres = Array.from({ length: 6 }, () => Float32Array.from({ length: dims }, (_, d) => (rand() - 0.5) * (d < 4 ? 6 : 1)));
  return Array.from({ length: count }, (_, i) => ({
    rowid: firstRowid + i,
    embedding: Float32Array.from(centres[i % 6]!, (x) => x + (rand() - 0.5)),
    session_id: SESSIONS[Math.floor(rand() * SESSIONS.length)]!,
    kind: KINDS[Math.floor(rand() * KINDS.length)]!,
    ts_ms: 1_000 + Math.floor(rand() * 10_000),
  }));
}

function passes(r: { session_id: string; kind: string; ts_ms: number }, f: CodeFilter | null): boolean {
  if (f === null) return true;
  if (f.sessions && !f.sessions.has(r.session_id)) return false;
  if (f.kinds && !f.kinds.has(r.kind)) return false;
  if (f.fromMs !== undefined && r.ts_ms < f.fromMs) return false;
  if (f.toMs !== undefined && r.ts_ms > f.toMs) return false;
  return true;
}

describe('one-bit code set (vector-code-set.ts)', () => {
  it('counts Hamming distances as a bit-by-bit count does, for codes of any length', () => {
    const rand = prng(1);
    for (const words of [1, 2, 7, 8, 31, 40]) {
      const count = 300;
      const codes = Uint32Array.from({ length: count * words }, () => (rand() * 2 ** 32) >>> 0);
      // Some codes all ones against a query of zeros: the largest distance, words * 32.
      codes.fill(0xffffffff, 0, words);
      const bits = Uint32Array.from({ length: words }, (_, w) => (w === 0 && words === 40 ? 0 : (rand() * 2 ** 32) >>> 0));
      const out = new Uint16Array(count);
      hammingAll(codes, count, words, bits, out);
      for (let i = 0; i < count; i++) {
        let want = 0;
        for (let w = 0; w < words; w++) want += naivePopcount((codes[i * words + w]! ^ bits[w]!) >>> 0);
        expect(out[i]).toBe(want);
      }
      const zero = new Uint32Array(words);
      hammingAll(codes, 1, words, zero, out);
      expect(out[0]).toBe(words * 32);
    }
  });

  it.each([48, 256])('scans blocks appended one by one as a brute-force pass over every vector does, filters included (%i dimensions)', (dims) => {
    const rand = prng(2); // 48 is padded to 64 by the rotation; 256 takes the unrolled 8-word loop
    const mean = new Float32Array(dims);
    const all = [...rows(700, dims, rand, 1), ...rows(500, dims, rand, 2_000), ...rows(300, dims, rand, 5_000)];
    for (const r of all) for (let d = 0; d < dims; d++) mean[d]! += r.embedding[d]! / all.length;
    const words = codeWords(rotatedDims(dims));
    const set = new CodeSet(words);
    // Blocks number their sessions and kinds in their own order; the set renumbers them.
    const blocks = [all.slice(0, 700), all.slice(700, 1200), all.slice(1200)].map((b) => encodeRotatedBlock(b, mean));
    for (const b of blocks) set.append(b);
    expect(set.count).toBe(all.length);
    const codes = new Uint32Array(blocks.flatMap((b) => [...b.codes]));
    const scales = new Float32Array(blocks.flatMap((b) => [...b.scales]));
    for (let qi = 0; qi < 5; qi++) {
      const q = Float32Array.from({ length: dims }, () => rand() - 0.5);
      const query = rotatedQuery(q);
      for (const filter of FILTERS) {
        const allowed = all.map((r) => passes(r, filter));
        // Reference: the float estimate of every allowed vector, computed from the blocks' own codes.
        const ref = new TopScores(40);
        all.forEach((_, i) => allowed[i] && ref.offer(i, scoreCode(codes, i * words, words, query.table) * scales[i]!));
        expect(set.scan(query, filter, 40, { prefilter: 0 })).toEqual(ref.positions());

        // The Hamming gate: a cut at which `keep` allowed codes lie (every code sampled in a set this small).
        const keep = 150;
        const dist = new Uint16Array(all.length);
        hammingAll(codes, all.length, words, query.bits, dist);
        const cut = set.gateCut(query.bits, set.allowed(filter), keep);
        const allowedDistances = all.flatMap((_, i) => (allowed[i] ? [dist[i]!] : []));
        const within = (c: number): number => allowedDistances.filter((d) => d <= c).length;
        if (allowedDistances.length > 0) {
          expect(within(cut)).toBeGreaterThanOrEqual(Math.min(keep, allowedDistances.length));
          if (cut > 0) expect(within(cut - 1)).toBeLessThan(keep);
        }
        // The float estimate over exactly the allowed codes within the cut (over all of them when fewer than 40 pass).
        const gated = new TopScores(40);
        let passed = 0;
        all.forEach((_, i) => {
          if (!allowed[i] || dist[i]! > cut) return;
          passed++;
          gated.offer(i, scoreCode(codes, i * words, words, query.table) * scales[i]!);
        });
        expect(set.scan(query, filter, 40, { prefilter: keep })).toEqual(passed >= 40 ? gated.positions() : ref.positions());
        expect(set.rowids[set.scan(query, filter, 1, { prefilter: 0 })[0] ?? 0]).toBe(all[ref.positions()[0] ?? 0]?.rowid);
      }
    }
  });

  it('rotates without changing dot products, padding to a power of two, and its codes estimate them', () => {
    const rand = prng(3);
    for (const dims of [16, 100, 256]) {
      expect(rotatedDims(dims)).toBe(dims === 100 ? 128 : dims);
      const a = Float32Array.from({ length: dims }, () => rand() - 0.5);
      const b = Float32Array.from({ length: dims }, () => rand() - 0.5);
      const ra = new Float32Array(rotatedDims(dims));
      const rb = new Float32Array(rotatedDims(dims));
      rotateInto(a, 0, dims, null, ra);
      rotateInto(b, 0, dims, null, rb);
      let want = 0;
      let got = 0;
      for (let d = 0; d < dims; d++) want += a[d]! * b[d]!;
      for (let d = 0; d < ra.length; d++) got += ra[d]! * rb[d]!;
      expect(got).toBeCloseTo(want, 4);
    }
    // The estimate follows the exact dot product: high for a vector near the query, low for its opposite.
    const dims = 64;
    const q = Float32Array.from({ length: dims }, () => rand() - 0.5);
    const near = Float32Array.from(q, (x) => x + (rand() - 0.5) * 0.1);
    const far = Float32Array.from(q, (x) => -x + (rand() - 0.5) * 0.1);
    const block = encodeRotatedBlock(
      [near, far].map((embedding, i) => ({ rowid: i + 1, embedding, session_id: 's', kind: 'note', ts_ms: 0 })),
      new Float32Array(dims),
    );
    const table = rotatedQuery(q).table;
    const words = codeWords(dims);
    expect(scoreCode(block.codes, 0, words, table) * block.scales[0]!).toBeGreaterThan(0);
    expect(scoreCode(block.codes, words, words, table) * block.scales[1]!).toBeLessThan(0);
    expect(table.length).toBe(queryTable(q, dims).length);
  });
});
