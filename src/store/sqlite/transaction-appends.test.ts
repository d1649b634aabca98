import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../engine.js';
import type { SessionId } from '../../model/ids.js';
import { SqliteBackend } from './sqlite-backend.js';

let dir: string;
let mem: Engram | undefined;
afterEach(async () => {
  await mem?.close();
  mem = undefined;
  rmSync(dir, { recursive: true, force: true });
});

describe('appends beside a transaction of the same process', () => {
  it('wait for the transaction on the event loop (up to the busy timeout) instead of failing on its lock', async () => {
    dir = mkdtempSync(join(tmpdir(), 'engram-tx-appends-'));
    // A short busy timeout: an append that waited in SQLite's busy handler (the bug) sleeps the thread the import
    // needs for all of it, then fails, however short the import.
    mem = await openEngram({ backend: SqliteBackend.open(join(dir, 'engram.db'), { busyTimeoutMs: 2000 }) });
    const m = mem;
    await m.append('other', [{ kind: 'user', content: 'first of the other session' }]);
    let releaseImport!: () => void;
    const importing = m.ingestor.inTransaction(async (ingestor) => {
      await ingestor.append('imported', [{ kind: 'user', content: 'an imported line' }]);
      // The import reads its next lines (file I/O): the event loop serves other callers meanwhile.
      await new Promise<void>((done) => {
        releaseImport = done;
      });
      await ingestor.append('imported', [{ kind: 'assistant', content: 'another imported line' }]);
      return 'imported';
    });
    await new Promise((done) => setTimeout(done, 20));
    const appending = m.append('other', [{ kind: 'assistant', content: 'written while the import runs' }]);
    // The import goes on for a while (shorter than the busy timeout), then finishes; the append then commits.
    setTimeout(() => releaseImport(), 100);
    expect(await importing).toBe('imported');
    const [outcome] = await appending;
    expect(outcome!.isDuplicate).toBe(false);
    const texts = async (session: string) => (await m.store.listEvents({ sessionId: session as SessionId })).map((e) => e.content);
    expect(await texts('other')).toEqual(['first of the other session', 'written while the import runs']);
    expect(await texts('imported')).toEqual(['an imported line', 'another imported line']);
  });
});
