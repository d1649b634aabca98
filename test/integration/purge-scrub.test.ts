import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { runArtifactLifecycle } from '../../src/memory/artifact-lifecycle.js';
import type { PurgeSelector } from '../../src/memory/purge.js';
import type { EventRecord } from '../../src/model/event.js';
import { normalize, type Embedder } from '../../src/providers/embedder.js';
import { riskEngram } from '../fixtures/engrams.js';
import { dropSchema, testPgUrl, uniqueSchema, withPgClient } from '../fixtures/postgres.js';

// A purge scrubs the store (issue #31, item 1): after it, no byte of the purged text is left in any file of a SQLite
// store (database, WAL, shared memory, cold folder), and on PostgreSQL no row or index entry holds it. The purged
// text is planted everywhere Engram derives text from an event: the event and its preview, an artifact (moved to
// the cold tier), the full-text and identifier indexes, a summary and a decision record, the knowledge graph, the
// recall log, a karma fact, a bus engram, a cache version; filler appends around it make FTS5 merge its segments,
// so freed pages hold old copies of the text too.

// A deterministic embedder (letter counts), so vectors exist without a model download.
const letters: Embedder = {
  name: 'test-letters@1',
  dimensions: 26,
  embed: async (texts) =>
    texts.map((t) => {
      const v = new Float32Array(26);
      for (const ch of t.toLowerCase()) {
        const i = ch.charCodeAt(0) - 97;
        if (i >= 0 && i < 26) v[i]! += 1;
      }
      if (v.every((x) => x === 0)) v[0] = 1;
      return normalize(v);
    }),
};

/**
 * Words no other text holds. FTS5 stores an index term after the prefix it shares with the previous term of its
 * page: each word starts with two letters no other term starts with, so its bytes from the third letter on are
 * in the file wherever the term is; the needles are those.
 */
const WORD = { codename: 'qxzorblat', harbour: 'zqvintrok', token: 'jxkemphord', cargo: 'wqplumbat', depot: 'vxgrindol', module: 'kqsnarfit' };
const needle = (word: string): string => word.slice(2);
/** Whole sentences, as `strings store.db | grep` would look for them. */
const SENTENCE = {
  chat: `the courier codename is ${WORD.codename} and the drop point is ${WORD.harbour} harbour`,
  decision: `Decision: route every ${WORD.cargo} shipment through the ${WORD.depot} depot from now on.`,
};

/** The leak: one session holding every word, everywhere derived data can hold it. */
async function seedLeak(mem: Engram): Promise<EventRecord[]> {
  const leak = await mem.append('leak', [
    { kind: 'user', content: SENTENCE.chat },
    { kind: 'tool_result', toolName: 'Bash', content: `$ tail courier.log\n${'an ordinary line of output\n'.repeat(600)}handoff token ${WORD.token} accepted\n` },
    { kind: 'decision', content: SENTENCE.decision },
    { kind: 'assistant', content: `I moved the courier code into src/${WORD.module}/dispatch.ts and the ${WORD.codename} tests pass.` },
  ]);
  await mem.recall(`where does ${WORD.codename} go after ${WORD.harbour}`, { askingSessionId: 'leak' });
  await mem.consolidator().consolidateSession('leak', { backfill: true });
  await mem.graphBuilder().buildFromSessions();
  await mem.karma.add(`the courier ${WORD.codename} uses the ${WORD.harbour} drop`, { sessionId: 'leak', sourceEventId: leak[0]!.record.id });
  await mem.agents.add('scribe', { role: 'programmer', project: 'default' });
  const scribe = await mem.busAgent('scribe');
  await mem.bus.engrams.put(scribe, riskEngram(`The ${WORD.codename} codename leaked in chat.`, [`sam:event:${leak[0]!.record.id}`]), 'r1');
  await mem.context.pack('leak', { windowTokens: 1024 });
  await mem.indexer?.drain();
  return leak.map((o) => o.record);
}

/** Unrelated appends, in many commits: FTS5 merges its segments, and pages that held the leak's terms are freed. */
async function filler(mem: Engram, session: string, batches: number): Promise<void> {
  for (let b = 0; b < batches; b++) {
    await mem.append(
      session,
      Array.from({ length: 40 }, (_, i) => ({ kind: 'assistant' as const, content: `routine build note ${b}-${i}: the pipeline ran its checks on branch topic-${b * 40 + i} and reported green` })),
    );
  }
}

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? filesUnder(join(dir, d.name)) : [join(dir, d.name)]));
}

/** The needles found in any file under `dir`, each with the files holding it. */
function grepStore(dir: string, needles: readonly string[]): Record<string, string[]> {
  const found: Record<string, string[]> = {};
  const files = filesUnder(dir).map((f) => ({ name: f.slice(dir.length + 1), bytes: readFileSync(f) }));
  for (const n of needles) {
    const holders = files.filter((f) => f.bytes.includes(Buffer.from(n, 'utf8'))).map((f) => f.name);
    if (holders.length > 0) found[n] = holders;
  }
  return found;
}

const ALL_NEEDLES = [...Object.values(WORD).map(needle), ...Object.values(SENTENCE)];

describe('purge scrubs a SQLite store: no byte of the purged text in any file', () => {
  let dir: string;
  let storeDir: string;
  let mem: Engram;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'engram-scrub-'));
    storeDir = join(dir, '.engram');
    mem = await openEngram({ db: join(storeDir, 'engram.db'), embedder: letters, indexing: { background: false }, ingest: { redact: false } });
  });
  afterEach(async () => {
    await mem?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Seeds, shows that the files hold every needle (so the grep can fail), purges, and returns the report. */
  async function seedAndPurge(selector: (leak: EventRecord[]) => PurgeSelector) {
    await filler(mem, 'before', 15);
    const leak = await seedLeak(mem);
    await filler(mem, 'after', 25);
    const cold = await runArtifactLifecycle(mem.store, { olderThanMs: 0, nowMs: Date.now() + 1000 });
    expect(cold.moved).toBe(1);
    expect(filesUnder(join(storeDir, 'engram.db.cold')).some((f) => f.endsWith('.br'))).toBe(true);
    expect(Object.keys(grepStore(storeDir, ALL_NEEDLES)).sort()).toEqual([...ALL_NEEDLES].sort());
    const report = await mem.purge(selector(leak), { actor: 'os:alice' });
    expect(report.scrub).toMatchObject({ isComplete: true, steps: ['vacuum', 'wal-truncate'] });
    return { leak, report };
  }

  it('after purging a session, while the store is open and after it closes; the identifier catch-up adds nothing back', async () => {
    const { report } = await seedAndPurge(() => ({ sessionId: 'leak' }));
    expect(report.counts).toMatchObject({ events: 4, artifacts: 1, recallLog: 1, karma: 1, engrams: 1 });
    expect(grepStore(storeDir, ALL_NEEDLES)).toEqual({});
    // The purged artifact's cold copy is gone with it.
    expect(filesUnder(join(storeDir, 'engram.db.cold'))).toEqual([]);
    // The identifier index had not caught up with the leak's appends: catching up now indexes the tombstones.
    await mem.maintainTextIndex();
    await mem.close();
    expect(grepStore(storeDir, ALL_NEEDLES)).toEqual({});
    // What was not purged is still there (the grep finds what the store holds).
    expect(Object.keys(grepStore(storeDir, ['routine build note 3-7']))).toHaveLength(1);
  });

  it('after purging events by id', async () => {
    await seedAndPurge((leak) => ({ eventIds: leak.map((e) => e.id) }));
    expect(grepStore(storeDir, ALL_NEEDLES)).toEqual({});
    await mem.close();
    expect(grepStore(storeDir, ALL_NEEDLES)).toEqual({});
  });

  it('after purging by content: the literal and the sentences holding it go, other text stays', async () => {
    await seedAndPurge(() => ({ match: WORD.codename }));
    await mem.close();
    // Events, summaries, karma and engrams quoting the literal went, and with them every word they held.
    const left = grepStore(storeDir, ALL_NEEDLES);
    for (const gone of [needle(WORD.codename), SENTENCE.chat, needle(WORD.module)]) expect(left[gone], gone).toBeUndefined();
    // The decision quoted no codename: it stays, as stored.
    expect(left[SENTENCE.decision]).toEqual(['engram.db']);
  });

  it('a second purge that finds nothing new still scrubs, and a dry run changes no file', async () => {
    await filler(mem, 'before', 5);
    await seedLeak(mem);
    await mem.purge({ sessionId: 'leak' }, { actor: 'os:alice' });
    const again = await mem.purge({ sessionId: 'leak' }, { actor: 'os:alice' });
    expect(again.counts.events).toBe(0);
    expect(again.scrub?.isComplete).toBe(true);
    const dry = await mem.purge({ sessionId: 'before' }, { actor: 'os:alice', isDryRun: true });
    expect(dry.scrub).toBeUndefined();
    expect(grepStore(storeDir, ['routine build note 3-7'])).not.toEqual({});
  });
});

describe('purge scrubs a PostgreSQL store: no row and no index entry holds the purged text', () => {
  let schema: string;
  let mem: Engram;

  beforeEach(async () => {
    schema = uniqueSchema('engram_scrub');
    mem = await openEngram({ pg: `${testPgUrl()}?schema=${schema}`, embedder: letters, indexing: { background: false }, ingest: { redact: false } });
  });
  afterEach(async () => {
    await mem?.close();
    await dropSchema(schema);
  });

  /** For each table of the schema, the needles some row of it holds (any column, as text: tsvectors included). */
  async function rowsHolding(needles: readonly string[]): Promise<Record<string, string[]>> {
    return withPgClient(async (c) => {
      const tables = (await c.query<{ name: string }>(`SELECT tablename AS name FROM pg_tables WHERE schemaname = $1`, [schema])).rows.map((r) => r.name);
      const out: Record<string, string[]> = {};
      for (const t of tables) {
        for (const n of needles) {
          const { rows } = await c.query<{ n: string }>(`SELECT count(*) AS n FROM "${schema}"."${t}" x WHERE strpos(x::text, $1) > 0`, [n]);
          if (Number(rows[0]!.n) > 0) (out[t] ??= []).push(n);
        }
      }
      return out;
    });
  }

  it('after purging a session: rows gone, the full-text index finds nothing, the touched tables vacuumed', async () => {
    await seedLeak(mem);
    await mem.append('other', { kind: 'user', content: 'an unrelated note about invoices' });
    const words = Object.values(WORD);
    expect(Object.keys(await rowsHolding(words)).length).toBeGreaterThan(5);
    const report = await mem.purge({ sessionId: 'leak' }, { actor: 'os:alice' });
    expect(report.scrub?.isComplete).toBe(true);
    expect(report.scrub?.steps).toEqual(expect.arrayContaining(['vacuum:events', 'vacuum:event_text', 'vacuum:summaries', 'vacuum:recall_log', 'vacuum:artifacts']));
    expect(await rowsHolding([...words, ...Object.values(SENTENCE)])).toEqual({});
    // Through the GIN indexes: no event text and no summary matches a purged word any more.
    await withPgClient(async (c) => {
      for (const w of words) {
        const events = await c.query(`SELECT 1 FROM "${schema}".event_text WHERE tsv @@ plainto_tsquery('simple', $1)`, [w]);
        const summaries = await c.query(`SELECT 1 FROM "${schema}".summaries WHERE tsv @@ plainto_tsquery('simple', $1)`, [w]);
        expect(events.rowCount, w).toBe(0);
        expect(summaries.rowCount, w).toBe(0);
      }
      // VACUUM ran after the commit (what it leaves in the server's files is the server's: docs/security.md).
      const { rows } = await c.query<{ vacuumed: boolean }>(
        `SELECT last_vacuum IS NOT NULL AS vacuumed FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = ANY($2::text[])`,
        [schema, ['events', 'event_text', 'summaries', 'recall_log']],
      );
      expect(rows.map((r) => r.vacuumed)).toEqual([true, true, true, true]);
    });
    expect((await mem.recall('invoices', { retriever: 'fts', logRecall: false })).hits).toHaveLength(1);
  });
});
