import { thrown } from '../test-support.js';
import { describe, expect, it } from 'vitest';
import { createGptTokenizer } from '../../providers/gpt-tokenizer.js';
import { assemblePack, renderHistoryItem } from './assembler.js';
import type { ContextPack, HistoryItem, KarmaItem, PackInput } from './context-pack.js';
import { renderTaskState } from './task-state-yaml.js';
import { defaultBudgets } from './blocks.js';
import type { BlockKind, PackBudgets } from './blocks.js';

const tokenizer = createGptTokenizer();
const WINDOW = 128_000;

function words(seed: number, n: number): string {
  const vocab = ['build', 'nginx', 'config', 'error', 'retry', 'cache', 'deploy', 'test', 'schema', 'index', 'token', 'marker'];
  return Array.from({ length: n }, (_, i) => vocab[(seed * 7 + i * 3) % vocab.length]).join(' ');
}

function history(count: number, wordsPerItem = 20): HistoryItem[] {
  return Array.from({ length: count }, (_, i) => ({
    id: `evt_${String(i).padStart(4, '0')}`,
    role: i % 2 === 0 ? 'user' : 'assistant',
    text: `message ${i}: ${words(i, wordsPerItem)}`,
    turn: i + 1,
    ts: 1_700_000_000_000 + i * 1000,
  }));
}

function karma(count: number): KarmaItem[] {
  return Array.from({ length: count }, (_, i) => ({
    id: `k${String(i).padStart(3, '0')}`,
    text: `verified fact ${i}: ${words(i + 100, 12)}`,
    verifiedAt: 1_700_000_000_000 + i * 60_000,
  }));
}

function block(pack: ContextPack, kind: BlockKind) {
  const b = pack.blocks.find((x) => x.kind === kind);
  if (!b) throw new Error(`no ${kind} block`);
  return b;
}


const tight: PackBudgets = {
  identity: 200,
  codex: 600,
  karma: 150,
  markers: 80,
  history: 400,
  task_state: 200,
  query: 100,
  headroomTokens: 270,
};
const TIGHT_WINDOW = 2000;

function fullInput(): PackInput {
  return {
    identity: 'You are a careful release engineer. Cite evidence.',
    codex: [
      { id: 'doc:a', title: 'Runbook', text: words(1, 400) },
      { id: 'doc:b', title: 'Architecture', text: words(2, 400) },
    ],
    karma: karma(30),
    markers: Array.from({ length: 10 }, (_, i) => `[Events T${i * 10 + 1}–T${i * 10 + 10} evicted. Key topics: ${words(i, 6)}. Use recall(query) to retrieve details.]`),
    history: history(60),
    taskState: { goals: ['ship 1.2'], phase: 'testing', open_loops: ['flaky test in ci'] },
    query: 'What is blocking the release?',
  };
}

describe('assemblePack', () => {
  it('fits every block within its budget, counted with the real tokenizer', () => {
    const pack = assemblePack(fullInput(), { tokenizer, windowTokens: TIGHT_WINDOW, budgets: tight });
    for (const b of pack.blocks) {
      expect(tokenizer.count(b.text), b.kind).toBe(b.tokens);
      expect(b.tokens, b.kind).toBeLessThanOrEqual(b.budget);
      expect(b.budget).toBe(tight[b.kind]);
    }
    // Every list block had to drop something, so the test exercises the fitting.
    for (const kind of ['karma', 'markers', 'history'] as const) expect(block(pack, kind).droppedItems, kind).toBeGreaterThan(0);
    expect(pack.totalTokens).toBe(pack.blocks.reduce((s, b) => s + b.tokens, 0));
    expect(pack.totalTokens + pack.headroomTokens).toBeLessThanOrEqual(TIGHT_WINDOW);
    expect(pack.blocks.map((b) => b.kind)).toEqual(['identity', 'codex', 'karma', 'markers', 'history', 'task_state', 'query']);
  });

  it('keeps the newest history items that fit and drops the oldest whole', () => {
    const items = history(60);
    const pack = assemblePack({ identity: '', history: items, query: 'q' }, { tokenizer, windowTokens: TIGHT_WINDOW, budgets: tight });
    const h = block(pack, 'history');
    expect(pack.history.at(-1)).toEqual(items.at(-1));
    expect(pack.history).toEqual(items.slice(items.length - h.items));
    expect(h.items + h.droppedItems).toBe(60);
    expect(h.text).toBe(pack.history.map(renderHistoryItem).join('\n'));
    // Maximal: one more (older) item would not fit.
    const oneMore = items.slice(items.length - h.items - 1).map(renderHistoryItem).join('\n');
    expect(tokenizer.count(oneMore)).toBeGreaterThan(tight.history);
    expect(pack.decisions.truncatedNewest).toBeNull();
  });

  it('cuts a newest item that alone exceeds the history budget, with an explicit notice', () => {
    const items = [...history(3), { id: 'evt_big', role: 'tool' as const, toolName: 'build', toolCallId: 'c1', text: words(9, 2000), turn: 10, ts: 0 }];
    const pack = assemblePack({ identity: '', history: items, query: 'q' }, { tokenizer, windowTokens: TIGHT_WINDOW, budgets: tight });
    const h = block(pack, 'history');
    expect(h.items).toBe(1);
    expect(h.droppedItems).toBe(3);
    expect(h.tokens).toBeLessThanOrEqual(tight.history);
    const kept = pack.history[0];
    const dropped = kept?.truncatedTokens ?? 0;
    const head = (kept?.text ?? '').split('\n[…truncated')[0] as string;
    expect(kept?.text.endsWith(`[…truncated ${dropped} tokens…]`)).toBe(true);
    expect(dropped).toBe(tokenizer.count(items[3]!.text) - tokenizer.count(head));
    expect(items[3]!.text.startsWith(head)).toBe(true);
    expect(pack.decisions.truncatedNewest).toEqual({ id: 'evt_big', droppedTokens: dropped });
    // Nearly the whole budget is used, not just a token or two of the item.
    expect(h.tokens).toBeGreaterThan(tight.history - 20);
  });

  it('reports pinned history items the token budget could not keep', () => {
    const items = history(60).map((item, i) => (i === 0 ? { ...item, isPinned: true } : item));
    const pack = assemblePack({ identity: '', history: items, query: 'q' }, { tokenizer, windowTokens: TIGHT_WINDOW, budgets: tight });
    expect(pack.decisions.droppedPinnedHistoryIds).toEqual(['evt_0000']);
  });

  it('refuses an identity over its budget with BUDGET_EXCEEDED instead of cutting it', () => {
    const err = thrown(() =>
      assemblePack({ identity: words(3, 400), query: 'q' }, { tokenizer, windowTokens: TIGHT_WINDOW, budgets: tight }),
    );
    expect(err.code).toBe('BUDGET_EXCEEDED');
    expect(err.data).toMatchObject({ field: 'identity', budgetTokens: 200, tokens: tokenizer.count(words(3, 400)) });
  });

  it('refuses a task state or a query over its budget', () => {
    const opts = { tokenizer, windowTokens: TIGHT_WINDOW, budgets: tight };
    expect(thrown(() => assemblePack({ identity: '', taskState: words(4, 400), query: 'q' }, opts)).data.field).toBe('taskState');
    expect(thrown(() => assemblePack({ identity: '', taskState: { notes: words(4, 400) }, query: 'q' }, opts)).code).toBe('BUDGET_EXCEEDED');
    expect(thrown(() => assemblePack({ identity: '', query: words(5, 300) }, opts)).data.field).toBe('query');
  });

  it('refuses budgets that break the pack bound', () => {
    const err = thrown(() => assemblePack(fullInput(), { tokenizer, windowTokens: TIGHT_WINDOW - 1, budgets: tight }));
    expect(err.code).toBe('BUDGET_EXCEEDED');
    expect(err.data).toMatchObject({ field: 'budgets', windowTokens: TIGHT_WINDOW - 1 });
  });

  it('is deterministic: the same input gives a byte-identical pack', () => {
    const a = assemblePack(fullInput(), { tokenizer, windowTokens: TIGHT_WINDOW, budgets: tight });
    const b = assemblePack(fullInput(), { tokenizer, windowTokens: TIGHT_WINDOW, budgets: tight });
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
    const c = assemblePack(fullInput(), { tokenizer, windowTokens: WINDOW });
    const d = assemblePack(fullInput(), { tokenizer, windowTokens: WINDOW });
    expect(JSON.stringify(c)).toBe(JSON.stringify(d));
  });

  it('orders karma by verification time whatever the input order, so the block is stable across turns', () => {
    const facts = karma(8);
    const shuffled = [facts[5], facts[2], facts[7], facts[0], facts[3], facts[6], facts[1], facts[4]] as KarmaItem[];
    const opts = { tokenizer, windowTokens: WINDOW };
    const turn1 = block(assemblePack({ identity: '', karma: facts, query: 'q' }, opts), 'karma').text;
    expect(block(assemblePack({ identity: '', karma: shuffled, query: 'q' }, opts), 'karma').text).toBe(turn1);
    expect(turn1.split('\n').map((l) => l.slice(3, 7))).toEqual(facts.map((f) => f.id));
    // A fact promoted later appends: the previous karma block stays a byte-identical prefix.
    const promoted: KarmaItem = { id: 'a-new', text: 'newly verified', verifiedAt: '2030-01-01T00:00:00Z' };
    const turn2 = block(assemblePack({ identity: '', karma: [promoted, ...shuffled], query: 'q' }, opts), 'karma').text;
    expect(turn2.startsWith(`${turn1}\n`)).toBe(true);
    expect(turn2.endsWith('- [a-new] newly verified')).toBe(true);
  });

  it('drops karma from the end (the latest promotions) when over budget', () => {
    const facts = karma(30);
    const pack = assemblePack({ identity: '', karma: facts, query: 'q' }, { tokenizer, windowTokens: TIGHT_WINDOW, budgets: tight });
    const k = block(pack, 'karma');
    expect(k.items).toBeGreaterThan(0);
    expect(k.text.split('\n').map((l) => l.slice(3, 7))).toEqual(facts.slice(0, k.items).map((f) => f.id));
    expect(k.droppedItems).toBe(30 - k.items);
  });

  it('keeps the newest markers', () => {
    const markers = Array.from({ length: 10 }, (_, i) => `[Events T${i}0–T${i}9 evicted. Key topics: ${words(i, 8)}. Use recall(query).]`);
    const pack = assemblePack({ identity: '', markers, query: 'q' }, { tokenizer, windowTokens: TIGHT_WINDOW, budgets: tight });
    const m = block(pack, 'markers');
    expect(m.items).toBeGreaterThan(0);
    expect(m.items).toBeLessThan(10);
    expect(m.text).toBe(markers.slice(10 - m.items).join('\n'));
  });

  it('inlines a small codex (CAG) and lists a large one for recall (RAG)', () => {
    const opts = { tokenizer, windowTokens: TIGHT_WINDOW, budgets: tight };
    const small = assemblePack({ identity: '', codex: [{ id: 'doc:s', title: 'Small', text: 'tiny manual' }], query: 'q' }, opts);
    expect(small.decisions.codex).toMatchObject({ mode: 'cag', reason: 'fits' });
    expect(block(small, 'codex').text).toBe('<document id="doc:s" title="Small">\ntiny manual\n</document>');

    const big = assemblePack(fullInput(), opts);
    expect(big.decisions.codex).toMatchObject({ mode: 'rag', reason: 'over_budget', codexBudgetTokens: 600 });
    const codex = block(big, 'codex');
    expect(codex.text).toContain('recall');
    expect(codex.text).toContain('- doc:a: Runbook\n- doc:b: Architecture');
    expect(codex.items).toBe(2);
    expect(codex.text).not.toContain(words(1, 400));
  });

  it('renders a task-state object as compact YAML-like text', () => {
    const text = renderTaskState({
      goals: ['fix the build', 'true'],
      constraints: [],
      phase: 'debugging',
      key_events: [{ id: 'evt_1', why: 'first failure: exit 2' }],
      extensions: { ci: { attempts: 3, green: false } },
      skipped: undefined,
    });
    expect(text).toBe(
      [
        'goals:',
        '  - fix the build',
        '  - "true"',
        'constraints: []',
        'phase: debugging',
        'key_events:',
        '  - id: evt_1',
        '    why: "first failure: exit 2"',
        'extensions:',
        '  ci:',
        '    attempts: 3',
        '    green: false',
      ].join('\n'),
    );
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(thrown(() => renderTaskState(cyclic)).data.field).toBe('taskState.self');
  });

  it('rejects history given newest first, naming the field', () => {
    const items = history(3).reverse();
    const err = thrown(() => assemblePack({ identity: '', history: items, query: 'q' }, { tokenizer, windowTokens: WINDOW }));
    expect(err.code).toBe('INVALID_INPUT');
    expect(err.data.field).toBe('history[1].turn');
  });

  it('uses the default budgets for the window when none are given', () => {
    const pack = assemblePack(fullInput(), { tokenizer, windowTokens: WINDOW });
    expect(pack.decisions.budgets).toEqual(defaultBudgets(WINDOW));
    expect(block(pack, 'history').droppedItems).toBe(0);
    expect(pack.decisions.codex.mode).toBe('cag');
  });
});
