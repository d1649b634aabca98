import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openEngram, type Engram } from '../../engine.js';
import { parseQuery } from '../../memory/query-terms.js';
import { AppendedTail } from './sqlite-appended-tail.js';
import { SqliteBackend } from './sqlite-backend.js';

/**
 * The identifier search's tail matched on the appends a connection holds (sqlite-appended-tail.ts) against the same
 * search on a connection that holds none (the FTS5 phrase over the tail), on one real store: the same events, for
 * identifiers in a tool result's text, in an artifact's text (past the inline threshold), in a dialogue turn's
 * context column (the turn before it), in another session; and a purge or an append by another connection seen.
 */
const IDS = ['src/tail/fresh_client.ts:77', 'lib/artifact/deep_path.py:1203', 'pkg/ctx/only_before.go:5', 'src/api/client3.ts:3', 'src/none/never.ts:1'];

function filler(i: number): string {
  return `step ${i} ok in src/api/client${i % 7}.ts:${i % 90} and src/tail/other.ts:${i % 11}`;
}

describe('identifier tail held by the appending connection', () => {
  let dir: string;
  let path: string;
  let a: SqliteBackend;
  let memA: Engram;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'engram-held-tail-'));
    path = join(dir, 'store.db');
    a = SqliteBackend.open(path);
    memA = await openEngram({ backend: a });
    for (const start of [0, 300]) {
      await memA.append('filler', Array.from({ length: 300 }, (_, j) => ({ kind: 'tool_result' as const, toolName: 'bash', content: filler(start + j) })));
    }
    await memA.maintainTextIndex();
    // The tail: appended by this connection after the catch-up.
    await memA.append('work', [
      { kind: 'tool_result', toolName: 'bash', content: `TypeError at (${IDS[0]}:9) while loading` },
      { kind: 'tool_result', toolName: 'cat', content: `${'x '.repeat(3000)}\nTraceback: ${IDS[1]} in main\n${'y '.repeat(2000)}` },
      { kind: 'user', content: `please look at ${IDS[2]} now` },
      { kind: 'assistant', content: 'looking at it' },
      ...Array.from({ length: 30 }, (_, j) => ({ kind: 'tool_result' as const, toolName: 'bash', content: filler(j) })),
    ]);
    await memA.append('other', [{ kind: 'tool_result', toolName: 'bash', content: `also ${IDS[0]} here` }]);
  }, 60_000);
  afterAll(async () => {
    await memA?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** How many tail lookups were answered from held appends (not undefined) during `fn`. */
  async function heldAnswers<T>(fn: () => Promise<T>): Promise<{ out: T; answered: number }> {
    const spy = vi.spyOn(AppendedTail.prototype, 'match');
    try {
      const out = await fn();
      return { out, answered: spy.mock.results.filter((r) => r.type === 'return' && r.value !== undefined).length };
    } finally {
      spy.mockRestore();
    }
  }

  const search = async (backend: SqliteBackend, id: string): Promise<string[]> =>
    (await backend.searchText({ terms: parseQuery(id).terms, limit: 100, boundAbove: 0 })).map((h) => h.eventId).sort();

  /** The same searches on a second connection, which holds none of the tail (the phrase over it). */
  async function onFreshConnection<T>(fn: (b: SqliteBackend) => Promise<T>): Promise<T> {
    const b = SqliteBackend.open(path);
    try {
      return await fn(b);
    } finally {
      await b.close();
    }
  }

  it('finds what the phrase over the tail finds, for every identifier', async () => {
    expect((await a.identifierIndexStatus()).backlog).toBe(35);
    const { out: held, answered } = await heldAnswers(() => Promise.all(IDS.map((id) => search(a, id))));
    // Every identifier some event holds (one no event holds may be answered before the tail is looked at).
    expect(answered).toBeGreaterThanOrEqual(IDS.length - 1);
    const { out: plain, answered: none } = await heldAnswers(() => onFreshConnection((b) => Promise.all(IDS.map((id) => search(b, id)))));
    expect(none).toBe(0);
    expect(held).toEqual(plain);
    expect(held[0]).toHaveLength(2);
    expect(held[1]).toHaveLength(1);
    // The user turn, and the assistant turn after it through its context column.
    expect(held[2]).toHaveLength(2);
    expect(held[3]!.length).toBeGreaterThan(1);
    expect(held[4]).toEqual([]);
  });

  it('matches the tail as the index matches after the catch-up: an identifier spelled with spaces is the phrase query\'s only', async () => {
    const [out] = await memA.append('work', [{ kind: 'tool_result', toolName: 'bash', content: 'see src/tail/spaced.ts 88 for it' }]);
    const spaced = 'src/tail/spaced.ts:88';
    const { out: held, answered } = await heldAnswers(() => search(a, spaced));
    expect(answered).toBeGreaterThan(0);
    expect(held).toEqual([]);
    expect(await onFreshConnection((b) => search(b, spaced))).toEqual([out!.record.id]);
  });

  it('no longer finds an event of its tail that another connection purged', async () => {
    const { out: before, answered } = await heldAnswers(() => search(a, IDS[1]!));
    expect(before).toHaveLength(1);
    expect(answered).toBeGreaterThan(0);
    await onFreshConnection(async (b) => {
      const memB = await openEngram({ backend: b });
      await memB.purge({ eventIds: before }, { actor: 'os:test' });
    });
    expect(await search(a, IDS[1]!)).toEqual([]);
  });

  it('sees an event another connection appended to the tail', async () => {
    const id = await onFreshConnection(async (b) => {
      const memB = await openEngram({ backend: b });
      const [out] = await memB.append('work', [{ kind: 'tool_result', toolName: 'bash', content: `late ${IDS[4]} found` }]);
      return out!.record.id;
    });
    expect(await search(a, IDS[4]!)).toEqual([id]);
  });

  it('holds its own appends again after the catch-up, and the catch-up writes the rows it would have built', async () => {
    await memA.maintainTextIndex();
    await memA.append('work', [{ kind: 'tool_result', toolName: 'bash', content: `third at ${IDS[0]}` }]);
    const { out: held, answered } = await heldAnswers(() => search(a, IDS[0]!));
    expect(answered).toBeGreaterThan(0);
    expect(held).toHaveLength(3);
    expect(held).toEqual(await onFreshConnection((b) => search(b, IDS[0]!)));
    expect(await memA.maintainTextIndex()).toMatchObject({ state: 'complete', events: 1 });
    expect(await search(a, IDS[0]!)).toEqual(held);
    expect(await onFreshConnection((b) => search(b, IDS[0]!))).toEqual(held);
  });
});
