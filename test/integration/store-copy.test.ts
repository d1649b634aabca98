import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrateStore, openEngram } from '../../src/engine.js';
import { isEngramError } from '../../src/errors.js';
import type { SessionId } from '../../src/model/ids.js';
import { dropSchema, testPgUrl, uniqueSchema } from '../fixtures/postgres.js';

let dir: string;
let schema: string;
let pgUrl: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-copy-'));
  schema = uniqueSchema('engram_copy');
  pgUrl = `${testPgUrl()}${testPgUrl().includes('?') ? '&' : '?'}schema=${schema}`;
});
afterEach(async () => {
  rmSync(dir, { recursive: true, force: true });
  await dropSchema(schema);
});

const bigLog = (tag: string): string =>
  [...Array.from({ length: 2000 }, (_, i) => `[worker] job ${i} done in ${i % 97} ms`), `FATAL ${tag}: disk quota exceeded on /var/lib/data`].join('\n');

async function seedSqlite(path: string): Promise<void> {
  const mem = await openEngram({ db: path });
  await mem.append('alpha', [
    { kind: 'user', content: 'deploy failed with ECONNREFUSED 10.1.2.3:5432', ts: '2026-01-01T00:00:00.000Z', key: 'a1' },
    { kind: 'tool_result', content: bigLog('q-771'), toolName: 'Bash', toolCallId: 'c1', tags: ['ops'], meta: { exit: 1, nested: { b: 2, a: 1 } } },
    { kind: 'tool_result', content: bigLog('q-771'), toolName: 'Bash' },
    { kind: 'decision', content: 'Raise the quota to 50 GiB; keep --max-retries=7', taskId: 'ops-1', premiseRef: 'p1' },
  ]);
  const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(500, 3)]);
  await mem.append('beta', [
    { kind: 'tool_result', content: 'screenshot', binary: { base64: png.toString('base64'), mediaType: 'image/png', caption: 'quota dashboard' } },
    ...Array.from({ length: 30 }, (_, i) => ({ kind: 'note' as const, content: `note ${i} with nul \u0000 byte and text`, key: `n${i}` })),
  ]);
  await mem.close();
}

describe('copying a store (engram migrate)', () => {
  it('indexes the copy as ingest indexed the source: private spans never, earlier events as context', async () => {
    const src = join(dir, 'private.db');
    const seeded = await openEngram({ db: src });
    await seeded.append('p', [
      { kind: 'user', content: 'the locker code is <private>zebra-4471</private>; did you visit the lighthouse museum?' },
      { kind: 'assistant', content: 'Yes, last Tuesday!' },
    ]);
    await seeded.close();
    // Copied in batches of one, so the context of the reply comes from the previous batch.
    await migrateStore({ db: src }, { pg: pgUrl }, { batchSize: 1 });
    const copy = await openEngram({ pg: pgUrl });
    try {
      expect((await copy.recall('zebra-4471', { retriever: 'fts', logRecall: false })).hits).toEqual([]);
      const hits = await copy.recall('lighthouse museum', { retriever: 'fts', logRecall: false });
      expect(hits.hits.map((h) => h.excerpt)).toEqual(['the locker code is [private]; did you visit the lighthouse museum?', 'Yes, last Tuesday!']);
    } finally {
      await copy.close();
    }
  });

  it('copies SQLite to PostgreSQL losslessly: ids, turns, keys, artifacts and search all match', async () => {
    const src = join(dir, 'src.db');
    await seedSqlite(src);
    const report = await migrateStore({ db: src }, { pg: pgUrl }, { batchSize: 7 });
    expect(report).toMatchObject({ sessions: 2, eventsCopied: 35, eventsAlreadyThere: 0, artifactsCopied: 2, isVerified: true });

    const a = await openEngram({ db: src });
    const b = await openEngram({ pg: pgUrl });
    for (const session of ['alpha', 'beta']) {
      const left = await a.listEvents({ sessionId: session as SessionId });
      const right = await b.listEvents({ sessionId: session as SessionId });
      expect(right).toEqual(left);
    }
    const [withArtifact] = await a.listEvents({ sessionId: 'alpha' as SessionId, afterTurn: 1, limit: 1 });
    const artifactId = withArtifact!.artifact!.id;
    expect((await b.readArtifact(artifactId)).bytes.equals((await a.readArtifact(artifactId)).bytes)).toBe(true);
    expect((await b.recall('disk quota q-771')).hits[0]?.excerpt).toContain('FATAL q-771');
    // Keys keep working across the move: a retried write is still a duplicate.
    const [retry] = await b.append('alpha', { kind: 'user', content: 'deploy failed with ECONNREFUSED 10.1.2.3:5432', ts: '2026-01-01T00:00:00.000Z', key: 'a1' });
    expect(retry!.isDuplicate).toBe(true);
    await a.close();
    await b.close();
  });

  it('resumes an interrupted copy and verifies the whole', async () => {
    const src = join(dir, 'src.db');
    await seedSqlite(src);
    let calls = 0;
    const interrupted = await migrateStore(
      { db: src },
      { pg: pgUrl },
      {
        batchSize: 5,
        onProgress: () => {
          if (++calls === 3) throw new Error('simulated crash');
        },
      },
    ).catch((e: unknown) => e);
    expect((interrupted as Error).message).toBe('simulated crash');

    const resumed = await migrateStore({ db: src }, { pg: pgUrl }, { batchSize: 5 });
    expect(resumed.isVerified).toBe(true);
    expect(resumed.eventsAlreadyThere).toBeGreaterThan(0);
    expect(resumed.eventsAlreadyThere + resumed.eventsCopied).toBe(35);
  });

  it('copies PostgreSQL back to SQLite with the same digest', async () => {
    const src = join(dir, 'src.db');
    await seedSqlite(src);
    const there = await migrateStore({ db: src }, { pg: pgUrl });
    const back = await migrateStore({ pg: pgUrl }, { db: join(dir, 'back.db') });
    expect(back.digest).toBe(there.digest);
  });

  it('refuses to mix into a target that holds other events for the same session', async () => {
    const src = join(dir, 'src.db');
    await seedSqlite(src);
    const other = await openEngram({ db: join(dir, 'other.db') });
    await other.append('alpha', { kind: 'user', content: 'something else entirely' });
    await other.close();
    const err = await migrateStore({ db: src }, { db: join(dir, 'other.db') }).catch((e: unknown) => e);
    expect(isEngramError(err, 'INVALID_INPUT')).toBe(true);
    const check = await openEngram({ db: join(dir, 'other.db') });
    expect((await check.stats()).events).toBe(1);
    await check.close();
  });

  it('does not create a source that does not exist', async () => {
    const err = await migrateStore({ db: join(dir, 'missing.db') }, { db: join(dir, 'x.db') }).catch((e: unknown) => e);
    expect(isEngramError(err, 'NOT_FOUND')).toBe(true);
  });
});
