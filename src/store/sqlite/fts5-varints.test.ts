import { describe, expect, it } from 'vitest';
import { readVarints } from './fts5-varints.js';

describe('readVarints', () => {
  it("reads FTS5's records: the totals record (rows, then tokens per column) and a row's sizes", () => {
    expect(readVarints(Buffer.from('868D2087B1DD0ED8DB6C', 'hex'))).toEqual([100_000, 15_494_798, 1_453_548]);
    expect(readVarints(Buffer.from('5A01', 'hex'))).toEqual([90, 1]);
  });
});
