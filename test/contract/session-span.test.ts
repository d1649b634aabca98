import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import type { SessionId } from '../../src/model/ids.js';
import { parseQuery } from '../../src/memory/query-terms.js';
import type { TextSearchQuery } from '../../src/store/backend.js';
import { SPAN_MIN_EVENTS } from '../../src/store/visible-span.js';
import type { BackendHarness } from './storage-contract.js';
import { runStorageContract } from './harnesses.js';

/**
 * A search held to a few sessions on a store where they are a small part (docs/recall.md, "Full-text at scale": the
 * span of their keys). Project `p` sees its session `mine`, appended a little at a time over the store's whole
 * history, and `lent`, another project's session shared with it; project `other` holds the rest, every event with
 * the common words and one in eight with the identifier. Whatever the path (exact, bounded, the identifier index),
 * the search finds the held sessions' events and nothing else.
 */
const BATCHES = Math.ceil(SPAN_MIN_EVENTS / 500) + 2;
const IDENTIFIER = 'src/orders/client.ts:385';

runStorageContract('a search held to a few sessions of a large store', ({ createHarness }) => {
  let harness: BackendHarness;
  let mem: Engram;
  /** The event ids of each session, by content marker. */
  const held: Array<{ id: string; session: string; content: string }> = [];

  beforeAll(async () => {
    harness = await createHarness();
    mem = await openEngram({ backend: harness.backend });
    for (let b = 0; b < BATCHES; b++) {
      const batch = Array.from({ length: 500 }, (_, i) => ({
        kind: 'tool_result' as const,
        toolName: 'bash',
        content: `common worker cache ${b} ${i % 41}${i % 8 === 0 ? ` failed at ${IDENTIFIER}` : ''}`,
      }));
      await mem.append(`big-${b % 3}`, batch, { project: 'other' });
      if (b % 2 === 0) {
        const content = `common worker mine ${b}${b % 6 === 0 ? ' zebra' : ''}${b % 4 === 0 ? ` failed at ${IDENTIFIER}` : ''}`;
        const [out] = await mem.append('mine', { kind: 'tool_result', toolName: 'bash', content }, { project: 'p' });
        held.push({ id: out!.record.id, session: 'mine', content });
      }
      if (b === BATCHES - 6) {
        const content = 'common worker lent zebra';
        const [out] = await mem.append('lent', { kind: 'tool_result', toolName: 'bash', content }, { project: 'other' });
        held.push({ id: out!.record.id, session: 'lent', content });
      }
    }
    await harness.backend.shareSession({ sessionId: 'lent' as SessionId, project: 'p', sharedBy: 'local', tsMs: Date.now() });
    await mem.maintainTextIndex();
  }, 300_000);
  afterAll(async () => {
    await mem?.close();
    await harness?.cleanup();
  });

  const search = async (query: string, filter: TextSearchQuery['filter'], limit: number, boundAbove?: number): Promise<string[]> =>
    (await harness.backend.searchText({ terms: parseQuery(query).terms, filter, limit, ...(boundAbove !== undefined ? { boundAbove } : {}) })).map((h) => h.eventId);
  const idsOf = (sessions: string[], has: (content: string) => boolean) =>
    held
      .filter((h) => sessions.includes(h.session) && has(h.content))
      .map((h) => h.id)
      .sort();

  const cases: Array<[string, TextSearchQuery['filter'], string[]]> = [
    ['the project', { visibleToProject: 'p' }, ['mine', 'lent']],
    ['a list of sessions', { sessionIds: ['mine', 'lent'] as SessionId[] }, ['mine', 'lent']],
    ['the project and one of its sessions', { visibleToProject: 'p', sessionIds: ['mine'] as SessionId[] }, ['mine']],
  ];
  describe.each(cases)('held to %s', (_label, filter, sessions) => {
    it('finds the rare word\'s events first among common words, and only the held sessions\' events', async () => {
      const zebras = idsOf(sessions, (c) => c.includes('zebra'));
      expect(zebras.length).toBeGreaterThan(1);
      const all = idsOf(sessions, () => true);
      const hits = await search('common worker zebra', filter, all.length + 10);
      expect(hits.slice(0, zebras.length).sort()).toEqual(zebras);
      // The rows after them (SQLite's bounded path adds the common words' rows; PostgreSQL's plan needs the rare word).
      expect(hits.every((id) => all.includes(id))).toBe(true);
    });

    it('finds exactly the held events holding an identifier that thousands of others hold, as the exact path does', async () => {
      const holders = idsOf(sessions, (c) => c.includes(IDENTIFIER));
      expect(holders.length).toBeGreaterThan(1);
      expect((await search(IDENTIFIER, filter, 40)).sort()).toEqual(holders);
      expect((await search(IDENTIFIER, filter, 40, Number.POSITIVE_INFINITY)).sort()).toEqual(holders);
    });
  });
});
