/**
 * The artifact lifecycle (ENGRAM Annex A.7): artifacts older than a cut-off are compressed harder and their bytes
 * moved to the store's cold location (store/artifact-tier-storage.ts); their rows, digests, sizes and the events'
 * previews stay where they were, so listing and search do not change. Reading a cold artifact rehydrates it
 * from the copy, checked byte for byte against its sha256. Nothing is deleted: a move is copy, verify, then flip.
 */
import { promisify } from 'node:util';
import { brotliCompress, brotliDecompress, constants } from 'node:zlib';
import { EngramError } from '../errors.js';
import type { ArtifactRecord } from '../model/artifact.js';
import type { ArtifactId } from '../model/ids.js';
import type { ColdArtifactCopy } from '../store/artifact-tier-storage.js';
import type { StorageBackend } from '../store/backend.js';
import { decodeArtifactAsync, sha256Hex } from './artifact-codec.js';

/** Artifacts older than this go cold when nothing else is said (`ENGRAM_ARTIFACT_COLD_AFTER`, `--older-than`). */
export const DEFAULT_ARTIFACT_COLD_AFTER_MS = 30 * 86_400_000;
/** Artifacts read and moved per page. */
const PAGE = 100;
/** Orphaned cold copies (a purge that crashed before erasing them) younger than this are left to a later run. */
export const ORPHAN_GRACE_MS = 3_600_000;

const brotliCompressAsync = promisify(brotliCompress);
const brotliDecompressAsync = promisify(brotliDecompress);

/**
 * Brotli at its highest quality with a 16 MiB window. Node 20's zlib has brotli but no zstd (zstd arrived in Node
 * 22.15); at quality 11 brotli is slow (about 1 MB/s) but runs on libuv's thread pool, once per artifact, in the
 * background, and reads decompress as fast as at quality 1 (artifact-codec.ts compresses new artifacts at 1).
 */
const COLD_BROTLI = (bytes: Uint8Array) => ({
  params: {
    [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
    [constants.BROTLI_PARAM_LGWIN]: 24,
    [constants.BROTLI_PARAM_SIZE_HINT]: bytes.byteLength,
  },
});

export interface ArtifactLifecycleOptions {
  /** Artifacts created longer ago than this go cold. Default {@link DEFAULT_ARTIFACT_COLD_AFTER_MS}. */
  olderThanMs?: number;
  /** "Now" for the cut-off. Default `Date.now()`. */
  nowMs?: number;
  /** Count and measure what would move (compressing each), change nothing. */
  isDryRun?: boolean;
  /** Most artifacts moved in this run (the worker moves a batch per round). Default all. */
  limit?: number;
  onProgress?: (done: number, moved: number) => void;
}

/** One artifact the run could not move: it stays hot, readable as before. */
export interface ArtifactLifecycleFailure {
  artifactId: ArtifactId;
  message: string;
}

export interface ArtifactLifecycleReport {
  isDryRun: boolean;
  /** ISO-8601: artifacts created before this were candidates. */
  cutoff: string;
  /** Hot artifacts older than the cut-off that were looked at. */
  candidates: number;
  /** Moved to the cold tier (or, dry, would be). */
  moved: number;
  /** Original bytes of the moved artifacts. */
  originalBytes: number;
  /** What the moved artifacts took in the artifacts table before. */
  hotBytes: number;
  /** What their cold copies take. */
  coldBytes: number;
  /** Orphaned cold copies erased (see ArtifactTierStorage.sweepOrphans). */
  orphansErased: number;
  failures: ArtifactLifecycleFailure[];
  ms: number;
}

/** `30d`, `12h`, `90m`, `45s` (or a plain number of days) as milliseconds; anything else is INVALID_INPUT naming `field`. */
export function parseAge(value: string, field = 'older-than'): number {
  const m = /^(\d+)(d|h|m|s)?$/.exec(value.trim());
  if (!m) throw new EngramError('INVALID_INPUT', `--${field}: "${value}" is not an age such as 30d, 12h or 90m`, { field });
  return Number(m[1]) * { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1_000 }[(m[2] ?? 'd') as 'd' | 'h' | 'm' | 's'];
}

/** The cut-off from `$ENGRAM_ARTIFACT_COLD_AFTER` (e.g. `30d`), else {@link DEFAULT_ARTIFACT_COLD_AFTER_MS}. */
export function defaultColdAfterMs(env: NodeJS.ProcessEnv = process.env): number {
  const value = env.ENGRAM_ARTIFACT_COLD_AFTER;
  return value === undefined || value === '' ? DEFAULT_ARTIFACT_COLD_AFTER_MS : parseAge(value, 'ENGRAM_ARTIFACT_COLD_AFTER');
}

/**
 * The cold copy of an artifact's original bytes, checked: it decompresses to bytes whose sha256 is the artifact's.
 * Content brotli cannot shrink (images, archives) is copied as-is.
 */
export async function makeColdCopy(record: ArtifactRecord, original: Uint8Array): Promise<ColdArtifactCopy> {
  const compressed = await brotliCompressAsync(original, COLD_BROTLI(original));
  const isSmaller = compressed.byteLength < original.byteLength;
  const stored = isSmaller ? compressed : original;
  const back = isSmaller ? await brotliDecompressAsync(compressed) : original;
  if (sha256Hex(back) !== record.sha256) {
    throw new EngramError('INTERNAL', `artifact ${record.id}: its cold copy does not decompress to its sha256; not moved`, { artifactId: record.id });
  }
  return { encoding: isSmaller ? 'br' : 'identity', stored, storedSha256: sha256Hex(stored) };
}

/**
 * Checks bytes rehydrated from a cold copy against the artifact's sha256: never hand out wrong bytes.
 * STORAGE_ERROR naming the artifact and the copy's location.
 */
export function checkRehydrated(record: ArtifactRecord, bytes: Uint8Array): void {
  const digest = sha256Hex(bytes);
  if (digest !== record.sha256) {
    throw new EngramError(
      'STORAGE_ERROR',
      `artifact ${record.id}: its cold copy ${record.coldLocation ?? ''} decompresses to other bytes (sha256 ${digest}, expected ${record.sha256})`,
      { artifactId: record.id, path: record.coldLocation ?? null },
    );
  }
}

/**
 * Moves every hot artifact created before `now - olderThanMs` to the cold tier, oldest id order, one at a time:
 * read and check the hot bytes, compress harder, check the copy, then the store writes it durably, reads it back
 * and flips the row in one transaction. An artifact that fails stays hot and is reported; the run goes on.
 */
export async function runArtifactLifecycle(store: StorageBackend, options: ArtifactLifecycleOptions = {}): Promise<ArtifactLifecycleReport> {
  const started = performance.now();
  const olderThanMs = options.olderThanMs ?? DEFAULT_ARTIFACT_COLD_AFTER_MS;
  if (!Number.isFinite(olderThanMs) || olderThanMs < 0) throw new EngramError('INVALID_INPUT', 'olderThanMs: must be 0 or more', { field: 'olderThanMs' });
  const cutoffMs = (options.nowMs ?? Date.now()) - olderThanMs;
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  const report: ArtifactLifecycleReport = {
    isDryRun: options.isDryRun === true,
    cutoff: new Date(cutoffMs).toISOString(),
    candidates: 0,
    moved: 0,
    originalBytes: 0,
    hotBytes: 0,
    coldBytes: 0,
    orphansErased: 0,
    failures: [],
    ms: 0,
  };
  let afterId: ArtifactId | undefined;
  while (report.moved < limit) {
    const page = await store.artifactTiers.listHot({ createdBeforeMs: cutoffMs, limit: PAGE, ...(afterId !== undefined ? { afterId } : {}) });
    if (page.length === 0) break;
    afterId = page[page.length - 1]!.id;
    for (const record of page) {
      if (report.moved >= limit) break;
      report.candidates++;
      try {
        const hot = await store.getArtifact(record.id);
        if (!hot || hot.record.coldAt !== undefined) continue; // purged or moved by another worker since listed
        const original = await decodeArtifactAsync(hot.stored, hot.record.encoding);
        if (sha256Hex(original) !== record.sha256) {
          throw new EngramError('STORAGE_ERROR', `artifact ${record.id}: its hot bytes do not match its sha256; left where it is`, { artifactId: record.id });
        }
        const copy = await makeColdCopy(record, original);
        if (!report.isDryRun && !(await store.artifactTiers.moveToCold(record.id, copy, Date.now())).isMoved) continue;
        report.moved++;
        report.originalBytes += record.sizeBytes;
        report.hotBytes += hot.stored.byteLength;
        report.coldBytes += copy.stored.byteLength;
      } catch (err) {
        report.failures.push({ artifactId: record.id, message: err instanceof Error ? err.message : String(err) });
      }
      options.onProgress?.(report.candidates, report.moved);
    }
  }
  if (!report.isDryRun) report.orphansErased = await store.artifactTiers.sweepOrphans(ORPHAN_GRACE_MS);
  report.ms = performance.now() - started;
  return report;
}
