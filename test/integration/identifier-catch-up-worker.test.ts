import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { IdentifierCatchUpWorker } from '../../src/memory/identifier-catch-up-worker.js';
import { parseQuery } from '../../src/memory/query-terms.js';

/** The worker `engram serve` runs (identifier-catch-up-worker.ts), on a real SQLite store. */
describe('identifier index catch-up worker', () => {
  let dir: string;
  let mem: Engram | undefined;
  let worker: IdentifierCatchUpWorker | undefined;
  afterEach(async () => {
    await worker?.stop();
    await mem?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('indexes what appends leave, in rounds, while they go on, and stops cleanly', async () => {
    dir = mkdtempSync(join(tmpdir(), 'engram-catch-up-'));
    mem = await openEngram({ db: join(dir, 'engram.db') });
    const m = mem;
    const errors: unknown[] = [];
    worker = new IdentifierCatchUpWorker((p, o) => m.maintainTextIndex(p, o), { pollMs: 10, onError: (e) => errors.push(e) });
    worker.start();
    // 6,000 events: more than one round (5,000), so the worker goes on at once while some wait.
    for (let b = 0; b < 12; b++) {
      await m.append('s', Array.from({ length: 500 }, (_, j) => ({ kind: 'tool_result' as const, toolName: 'bash', content: `line ${b * 500 + j} at src/app/mod${j % 5}.ts:${b}` })));
    }
    const deadline = Date.now() + 30_000;
    while ((await m.store.identifierIndexStatus()).backlog > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(await m.store.identifierIndexStatus()).toMatchObject({ state: 'complete', backlog: 0 });
    expect(worker.indexed).toBe(6_000);
    expect(errors).toEqual([]);
    // Found through the index now: the 100 events of batch 7 that name mod3.
    const hits = await m.store.searchText({ terms: parseQuery('src/app/mod3.ts:7').terms, limit: 1000, boundAbove: 0 });
    expect(hits).toHaveLength(100);
    await worker.stop();
    // Stopped: a later append stays in the backlog.
    await m.append('s', [{ kind: 'note', content: 'after stop' }]);
    await new Promise((r) => setTimeout(r, 50));
    expect((await m.store.identifierIndexStatus()).backlog).toBe(1);
  });
});
