import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrateStore, openEngram, type Engram } from '../../src/engine.js';
import { copyGraph } from '../../src/memory/graph-copy.js';
import type { GraphRows } from '../../src/store/graph-storage.js';
import { commitFiles } from '../fixtures/git-repo.js';
import { dropSchema, testPgUrl, uniqueSchema } from '../fixtures/postgres.js';

// engram migrate copies the knowledge graph (entities, edges, citations, cursors) as it is, SQLite <-> PostgreSQL:
// the copy answers expand and impact as the source does, and a later build reads only new events.
let dir: string;
let schema: string;
let pgUrl: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-graph-copy-'));
  schema = uniqueSchema('engram_gcopy');
  pgUrl = `${testPgUrl()}${testPgUrl().includes('?') ? '&' : '?'}schema=${schema}`;
});
afterEach(async () => {
  rmSync(dir, { recursive: true, force: true });
  await dropSchema(schema);
});

async function seed(path: string): Promise<string> {
  const commit = commitFiles(join(dir, 'repo'), {
    'src/c.ts': 'export const leaf = 1;\n',
    'src/b.ts': "import { leaf } from './c.js';\nexport const mid = leaf + 1;\n",
    'src/a.ts': "import { mid } from './b.js';\nexport const top = mid;\n",
  });
  const mem = await openEngram({ db: path });
  await mem.append('pay', [
    { kind: 'user', content: 'The payment bug: ERR_CARD_DECLINED shows up in the checkout service and the ledger service.', ts: '2026-01-02T10:00:00.000Z' },
    { kind: 'assistant', content: 'The checkout service depends on the ledger service. ERR_CARD_DECLINED was fixed in src/b.ts.', ts: '2026-01-02T10:01:00.000Z' },
    { kind: 'decision', content: 'Retry declined cards once. @dana agreed.', ts: '2026-01-02T10:02:00.000Z' },
  ], { project: 'shop' });
  await mem.append('stock', { kind: 'user', content: 'The warehouse service calls the ledger service.' }, { project: 'blue' });
  await mem.graphBuilder().buildFromSessions();
  await mem.graphBuilder().buildFromRepository({ repository: join(dir, 'repo'), commit, project: 'shop' });
  await mem.close();
  return commit;
}

/** Every row of every graph table, without the store-local citation keys. */
async function dump(mem: Engram): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const table of ['entities', 'edges', 'citations', 'cursors'] as Array<keyof GraphRows>) {
    const rows: unknown[] = [];
    let after: string | null = null;
    for (;;) {
      const page: GraphRows[typeof table] = await mem.store.graph.exportRows(table, after, 4);
      if (page.length === 0) break;
      after = page[page.length - 1]!.key;
      rows.push(...page.map(({ key, ...rest }) => (table === 'citations' ? rest : { key, ...rest })));
    }
    out[table] = table === 'citations' ? rows.sort((x, y) => (JSON.stringify(x) < JSON.stringify(y) ? -1 : 1)) : rows;
  }
  return out;
}

describe('engram migrate copies the knowledge graph', () => {
  it('SQLite -> PostgreSQL -> SQLite: the same rows, expansion and impact; no rebuild needed', async () => {
    const src = join(dir, 'src.db');
    const commit = await seed(src);
    const there = await migrateStore({ db: src }, { pg: pgUrl });
    expect(there.graph.isVerified).toBe(true);
    const a = await openEngram({ db: src });
    const b = await openEngram({ pg: pgUrl });
    try {
      const counts = await a.store.graph.counts();
      expect(counts.entities).toBeGreaterThan(8);
      expect(there.graph).toMatchObject({ ...counts, cursors: 3 });
      const left = await dump(a);
      expect(left.cursors!.map((c) => (c as { source: string }).source)).toEqual([`repo:shop:repo@${commit}`, 'session:pay', 'session:stock']);
      expect(await dump(b)).toEqual(left);
      // The readers' answers are the same, trust included.
      const shop = { kind: 'agent', agentId: 'x', agentName: 'x', project: 'shop', isAdmin: false } as const;
      const question = { question: 'which services did the payment bug touch?', maxTokens: 500 };
      expect(await b.viewAs(shop).knowledge.expand('error:ERR_CARD_DECLINED', question)).toEqual(await a.viewAs(shop).knowledge.expand('error:ERR_CARD_DECLINED', question));
      expect(await b.viewAs(shop).knowledge.impact('file:src/c.ts', { commit })).toEqual(await a.viewAs(shop).knowledge.impact('file:src/c.ts', { commit }));
      expect((await b.viewAs(shop).knowledge.impact('file:src/c.ts')).groups.map((g) => g.entities.map((e) => e.name))).toEqual([['src/b.ts'], ['src/a.ts']]);
      await expect(b.viewAs({ ...shop, project: 'blue' }).knowledge.expand('error:ERR_CARD_DECLINED')).rejects.toMatchObject({ code: 'NOT_FOUND' });
      // The cursors came along: nothing to read again, only what is new.
      expect(await b.graphBuilder().buildFromSessions()).toMatchObject({ sessions: 0, events: 0 });
      expect((await b.graphBuilder().buildFromRepository({ repository: join(dir, 'repo'), commit, project: 'shop' })).isBuilt).toBe(false);
      await b.append('stock', { kind: 'user', content: 'The warehouse service depends on the pricing service.' }, { project: 'blue' });
      expect(await b.graphBuilder().buildFromSessions()).toMatchObject({ sessions: 1, events: 1 });
    } finally {
      await a.close();
      await b.close();
    }

    const back = await migrateStore({ pg: pgUrl }, { db: join(dir, 'back.db') });
    expect(back.graph.isVerified).toBe(true);
    const c = await openEngram({ pg: pgUrl });
    const d = await openEngram({ db: join(dir, 'back.db') });
    try {
      expect(await dump(d)).toEqual(await dump(c));
      expect((await d.knowledge.list({ kinds: ['service'] })).map((e) => e.name).sort()).toEqual(['checkout', 'ledger', 'pricing', 'warehouse']);
    } finally {
      await c.close();
      await d.close();
    }
  });

  it('pages through the tables, and a second run adds nothing but still verifies', async () => {
    const src = join(dir, 'src.db');
    await seed(src);
    const a = await openEngram({ db: src });
    const b = await openEngram({ pg: pgUrl });
    try {
      // Events first (copyStore's order), then the graph a few rows at a time.
      await migrateStore({ db: src }, { pg: pgUrl });
      const again = await copyGraph(a.store, b.store, 3);
      expect(again).toEqual({ entities: 0, edges: 0, citations: 0, cursors: 0, isVerified: true });
      expect(await dump(b)).toEqual(await dump(a));
      // A target whose graph holds rows the source does not is refused, named.
      await b.append('pay', { kind: 'user', content: 'The refunds service calls the ledger service.' }, { project: 'shop' });
      await b.graphBuilder().buildFromSessions();
      await expect(copyGraph(a.store, b.store, 3)).rejects.toMatchObject({ code: 'STORAGE_ERROR', message: expect.stringMatching(/entities source \d+, target \d+/) });
    } finally {
      await a.close();
      await b.close();
    }
  });
});
