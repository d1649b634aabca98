import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { brotliCompress, brotliCompressSync, brotliDecompress, brotliDecompressSync, constants } from 'node:zlib';
import type { ArtifactEncoding } from '../model/artifact.js';

// Measured on the bench trace's large tool outputs (~20 KB logs, JSON, grep): quality 5 = 58 MB/s at 4.9x,
// quality 4 = 82 MB/s at 4.4x, quality 1 = 213 MB/s at 3.9x. Ingest latency matters more to agents than
// the last 13 % of disk, so artifacts are compressed fast; a 200 KB output costs ~1 ms.
const BROTLI_QUALITY = 1;

export function sha256Hex(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

const brotliCompressAsync = promisify(brotliCompress);
const brotliDecompressAsync = promisify(brotliDecompress);
const brotliOptions = (bytes: Uint8Array) => ({
  params: {
    [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
    [constants.BROTLI_PARAM_SIZE_HINT]: bytes.byteLength,
  },
});

/** Compresses with brotli; content that does not shrink (images, archives) is stored as-is. */
export function encodeArtifact(bytes: Uint8Array): { encoding: ArtifactEncoding; stored: Uint8Array } {
  return chooseEncoding(bytes, brotliCompressSync(bytes, brotliOptions(bytes)));
}

/**
 * {@link encodeArtifact} on libuv's thread pool: an 8 MiB tool output takes 25-40 ms to compress, which a server
 * must not spend on its one JavaScript thread (bench/results/adversarial.md). The same bytes as the sync one.
 */
export async function encodeArtifactAsync(bytes: Uint8Array): Promise<{ encoding: ArtifactEncoding; stored: Uint8Array }> {
  return chooseEncoding(bytes, await brotliCompressAsync(bytes, brotliOptions(bytes)));
}

function chooseEncoding(bytes: Uint8Array, compressed: Uint8Array): { encoding: ArtifactEncoding; stored: Uint8Array } {
  if (compressed.byteLength >= bytes.byteLength) return { encoding: 'identity', stored: bytes };
  return { encoding: 'br', stored: compressed };
}

/** {@link decodeArtifact} on libuv's thread pool: decompressing a large artifact takes tens of milliseconds. */
export async function decodeArtifactAsync(stored: Uint8Array, encoding: ArtifactEncoding): Promise<Buffer> {
  return encoding === 'br' ? brotliDecompressAsync(stored) : Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength);
}

export function decodeArtifact(stored: Uint8Array, encoding: ArtifactEncoding): Buffer {
  return encoding === 'br' ? brotliDecompressSync(stored) : Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength);
}
