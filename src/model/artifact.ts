import type { ArtifactId } from './ids.js';

/** How a preview was cut from an artifact (ENGRAM §4.4 "structure-aware preview"). */
export const PREVIEW_KINDS = ['tail', 'json', 'grep', 'table', 'binary'] as const;
export type PreviewKind = (typeof PREVIEW_KINDS)[number];

export interface Preview {
  kind: PreviewKind;
  /** The text kept inline in the event in place of the full content. */
  text: string;
}

/** Compression of the stored bytes. `identity` = stored as-is. */
export type ArtifactEncoding = 'br' | 'identity';

export interface ArtifactRecord {
  id: ArtifactId;
  sha256: string;
  /** Size of the original content in bytes. */
  sizeBytes: number;
  /** Size as stored (after compression). */
  storedBytes: number;
  encoding: ArtifactEncoding;
  mediaType: string;
  createdAt: string;
  /**
   * Set when the bytes were read from the artifact's cold copy (memory/artifact-lifecycle.ts): when they moved
   * there, and where it is. `storedBytes` and `encoding` are then the cold copy's.
   */
  coldAt?: string;
  coldLocation?: string;
}

/** An artifact as handed to a backend for storage: already hashed and compressed by the core. */
export interface ArtifactDraft {
  record: ArtifactRecord;
  /** Compressed bytes (per `record.encoding`). */
  stored: Uint8Array;
}
