import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import type { BusAgent } from '../../src/bus/bus-agent.js';
import type { EventRecord } from '../../src/model/event.js';
import type { ArtifactId, EventId, SessionId } from '../../src/model/ids.js';
import { normalize, type Embedder } from '../../src/providers/embedder.js';
import { PURGED_META_KEY } from '../../src/memory/purge.js';
import type { StorageBackend } from '../../src/store/backend.js';
import { PostgresBackend } from '../../src/store/postgres/postgres-backend.js';
import { SqliteBackend } from '../../src/store/sqlite/sqlite-backend.js';
import { riskEngram } from '../fixtures/engrams.js';
import { withPgClient } from '../fixtures/postgres.js';
import { runStorageContract } from './harnesses.js';
import type { BackendHarness } from './storage-contract.js';

/**
 * Secrets and privacy (issue 12, item 4) on every backend: credentials are redacted before they are stored,
 * private spans stay out of indexes and packs, and a purge removes content from everything derived from it,
 * leaves tombstones and a purge-log row, and leaves the append-only guarantee intact for everything else.
 */

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

// Synthetic credentials, assembled so that no literal token sits in the repository.
const AWS_KEY = 'AKIA' + 'QX7Z2M4N6P8R0T2V';
const GH_TOKEN = 'ghp_' + 'Xy12Zw34Vu56Ts78Rq90Po12Nm34Lk56Ji78';
const PEM_BODY = 'MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun';
const PEM = `-----BEGIN RSA PRIVATE KEY-----\n${PEM_BODY}\nVTLw7onLRnrq0IzW7yWR7QkrmBL7jTKEn5u\n-----END RSA PRIVATE KEY-----`;
const PASSWORD = 'Hunter2-Sw0rdfish';

/** The literal a content purge removes in these tests. */
const SECRET = 'zebra-omega-4417';

/** Runs a statement behind Engram's back, as another client of the same database would. */
async function rawStatement(backend: StorageBackend, sql: (table: (name: string) => string) => string): Promise<void> {
  if (backend instanceof SqliteBackend) {
    const db = new Database(backend.path);
    try {
      db.prepare(sql((t) => t)).run();
    } finally {
      db.close();
    }
    return;
  }
  if (backend instanceof PostgresBackend) {
    await withPgClient(async (c) => {
      await c.query(sql((t) => `"${backend.schema}".${t}`));
    });
    return;
  }
  throw new Error(`no raw access to a ${backend.name} store in this test`);
}

runStorageContract('secrets and privacy', ({ createHarness }) => {
  let harness: BackendHarness;
  let mem: Engram;

  beforeEach(async () => {
    harness = await createHarness();
    mem = await openEngram({ backend: harness.backend, embedder: letters, indexing: { background: false } });
  });
  afterEach(async () => {
    await mem?.close();
    await harness?.cleanup();
  });

  /** What an agent or a person could read back about a session's content, as one string. */
  async function everything(sessionId: string): Promise<string> {
    const events = await mem.listEvents({ sessionId: sessionId as SessionId });
    const pack = await mem.context.pack(sessionId, { windowTokens: 4000 });
    return JSON.stringify({ events, pack: pack.pack });
  }

  describe('redaction on ingest', () => {
    it('an AWS key, a ghp_ token, a private key and password= lines never come back from recall, context or show', async () => {
      const [chat, tool, env] = await mem.append('ops', [
        { kind: 'user', content: `deploy with AWS_ACCESS_KEY_ID=${AWS_KEY} and push with ${GH_TOKEN}` },
        { kind: 'tool_result', toolName: 'Bash', content: `$ cat deploy_key\n${PEM}\n` },
        { kind: 'tool_result', toolName: 'Read', content: `DB_HOST=db.internal\nDB_PASSWORD=${PASSWORD}\nmysql --password=${PASSWORD}\n` + 'filler line\n'.repeat(400) },
      ]);
      await mem.indexer!.drain();
      for (const secret of [AWS_KEY, GH_TOKEN, PEM_BODY, PASSWORD]) {
        for (const retriever of ['fts', 'hybrid'] as const) {
          const r = await mem.recall(secret, { retriever });
          // The pack's first line repeats the query to the asker; the evidence below it must not hold the secret.
          expect(r.text.split('\n').slice(1).join('\n'), `${secret} via ${retriever}`).not.toContain(secret);
          expect(JSON.stringify(r.hits)).not.toContain(secret);
        }
        expect(await everything('ops')).not.toContain(secret);
        for (const o of [chat, tool, env]) expect(JSON.stringify(await mem.getEvent(o!.record.id))).not.toContain(secret);
      }
      // The large tool output became an artifact after redaction: its bytes (and so its id) are the redacted text.
      const artifact = await mem.readArtifact(env!.record.artifact!.id);
      expect(artifact.bytes.toString('utf8')).not.toContain(PASSWORD);
      expect(artifact.bytes.toString('utf8')).toMatch(/DB_PASSWORD=\[REDACTED:password:[0-9a-f]{8}\]/);
      // The same secret has the same placeholder, so it is still recognisable (and findable by its hash).
      const hash = /\[REDACTED:password:([0-9a-f]{8})\]/.exec(artifact.bytes.toString('utf8'))![1]!;
      expect((await mem.recall(hash)).hits.map((h) => h.eventId)).toContain(env!.record.id);
      // Queries in a recognisable format are logged redacted (a bare base64 line or password is not recognisable).
      expect(JSON.stringify(await mem.store.listRecallLog({ limit: 100 }))).not.toMatch(new RegExp(`${AWS_KEY}|${GH_TOKEN}`));
      expect(chat!.redactions).toEqual({ count: 2, byKind: { 'aws-access-key': 1, 'github-token': 1 } });
      expect(tool!.redactions).toEqual({ count: 1, byKind: { 'private-key': 1 } });
    });

    it('keeps recall queries out of the log with their secrets redacted', async () => {
      await mem.append('ops', { kind: 'user', content: 'the deploy token rotates weekly' });
      await mem.recall(`why does ${GH_TOKEN} fail`, { logRecall: true });
      const [row] = await mem.store.listRecallLog({ limit: 1 });
      expect(row!.query).not.toContain(GH_TOKEN);
      expect(row!.query).toMatch(/^why does \[REDACTED:github-token:[0-9a-f]{8}\] fail$/);
    });

    it('redacts a credential in a bus engram claim before it is keyed and stored', async () => {
      const [ev] = await mem.append('ops', { kind: 'note', content: 'token rotated' });
      await mem.agents.add('scribe', { role: 'programmer', project: 'default' });
      const scribe = await mem.busAgent('scribe');
      const { engram } = await mem.bus.engrams.put(scribe, riskEngram(`CI still uses ${GH_TOKEN}; rotate it`, [`sam:event:${ev!.record.id}`]), 'r1');
      expect(engram.claim).toMatch(/^CI still uses \[REDACTED:github-token:[0-9a-f]{8}\]; rotate it$/);
      expect(JSON.stringify(await mem.store.bus.getEngram(engram.id))).not.toContain(GH_TOKEN);
    });

    it('stores content verbatim when redaction is switched off', async () => {
      const plain = await openEngram({ backend: harness.backend, ingest: { redact: false } });
      const [o] = await plain.append('raw', { kind: 'user', content: `token ${GH_TOKEN}` });
      expect(o!.record.content).toContain(GH_TOKEN);
      expect(o!.redactions).toBeUndefined();
    });
  });

  describe('private spans', () => {
    it('are stored verbatim but never indexed, embedded, packed or excerpted', async () => {
      const [o] = await mem.append('diary', [
        { kind: 'user', content: 'my locker code is <private>quasar-lantern-9981</private>, keep it safe' },
        { kind: 'assistant', content: 'noted' },
      ]);
      await mem.indexer!.drain();
      expect((await mem.getEvent(o!.record.id)).content).toContain('quasar-lantern-9981');
      expect((await mem.recall('quasar lantern 9981', { retriever: 'fts' })).hits).toEqual([]);
      const hybrid = await mem.recall('locker code', { retriever: 'hybrid' });
      expect(hybrid.text).not.toContain('quasar');
      expect(hybrid.text).toContain('[private]');
      const pack = await mem.context.pack('diary', { windowTokens: 4000 });
      expect(JSON.stringify(pack.pack)).not.toContain('quasar');
      expect(JSON.stringify(pack.pack)).toContain('my locker code is [private], keep it safe');
    });
  });

  describe('purge', () => {
    let agent: BusAgent;

    /** Session `a` holds the secret everywhere derived data can hold it; session `b` is unrelated. */
    async function seed(): Promise<{ a: EventRecord[]; b: EventRecord[]; artifactId: ArtifactId; engramId: string }> {
      const a = await mem.append('a', [
        { kind: 'user', content: `the vault passphrase hint is ${SECRET}` },
        { kind: 'tool_result', toolName: 'Bash', content: `dump:\n${'row of data\n'.repeat(600)}hint=${SECRET}\n` },
        ...Array.from({ length: 30 }, (_, i) => ({ kind: 'assistant' as const, content: `step ${i}: checked ${SECRET} against the ledger entries ${'and more words '.repeat(20)}` })),
      ]);
      await mem.taskStates.update('a', { goals: [`rotate ${SECRET}`] });
      const b = await mem.append('b', [
        { kind: 'user', content: 'an unrelated conversation about invoices' },
        { kind: 'assistant', content: 'invoices are sent monthly' },
      ]);
      await mem.indexer!.drain();
      await mem.recall(SECRET, { askingSessionId: 'a' });
      await mem.recall('invoices monthly', { askingSessionId: 'b', retriever: 'fts' });
      await mem.karma.add(`the hint ${SECRET} was verified`, { sessionId: 'a', sourceEventId: a[0]!.record.id });
      await mem.karma.add('invoices go out on the first', { sessionId: 'b' });
      // A small window forces compaction: markers sample the evicted events' words into a cache version.
      await mem.context.pack('a', { windowTokens: 1024 });
      expect(await mem.store.getContextState('a' as SessionId)).not.toBeNull();
      await mem.agents.add('scribe', { role: 'programmer', project: 'default' });
      agent = await mem.busAgent('scribe');
      const { engram } = await mem.bus.engrams.put(agent, riskEngram('The vault hint leaked in the chat.', [`sam:event:${a[0]!.record.id}`]), 'r1');
      return { a: a.map((o) => o.record), b: b.map((o) => o.record), artifactId: a[1]!.record.artifact!.id, engramId: engram.id };
    }

    it('of a session removes the content from events, artifacts, indexes, vectors, the log, caches, karma and engrams', async () => {
      const { a, b, artifactId, engramId } = await seed();
      const bBefore = await mem.listEvents({ sessionId: 'b' as SessionId });
      const report = await mem.purge({ sessionId: 'a' }, { actor: 'os:alice' });

      expect(report.id).toMatch(/^prg_/);
      expect(report.scrub?.isComplete).toBe(true);
      expect(report.bySession).toEqual({ a: a.length + 1 });
      expect(report.counts).toMatchObject({ events: a.length + 1, artifacts: 1, recallLog: 1, karma: 1, engrams: 1 });
      expect(report.counts.contextStates).toBeGreaterThan(0);
      expect(report.counts.vectors).toBeGreaterThan(0);

      // Tombstones keep id, session, turn, kind and time; turns stay gap-free.
      const events = await mem.listEvents({ sessionId: 'a' as SessionId });
      expect(events.map((e) => e.turn)).toEqual(Array.from({ length: a.length + 1 }, (_, i) => i + 1));
      for (const e of events) {
        expect(e.content).toMatch(/^\[purged \d{4}-\d{2}-\d{2} by alice\]$/);
        expect(e.meta?.[PURGED_META_KEY]).toMatchObject({ id: report.id });
        expect(e.artifact).toBeUndefined();
      }
      expect(await mem.getEvent(a[0]!.id)).toMatchObject({ id: a[0]!.id, sessionId: 'a', turn: 1, kind: 'user', ts: a[0]!.ts });

      // Nothing of the purged text is found or served any more.
      for (const retriever of ['fts', 'vector', 'hybrid'] as const) {
        const r = await mem.recall(SECRET, { retriever, logRecall: false });
        expect(JSON.stringify(r.hits), retriever).not.toContain(SECRET);
        expect(r.hits.filter((h) => h.sessionId === 'a' && !h.excerpt.startsWith('[purged')), retriever).toEqual([]);
      }
      await expect(mem.readArtifact(artifactId)).rejects.toMatchObject({ code: 'NOT_FOUND' });
      expect((await mem.store.getVectors(letters.name, a.map((e) => e.id))).size).toBe(0);
      expect(await mem.store.pendingEmbeddings(a.map((e) => e.id))).toEqual(new Set());
      expect(await mem.store.getContextState('a' as SessionId)).toBeNull();
      expect(await everything('a')).not.toContain(SECRET);
      expect(JSON.stringify(await mem.store.listKarma({ sessionId: 'a' as SessionId, includeRemoved: true }))).not.toContain(SECRET);
      expect((await mem.taskStates.get('a'))?.state.goals).toEqual([]);
      const engram = await mem.store.bus.getEngram(engramId);
      expect(engram!.engram.claim).toMatch(/^\[purged /);
      expect(engram!.removedMs).toBeDefined();
      expect((await mem.bus.engrams.query(agent, { text: 'vault hint leaked' }, 'r1')).engrams).toEqual([]);

      // The unrelated session is untouched; its recall-log row and karma stay.
      expect(await mem.listEvents({ sessionId: 'b' as SessionId })).toEqual(bBefore);
      expect((await mem.store.listRecallLog({ sessionId: 'b' })).map((r) => r.query)).toEqual(['invoices monthly']);
      expect((await mem.store.listKarma({ sessionId: 'b' as SessionId })).map((k) => k.text)).toContain('invoices go out on the first');
      expect((await mem.recall('invoices monthly', { retriever: 'fts', logRecall: false })).hits.map((h) => h.sessionId)).toContain('b');

      // The audit row names who, when, what, and the counts, and never the content.
      const [log] = await mem.store.listPurgeLog();
      expect(log).toMatchObject({ id: report.id, actor: 'os:alice', selector: { session: 'a' }, counts: report.counts });
      expect(JSON.stringify(await mem.store.listPurgeLog())).not.toContain(SECRET);

      // The session keeps working: the next pack rebuilds its window, the next card version follows the last.
      await mem.append('a', { kind: 'user', content: 'starting over' });
      expect(JSON.stringify((await mem.context.pack('a', { windowTokens: 4000 })).pack)).toContain('starting over');
      expect((await mem.taskStates.update('a', { goals: ['start over'] })).version).toBe(2);
    });

    it('by content removes every event holding the literal, in any session, and the log rows and facts quoting it', async () => {
      const [hit] = await mem.append('c1', [{ kind: 'note', content: `reminder: ${SECRET}` }, { kind: 'note', content: 'nothing here' }]);
      const [other] = await mem.append('c2', { kind: 'decision', content: 'we chose blue', meta: { ref: SECRET } });
      await mem.recall(`what is ${SECRET}`, { askingSessionId: 'c2' });
      await mem.karma.add(`${SECRET} is the hint`);
      const dry = await mem.purge({ match: SECRET }, { actor: 'agent:ops', isDryRun: true });
      expect(dry).toMatchObject({ isDryRun: true, bySession: { c1: 1, c2: 1 }, counts: { events: 2, recallLog: 1, karma: 1 } });
      expect(dry.id).toBeUndefined();
      expect((await mem.getEvent(hit!.record.id)).content).toContain(SECRET);
      expect(await mem.store.listPurgeLog()).toEqual([]);

      const report = await mem.purge({ match: SECRET }, { actor: 'agent:ops' });
      expect(report.counts).toMatchObject({ events: 2, recallLog: 1, karma: 1 });
      expect((await mem.getEvent(hit!.record.id)).content).toMatch(/^\[purged .* by ops\]$/);
      expect((await mem.getEvent(other!.record.id)).meta).toEqual({ [PURGED_META_KEY]: expect.any(Object) });
      expect((await mem.listEvents({ sessionId: 'c1' as SessionId }))[1]!.content).toBe('nothing here');
      expect(JSON.stringify(await mem.store.listRecallLog({ limit: 100 }))).not.toContain(SECRET);
      expect(JSON.stringify(await mem.store.listKarma({ includeRemoved: true }))).not.toContain(SECRET);
      expect((await mem.store.listPurgeLog())[0]!.selector).toEqual({ match: { chars: SECRET.length } });
    });

    it('by event id purges only that event, and purging it again finds nothing to do', async () => {
      const [one, two] = await mem.append('e', [
        { kind: 'user', content: `first ${SECRET}` },
        { kind: 'user', content: 'second stays' },
      ]);
      const report = await mem.purge({ eventIds: [one!.record.id] }, { actor: 'os:bob' });
      expect(report.counts.events).toBe(1);
      expect((await mem.getEvent(two!.record.id)).content).toBe('second stays');
      expect((await mem.purge({ eventIds: [one!.record.id] }, { actor: 'os:bob' })).counts.events).toBe(0);
      await expect(mem.purge({ eventIds: ['evt_01jzzzzzzzzzzzzzzzzzzzzzzz'] }, { actor: 'os:bob' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
      await expect(mem.purge({ match: 'ab' }, { actor: 'os:bob' })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'match' } });
      await expect(mem.purge({ sessionId: 'nope' }, { actor: 'os:bob' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    });

    it('re-indexes the events after a purged one, whose indexed context held its words', async () => {
      const [one, two, three, four] = await mem.append('ctx', [
        { kind: 'user', content: `the locker code is ${SECRET}, keep it` },
        { kind: 'assistant', content: 'noted, I will remember the locker' },
        { kind: 'tool_result', toolName: 'Bash', content: 'ok' },
        { kind: 'assistant', content: 'done with the locker' },
      ]);
      // Before: the dialogue turns after it are found by its words through their context (the tool result is not).
      const before = (await mem.recall('zebra omega', { retriever: 'fts', logRecall: false })).hits.map((h) => h.eventId);
      expect(before).toEqual(expect.arrayContaining([one!.record.id, two!.record.id, four!.record.id]));
      expect(before).not.toContain(three!.record.id);
      await mem.purge({ eventIds: [one!.record.id] }, { actor: 'os:bob' });
      for (const query of ['zebra omega', SECRET]) {
        expect((await mem.recall(query, { retriever: 'fts', logRecall: false })).hits).toEqual([]);
      }
      // Their own words, and the context the purge left them, still find them.
      const after = (await mem.recall('locker', { retriever: 'fts', logRecall: false, k: 10 })).hits.map((h) => h.eventId);
      expect(after).toEqual(expect.arrayContaining([two!.record.id, four!.record.id]));
      expect((await mem.recall('noted', { retriever: 'fts', logRecall: false })).hits.map((h) => h.eventId)).toEqual([two!.record.id, four!.record.id]);
    });

    it('leaves the append-only guarantee in force outside a purge', async () => {
      const { a, artifactId } = await seed();
      await mem.purge({ eventIds: [a[2]!.id] }, { actor: 'os:alice' });
      // Rows for every statement below to hit (a trigger fires per row).
      await mem.context.pack('a', { windowTokens: 1024 });
      await mem.recall('ledger entries', { askingSessionId: 'a' });
      const refused = [
        (t: (n: string) => string) => `UPDATE ${t('events')} SET content = 'changed' WHERE id = '${a[0]!.id}'`,
        (t: (n: string) => string) => `DELETE FROM ${t('events')} WHERE id = '${a[0]!.id}'`,
        (t: (n: string) => string) => `DELETE FROM ${t('artifacts')} WHERE id = '${artifactId}'`,
        (t: (n: string) => string) => `DELETE FROM ${t('recall_log')}`,
        (t: (n: string) => string) => `DELETE FROM ${t('context_states')}`,
        (t: (n: string) => string) => `DELETE FROM ${t('karma')}`,
        (t: (n: string) => string) => `UPDATE ${t('purge_log')} SET actor = 'mallory'`,
        (t: (n: string) => string) => `DELETE FROM ${t('purge_log')}`,
      ];
      for (const sql of refused) await expect(rawStatement(harness.backend, sql), sql((x) => x)).rejects.toThrow(/engram:/);
      expect((await mem.getEvent(a[0]!.id)).content).toContain(SECRET);
      expect(await mem.store.listPurgeLog()).toHaveLength(1);
    });

    it('drops a vector an embedding worker writes for an event purged after its claim', async () => {
      const [o] = await mem.append('w', { kind: 'user', content: `late ${SECRET}` });
      const claimed = await mem.store.claimEmbeddingJobs(10, 60_000);
      expect(claimed).toContain(o!.record.id);
      await mem.purge({ sessionId: 'w' }, { actor: 'os:alice' });
      // The worker finishes after the purge: its vector of the purged text is not stored.
      await mem.store.putVectors(letters.name, [{ eventId: o!.record.id as EventId, vector: (await letters.embed([SECRET]))[0]! }]);
      expect((await mem.store.getVectors(letters.name, [o!.record.id as EventId])).size).toBe(0);
    });
  });
});
