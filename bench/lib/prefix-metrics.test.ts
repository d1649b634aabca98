import { describe, expect, it } from 'vitest';
import { assemblePack } from '../../src/context/assembly/assembler.js';
import type { HistoryItem, PackInput } from '../../src/context/assembly/context-pack.js';
import { formatAnthropic, formatText, renderSection, type AnthropicMessagesPayload } from '../../src/context/assembly/formatters.js';
import { createGptTokenizer } from '../../src/providers/gpt-tokenizer.js';
import { anthropicCacheRead, anthropicUnits, divergenceBlock, linearizeAnthropic, textBlockSpans, tokenReuse, unsharedTokensByBlock, type AnthropicUnit } from './prefix-metrics.js';

const tokenizer = createGptTokenizer();

function history(n: number): HistoryItem[] {
  return Array.from({ length: n }, (_, i) => ({
    id: `evt_${i}`,
    turn: i + 1,
    ts: 1_700_000_000_000 + i,
    role: i % 2 === 0 ? ('user' as const) : ('assistant' as const),
    text: `message ${i} about the nginx config and the failing migration`,
  }));
}

function pack(n: number, card: string) {
  const input: PackInput = { identity: 'You are a careful agent.', markers: ['[Events T1-T3 evicted. Use recall(query) to retrieve details.]'], history: history(n), taskState: { goals: [card] }, query: `question ${n}` };
  return assemblePack(input, { tokenizer, windowTokens: 32_000 });
}

describe('textBlockSpans', () => {
  it('locates every non-empty block of formatText', () => {
    const p = pack(6, 'ship it');
    const text = formatText(p);
    const spans = textBlockSpans(p);
    expect(spans.map((s) => s.kind)).toEqual(['identity', 'markers', 'history', 'task_state', 'query']);
    for (const s of spans) expect(text.slice(s.start, s.end)).toBe(renderSection(p.blocks.find((b) => b.kind === s.kind)!));
    expect(spans.at(-1)!.end).toBe(text.length);
  });
});

describe('unsharedTokensByBlock and divergenceBlock', () => {
  it('puts the first change at the end of the history when a turn appends, and charges the card and query after it', () => {
    const before = formatText(pack(6, 'ship it'));
    const after = pack(8, 'ship it');
    const text = formatText(after);
    const spans = textBlockSpans(after);
    const reuse = tokenReuse(before, text, tokenizer);
    expect(divergenceBlock(spans, reuse.sharedChars)).toBe('history');
    const unshared = unsharedTokensByBlock(text, spans, reuse.sharedChars, tokenizer);
    expect(Object.keys(unshared)).toEqual(['history', 'task_state', 'query']);
    expect(unshared.task_state).toBe(tokenizer.count(renderSection(after.blocks.find((b) => b.kind === 'task_state')!)));
    expect(reuse.sharedTokens).toBeGreaterThan(0);
    expect(reuse.ratio).toBeLessThan(1);
  });

  it('reports none when nothing changed', () => {
    const p = pack(4, 'x');
    const text = formatText(p);
    expect(divergenceBlock(textBlockSpans(p), tokenReuse(text, text, tokenizer).sharedChars)).toBe('none');
  });
});

describe('anthropicUnits', () => {
  it('ignores cache_control, so moving a breakpoint does not change the prefix', () => {
    const payload = formatAnthropic(pack(5, 'x'));
    const bare: AnthropicMessagesPayload = JSON.parse(JSON.stringify(payload, (k, v: unknown) => (k === 'cache_control' ? undefined : v)));
    expect(anthropicUnits(bare).map((u) => u.key)).toEqual(anthropicUnits(payload).map((u) => u.key));
    expect(anthropicUnits(payload).some((u) => u.hasBreakpoint)).toBe(true);
    expect(linearizeAnthropic(bare)).toBe(linearizeAnthropic(payload));
  });
});

describe('anthropicCacheRead', () => {
  const u = (key: string, hasBreakpoint = false): AnthropicUnit => ({ key, text: `${key} `.repeat(50), hasBreakpoint });
  const prefixTokens = (units: AnthropicUnit[], n: number): number => tokenizer.count(units.slice(0, n).map((x) => x.text).join('\n'));

  it('reads the previous entry at the last shared breakpoint', () => {
    const prev = [u('a'), u('b', true), u('c')];
    const cur = [u('a'), u('b'), u('c'), u('d'), u('e', true)];
    const r = anthropicCacheRead(prev, cur, tokenizer, { minCacheableTokens: 1 });
    expect(r.outcome).toBe('hit');
    expect(r.readTokens).toBe(prefixTokens(cur, 2));
    expect(r.totalTokens).toBe(prefixTokens(cur, 5));
  });

  it('misses an entry more than the lookback before every current breakpoint', () => {
    const prev = [u('a'), u('b', true)];
    const cur = [u('a'), u('b'), ...Array.from({ length: 25 }, (_, i) => u(`n${i}`)), u('z', true)];
    expect(anthropicCacheRead(prev, cur, tokenizer, { minCacheableTokens: 1 }).outcome).toBe('lookback');
    expect(anthropicCacheRead(prev, cur, tokenizer, { minCacheableTokens: 1, lookbackBlocks: 30 }).outcome).toBe('hit');
  });

  it('does not read a prefix under the minimum, nor one past the first change', () => {
    const prev = [u('a', true), u('b', true)];
    expect(anthropicCacheRead(prev, [u('a'), u('b'), u('c', true)], tokenizer, { minCacheableTokens: 100_000 }).outcome).toBe('too_short');
    const r = anthropicCacheRead(prev, [u('x'), u('b'), u('c', true)], tokenizer, { minCacheableTokens: 1 });
    expect([r.outcome, r.readTokens]).toEqual(['no_shared_breakpoint', 0]);
  });
});
