import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { moveSummaryToCold } from '../../src/consolidate/cold-tier.js';
import { SummaryReader } from '../../src/consolidate/summary-reader.js';
import { openEngram, type Engram } from '../../src/engine.js';
import { agentPrincipal } from '../../src/model/access.js';
import type { EventInput } from '../../src/model/event.js';
import { createBuiltinEmbedder } from '../../src/providers/builtin-embedder.js';
import type { Embedder } from '../../src/providers/embedder.js';
import { summaryVectorModelKey } from '../../src/store/summary-storage.js';
import { runStorageContract } from './harnesses.js';
import type { BackendHarness } from './storage-contract.js';

const cacheDir = process.env.ENGRAM_TEST_CACHE_DIR ?? mkdtempSync(join(tmpdir(), 'engram-embedder-'));
let builtin: Embedder;
beforeAll(async () => {
  builtin = await createBuiltinEmbedder({ cacheDir });
}, 120_000);

const T0 = Date.UTC(2026, 2, 2, 9);
const QUESTION = 'why did we pick Postgres?';

/** A session of substantive exchanges whose every line is about `lines`, a minute apart. */
function session(lines: readonly string[], startMs: number): EventInput[] {
  return lines.flatMap((line, i) => [
    { kind: 'user' as const, ts: startMs + i * 120_000, content: `Question ${i}: ${line}` },
    { kind: 'assistant' as const, ts: startMs + i * 120_000 + 60_000, content: `Answer ${i}: ${line}` },
  ]);
}

const DATABASE = [
  'After comparing both, we chose PostgreSQL over MySQL because of its JSONB columns and partial indexes.',
  'The PostgreSQL schema keeps orders in JSONB with a partial index on open orders.',
  'MySQL was dropped: no partial indexes and weaker JSON support for the order documents.',
  'Connection pooling for PostgreSQL goes through pgbouncer in transaction mode.',
  'The PostgreSQL migrations run before the order service starts, one schema version at a time.',
  'Backups of the PostgreSQL cluster are taken nightly with pg_dump into object storage.',
];
const FRONTEND = [
  'The login page now shows a spinner while the request is in flight.',
  'Renamed the button component so the call sites read more clearly.',
  'The onboarding email template had a typo in the greeting line.',
  'Moved the feature flags of the settings page into one configuration file.',
  'The navigation bar collapses into a menu icon on narrow phone screens.',
  'Dark mode colours of the dashboard cards were adjusted for contrast.',
];

runStorageContract('summary vectors', ({ createHarness }) => {
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

  /** Two summarized sessions, their events and summaries embedded; returns the database session's summary id. */
  async function seed(): Promise<string> {
    await mem.append('db', session(DATABASE, T0), { project: 'shop' });
    await mem.append('ui', session(FRONTEND, T0 + 86_400_000), { project: 'web' });
    const db = await mem.consolidator().consolidateSession('db');
    expect((await mem.consolidator().consolidateSession('ui')).status).toBe('summarized');
    expect(db.status).toBe('summarized');
    expect(await mem.store.summaries.unembedded(summaryVectorModelKey(builtin), 10)).toHaveLength(2);
    await mem.indexer!.drain();
    expect(await mem.store.summaries.unembedded(summaryVectorModelKey(builtin), 10)).toEqual([]);
    return db.summaries[0]!.id;
  }

  it('finds a summary by a paraphrase that full-text misses (vectors fused with full-text)', async () => {
    const id = await seed();
    const fullText = await new SummaryReader(mem.store).search(QUESTION);
    expect(fullText.map((h) => h.summary.id)).not.toContain(id);
    const hybrid = await mem.summaries.search(QUESTION);
    expect(hybrid[0]?.summary.id).toBe(id);
    expect(hybrid[0]?.score).toBe(1);
    // Full-text still counts: a query naming the words ranks the same summary first.
    expect((await mem.summaries.search('JSONB partial indexes'))[0]?.summary.id).toBe(id);
  });

  it('keeps the cold tier and summaries the reader may not see out of vector hits', async () => {
    const id = await seed();
    expect((await mem.viewAs(agentPrincipal({ id: 'agt_web', name: 'agent-web', project: 'web', isAdmin: false })).summaries.search(QUESTION)).map((h) => h.summary.id)).not.toContain(id);
    await moveSummaryToCold(mem.store, id, 'superseded in a test');
    expect((await mem.summaries.search(QUESTION)).map((h) => h.summary.id)).not.toContain(id);
    expect((await mem.summaries.search(QUESTION, { includeCold: true })).map((h) => h.summary.id)).toContain(id);
  });

  it('a purge drops the vector made from the purged text', async () => {
    const id = await seed();
    const [vector] = await builtin.embed([QUESTION]);
    const near = () => mem.store.summaries.vectorSearch({ model: summaryVectorModelKey(builtin), vector: vector!, includeCold: true, limit: 10 });
    expect((await near()).map((h) => h.summary.id)).toContain(id);
    await mem.purge({ sessionId: 'db' }, { actor: 'os:test' });
    expect((await near()).map((h) => h.summary.id)).not.toContain(id);
    expect((await mem.summaries.search(QUESTION)).map((h) => h.summary.id)).not.toContain(id);
  });
});
