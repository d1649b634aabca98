// A leaf of its own: the bounded search (fts5-bounded.ts) and the frequency memo (fts5-df-memo.ts) both read FTS5's
// records, and the planner that uses the memo is the type the bounded search takes.

/** SQLite's varints (big-endian, 7 bits a byte, the 9th byte 8 bits), as FTS5 writes its records. */
export function readVarints(buf: Buffer): number[] {
  const out: number[] = [];
  let i = 0;
  while (i < buf.length) {
    let v = 0;
    let n = 0;
    for (;;) {
      const byte = buf[i++]!;
      if (n === 8) {
        v = v * 256 + byte;
        break;
      }
      v = v * 128 + (byte & 0x7f);
      n++;
      if ((byte & 0x80) === 0 || i >= buf.length) break;
    }
    out.push(v);
  }
  return out;
}
