/**
 * How much of exact search's 10 nearest the one-bit code index's first pass keeps (issue #14), by encoding and
 * depth, on the float vectors of a kept store: the unrotated codes (the index's first encoding) and the rotated
 * ones (vector-codes.ts ROTATED_ENCODING), each scanned by the index's own CodeSet.scan, every code scored or
 * gated by Hamming distance, keeping the best R for the exact re-rank. A true neighbour among the R is found
 * (the re-rank is exact), so the share is |best R ∩ exact 10| / 10. Exact search here is a dot product over every
 * vector in Node (the built-in embedder's vectors are unit length). Prints a table; writes nothing.
 *
 *   node --import tsx bench/code-recall.ts --db /tmp/keep/vectors-1000000.db [--queries 40]
 */
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { createBuiltinEmbedder } from '../src/providers/builtin-embedder.js';
import type { CodeQuery } from '../src/store/vector-code-set.js';
import { CodeSet } from '../src/store/vector-code-set.js';
import type { CodeBlock } from '../src/store/vector-codes.js';
import { codeWords, encodeBlock, encodeRotatedBlock, queryTable, rotatedDims, rotatedQuery, TopScores } from '../src/store/vector-codes.js';
import { recallQueries } from './lib/agent-trace.js';

const DEPTHS = [250, 500, 1000, 2000];
const BLOCK = 65_536;

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { db: { type: 'string' }, queries: { type: 'string', default: '40' } } });
  if (values.db === undefined) throw new Error('--db FILE: a kept SQLite store (npm run bench -- scale-vectors --keep-store DIR)');
  const db = new Database(values.db, { readonly: true });
  const dims = (db.prepare('SELECT length(embedding) / 4 AS d FROM event_vectors LIMIT 1').get() as { d: number }).d;
  const n = (db.prepare('SELECT count(*) AS n FROM event_vectors').get() as { n: number }).n;
  const all = new Float32Array(n * dims);
  let i = 0;
  for (const b of db.prepare('SELECT embedding FROM event_vectors ORDER BY event_rowid').pluck().iterate() as Iterable<Buffer>) {
    new Uint8Array(all.buffer, i * dims * 4, dims * 4).set(b);
    i++;
  }
  db.close();
  const mean = new Float32Array(dims);
  for (let j = 0; j < n; j++) for (let d = 0; d < dims; d++) mean[d]! += all[j * dims + d]! / n;
  const embedder = await createBuiltinEmbedder();
  const queries = await embedder.embed(recallQueries(Number(values.queries)));
  await embedder.close?.();
  const truth = queries.map((q) => {
    const top = new TopScores(10);
    for (let j = 0, o = 0; j < n; j++, o += dims) {
      let s = 0;
      for (let d = 0; d < dims; d++) s += q[d]! * all[o + d]!;
      top.offer(j, s);
    }
    return new Set(top.positions());
  });
  console.error(`${n.toLocaleString('en')} vectors of ${dims} dimensions, ${queries.length} queries`);

  const encodings: Array<{ name: string; words: number; encode: (rows: Parameters<typeof encodeBlock>[0]) => CodeBlock; query: (q: Float32Array) => CodeQuery; gates: number[] }> = [
    { name: 'unrotated', words: codeWords(dims), encode: (rows) => encodeBlock(rows, mean), query: (q) => ({ table: queryTable(q, dims), bits: new Uint32Array(codeWords(dims)) }), gates: [0] },
    { name: 'rotated', words: codeWords(rotatedDims(dims)), encode: (rows) => encodeRotatedBlock(rows, mean), query: rotatedQuery, gates: [0, 50_000, 100_000] },
  ];
  const lines = ['| codes | Hamming gate (codes passing) | ' + DEPTHS.map((r) => `best ${r.toLocaleString('en')}`).join(' | ') + ' |', '| --- | --- |' + DEPTHS.map(() => ' ---: |').join('')];
  for (const e of encodings) {
    const set = new CodeSet(e.words);
    set.reserve(n);
    for (let start = 0; start < n; start += BLOCK) {
      const rows = [];
      for (let j = start; j < Math.min(n, start + BLOCK); j++) rows.push({ rowid: j, embedding: all.subarray(j * dims, (j + 1) * dims), session_id: 's', kind: 'note', ts_ms: 0 });
      set.append(e.encode(rows));
    }
    for (const gate of e.gates) {
      if (gate > 0 && gate >= n) continue;
      const found = DEPTHS.map(() => 0);
      queries.forEach((q, qi) => {
        const cq = e.query(q);
        DEPTHS.forEach((r, ri) => (found[ri]! += set.scan(cq, null, r, { prefilter: gate }).filter((p) => truth[qi]!.has(set.rowids[p]!)).length));
      });
      lines.push(`| ${e.name} | ${gate === 0 ? 'none (every code scored)' : gate.toLocaleString('en')} | ` + found.map((f) => `${((100 * f) / (10 * queries.length)).toFixed(1)} %`).join(' | ') + ' |');
    }
  }
  console.log(lines.join('\n'));
}

void main();
