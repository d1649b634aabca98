import { createHash } from 'node:crypto';
import { EngramError } from '../../errors.js';
import type { ArtifactRecord } from '../../model/artifact.js';
import type { ArtifactId } from '../../model/ids.js';
import type { ArtifactTierCounts, ArtifactTierStorage, ColdArtifactCopy, ColdMoveOutcome } from '../artifact-tier-storage.js';
import type { StoredArtifact } from '../backend.js';
import type { PgBusQuery, PgBusTransaction } from './postgres-bus.js';

interface HotRow {
  id: string;
  sha256: string;
  size_bytes: string;
  stored_bytes: string;
  encoding: string;
  media_type: string;
  created_ms: string;
}

/**
 * Cold artifacts of a PostgreSQL store (migration 14): the table `artifact_cold` (why a table and not a
 * directory: artifact-tier-migration.ts). The move is one transaction: the copy is inserted, read back against its
 * digest by the server (`sha256()`), and the hot bytes are dropped; any failure rolls it all back.
 */
export class PostgresArtifactTiers implements ArtifactTierStorage {
  readonly coldLocation: string;

  constructor(
    private readonly s: string,
    /** The schema's name as PostgreSQL reports it (TG_TABLE_SCHEMA), unquoted. */
    private readonly schemaName: string,
    private readonly query: PgBusQuery,
    private readonly transaction: PgBusTransaction,
  ) {
    this.coldLocation = `${s}.artifact_cold`;
  }

  async listHot(query: { createdBeforeMs: number; afterId?: ArtifactId; limit: number }): Promise<ArtifactRecord[]> {
    const rows = await this.query<HotRow>(
      `SELECT a.id, a.sha256, a.size_bytes, a.stored_bytes, a.encoding, a.media_type, a.created_ms FROM ${this.s}.artifacts a
       WHERE a.id > $1 AND a.created_ms < $2 AND NOT EXISTS (SELECT 1 FROM ${this.s}.artifact_cold c WHERE c.artifact_id = a.id)
       ORDER BY a.id LIMIT $3`,
      [query.afterId ?? '', query.createdBeforeMs, query.limit],
      'listing hot artifacts failed',
    );
    return rows.map((r) => ({
      id: r.id as ArtifactId,
      sha256: r.sha256,
      sizeBytes: Number(r.size_bytes),
      storedBytes: Number(r.stored_bytes),
      encoding: r.encoding as 'br' | 'identity',
      mediaType: r.media_type,
      createdAt: new Date(Number(r.created_ms)).toISOString(),
    }));
  }

  async moveToCold(id: ArtifactId, copy: ColdArtifactCopy, movedAtMs: number): Promise<ColdMoveOutcome> {
    const location = this.coldLocation;
    const isMoved = await this.transaction(`moving artifact ${id} to the cold tier failed (it stays hot)`, async (c) => {
      await c.query(`SELECT set_config('engram.lifecycle', $1, true)`, [this.schemaName]);
      // Locked: two servers moving the same artifact serialize here; the second finds it cold.
      const hot = (
        await c.query<{ stored_bytes: string }>(`SELECT stored_bytes FROM ${this.s}.artifacts WHERE id = $1 AND octet_length(data) > 0 FOR UPDATE`, [id])
      ).rows[0];
      if (!hot) return false;
      const data = Buffer.from(copy.stored.buffer, copy.stored.byteOffset, copy.stored.byteLength);
      await c.query(
        `INSERT INTO ${this.s}.artifact_cold (artifact_id, encoding, stored_bytes, stored_sha256, hot_bytes, moved_ms, data) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [id, copy.encoding, copy.stored.byteLength, copy.storedSha256, hot.stored_bytes, movedAtMs, data],
      );
      const back = (await c.query<{ digest: string }>(`SELECT encode(sha256(data), 'hex') AS digest FROM ${this.s}.artifact_cold WHERE artifact_id = $1`, [id])).rows[0];
      if (back?.digest !== copy.storedSha256) {
        throw new EngramError('STORAGE_ERROR', `artifact ${id}: the cold copy in ${location} does not read back as written; the artifact stays hot`, {
          artifactId: id,
          path: location,
        });
      }
      await c.query(`UPDATE ${this.s}.artifacts SET data = '\\x'::bytea WHERE id = $1`, [id]);
      return true;
    });
    return { isMoved, location };
  }

  /** The artifact's bytes from its cold copy, checked against the digest recorded when it moved. */
  async readCold(record: ArtifactRecord): Promise<StoredArtifact> {
    const row = (
      await this.query<{ encoding: string; stored_bytes: string; stored_sha256: string; moved_ms: string; data: Buffer }>(
        `SELECT encoding, stored_bytes, stored_sha256, moved_ms, data FROM ${this.s}.artifact_cold WHERE artifact_id = $1`,
        [record.id],
        `reading the cold copy of artifact ${record.id} failed`,
      )
    )[0];
    const location = `${this.coldLocation} (artifact_id ${record.id})`;
    if (!row) {
      throw new EngramError('STORAGE_ERROR', `artifact ${record.id} has no stored bytes and its cold copy in ${location} is missing`, {
        artifactId: record.id,
        path: location,
      });
    }
    const digest = createHash('sha256').update(row.data).digest('hex');
    if (digest !== row.stored_sha256) {
      throw new EngramError('STORAGE_ERROR', `artifact ${record.id}: its cold copy in ${location} is corrupt (sha256 ${digest}, recorded ${row.stored_sha256})`, {
        artifactId: record.id,
        path: location,
      });
    }
    return {
      record: {
        ...record,
        storedBytes: Number(row.stored_bytes),
        encoding: row.encoding as 'br' | 'identity',
        coldAt: new Date(Number(row.moved_ms)).toISOString(),
        coldLocation: location,
      },
      stored: row.data,
    };
  }

  async counts(): Promise<ArtifactTierCounts> {
    const [row] = await this.query<{ hot: string; hot_stored: string; cold: string; cold_stored: string; before: string }>(
      `SELECT
         (SELECT count(*) FROM ${this.s}.artifacts a WHERE NOT EXISTS (SELECT 1 FROM ${this.s}.artifact_cold c WHERE c.artifact_id = a.id)) AS hot,
         (SELECT COALESCE(sum(a.stored_bytes), 0) FROM ${this.s}.artifacts a
            WHERE NOT EXISTS (SELECT 1 FROM ${this.s}.artifact_cold c WHERE c.artifact_id = a.id)) AS hot_stored,
         (SELECT count(*) FROM ${this.s}.artifact_cold) AS cold,
         (SELECT COALESCE(sum(stored_bytes), 0) FROM ${this.s}.artifact_cold) AS cold_stored,
         (SELECT COALESCE(sum(hot_bytes), 0) FROM ${this.s}.artifact_cold) AS before`,
      [],
      'counting artifact tiers failed',
    );
    return {
      hot: Number(row!.hot),
      cold: Number(row!.cold),
      hotStoredBytes: Number(row!.hot_stored),
      coldStoredBytes: Number(row!.cold_stored),
      coldBytesBefore: Number(row!.before),
    };
  }

  /** Copies live in the table: a purge deletes them in its own transaction, so nothing is left to sweep. */
  async sweepOrphans(): Promise<number> {
    return 0;
  }
}
