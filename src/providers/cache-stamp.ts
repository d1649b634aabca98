import { randomBytes } from 'node:crypto';
import { closeSync, fstatSync, openSync, readFileSync, readSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { crc32 } from 'node:zlib';

/**
 * "This file was checked whole, and has not been written since": a small JSON file beside a binary cache
 * (`<cache>.checked`) that lets a start skip the CRC-32 of the cache's payload (sectioned-file.ts).
 *
 * Why: the CLI reads the 44 MB word-vector cache on every recall that embeds its query, and its CRC alone took ~45 ms
 * of a ~500 ms start on a 1M-event store (issue #14, bench/results/scale.md "CLI start to first recall result").
 * The stamp holds what changes whenever the file's bytes are written: its size, inode, modification and status-change
 * times (the status-change time, ctime, is set by the kernel on every write, rename or chmod and cannot be set back by
 * a program), and a CRC-32 of the file's header (magic, length, JSON header with the payload's own CRC). A file whose
 * stamp matches all of them has the bytes that were checked; anything else (no stamp, a rewrite, a truncation, a
 * replaced file, a changed header) gets the full check, and a stamp again when it passes. What a stamp cannot see is
 * damage that bypasses the file system (a failing disk): that is what the payload CRC still catches whenever the file
 * is written again or its stamp is removed.
 *
 * A file changed less than {@link RACY_MS} before it is checked gets no stamp yet: file times have the kernel tick's
 * granularity, and a write in the same tick as the check could leave every stamped field equal ("racy git").
 */
export const RACY_MS = 1000;

interface Stamp {
  size: number;
  ino: number;
  mtimeMs: number;
  ctimeMs: number;
  headerCrc32: number;
}

/** A cache file's bytes, and whether its stamp says they were checked whole before. */
export interface StampedRead {
  file: Buffer;
  isStamped: boolean;
  /** Call after the full check passed: writes the stamp (best effort; a failure only means the next start checks again). */
  stamp(): void;
}

/**
 * An open cache file: its head (magic, header length, header) and whether its stamp says it was checked whole
 * before, with reads of any part. The caller closes it (after {@link StampedFile.readAll}, or when done reading parts).
 */
export interface StampedFile {
  size: number;
  /** The first 12 + header-length bytes (fewer when the file is shorter). */
  head: Buffer;
  isStamped: boolean;
  /** `length` bytes at `offset`, in a buffer of their own (8-aligned); throws when the file ends before. */
  read(offset: number, length: number): Buffer;
  /** The whole file, checked to be as long as it was when opened. */
  readAll(): Buffer;
  /** As {@link StampedRead.stamp}. */
  stamp(): void;
  close(): void;
}

export function stampPath(path: string): string {
  return `${path}.checked`;
}

/** Opens `path` (throws as openSync does) and compares it with its stamp. */
export function openStamped(path: string): StampedFile {
  const fd = openSync(path, 'r');
  try {
    const stats = fstatSync(fd);
    const size = stats.size;
    const read = (offset: number, length: number): Buffer => {
      const buffer = Buffer.allocUnsafeSlow(length);
      let done = 0;
      while (done < length) {
        const n = readSync(fd, buffer, done, length - done, offset + done);
        if (n === 0) throw new Error(`${path} ended at ${offset + done} bytes, ${offset + length} expected`);
        done += n;
      }
      return buffer;
    };
    const prefix = read(0, Math.min(12, size));
    const head = prefix.length < 12 ? prefix : read(0, Math.min(size, 12 + prefix.readUInt32LE(8)));
    const header = headerCrc32(head);
    const current: Stamp | undefined = header === undefined ? undefined : { size, ino: stats.ino, mtimeMs: stats.mtimeMs, ctimeMs: stats.ctimeMs, headerCrc32: header };
    const stored = readStamp(path);
    const isStamped = current !== undefined && stored !== undefined && sameStamp(current, stored);
    return {
      size,
      head,
      isStamped,
      read,
      readAll: () => read(0, size),
      stamp: () => {
        if (isStamped || current === undefined) return;
        if (Date.now() - Math.max(stats.mtimeMs, stats.ctimeMs) < RACY_MS) return;
        writeStamp(path, current);
      },
      close: () => closeSync(fd),
    };
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

/** Reads `path` whole (throws as readFileSync does) and compares it with its stamp. */
export function readStamped(path: string): StampedRead {
  const file = openStamped(path);
  try {
    return { file: file.readAll(), isStamped: file.isStamped, stamp: file.stamp };
  } finally {
    file.close();
  }
}

/** CRC-32 of the magic, the header length and the header; undefined when the file is too short to hold them. */
function headerCrc32(file: Buffer): number | undefined {
  if (file.length < 12) return undefined;
  const end = 12 + file.readUInt32LE(8);
  return end > file.length ? undefined : crc32(file.subarray(0, end));
}

function readStamp(path: string): Stamp | undefined {
  try {
    const s = JSON.parse(readFileSync(stampPath(path), 'utf8')) as Partial<Stamp>;
    return typeof s.size === 'number' && typeof s.ino === 'number' && typeof s.mtimeMs === 'number' && typeof s.ctimeMs === 'number' && typeof s.headerCrc32 === 'number'
      ? (s as Stamp)
      : undefined;
  } catch {
    return undefined;
  }
}

function sameStamp(a: Stamp, b: Stamp): boolean {
  return a.size === b.size && a.ino === b.ino && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs && a.headerCrc32 === b.headerCrc32;
}

/** Written to a temporary file renamed into place: a reader sees the old stamp or the new one, never half of one. */
function writeStamp(path: string, stamp: Stamp): void {
  const target = stampPath(path);
  const temp = `${target}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    writeFileSync(temp, JSON.stringify(stamp));
    renameSync(temp, target);
  } catch {
    // A read-only cache directory: the next start checks the whole file again.
  } finally {
    rmSync(temp, { force: true });
  }
}
