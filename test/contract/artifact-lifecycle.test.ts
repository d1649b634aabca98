import { existsSync, mkdirSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConsolidationWorker } from '../../src/consolidate/consolidation-worker.js';
import { openEngram, type Engram } from '../../src/engine.js';
import { runArtifactLifecycle } from '../../src/memory/artifact-lifecycle.js';
import { copyStore } from '../../src/memory/store-copy.js';
import { sha256Hex } from '../../src/memory/artifact-codec.js';
import type { ArtifactId, SessionId } from '../../src/model/ids.js';
import { withPgClient } from '../fixtures/postgres.js';
import { runStorageContract } from './harnesses.js';
import type { BackendHarness } from './storage-contract.js';

const DAY_MS = 86_400_000;

/** A realistic mix of large tool outputs: a build log, a JSON listing and a source file (each past the 4 KiB cut). */
function toolOutputs(): string[] {
  const log = Array.from({ length: 300 }, (_, i) => `2026-03-0${1 + (i % 9)}T10:${String(i % 60).padStart(2, '0')}:00Z INFO worker-${i % 7} processed batch ${i} in ${(i * 37) % 900} ms`).join('\n');
  const json = JSON.stringify(
    Array.from({ length: 120 }, (_, i) => ({ id: `ord_${1000 + i}`, status: i % 5 === 0 ? 'failed' : 'ok', amountCents: (i * 7919) % 100_000, tags: ['eu', `shard-${i % 4}`] })),
    null,
    2,
  );
  const source = Array.from(
    { length: 160 },
    (_, i) => `export function handler${i}(req: Request): Response {\n  const limit = Number(req.headers.get('x-limit') ?? ${i});\n  return new Response(String(limit));\n}\n`,
  ).join('\n');
  return [`${log}\nERROR ledger-reconcile-7f3a failed: timeout after 30000 ms`, json, source];
}

runStorageContract('artifact lifecycle', ({ name, createHarness }) => {
  let harness: BackendHarness;
  let mem: Engram;
  let originals: string[];
  let ids: ArtifactId[];

  beforeEach(async () => {
    harness = await createHarness();
    mem = await openEngram({ backend: harness.backend });
    originals = toolOutputs();
    const out = await mem.append('s1', [
      { kind: 'user', content: 'run the build and list the orders' },
      ...originals.map((content, i) => ({ kind: 'tool_result' as const, toolName: ['Bash', 'Orders', 'Read'][i]!, content })),
    ]);
    ids = out.slice(1).map((o) => o.record.artifact!.id);
  });
  afterEach(async () => {
    await mem.close();
    await harness.cleanup();
  });

  /** Overwrites (or removes) the bytes of an artifact's cold copy behind the store's back. */
  async function tamper(id: ArtifactId, how: 'corrupt' | 'remove'): Promise<void> {
    if (name === 'sqlite') {
      const path = (await mem.readArtifact(id)).record.coldLocation!;
      if (how === 'remove') unlinkSync(path);
      else writeFileSync(path, Buffer.from('not the bytes that were written'));
      return;
    }
    const schema = (harness.backend as unknown as { schema: string }).schema;
    await withPgClient(async (c) => {
      await c.query(`ALTER TABLE "${schema}".artifact_cold DISABLE TRIGGER artifact_cold_immutable`);
      await c.query(`UPDATE "${schema}".artifact_cold SET data = $2 WHERE artifact_id = $1`, [id, Buffer.from('not the bytes that were written')]);
    });
  }

  it('moves only artifacts older than the cut-off; metadata, previews and search stay online; reads are byte-identical', async () => {
    const young = await runArtifactLifecycle(mem.store, { olderThanMs: DAY_MS });
    expect(young).toMatchObject({ candidates: 0, moved: 0 });
    const previews = (await mem.listEvents({ sessionId: 's1' as SessionId })).map((e) => e.content);

    const dry = await runArtifactLifecycle(mem.store, { olderThanMs: DAY_MS, nowMs: Date.now() + 2 * DAY_MS, isDryRun: true });
    expect(dry).toMatchObject({ isDryRun: true, candidates: 3, moved: 3, failures: [] });
    expect(await mem.store.artifactTiers.counts()).toMatchObject({ hot: 3, cold: 0 });

    const run = await runArtifactLifecycle(mem.store, { olderThanMs: DAY_MS, nowMs: Date.now() + 2 * DAY_MS });
    expect(run).toMatchObject({ isDryRun: false, candidates: 3, moved: 3, failures: [] });
    expect(run.originalBytes).toBe(originals.reduce((n, s) => n + Buffer.byteLength(s), 0));
    // Quality 11 beats the quality 1 of ingest on text like this.
    expect(run.coldBytes).toBeLessThan(run.hotBytes);
    const counts = await mem.store.artifactTiers.counts();
    expect(counts).toMatchObject({ hot: 0, cold: 3, hotStoredBytes: 0, coldStoredBytes: run.coldBytes, coldBytesBefore: run.hotBytes });
    expect((await mem.stats()).artifactTiers).toEqual(counts);

    for (const [i, id] of ids.entries()) {
      const read = await mem.readArtifact(id);
      expect(read.bytes.equals(Buffer.from(originals[i]!))).toBe(true);
      expect(sha256Hex(read.bytes)).toBe(read.record.sha256);
      expect(read.record.coldAt).toMatch(/^\d{4}-/);
      expect(read.record.sizeBytes).toBe(Buffer.byteLength(originals[i]!));
      if (name === 'sqlite') expect(existsSync(read.record.coldLocation!)).toBe(true);
    }
    // Previews, the full-text index over the artifacts' text and the events' metadata did not move.
    expect((await mem.listEvents({ sessionId: 's1' as SessionId })).map((e) => e.content)).toEqual(previews);
    const hits = await mem.recall('ledger-reconcile-7f3a', { retriever: 'fts', logRecall: false });
    expect(hits.hits.map((h) => h.eventId)).toContain((await mem.listEvents({ sessionId: 's1' as SessionId }))[1]!.id);
    expect(await mem.resolve(ids[1]!.slice(0, 12))).toEqual({ kind: 'artifact', id: ids[1] });

    // A second run finds nothing to move, and moving a cold artifact again does nothing.
    expect(await runArtifactLifecycle(mem.store, { olderThanMs: DAY_MS, nowMs: Date.now() + 2 * DAY_MS })).toMatchObject({ candidates: 0, moved: 0 });
    const again = await mem.store.artifactTiers.moveToCold(ids[0]!, { encoding: 'identity', stored: Buffer.from('x'), storedSha256: sha256Hex('x') }, Date.now());
    expect(again.isMoved).toBe(false);
    expect((await mem.readArtifact(ids[0]!)).bytes.toString('utf8')).toBe(originals[0]);
  });

  it('serves a cold artifact through a bus pointer deref of its id', async () => {
    await runArtifactLifecycle(mem.store, { olderThanMs: 0, nowMs: Date.now() + 1000 });
    await mem.agents.add('scribe', { role: 'programmer', project: 'default' });
    const agent = await mem.busAgent('scribe');
    // The build log (no final newline, which a whole-artifact deref strips): the span read is the original text.
    const r = await mem.bus.enforcer.deref(agent, { pointer: `artifact:${ids[0]}`, maxTokens: 16_000 });
    expect(r.spanDigest).toBe(sha256Hex(originals[0]!));
    expect(originals[0]!.startsWith(r.excerpt.slice(0, 2000))).toBe(true);
  });

  it("the consolidation worker's rounds run the lifecycle, a batch at most once per interval", async () => {
    const worker = new ConsolidationWorker(mem.store, mem.consolidator({ llm: null }), {
      workerId: 'w1',
      artifactLifecycle: { olderThanMs: DAY_MS, everyMs: 3_600_000, batch: 2 },
    });
    const now = Date.now() + 2 * DAY_MS;
    expect((await worker.round(now)).artifactsMoved).toBe(2);
    // Not due again yet: the next round moves nothing.
    expect((await worker.round(now + 60_000)).artifactsMoved).toBe(0);
    expect((await worker.round(now + 3_600_000)).artifactsMoved).toBe(1);
    expect(await mem.store.artifactTiers.counts()).toMatchObject({ hot: 0, cold: 3 });
    for (const [i, id] of ids.entries()) expect((await mem.readArtifact(id)).bytes.toString('utf8')).toBe(originals[i]);
  });

  it('engram migrate copies cold artifacts into another store, byte-identical (hot there)', async () => {
    await runArtifactLifecycle(mem.store, { olderThanMs: 0, nowMs: Date.now() + 1000 });
    const other = await createHarness();
    try {
      await copyStore(mem.store, other.backend);
      const copy = await openEngram({ backend: other.backend });
      for (const [i, id] of ids.entries()) {
        const read = await copy.readArtifact(id);
        expect(read.bytes.toString('utf8')).toBe(originals[i]);
        expect(read.record.coldAt).toBeUndefined();
      }
      expect(await copy.store.artifactTiers.counts()).toMatchObject({ hot: 3, cold: 0 });
      await copy.close();
    } finally {
      await other.cleanup();
    }
  });

  it('honours a limit per run and moves the rest on the next', async () => {
    const first = await runArtifactLifecycle(mem.store, { olderThanMs: 0, nowMs: Date.now() + 1000, limit: 2 });
    expect(first.moved).toBe(2);
    expect(await mem.store.artifactTiers.counts()).toMatchObject({ hot: 1, cold: 2 });
    const second = await runArtifactLifecycle(mem.store, { olderThanMs: 0, nowMs: Date.now() + 1000 });
    expect(second.moved).toBe(1);
    for (const [i, id] of ids.entries()) expect((await mem.readArtifact(id)).bytes.toString('utf8')).toBe(originals[i]);
  });

  it('fails a read of a corrupt cold copy with STORAGE_ERROR naming the artifact and where the copy is', async () => {
    await runArtifactLifecycle(mem.store, { olderThanMs: 0, nowMs: Date.now() + 1000 });
    await tamper(ids[1]!, 'corrupt');
    const err = await mem.readArtifact(ids[1]!).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: 'STORAGE_ERROR', data: { artifactId: ids[1] } });
    expect((err as Error).message).toContain(ids[1]);
    expect((err as Error).message).toContain('corrupt');
    expect((err as Error).message).toContain(name === 'sqlite' ? '.cold/' : 'artifact_cold');
    // The other artifacts still read.
    expect((await mem.readArtifact(ids[0]!)).bytes.toString('utf8')).toBe(originals[0]);
  });

  describe.runIf(name === 'sqlite')('cold files', () => {
    it('fails a read with STORAGE_ERROR naming the artifact and the path', async () => {
      await runArtifactLifecycle(mem.store, { olderThanMs: 0, nowMs: Date.now() + 1000 });
      const path = (await mem.readArtifact(ids[0]!)).record.coldLocation!;
      await tamper(ids[0]!, 'remove');
      await expect(mem.readArtifact(ids[0]!)).rejects.toMatchObject({ code: 'STORAGE_ERROR', data: { artifactId: ids[0], path } });
      await expect(mem.readArtifact(ids[0]!)).rejects.toThrow(`${path} is missing`);
    });

    it('a copy left by a move that crashed before its commit is written again; the artifact stayed hot and readable', async () => {
      const sha = ids[0]!.slice('art_'.length);
      const dir = `${(harness.backend as unknown as { path: string }).path}.cold/${sha.slice(0, 2)}`;
      mkdirSync(dir, { recursive: true });
      writeFileSync(`${dir}/${sha}.br`, 'half a copy');
      expect((await mem.readArtifact(ids[0]!)).record.coldAt).toBeUndefined();
      expect(await runArtifactLifecycle(mem.store, { olderThanMs: 0, nowMs: Date.now() + 1000 })).toMatchObject({ moved: 3, failures: [] });
      expect((await mem.readArtifact(ids[0]!)).bytes.toString('utf8')).toBe(originals[0]);
    });

    it('a run erases cold files no artifact names any more (a purge that crashed before erasing them), once an hour old', async () => {
      const cold = `${(harness.backend as unknown as { path: string }).path}.cold/ab`;
      mkdirSync(cold, { recursive: true });
      const orphan = `${cold}/${'ab'.padEnd(64, '0')}.br`;
      writeFileSync(orphan, 'bytes of a purged artifact');
      expect(await runArtifactLifecycle(mem.store, { olderThanMs: DAY_MS })).toMatchObject({ orphansErased: 0 });
      expect(existsSync(orphan)).toBe(true);
      const past = new Date(Date.now() - 2 * 3_600_000);
      utimesSync(orphan, past, past);
      expect(await runArtifactLifecycle(mem.store, { olderThanMs: DAY_MS })).toMatchObject({ orphansErased: 1 });
      expect(existsSync(orphan)).toBe(false);
    });
  });

  it('a purge erases cold copies as it erases hot artifacts', async () => {
    await runArtifactLifecycle(mem.store, { olderThanMs: 0, nowMs: Date.now() + 1000 });
    const paths = await Promise.all(ids.map(async (id) => (await mem.readArtifact(id)).record.coldLocation!));
    const dry = await mem.purge({ sessionId: 's1' }, { actor: 'os:alice', isDryRun: true });
    expect(dry.counts.artifacts).toBe(3);
    expect(await mem.store.artifactTiers.counts()).toMatchObject({ cold: 3 });
    if (name === 'sqlite') for (const p of paths) expect(existsSync(p)).toBe(true);

    const report = await mem.purge({ sessionId: 's1' }, { actor: 'os:alice' });
    expect(report.counts.artifacts).toBe(3);
    expect(await mem.store.artifactTiers.counts()).toMatchObject({ hot: 0, cold: 0, coldStoredBytes: 0 });
    for (const id of ids) await expect(mem.readArtifact(id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    if (name === 'sqlite') for (const p of paths) expect(existsSync(p)).toBe(false);
    else {
      const schema = (harness.backend as unknown as { schema: string }).schema;
      const left = await withPgClient((c) => c.query(`SELECT count(*)::int AS n FROM "${schema}".artifact_cold`));
      expect(left.rows[0].n).toBe(0);
    }
  });

  it('the store refuses any other change to an artifact row, cold or hot', async () => {
    await runArtifactLifecycle(mem.store, { olderThanMs: 0, nowMs: Date.now() + 1000, limit: 1 });
    const attempt =
      name === 'sqlite'
        ? async () => {
            const { default: Database } = await import('better-sqlite3');
            const db = new Database((harness.backend as unknown as { path: string }).path);
            try {
              db.prepare("UPDATE artifacts SET media_type = 'x/y', data = X'' WHERE id = ?").run(ids[1]);
            } finally {
              db.close();
            }
          }
        : async () => {
            const schema = (harness.backend as unknown as { schema: string }).schema;
            await withPgClient(async (c) => {
              await c.query('BEGIN');
              await c.query(`SELECT set_config('engram.lifecycle', $1, true)`, [schema]);
              await c.query(`UPDATE "${schema}".artifacts SET data = '\\x'::bytea WHERE id = $1`, [ids[1]]);
            });
          };
    // ids[1] is hot with no cold copy recorded: dropping its bytes is refused even by the lifecycle's path.
    await expect(attempt()).rejects.toThrow(/immutable/);
    expect((await mem.readArtifact(ids[1]!)).bytes.toString('utf8')).toBe(originals[1]);
  });
});
