import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { DERIVED_EVENT_TAG } from '../../src/model/event.js';
import type { EventId } from '../../src/model/ids.js';
import { EMPTY_TASK_STATE } from '../../src/model/task-state.js';
import { createBuiltinEmbedder } from '../../src/providers/builtin-embedder.js';
import type { Embedder } from '../../src/providers/embedder.js';
import { runStorageContract } from './harnesses.js';
import type { BackendHarness } from './storage-contract.js';

// Issue #29, items 6 and 7: Engram's own output come back in a transcript is never evidence, and recall says so
// when nothing matches instead of calling nearest neighbours matches. On every backend, full-text and hybrid.

const cacheDir = process.env.ENGRAM_TEST_CACHE_DIR ?? mkdtempSync(join(tmpdir(), 'engram-embedder-'));
let builtin: Embedder;
beforeAll(async () => {
  builtin = await createBuiltinEmbedder({ cacheDir });
}, 120_000);

const NEEDLE_LINE = 'Error: connect ECONNREFUSED 10.0.4.12:5433';
const ORIGINAL = `checkout@2.4.0 start\n${NEEDLE_LINE}\n    at TCPConnectWrap.afterConnect (node:net:1607:16)\n    at src/db/pool.ts:42:11`;
/** A recall result stored back from the transcript: it quotes the needle, more often than the original holds it. */
const derivedQuote = (i: number): string =>
  `Recalled from memory for "ECONNREFUSED" (call ${i}): 1 of 1 candidate events.\n> ${NEEDLE_LINE}\n> ${NEEDLE_LINE}\n> ECONNREFUSED 10.0.4.12:5433 at src/db/pool.ts:42`;
const FILLER = [
  'The login page now shows a spinner while the request is in flight.',
  'Bumped the CI cache key so the node modules are rebuilt.',
  'Fixed a typo in the onboarding email template.',
  'Moved the feature flags into one configuration file.',
];

runStorageContract('calibrated recall', ({ createHarness }) => {
  let harness: BackendHarness;
  let mem: Engram;

  beforeEach(async () => {
    harness = await createHarness();
    mem = await openEngram({ backend: harness.backend, embedder: builtin, indexing: { background: false } });
  });
  afterEach(async () => {
    await mem.close();
    await harness.cleanup();
  });

  async function seed(derived: number): Promise<{ original: EventId; derivedIds: EventId[] }> {
    const [original] = await mem.append('work', [{ kind: 'tool_result', toolName: 'Bash', content: ORIGINAL }]);
    await mem.append('work', FILLER.map((content) => ({ kind: 'note' as const, content })));
    const stored = derived > 0
      ? await mem.append('later', Array.from({ length: derived }, (_, i) => ({ kind: 'tool_result' as const, toolName: 'recall', content: derivedQuote(i), tags: [DERIVED_EVENT_TAG] })))
      : [];
    await mem.indexer!.drain();
    return { original: original!.record.id, derivedIds: stored.map((s) => s.record.id) };
  }

  it('returns the original event, never a derived one quoting its needle verbatim, on full-text and hybrid', async () => {
    const { original, derivedIds } = await seed(3);
    for (const retriever of ['fts', 'hybrid'] as const) {
      for (const query of ['ECONNREFUSED', 'connect ECONNREFUSED 10.0.4.12:5433', 'why does checkout fail to connect?']) {
        const r = await mem.recall(query, { retriever, logRecall: false });
        const ids = r.hits.map((h) => h.eventId);
        expect(ids, `${retriever}: ${query}`).toContain(original);
        expect(ids.filter((id) => derivedIds.includes(id as EventId)), `${retriever}: ${query}`).toEqual([]);
      }
      // Not counted among the candidates either: the needle is in the original alone.
      expect((await mem.recall('ECONNREFUSED', { retriever: 'fts', logRecall: false })).candidates).toBe(1);
    }
    // Nor as a key event the task card pins.
    const pinned = await mem.recall('ECONNREFUSED', { taskState: { ...EMPTY_TASK_STATE, keyEvents: [derivedIds[0]!] }, logRecall: false });
    expect(pinned.hits.map((h) => h.eventId)).toEqual([original]);
  });

  it('does not let derived events take the places of the candidates the original needs', async () => {
    // More derived events than full-text candidates per call (40), each holding the needle more often than the original.
    const { original } = await seed(45);
    const r = await mem.recall('ECONNREFUSED 10.0.4.12:5433', { retriever: 'fts', k: 1, logRecall: false });
    expect(r.hits.map((h) => h.eventId)).toEqual([original]);
    expect(r.match).toBe('exact');
  });

  it('reports no match, with no hits, for a string stored nowhere, on every retriever', async () => {
    await seed(1);
    for (const retriever of ['fts', 'vector', 'hybrid'] as const) {
      const r = await mem.recall('xyzzyqwerty', { retriever, logRecall: false });
      expect(r, retriever).toMatchObject({ match: 'none', hits: [] });
      expect(r.text).toBe('No event in memory matches "xyzzyqwerty".');
    }
  });

  it("does not flag an event holding only getElementById('pauseBtn') as an exact match for getElementById('pause')", async () => {
    const [btn] = await mem.append('web', [{ kind: 'tool_result', toolName: 'Read', content: "const btn = document.getElementById('pauseBtn');\nbtn.addEventListener('click', onPauseClick);" }]);
    await mem.append('web', FILLER.map((content) => ({ kind: 'note' as const, content })));
    await mem.indexer!.drain();
    for (const retriever of ['fts', 'hybrid'] as const) {
      const r = await mem.recall("getElementById('pause')", { retriever, logRecall: false });
      expect(r.hits.some((h) => h.isExactMatch), retriever).toBe(false);
      expect(r.match, retriever).not.toBe('exact');
      const found = await mem.recall("getElementById('pauseBtn')", { retriever, logRecall: false });
      expect(found.hits[0], retriever).toMatchObject({ eventId: btn!.record.id, isExactMatch: true, coverage: 1 });
      expect(found.match).toBe('exact');
    }
  });
});
