import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadCodex } from '../../src/context/codex-loader.js';
import { kvBytesPerToken, MODEL_PROFILES } from '../../src/context/assembly/governor.js';
import type { EventInput } from '../../src/model/event.js';
import { runStorageContract, useEngram } from './harnesses.js';

const turn = (i: number): EventInput[] => [
  { kind: 'user', content: `turn ${i}: look at service ${i}` },
  { kind: 'tool_result', toolName: 'Bash', content: Array.from({ length: 10 }, (_, j) => `svc-${i} line ${j} status ok`).join('\n') },
  { kind: 'assistant', content: `service ${i} is fine` },
];

describe('loadCodex', () => {
  it('reads text files in path order, skipping binaries, dependencies and oversized files', () => {
    const dir = mkdtempSync(join(tmpdir(), 'engram-codex-'));
    try {
      mkdirSync(join(dir, 'docs'));
      mkdirSync(join(dir, 'node_modules'));
      writeFileSync(join(dir, 'docs', 'b.md'), '# B');
      writeFileSync(join(dir, 'a.md'), '# A');
      writeFileSync(join(dir, 'node_modules', 'x.js'), 'ignored');
      writeFileSync(join(dir, 'logo.png'), Buffer.from([0x89, 0x50, 0, 1]));
      writeFileSync(join(dir, 'huge.txt'), 'x'.repeat(3000));
      const { documents, skipped } = loadCodex([dir], { maxFileBytes: 2000 });
      expect(documents.map((d) => d.id)).toEqual(['a.md', 'docs/b.md']);
      expect(skipped.map((s) => s.path).sort()).toEqual(['huge.txt', 'logo.png']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

runStorageContract('context governor and codex', ({ createHarness }) => {
  const ctx = useEngram(createHarness);

  it('inlines a small codex (CAG) and serves a large one through recall (RAG)', async () => {
    await ctx.mem.append('s', turn(1));
    const small = [{ id: 'runbook.md', title: 'runbook.md', text: 'Restart the worker with `make restart-worker`.' }];
    const cag = await ctx.mem.context.pack('s', { windowTokens: 8000, codex: small });
    expect(cag.pack.decisions.codex?.mode).toBe('cag');
    expect(cag.pack.blocks.find((b) => b.kind === 'codex')!.text).toContain('make restart-worker');

    const big = Array.from({ length: 40 }, (_, i) => ({
      id: `docs/page-${i}.md`,
      title: `page ${i}`,
      text: `${'The platform handbook describes many procedures in detail. '.repeat(60)}${i === 17 ? ' Rotate the signing key with keyctl rotate --slot 9.' : ''}`,
    }));
    const rag = await ctx.mem.context.pack('s', { windowTokens: 8000, codex: big });
    expect(rag.pack.decisions.codex?.mode).toBe('rag');
    expect(rag.pack.blocks.find((b) => b.kind === 'codex')!.text).toContain('docs/page-17.md');
    const hit = (await ctx.mem.recall('how do I rotate the signing key', { sessionIds: ['codex'] })).hits[0];
    expect(hit?.excerpt).toContain('keyctl rotate --slot 9');
    // Indexing is idempotent: a second pack stores no new codex events.
    const before = (await ctx.mem.getSession('codex')).eventCount;
    await ctx.mem.context.pack('s', { windowTokens: 8000, codex: big });
    expect((await ctx.mem.getSession('codex')).eventCount).toBe(before);
  });

  it('keeps at most maxHistoryMessages in the tail and reports what it pruned', async () => {
    for (let i = 1; i <= 4; i++) await ctx.mem.append('s', turn(i));
    const r = await ctx.mem.context.pack('s', { windowTokens: 16000, maxHistoryMessages: 5 });
    expect(r.pack.blocks.find((b) => b.kind === 'history')!.items).toBe(5);
    expect(r.governor).toMatchObject({ droppedByDepth: 7, droppedByCharCap: 0 });
  });

  it('condenses the window before the KV-cache estimate would exceed its budget', async () => {
    for (let i = 1; i <= 30; i++) await ctx.mem.append('s', turn(i));
    const profile = MODEL_PROFILES['llama-3.1-8b'];
    const open = await ctx.mem.context.pack('s', { windowTokens: 16000 });
    const needed = open.pack.totalTokens + open.pack.headroomTokens;
    // A budget for about 80 % of what the pack needs: the governor must shrink it.
    const kvBudgetBytes = Math.floor(needed * 0.8 * kvBytesPerToken(profile));
    const r = await ctx.mem.context.pack('s', { windowTokens: 16000, kv: { profile: 'llama-3.1-8b', kvBudgetBytes } });
    expect(r.governor?.kvCondensedTokens).toBeGreaterThan(0);
    expect(r.governor?.kv?.mustCondense).toBe(false);
    expect(r.governor!.kv!.estimatedBytes).toBeLessThanOrEqual(kvBudgetBytes);
    // Condensed, not lost: the first turn is out of the window but recall still finds it.
    expect(r.pack.blocks.find((b) => b.kind === 'history')!.text).not.toContain('turn 1:');
    expect((await ctx.mem.recall('svc-1 line 3')).hits[0]?.excerpt).toContain('svc-1 line 3');
  });

  it('never evicts a pinned event, and refuses to pin one already evicted', async () => {
    const [pinned] = await ctx.mem.append('s', { kind: 'tool_result', toolName: 'Bash', content: 'PINNED OUTPUT: migration 0042 applied' });
    for (let i = 1; i <= 40; i++) await ctx.mem.append('s', turn(i));
    const victim = (await ctx.mem.append('s', { kind: 'tool_result', content: 'soon evicted' }))[0]!;
    await ctx.mem.context.pin('s', pinned!.record.id);
    for (let i = 41; i <= 80; i++) await ctx.mem.append('s', turn(i));
    const r = await ctx.mem.context.pack('s', { windowTokens: 4000 });
    expect(r.compaction).toBeDefined();
    const history = r.pack.blocks.find((b) => b.kind === 'history')!.text;
    expect(history).toContain('PINNED OUTPUT: migration 0042 applied');
    expect(history).not.toContain('soon evicted');
    await expect(ctx.mem.context.pin('s', victim.record.id)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    await expect(ctx.mem.context.pin('s', 'evt_01jzzzzzzzzzzzzzzzzzzzzzzz')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});
