import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, readSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Engram } from '../../engine.js';
import type { ImportReport } from '../../memory/import-runner.js';
import type { SessionId } from '../../model/ids.js';
import { defaultCacheDir } from '../../providers/cache-dir.js';

/**
 * Where a hook's last import of a growing Claude Code transcript stopped, so the next hook reads only what was
 * added: every hook imported the whole file before, and re-reading a 9 MB transcript of 3,000 stored records took
 * 1.4 s, at every prompt of a long session (docs/memory-across-sessions.md, "What it costs").
 *
 * A cache, never the truth: it lives in Engram's cache directory (`<cache>/transcripts/`), and a cursor is used only
 * when it still fits: the file has at least as many bytes, the same first bytes, and the store holds the last record
 * the cursor names (another store, a purge or a replaced file make it read the whole file again, which the import's
 * idempotent keys make safe).
 */
interface Cursor {
  path: string;
  sessionId: string;
  /** Bytes imported: the next import starts here (always just after a newline). */
  offset: number;
  /** sha256 of the file's first bytes when the cursor was written. */
  headSha: string;
  /** The idempotency key of the session's last imported event. */
  lastKey: string;
  /** Tool names of the session's recent calls, for results that come after the offset. */
  toolNames: Array<[string, string]>;
}

const HEAD_BYTES = 4096;
/** Recent tool calls whose names a cursor keeps (a result rarely answers a call older than this). */
const TOOL_NAMES_KEPT = 200;
const TAIL_SCAN_BYTES = 64 * 1024;

/**
 * Imports what the transcript gained since the cursor (all of it without a usable cursor), up to its last complete
 * line (Claude Code may be writing the next one), then moves the cursor. Undefined when nothing was new.
 */
export async function importTranscriptSince(
  mem: Engram,
  path: string,
  o: { sessionId: string; project: string; cacheDir?: string },
): Promise<ImportReport | undefined> {
  const size = fileSize(path);
  if (size === 0) return undefined;
  const end = completeEnd(path, size);
  if (end === 0) return undefined;
  const file = cursorFile(o.cacheDir ?? defaultCacheDir(), path, o.sessionId);
  const head = headSha(path, size);
  const cursor = await usableCursor(mem, file, { path, sessionId: o.sessionId, head, end });
  const start = cursor?.offset ?? 0;
  if (start === end) return undefined;
  const report = await mem.importFile(
    { path, displayName: path, ...(start > 0 || end < size ? { startByte: start, endByte: end } : {}) },
    {
      format: 'claude-code',
      sessionId: o.sessionId,
      project: o.project,
      skipInvalid: true,
      ...(cursor ? { knownToolNames: new Map(cursor.toolNames) } : {}),
    },
  );
  await saveCursor(mem, file, { path, sessionId: o.sessionId, offset: end, headSha: head });
  return report;
}

async function usableCursor(mem: Engram, file: string, at: { path: string; sessionId: string; head: string; end: number }): Promise<Cursor | undefined> {
  let cursor: Cursor;
  try {
    cursor = JSON.parse(readFileSync(file, 'utf8')) as Cursor;
  } catch {
    return undefined;
  }
  if (cursor.path !== at.path || cursor.sessionId !== at.sessionId || cursor.headSha !== at.head || !(cursor.offset > 0 && cursor.offset <= at.end)) return undefined;
  const found = await mem.store.getEventsByKeys(at.sessionId as SessionId, [cursor.lastKey]);
  return found.length > 0 ? cursor : undefined;
}

async function saveCursor(mem: Engram, file: string, c: Omit<Cursor, 'lastKey' | 'toolNames'>): Promise<void> {
  const recent = await mem.store.listEvents({ sessionId: c.sessionId as SessionId, order: 'desc', limit: TOOL_NAMES_KEPT * 2 });
  const lastKey = recent.find((e) => e.key?.startsWith('cc:'))?.key;
  if (lastKey === undefined) return;
  const toolNames = recent
    .filter((e) => e.kind === 'tool_call' && e.toolCallId !== undefined && e.toolName !== undefined)
    .slice(0, TOOL_NAMES_KEPT)
    .map((e): [string, string] => [e.toolCallId!, e.toolName!]);
  try {
    mkdirSync(join(file, '..'), { recursive: true, mode: 0o700 });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify({ ...c, lastKey, toolNames } satisfies Cursor), { mode: 0o600 });
    renameSync(tmp, file);
  } catch {
    // An unwritable cache costs the next hook a whole read, nothing else.
  }
}

function cursorFile(cacheDir: string, path: string, sessionId: string): string {
  return join(cacheDir, 'transcripts', `${createHash('sha256').update(`${path}\0${sessionId}`).digest('hex').slice(0, 32)}.json`);
}

function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

function headSha(path: string, size: number): string {
  return createHash('sha256').update(readBytes(path, 0, Math.min(HEAD_BYTES, size))).digest('hex');
}

/**
 * Where the file's complete records end: after its last line when that line is a whole JSON record (a file whose
 * writer left no final newline), else after its last newline (the line after it is still being written).
 */
function completeEnd(path: string, size: number): number {
  const end = lastLineEnd(path, size);
  if (end === size || size - end > TAIL_SCAN_BYTES * 16) return end;
  try {
    JSON.parse(readBytes(path, end, size - end).toString('utf8'));
    return size;
  } catch {
    return end;
  }
}

/** The offset just after the file's last newline (0 when it has none yet): the end of its last complete line. */
function lastLineEnd(path: string, size: number): number {
  let end = size;
  while (end > 0) {
    const from = Math.max(0, end - TAIL_SCAN_BYTES);
    const chunk = readBytes(path, from, end - from);
    const at = chunk.lastIndexOf(0x0a);
    if (at >= 0) return from + at + 1;
    end = from;
  }
  return 0;
}

function readBytes(path: string, position: number, length: number): Buffer {
  const buffer = Buffer.alloc(length);
  const fd = openSync(path, 'r');
  try {
    let read = 0;
    while (read < length) {
      const n = readSync(fd, buffer, read, length - read, position + read);
      if (n === 0) break;
      read += n;
    }
    return buffer.subarray(0, read);
  } finally {
    closeSync(fd);
  }
}
