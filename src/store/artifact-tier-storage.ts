import type { ArtifactEncoding, ArtifactRecord } from '../model/artifact.js';
import type { ArtifactId } from '../model/ids.js';

/**
 * An artifact's cold copy as the core made it (memory/artifact-lifecycle.ts): the original bytes compressed
 * harder, already checked to decompress to the artifact's sha256.
 */
export interface ColdArtifactCopy {
  encoding: ArtifactEncoding;
  stored: Uint8Array;
  /** sha256 (hex) of `stored`: checked once the copy is written and again on every read. */
  storedSha256: string;
}

/** What a move did: false when the artifact was gone or already cold (another worker moved it first). */
export interface ColdMoveOutcome {
  isMoved: boolean;
  /** Where the copy is: a file path (SQLite) or `schema.artifact_cold` (PostgreSQL). */
  location: string;
}

/** Hot and cold artifacts and their bytes. */
export interface ArtifactTierCounts {
  hot: number;
  cold: number;
  /** Stored (compressed) bytes of the hot artifacts, in the artifacts table. */
  hotStoredBytes: number;
  /** Bytes of the cold copies. */
  coldStoredBytes: number;
  /** What the cold artifacts took in the artifacts table before they moved (their stored bytes then). */
  coldBytesBefore: number;
}

/**
 * The artifact lifecycle's side of a store (ENGRAM Annex A.7): old artifacts' bytes move to a cold location,
 * compressed harder, while their rows (id, digest, sizes, media type) and the events' previews stay where they
 * were. {@link StorageBackend.getArtifact} reads a cold artifact from its copy, checking the copy's digest.
 */
export interface ArtifactTierStorage {
  /** Where this store keeps cold copies: `<db>.cold/` beside a SQLite file, the `artifact_cold` table on PostgreSQL. */
  readonly coldLocation: string;
  /** Hot artifacts created before `createdBeforeMs`, in id order after `afterId`, at most `limit`. */
  listHot(query: { createdBeforeMs: number; afterId?: ArtifactId; limit: number }): Promise<ArtifactRecord[]>;
  /**
   * Makes `copy` the artifact's cold copy. The copy is written durably and read back against its digest first;
   * then one transaction records it and drops the hot bytes; a crash at any point leaves the artifact readable.
   * STORAGE_ERROR when the copy cannot be written or does not read back as written (nothing changes then).
   */
  moveToCold(id: ArtifactId, copy: ColdArtifactCopy, movedAtMs: number): Promise<ColdMoveOutcome>;
  counts(): Promise<ArtifactTierCounts>;
  /**
   * Erases cold copies that no artifact row names any more and that are older than `olderThanMs` (a purge
   * erases its copies after its commit; a crash in between leaves them for this). The number erased; 0 where
   * the copies live in the database itself.
   */
  sweepOrphans(olderThanMs: number): Promise<number>;
}
