import { createHash } from 'node:crypto';
import { brotliCompressSync, brotliDecompressSync, constants } from 'node:zlib';
import type { ArtifactEncoding } from '../model/artifact.js';

// Quality 5 compresses build logs and JSON about 6-10x at ~50 MB/s; 11 gains a little more at 1/20 the speed.
const BROTLI_QUALITY = 5;

export function sha256Hex(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Compresses with brotli; content that does not shrink (images, archives) is stored as-is. */
export function encodeArtifact(bytes: Uint8Array): { encoding: ArtifactEncoding; stored: Uint8Array } {
  const compressed = brotliCompressSync(bytes, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
      [constants.BROTLI_PARAM_SIZE_HINT]: bytes.byteLength,
    },
  });
  if (compressed.byteLength >= bytes.byteLength) return { encoding: 'identity', stored: bytes };
  return { encoding: 'br', stored: compressed };
}

export function decodeArtifact(stored: Uint8Array, encoding: ArtifactEncoding): Buffer {
  return encoding === 'br' ? brotliDecompressSync(stored) : Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength);
}
