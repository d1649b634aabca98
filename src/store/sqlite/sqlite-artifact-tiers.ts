import { createHash } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, stat, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type Database from 'better-sqlite3';
import { EngramError, isEngramError } from '../../errors.js';
import type { ArtifactRecord } from '../../model/artifact.js';
import type { ArtifactId } from '../../model/ids.js';
import type { ArtifactTierCounts, ArtifactTierStorage, ColdArtifactCopy, ColdMoveOutcome } from '../artifact-tier-storage.js';
import type { StoredArtifact } from '../backend.js';
import { translateSqliteError } from './sqlite-errors.js';

type Db = Database.Database;

interface ColdRow {
  location: string;
  encoding: string;
  stored_bytes: number;
  stored_sha256: string;
  moved_ms: number;
}

const sha256Hex = (data: Uint8Array): string => createHash('sha256').update(data).digest('hex');

/**
 * Cold artifacts of a SQLite store (migration 14): files under `<db>.cold/`, content-addressed by the
 * artifact's sha256 (`ab/abcdef....br`, a plain brotli stream: `brotli -d` reads it), beside the database so
 * that a copy of the directory holding the store holds its cold tier too. A row of `artifact_cold` records each.
 */
export class SqliteArtifactTiers implements ArtifactTierStorage {
  readonly coldLocation: string;
  private readonly stmts: ReturnType<typeof prepare>;

  constructor(
    private readonly db: Db,
    dbPath: string,
  ) {
    this.coldLocation = dbPath === ':memory:' ? '' : `${dbPath}.cold`;
    this.stmts = prepare(db);
  }

  async listHot(query: { createdBeforeMs: number; afterId?: ArtifactId; limit: number }): Promise<ArtifactRecord[]> {
    const rows = this.stmts.listHot.all(query.afterId ?? '', query.createdBeforeMs, query.limit) as HotRow[];
    return rows.map(recordOf);
  }

  async moveToCold(id: ArtifactId, copy: ColdArtifactCopy, movedAtMs: number): Promise<ColdMoveOutcome> {
    if (this.coldLocation === '') throw new EngramError('INVALID_INPUT', 'an in-memory store has no cold directory: open a store file', { field: 'db' });
    const record = this.stmts.hotRecord.get(id) as HotRow | undefined;
    const location = `${record?.sha256.slice(0, 2) ?? 'xx'}/${record?.sha256 ?? id}.${copy.encoding === 'br' ? 'br' : 'raw'}`;
    const path = join(this.coldLocation, location);
    if (!record || this.stmts.coldRow.get(id)) return { isMoved: false, location: path };
    await writeDurably(path, copy.stored);
    // Read back from disk: what the row will point at must be what was meant, before the hot bytes go.
    const back = await readFile(path);
    if (sha256Hex(back) !== copy.storedSha256) {
      throw new EngramError('STORAGE_ERROR', `artifact ${id}: the cold copy written to ${path} does not read back as written; the artifact stays hot`, {
        artifactId: id,
        path,
      });
    }
    try {
      const isMoved = this.db
        .transaction(() => {
          const still = this.stmts.hotRecord.get(id) as HotRow | undefined;
          if (!still || this.stmts.coldRow.get(id)) return false;
          this.stmts.insertCold.run(id, location, copy.encoding, copy.stored.byteLength, copy.storedSha256, still.stored_bytes, movedAtMs);
          this.stmts.dropHot.run(id);
          return true;
        })
        .immediate();
      // Purged between the listing and the commit: its bytes must not stay behind in a file no row names.
      if (!isMoved && !this.stmts.artifactExists.get(id)) await unlink(path).catch(() => undefined);
      return { isMoved, location: path };
    } catch (err) {
      throw isEngramError(err) ? err : translateSqliteError(err, `moving artifact ${id} to the cold tier failed (it stays hot)`);
    }
  }

  /** The artifact's bytes from its cold copy, checked against the digest recorded when it moved. */
  async readCold(record: ArtifactRecord): Promise<StoredArtifact> {
    const row = this.stmts.coldRow.get(record.id) as ColdRow | undefined;
    if (!row) {
      throw new EngramError('STORAGE_ERROR', `artifact ${record.id} has no stored bytes and no cold copy recorded`, { artifactId: record.id });
    }
    const path = join(this.coldLocation, row.location);
    let bytes: Buffer;
    try {
      bytes = await readFile(path);
    } catch (err) {
      const reason = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'is missing' : `cannot be read (${(err as Error).message})`;
      throw new EngramError('STORAGE_ERROR', `artifact ${record.id}: its cold copy ${path} ${reason}`, { artifactId: record.id, path });
    }
    const digest = sha256Hex(bytes);
    if (digest !== row.stored_sha256) {
      throw new EngramError('STORAGE_ERROR', `artifact ${record.id}: its cold copy ${path} is corrupt (sha256 ${digest}, recorded ${row.stored_sha256})`, {
        artifactId: record.id,
        path,
      });
    }
    return {
      record: {
        ...record,
        storedBytes: row.stored_bytes,
        encoding: row.encoding as 'br' | 'identity',
        coldAt: new Date(row.moved_ms).toISOString(),
        coldLocation: path,
      },
      stored: bytes,
    };
  }

  /** Paths of the cold copies of these artifacts (those that are cold). */
  coldPaths(ids: readonly ArtifactId[]): Map<ArtifactId, string> {
    const out = new Map<ArtifactId, string>();
    for (const id of new Set(ids)) {
      const row = this.stmts.coldRow.get(id) as ColdRow | undefined;
      if (row) out.set(id, join(this.coldLocation, row.location));
    }
    return out;
  }

  /** Erases the files of `paths` whose artifact row is gone (after a purge committed). */
  async eraseIfGone(paths: Map<ArtifactId, string>): Promise<void> {
    for (const [id, path] of paths) {
      if (this.stmts.coldRow.get(id)) continue;
      await unlink(path).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw new EngramError('STORAGE_ERROR', `purge: cannot erase the cold copy ${path} of artifact ${id}: ${err.message}`, { artifactId: id, path });
      });
    }
  }

  async counts(): Promise<ArtifactTierCounts> {
    const hot = this.stmts.hotCounts.get() as { n: number; stored: number };
    const cold = this.stmts.coldCounts.get() as { n: number; stored: number; before: number };
    return { hot: hot.n, cold: cold.n, hotStoredBytes: hot.stored, coldStoredBytes: cold.stored, coldBytesBefore: cold.before };
  }

  async sweepOrphans(olderThanMs: number): Promise<number> {
    if (this.coldLocation === '') return 0;
    let shards: string[];
    try {
      shards = await readdir(this.coldLocation);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
      throw err;
    }
    const known = new Set((this.stmts.allLocations.all() as Array<{ location: string }>).map((r) => r.location));
    const cutoff = Date.now() - olderThanMs;
    let erased = 0;
    for (const shard of shards) {
      if (!/^[0-9a-f]{2}$/.test(shard)) continue;
      for (const name of await readdir(join(this.coldLocation, shard))) {
        const location = `${shard}/${name}`;
        if (known.has(location)) continue;
        const path = join(this.coldLocation, location);
        // A copy younger than the cutoff may belong to a move between its write and its commit.
        if ((await stat(path)).mtimeMs > cutoff) continue;
        // Checked again just before erasing: the list above may be older than a move that committed since.
        if (this.stmts.locationExists.get(location)) continue;
        await unlink(path);
        erased++;
      }
    }
    return erased;
  }
}

/** Writes to a temporary file, fsyncs it, renames it into place and fsyncs the directory. */
async function writeDurably(path: string, bytes: Uint8Array): Promise<void> {
  const dir = dirname(path);
  try {
    // Private like the store (sqlite-connection.ts): the folder 0700, the copy 0600, whatever the umask allows more.
    await mkdir(dirname(dir), { recursive: true, mode: 0o700 });
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const tmp = `${path}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
    const file = await open(tmp, 'w', 0o600);
    try {
      await file.writeFile(bytes);
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(tmp, path);
    for (const d of [dir, dirname(dir)]) {
      const handle = await open(d, 'r');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
    }
  } catch (err) {
    throw new EngramError('STORAGE_ERROR', `cannot write the cold copy ${path}: ${(err as Error).message}`, { path });
  }
}

interface HotRow {
  id: string;
  sha256: string;
  size_bytes: number;
  stored_bytes: number;
  encoding: string;
  media_type: string;
  created_ms: number;
}

function recordOf(r: HotRow): ArtifactRecord {
  return {
    id: r.id as ArtifactId,
    sha256: r.sha256,
    sizeBytes: r.size_bytes,
    storedBytes: r.stored_bytes,
    encoding: r.encoding as 'br' | 'identity',
    mediaType: r.media_type,
    createdAt: new Date(r.created_ms).toISOString(),
  };
}

function prepare(db: Db) {
  const columns = 'a.id, a.sha256, a.size_bytes, a.stored_bytes, a.encoding, a.media_type, a.created_ms';
  const isHot = 'NOT EXISTS (SELECT 1 FROM artifact_cold c WHERE c.artifact_id = a.id)';
  return {
    listHot: db.prepare(`SELECT ${columns} FROM artifacts a WHERE a.id > ? AND a.created_ms < ? AND ${isHot} ORDER BY a.id LIMIT ?`),
    hotRecord: db.prepare(`SELECT ${columns} FROM artifacts a WHERE a.id = ? AND length(a.data) > 0`),
    coldRow: db.prepare('SELECT location, encoding, stored_bytes, stored_sha256, moved_ms FROM artifact_cold WHERE artifact_id = ?'),
    insertCold: db.prepare(
      'INSERT INTO artifact_cold (artifact_id, location, encoding, stored_bytes, stored_sha256, hot_bytes, moved_ms) VALUES (?, ?, ?, ?, ?, ?, ?)',
    ),
    dropHot: db.prepare("UPDATE artifacts SET data = X'' WHERE id = ?"),
    hotCounts: db.prepare(`SELECT COUNT(*) AS n, COALESCE(SUM(a.stored_bytes), 0) AS stored FROM artifacts a WHERE ${isHot}`),
    coldCounts: db.prepare('SELECT COUNT(*) AS n, COALESCE(SUM(stored_bytes), 0) AS stored, COALESCE(SUM(hot_bytes), 0) AS before FROM artifact_cold'),
    allLocations: db.prepare('SELECT location FROM artifact_cold'),
    locationExists: db.prepare('SELECT 1 FROM artifact_cold WHERE location = ?'),
    artifactExists: db.prepare('SELECT 1 FROM artifacts WHERE id = ?'),
  };
}
