import { randomBytes } from 'node:crypto';
import { brotliDecompressSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { ArtifactRecord } from '../model/artifact.js';
import type { ArtifactId } from '../model/ids.js';
import { sha256Hex } from './artifact-codec.js';
import { checkRehydrated, defaultColdAfterMs, DEFAULT_ARTIFACT_COLD_AFTER_MS, makeColdCopy, parseAge } from './artifact-lifecycle.js';

const recordOf = (bytes: Buffer): ArtifactRecord => ({
  id: `art_${sha256Hex(bytes)}` as ArtifactId,
  sha256: sha256Hex(bytes),
  sizeBytes: bytes.byteLength,
  storedBytes: bytes.byteLength,
  encoding: 'identity',
  mediaType: 'text/plain',
  createdAt: new Date(0).toISOString(),
});

describe('parseAge', () => {
  it('reads days, hours, minutes and seconds; a bare number is days', () => {
    expect(parseAge('30d')).toBe(30 * 86_400_000);
    expect(parseAge('12h')).toBe(12 * 3_600_000);
    expect(parseAge('90m')).toBe(90 * 60_000);
    expect(parseAge('0s')).toBe(0);
    expect(parseAge('7')).toBe(7 * 86_400_000);
  });

  it('refuses anything else, naming the option', () => {
    expect(() => parseAge('soon')).toThrow(/--older-than: "soon" is not an age/);
    expect(() => parseAge('-1d')).toThrow(/older-than/);
    expect(() => parseAge('3w', 'artifacts-cold-after')).toThrow(/--artifacts-cold-after/);
  });

  it('defaults to $ENGRAM_ARTIFACT_COLD_AFTER, else 30 days', () => {
    expect(defaultColdAfterMs({})).toBe(DEFAULT_ARTIFACT_COLD_AFTER_MS);
    expect(defaultColdAfterMs({ ENGRAM_ARTIFACT_COLD_AFTER: '2d' })).toBe(2 * 86_400_000);
    expect(() => defaultColdAfterMs({ ENGRAM_ARTIFACT_COLD_AFTER: 'x' })).toThrow(/ENGRAM_ARTIFACT_COLD_AFTER/);
  });
});

describe('makeColdCopy', () => {
  it('compresses text with brotli to a copy that decompresses to the original, with the digest of the copy', async () => {
    const text = Buffer.from('2026-03-02 INFO request served in 12 ms\n'.repeat(500));
    const copy = await makeColdCopy(recordOf(text), text);
    expect(copy.encoding).toBe('br');
    expect(copy.stored.byteLength).toBeLessThan(text.byteLength / 20);
    expect(brotliDecompressSync(copy.stored).equals(text)).toBe(true);
    expect(copy.storedSha256).toBe(sha256Hex(copy.stored));
  });

  it('keeps bytes brotli cannot shrink as they are', async () => {
    const noise = randomBytes(8192);
    const copy = await makeColdCopy(recordOf(noise), noise);
    expect(copy.encoding).toBe('identity');
    expect(Buffer.from(copy.stored).equals(noise)).toBe(true);
  });

  it('refuses bytes that are not the artifact the record names', async () => {
    const a = Buffer.from('a'.repeat(5000));
    await expect(makeColdCopy(recordOf(a), Buffer.from('b'.repeat(5000)))).rejects.toMatchObject({ code: 'INTERNAL' });
  });
});

describe('checkRehydrated', () => {
  it('passes the original bytes and fails others with STORAGE_ERROR naming the artifact and the copy', () => {
    const bytes = Buffer.from('x'.repeat(5000));
    const record = { ...recordOf(bytes), coldAt: new Date(0).toISOString(), coldLocation: '/data/engram.db.cold/ab/ab.br' };
    expect(() => checkRehydrated(record, bytes)).not.toThrow();
    expect(() => checkRehydrated(record, Buffer.from('y'.repeat(5000)))).toThrow(expect.objectContaining({ code: 'STORAGE_ERROR', data: { artifactId: record.id, path: record.coldLocation } }));
  });
});
