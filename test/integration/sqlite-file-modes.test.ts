import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { openEngram } from '../../src/engine.js';
import { runArtifactLifecycle } from '../../src/memory/artifact-lifecycle.js';

// Private files (issue #31, item 3): a store Engram creates is readable by its user only, whatever the umask lets
// through; an existing store others may read is said once, on stderr.

let dir: string;
let umask: number;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-modes-'));
  // The usual umask, under which SQLite alone would create 0644 files and mkdir 0755 folders.
  umask = process.umask(0o022);
});
afterEach(() => {
  process.umask(umask);
  vi.restoreAllMocks();
  rmSync(dir, { recursive: true, force: true });
});

const modeOf = (path: string): string => (statSync(path).mode & 0o777).toString(8).padStart(4, '0');

/** Every file and folder under `root`, recursively, with its mode. */
function modesUnder(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      out[p.slice(root.length + 1)] = modeOf(p);
      if (e.isDirectory()) walk(p);
    }
  };
  walk(root);
  return out;
}

describe('SQLite store files are private', () => {
  it('creates the store folder 0700 and the database, WAL, shared memory and cold copies 0600 under umask 022', async () => {
    const db = join(dir, 'project', '.engram', 'engram.db');
    const mem = await openEngram({ db, ingest: { redact: false } });
    await mem.append('s', [{ kind: 'tool_result', toolName: 'Bash', content: `${'a line of build output\n'.repeat(800)}done\n` }]);
    expect((await runArtifactLifecycle(mem.store, { olderThanMs: 0, nowMs: Date.now() + 1000 })).moved).toBe(1);
    const modes = modesUnder(join(dir, 'project'));
    await mem.close();
    expect(modes['.engram']).toBe('0700');
    for (const f of ['engram.db', 'engram.db-wal', 'engram.db-shm']) expect(modes[`.engram/${f}`], f).toBe('0600');
    const cold = Object.entries(modes).filter(([p]) => p.startsWith('.engram/engram.db.cold'));
    expect(cold.length).toBe(3); // the folder, its shard and the copy
    for (const [p, m] of cold) expect(m, p).toBe(p.endsWith('.br') ? '0600' : '0700');
  });

  it('warns once per process when an existing store may be read by others, and leaves its mode alone', async () => {
    const db = join(dir, 'engram.db');
    await (await openEngram({ db })).close();
    const write = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    await (await openEngram({ db })).close();
    expect(write).not.toHaveBeenCalled();
    chmodSync(db, 0o644);
    await (await openEngram({ db })).close();
    await (await openEngram({ db })).close();
    const warnings = write.mock.calls.map((c) => String(c[0])).filter((line) => line.includes('can be read by other users'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`${db} can be read by other users (mode 0644)`);
    expect(modeOf(db)).toBe('0644');
  });
});
