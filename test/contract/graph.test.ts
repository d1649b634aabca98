import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { KnowledgeGraph } from '../../src/consolidate/graph/knowledge-graph.js';
import { copyStore } from '../../src/memory/store-copy.js';
import { openEngram } from '../../src/engine.js';
import type { GraphRows } from '../../src/store/graph-storage.js';
import { entityId } from '../../src/model/graph.js';
import { commitFiles } from '../fixtures/git-repo.js';
import { runStorageContract, useEngram } from './harnesses.js';

runStorageContract('knowledge graph', ({ createHarness }) => {
  const ctx = useEngram(createHarness);
  let repoDir: string;
  beforeEach(() => {
    repoDir = mkdtempSync(join(tmpdir(), 'engram-graph-repo-'));
  });
  afterEach(() => rmSync(repoDir, { recursive: true, force: true }));

  const seed = async () => {
    await ctx.mem.append('pay', [
      { kind: 'user', content: 'Checkout is failing with ERR_PAYMENT_DECLINED again, @maria saw it in prod.' },
      { kind: 'assistant', content: 'The checkout service depends on the ledger service. ERR_PAYMENT_DECLINED was fixed in src/payments/charge.ts by retrying.' },
      { kind: 'tool_call', toolName: 'bash', content: 'npm run test -- payments', meta: { command: 'npm run test -- payments' } },
      { kind: 'decision', content: 'Use idempotency keys on every ledger call. The ledger service must dedupe retries.' },
    ]);
  };

  it('extracts cited entities and typed edges from events, incrementally by session cursor', async () => {
    await seed();
    const builder = ctx.mem.graphBuilder();
    const first = await builder.buildFromSessions();
    expect(first).toMatchObject({ sessions: 1, events: 4 });
    expect(first.written.entities).toBeGreaterThan(5);
    const g = ctx.mem.knowledge;
    const names = (await g.list({ limit: 100 })).map((e) => `${e.kind}:${e.name}`);
    expect(names).toEqual(
      expect.arrayContaining(['service:checkout', 'service:ledger', 'error:ERR_PAYMENT_DECLINED', 'file:src/payments/charge.ts', 'person:maria', 'command:npm run test']),
    );
    expect(names.some((n) => n.startsWith('decision:Use idempotency keys'))).toBe(true);
    // Every entity is cited, by the events it came from.
    for (const e of await g.list({ limit: 100 })) expect(e.citations).toBeGreaterThan(0);
    const cites = await g.citations([entityId('error', 'ERR_PAYMENT_DECLINED')], 10);
    expect(cites).toHaveLength(2);
    expect(cites.every((c) => c.eventId?.startsWith('evt_') && c.sessionId === 'pay')).toBe(true);

    const impact = await g.impact('service:ledger');
    expect(impact.groups[0]).toMatchObject({ depth: 1, label: 'will break' });
    expect(impact.groups[0]!.entities.map((e) => e.name)).toContain('checkout');
    expect(impact.groups[0]!.entities[0]!.cites[0]).toMatch(/^evt_/);
    const fixes = await g.impact('error:ERR_PAYMENT_DECLINED', { direction: 'dependencies', types: ['fixed_by'] });
    expect(fixes.groups[0]!.entities.map((e) => `${e.kind}:${e.name}`)).toEqual(['file:src/payments/charge.ts']);

    // Nothing new: nothing read again. A new event: only it is read.
    expect(await builder.buildFromSessions()).toMatchObject({ events: 0, written: { entities: 0, edges: 0, citations: 0 } });
    await ctx.mem.append('pay', { kind: 'assistant', content: 'The refund service calls the ledger service too.' });
    const next = await builder.buildFromSessions();
    expect(next).toMatchObject({ sessions: 1, events: 1 });
    const again = await g.impact('service:ledger');
    expect(again.groups[0]!.entities.map((e) => e.name).sort()).toEqual(['checkout', 'refund']);
  });

  it('refuses uncited rows and citations of missing events', async () => {
    const id = entityId('file', 'a.ts');
    await expect(ctx.mem.store.graph.write({ entities: [{ id, kind: 'file', name: 'a.ts' }], edges: [], citations: [] })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      data: { field: 'entities' },
    });
    await expect(
      ctx.mem.store.graph.write({
        entities: [{ id, kind: 'file', name: 'a.ts' }],
        edges: [],
        citations: [{ targetId: id, eventId: 'evt_01jzzzzzzzzzzzzzzzzzzzzzzz', confidence: 1, quote: 'x', tsMs: 1 }],
      }),
    ).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'citations' } });
    expect(await ctx.mem.store.graph.counts()).toEqual({ entities: 0, edges: 0, citations: 0 });
  });

  it('shows a project only entities, edges and citations from what it may read', async () => {
    await seed();
    await ctx.mem.append('blue-s', { kind: 'assistant', content: 'The inventory service depends on the ledger service.' }, { project: 'blue' });
    await ctx.mem.graphBuilder().buildFromSessions();
    const blue = new KnowledgeGraph(ctx.mem.store, ctx.mem.tokenizer, 'blue');
    const home = ctx.mem.viewAs({ kind: 'agent', agentId: 'a', agentName: 'a', project: 'default', isAdmin: false }).knowledge;
    expect((await blue.list({ kinds: ['service'] })).map((e) => e.name).sort()).toEqual(['inventory', 'ledger']);
    expect((await home.list({ kinds: ['service'] })).map((e) => e.name).sort()).toEqual(['checkout', 'ledger']);
    await expect(home.get('service:inventory')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    // The shared entity's citations and edges from the other project stay hidden.
    expect((await home.impact('service:ledger')).groups[0]!.entities.map((e) => e.name)).toEqual(['checkout']);
    expect((await blue.citations([entityId('service', 'ledger')], 10)).every((c) => c.sessionId === 'blue-s')).toBe(true);
    const expanded = await home.expand('service:ledger');
    expect(expanded.text).not.toContain('inventory');
  });

  it('indexes the imports of a git repository at a commit, citing repo spans with digests, and walks its impact', async () => {
    const commit = commitFiles(repoDir, {
      'src/c.ts': 'export function leaf(): number {\n  return 1;\n}\n',
      'src/b.ts': "import { leaf } from './c.js';\nexport const mid = () => leaf();\n",
      'src/a.ts': "import { mid } from './b.js';\nimport type { Nope } from 'some-package';\nexport default mid;\n",
      'README.md': 'not code',
    });
    const report = await ctx.mem.graphBuilder().buildFromRepository({ repository: repoDir, commit, project: 'default' });
    expect(report).toMatchObject({ commit, files: 3, imports: 2, isBuilt: true });
    expect((await ctx.mem.graphBuilder().buildFromRepository({ repository: repoDir, commit: commit.slice(0, 10), project: 'default' })).isBuilt).toBe(false);
    const g = ctx.mem.knowledge;
    const impact = await g.impact('file:src/c.ts', { commit });
    expect(impact.groups.map((gr) => [gr.label, gr.entities.map((e) => e.name)])).toEqual([
      ['will break', ['src/b.ts']],
      ['likely affected', ['src/a.ts']],
    ]);
    const pointer = impact.groups[0]!.entities[0]!.cites[0]!;
    expect(pointer).toBe(`repo:src/b.ts#L1-L1@${commit}`);
    const [cite] = await g.citations([impact.groups[0]!.entities[0]!.via.edgeId], 5);
    expect(cite!.digest).toBe(createHash('sha256').update("import { leaf } from './c.js';").digest('hex'));
    expect((await g.impact('symbol:leaf')).groups[0]!.entities.map((e) => e.name)).toEqual(['src/b.ts']);
    expect((await g.impact('file:src/a.ts', { direction: 'dependencies' })).groups.flatMap((gr) => gr.entities.map((e) => e.name))).toEqual(['src/b.ts', 'src/c.ts']);
    // Another project does not see a repository indexed for this one.
    await expect(new KnowledgeGraph(ctx.mem.store, ctx.mem.tokenizer, 'blue').get('file:src/c.ts')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('a purge takes the graph rows derived from the purged events with it', async () => {
    await seed();
    await ctx.mem.append('keep', { kind: 'assistant', content: 'The ledger service is healthy.' });
    await ctx.mem.graphBuilder().buildFromSessions();
    const g = ctx.mem.knowledge;
    const dry = await ctx.mem.purge({ sessionId: 'pay' }, { actor: 'os:test', isDryRun: true });
    expect(dry).toBeDefined();
    expect((await g.get('error:ERR_PAYMENT_DECLINED')).citations).toBe(2);
    await ctx.mem.purge({ sessionId: 'pay' }, { actor: 'os:test' });
    await expect(g.get('error:ERR_PAYMENT_DECLINED')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(g.get('service:checkout')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const ledger = await g.get('service:ledger');
    expect(ledger.citations).toBe(1);
    const cites = await g.citations([ledger.id], 10);
    expect(cites.map((c) => c.sessionId)).toEqual(['keep']);
    expect((await g.impact('service:ledger')).groups).toEqual([]);
    expect(await ctx.mem.graphBuilder().buildFromSessions()).toMatchObject({ events: 0 });
  });

  it('expands an entity into a bounded block grouped by aspect, each line citing its sources', async () => {
    await seed();
    await ctx.mem.graphBuilder().buildFromSessions();
    const g = ctx.mem.knowledge;
    const all = await g.expand('error:ERR_PAYMENT_DECLINED');
    expect(all.groups.map((gr) => gr.aspect)).toEqual(expect.arrayContaining(['fixed by', 'mentions', 'evidence']));
    for (const gr of all.groups) for (const line of gr.lines) expect(line.cites.length).toBeGreaterThan(0);
    expect(all.text).toMatch(/## fixed by\n- file:src\/payments\/charge\.ts \(0\.80\) \[evt_/);
    expect(all.tokens).toBeLessThanOrEqual(all.maxTokens);
    const small = await g.expand('error:ERR_PAYMENT_DECLINED', { maxTokens: 60 });
    expect(small.tokens).toBeLessThanOrEqual(60);
    expect(small.isTruncated).toBe(true);
    const one = await g.expand('error:ERR_PAYMENT_DECLINED', { aspect: 'fixed_by' });
    expect(one.groups.map((gr) => gr.aspect)).toEqual(['fixed by']);
    const long = `${'Background on the rollout window and who signed off. '.repeat(4)}The ledger service rejects duplicates now. ${'More notes. '.repeat(10)}END-OF-NOTE`;
    await ctx.mem.append('pay', { kind: 'note', content: long });
    await ctx.mem.graphBuilder().buildFromSessions();
    const quoted = await g.expand('service:ledger');
    expect(quoted.text).not.toContain('END-OF-NOTE');
    const raw = await g.expand('service:ledger', { aspect: 'evidence' });
    expect(raw.groups.map((gr) => gr.aspect)).toEqual(['evidence']);
    expect(raw.text).toContain('- note, session pay turn 5: Background on the rollout window');
    expect(raw.text).toContain('END-OF-NOTE');
    const topic = await g.expand('service:ledger', { aspect: 'idempotency' });
    expect(topic.groups.flatMap((gr) => gr.lines).length).toBeGreaterThan(0);
    expect(topic.text).toContain('idempotency');
    await expect(g.expand('service:nothing')).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(g.expand('gadget:x')).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'entity' } });
  });
  it('exports every graph row a page at a time in key order, and imports each row once with its values (engram migrate)', async () => {
    await seed();
    await ctx.mem.graphBuilder().buildFromSessions();
    const graph = ctx.mem.store.graph;
    const all: { [T in keyof GraphRows]?: GraphRows[T] } = {};
    for (const table of ['entities', 'edges', 'citations', 'cursors'] as Array<keyof GraphRows>) {
      const rows: Array<GraphRows[typeof table][number]> = [];
      for (let after: string | null = null; ; ) {
        const page: GraphRows[typeof table] = await graph.exportRows(table, after, 2);
        expect(page.length).toBeLessThanOrEqual(2);
        if (page.length === 0) break;
        rows.push(...page);
        after = page[page.length - 1]!.key;
      }
      const keys = rows.map((r) => r.key);
      expect(keys).toEqual([...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
      expect(new Set(keys).size).toBe(keys.length);
      (all as Record<string, unknown>)[table] = rows;
    }
    const counts = await graph.counts();
    expect({ entities: all.entities!.length, edges: all.edges!.length, citations: all.citations!.length }).toEqual(counts);
    expect(all.cursors!.map((c) => [c.source, c.position])).toEqual([['session:pay', 4]]);
    const ledger = all.entities!.find((e) => e.name === 'ledger' && e.kind === 'service')!;
    expect(ledger.citations).toBe((await ctx.mem.knowledge.list({ kinds: ['service'], query: 'ledger' }))[0]!.citations);
    expect(all.citations!.every((c) => c.sessionId === 'pay' && c.eventId?.startsWith('evt_'))).toBe(true);
    // Rows already there are left as they are.
    expect(await graph.importRows(all)).toEqual({ entities: 0, edges: 0, citations: 0, cursors: 0 });

    // Into another store of this backend (events first): the same rows, values and all.
    const other = await createHarness();
    try {
      const report = await copyStore(ctx.mem.store, other.backend);
      expect(report.graph).toEqual({ ...counts, cursors: 1, isVerified: true });
      const copy = await openEngram({ backend: other.backend });
      expect(await copy.knowledge.list({ limit: 100 })).toEqual(await ctx.mem.knowledge.list({ limit: 100 }));
      expect(await copy.knowledge.impact('service:ledger')).toEqual(await ctx.mem.knowledge.impact('service:ledger'));
      expect(await copy.store.graph.getCursor('session:pay')).toBe(4);
      await copy.close();
    } finally {
      await other.cleanup();
    }
  });
});
