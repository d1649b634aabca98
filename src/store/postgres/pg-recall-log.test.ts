import { describe, expect, it } from 'vitest';
import type { RecallLogInput } from '../backend.js';
import { PgRecallLogBatch, recallLogColumns } from './pg-recall-log.js';

const entry = (i: number): RecallLogInput => ({ tsMs: i, query: `q${i}`, options: { i }, results: [], durationMs: i });

/** A statement stand-in: records each batch and hands out ids from a counter, in order. */
function recorder(fail?: (batch: readonly RecallLogInput[]) => boolean) {
  const batches: number[][] = [];
  let next = 100;
  const insertMany = async (entries: readonly RecallLogInput[]): Promise<number[]> => {
    batches.push(entries.map((e) => e.tsMs));
    await new Promise((resolve) => setTimeout(resolve, 5));
    if (fail?.(entries)) throw new Error('insert failed');
    return entries.map(() => next++);
  };
  return { batches, insertMany };
}

describe('PgRecallLogBatch', () => {
  it('writes the rows given in one turn of the event loop with one statement, each with its own id, at most 64 a statement', async () => {
    const r = recorder();
    const batch = new PgRecallLogBatch(r.insertMany);
    const ids = await Promise.all(Array.from({ length: 70 }, (_, i) => batch.add(entry(i))));
    expect(r.batches.map((b) => b.length)).toEqual([64, 6]);
    expect(r.batches.flat()).toEqual(Array.from({ length: 70 }, (_, i) => i));
    expect(ids).toEqual(Array.from({ length: 70 }, (_, i) => 100 + i));
    // A later turn: a statement of its own.
    expect(await batch.add(entry(70))).toBe(170);
    expect(r.batches).toHaveLength(3);
  });

  it('fails every row of a statement that fails, and only those', async () => {
    const r = recorder((entries) => entries.some((e) => e.tsMs === 1));
    const batch = new PgRecallLogBatch(r.insertMany);
    const first = [batch.add(entry(0)), batch.add(entry(1))];
    await expect(Promise.all(first)).rejects.toThrow('insert failed');
    await expect(first[0]).rejects.toThrow('insert failed');
    expect(await batch.add(entry(2))).toBeGreaterThanOrEqual(100);
  });

  it('settle writes what waits at once and returns when every statement has ended', async () => {
    const r = recorder();
    const batch = new PgRecallLogBatch(r.insertMany);
    const written: number[] = [];
    const pending = [batch.add(entry(0)), batch.add(entry(1))].map((p) => p.then((id) => written.push(id)));
    await batch.settle();
    expect(written.sort()).toEqual([100, 101]);
    await Promise.all(pending);
    await batch.settle();
    expect(r.batches).toEqual([[0, 1]]);
  });

  it('gives the statement one array per column, the JSON columns as JSON text', () => {
    const cols = recallLogColumns([{ ...entry(1), sessionId: 's1' as never, project: 'p', query: 'a "b" \u0000' }, entry(2)]);
    expect(cols).toEqual([[1, 2], ['s1', null], [null, null], ['"a \\"b\\" \\u0000"', '"q2"'], ['{"i":1}', '{"i":2}'], ['[]', '[]'], [1, 2], ['p', null]]);
  });
});
