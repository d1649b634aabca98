import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEngram } from '../../src/engine.js';
import { runEngram } from '../fixtures/cli.js';

/**
 * `engram reindex --embedder none` (the built CLI): without an embedder, reindex catches the identifier index up,
 * rewrites the full-text index and says that vectors were skipped, instead of failing with "reindex needs an
 * embedder" (as it did once the identifier index had been backfilled).
 */
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-cli-reindex-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const engram = (args: string[]) => runEngram(args, { cwd: dir });

const EVENTS = [
  { kind: 'tool_result', toolName: 'bash', content: 'TypeError: boom\n    at connect (src/db/pool_client.ts:42:7)' },
  { kind: 'tool_result', toolName: 'bash', content: 'all green in src/db/pool_client.ts:43 and lib/db/pool_client.ts:42' },
  { kind: 'user', content: 'why does the pool time out?' },
];

function ingest(): void {
  const path = join(dir, 'events.jsonl');
  writeFileSync(path, EVENTS.map((e) => JSON.stringify(e)).join('\n') + '\n');
  expect(engram(['ingest', path, '-s', 'demo', '--embedder', 'none']).code).toBe(0);
}

/** Appends through the library, which leaves the identifier index to a catch-up (`engram ingest` runs one itself). */
async function appendWithoutCatchUp(): Promise<void> {
  expect(engram(['init']).code).toBe(0);
  const mem = await openEngram({ db: join(dir, '.engram/engram.db') });
  try {
    await mem.append('demo', EVENTS as Parameters<typeof mem.append>[1]);
  } finally {
    await mem.close();
  }
}

describe('engram reindex --embedder none', () => {
  it('catches the identifier index up and rewrites the full-text index, vectors skipped', async () => {
    await appendWithoutCatchUp();
    const r = engram(['reindex', '--embedder', 'none', '--json']);
    expect(r.stderr).not.toContain('needs an embedder');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      reindexed: EVENTS.length,
      sessions: 1,
      identifierIndex: { state: 'complete', events: EVENTS.length, total: EVENTS.length },
      vectors: 'skipped (no embedder: --embedder none)',
    });
    // The identifier is found in its event only (not in the near misses), now through the index.
    const hits = JSON.parse(engram(['recall', 'src/db/pool_client.ts:42', '--retriever', 'fts', '--json', '--embedder', 'none']).stdout).hits as Array<{ excerpt: string }>;
    expect(hits).toHaveLength(1);
    expect(hits[0]!.excerpt).toContain('connect (src/db/pool_client.ts:42:7)');
  });

  it('run again after the index caught up: nothing left to index, the same report otherwise; plain output names the skip', () => {
    ingest();
    expect(engram(['reindex', '--embedder', 'none']).code).toBe(0);
    const again = engram(['reindex', '--embedder', 'none']);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/identifier index\s+current/);
    expect(again.stdout).toMatch(/vectors\s+skipped \(no embedder: --embedder none\)/);
    expect(again.stdout).toMatch(/events re-indexed\s+3/);
  });
});
