import { expect, it } from 'vitest';
import { openEngram } from '../../src/engine.js';
import { runStorageContract, useEngram } from './harnesses.js';

/**
 * Context-aware index units (src/memory/turn-context.ts) on every backend: an event is found by the words of the
 * events just before it, ranks below an event holding the words itself, and recall still points at the exact event.
 */
runStorageContract('turn context in the full-text index', ({ createHarness }) => {
  const ctx = useEngram(createHarness);

  it('finds a reply by the question it answers, below the question itself', async () => {
    const [question, reply, next, beyond] = await ctx.mem.append('chat', [
      { kind: 'user', content: 'Did you finally visit the lighthouse museum in Oregon?' },
      // Not "last Tuesday": a relative date adds its resolved day to the context column (relative-dates.ts), and the
      // longer column would rank this reply below the next turn, which this test compares it with.
      { kind: 'assistant', content: 'Yes, on Tuesday! It was wonderful.' },
      { kind: 'user', content: 'Great to hear.' },
      { kind: 'assistant', content: 'Unrelated: the build is green again.' },
    ]);
    const r = await ctx.mem.recall('lighthouse museum', { retriever: 'fts', logRecall: false });
    // The question on its own words first; the two events after it by context, nearest first; not the third.
    expect(r.hits.map((h) => h.eventId)).toEqual([question!.record.id, reply!.record.id, next!.record.id]);
    expect(r.hits.map((h) => h.eventId)).not.toContain(beyond!.record.id);
    expect(r.hits[0]!.score).toBeGreaterThan(r.hits[1]!.score);
    // The hit is the reply itself, quoted as stored: the context is indexed, never shown.
    expect(r.hits[1]!.excerpt).toBe('Yes, on Tuesday! It was wonderful.');
  });

  it('takes context from the dialogue stored by earlier appends, two turns deep, within the session; not from tool records', async () => {
    await ctx.mem.append('a', [{ kind: 'user', content: 'please rerun the flaky suite' }]);
    const [tool] = await ctx.mem.append('a', [{ kind: 'tool_result', toolName: 'bash', content: '3 passed, 1 failed' }]);
    await ctx.mem.append('a', [{ kind: 'assistant', content: 'starting' }]);
    const [answer] = await ctx.mem.append('a', [{ kind: 'assistant', content: 'one test still fails' }]);
    const [later] = await ctx.mem.append('a', [{ kind: 'user', content: 'ok' }, { kind: 'assistant', content: 'and another' }]);
    const [other] = await ctx.mem.append('b', [{ kind: 'assistant', content: 'first event of another session' }]);
    const ids = (await ctx.mem.recall('flaky suite', { retriever: 'fts', logRecall: false, k: 20 })).hits.map((h) => h.eventId);
    // Two dialogue turns back (the tool result between them is not dialogue and does not count).
    expect(ids).toContain(answer!.record.id);
    expect(ids).not.toContain(later!.record.id);
    expect(ids).not.toContain(other!.record.id);
    // A tool result is a record of its own: never indexed with the request before it.
    expect(ids).not.toContain(tool!.record.id);
  });

  it('counts a retried input once: the turns before it come from the store, then the call itself', async () => {
    await ctx.mem.append('r', [{ kind: 'user', content: 'xylophone lessons start monday' }]);
    await ctx.mem.append('r', [{ kind: 'user', content: 'ok', key: 'k1' }]);
    const [, fresh] = await ctx.mem.append('r', [
      { kind: 'user', content: 'ok', key: 'k1' },
      { kind: 'assistant', content: 'sure' },
    ]);
    expect((await ctx.mem.recall('xylophone', { retriever: 'fts', logRecall: false })).hits.map((h) => h.eventId)).toContain(fresh!.record.id);
  });

  it('never indexes a private span as context', async () => {
    const [, reply] = await ctx.mem.append('p', [
      { kind: 'user', content: 'my locker code is <private>zebra-4471</private>, remember the locker' },
      { kind: 'assistant', content: 'Noted.' },
    ]);
    expect((await ctx.mem.recall('zebra-4471', { retriever: 'fts', logRecall: false })).hits).toEqual([]);
    const hits = (await ctx.mem.recall('locker', { retriever: 'fts', logRecall: false })).hits.map((h) => h.eventId);
    expect(hits).toContain(reply!.record.id);
  });

  it('indexes nothing from earlier events when turnContextEvents is 0, and refuses a context weight out of range', async () => {
    const plain = await createHarness();
    const mem = await openEngram({ backend: plain.backend, ingest: { turnContextEvents: 0 } });
    try {
      const [, reply] = await mem.append('c', [
        { kind: 'user', content: 'Did you visit the lighthouse museum?' },
        { kind: 'assistant', content: 'Yes, last Tuesday!' },
      ]);
      const ids = (await mem.recall('lighthouse', { retriever: 'fts', logRecall: false })).hits.map((h) => h.eventId);
      expect(ids).not.toContain(reply!.record.id);
      await expect(mem.recall('lighthouse', { contextWeight: 2 })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'contextWeight' } });
    } finally {
      await mem.close();
      await plain.cleanup();
    }
  });

  it('re-indexes a store written without context (engram reindex --text), and again to the same result', async () => {
    const plain = await createHarness();
    const old = await openEngram({ backend: plain.backend, ingest: { turnContextEvents: 0 } });
    try {
      const [, reply] = await old.append('c', [
        { kind: 'user', content: 'Did you visit the lighthouse museum? <private>my pin 8841</private>' },
        { kind: 'assistant', content: 'Yes, last Tuesday!' },
        { kind: 'tool_result', toolName: 'Bash', content: `${'log line\n'.repeat(1000)}lighthouse build finished` },
      ]);
      const ids = async () => (await old.recall('lighthouse museum', { retriever: 'fts', logRecall: false })).hits.map((h) => h.eventId);
      expect(await ids()).not.toContain(reply!.record.id);
      const progress: number[] = [];
      const done = await old.reindexText((p) => progress.push(p.events));
      expect(done).toEqual({ events: 3, total: 3, sessions: 1 });
      expect(progress.at(-1)).toBe(3);
      expect(await ids()).toContain(reply!.record.id);
      // The artifact's text is indexed as before (its last line), private spans never.
      expect((await old.recall('finished', { retriever: 'fts', logRecall: false })).hits).toHaveLength(1);
      expect((await old.recall('8841', { retriever: 'fts', logRecall: false })).hits).toEqual([]);
      await old.reindexText();
      expect(await ids()).toContain(reply!.record.id);
      expect(await plain.backend.replaceTextIndex([{ eventId: 'evt_01jzzzzzzzzzzzzzzzzzzzzzzz' as never, searchText: 'x', searchMeta: '' }])).toBe(0);
    } finally {
      await old.close();
      await plain.cleanup();
    }
  });
});
