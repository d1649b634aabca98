import { describe, expect, it } from 'vitest';
import { EngramError } from '../../errors.js';
import { checkKvBudget, estimateKvCacheBytes, governHistory, kvBytesPerToken, MODEL_PROFILES } from './governor.js';

const GiB = 1024 ** 3;

describe('estimateKvCacheBytes', () => {
  it('matches the hand computation for Llama 3.1 8B in fp16', () => {
    const llama = MODEL_PROFILES['llama-3.1-8b'];
    // 2 (K and V) x 32 layers x 8 KV heads x 128 head dim x 2 bytes = 131,072 bytes = 128 KiB per token.
    expect(kvBytesPerToken(llama, 'fp16')).toBe(131_072);
    expect(estimateKvCacheBytes(1000, llama)).toBe(131_072_000);
    // The full 128K-token window: 131,072 tokens x 128 KiB = 16 GiB.
    expect(estimateKvCacheBytes(131_072, llama, 'bf16')).toBe(16 * GiB);
  });

  it('scales with the element type and each model shape', () => {
    // Qwen2.5 7B: 2 x 28 x 4 x 128 = 28,672 elements per token.
    expect(kvBytesPerToken(MODEL_PROFILES['qwen2.5-7b'], 'bf16')).toBe(57_344);
    expect(kvBytesPerToken(MODEL_PROFILES['qwen2.5-7b'], 'q4')).toBe(14_336);
    // Gemma 2 9B: 2 x 42 x 8 x 256 x 1 byte.
    expect(kvBytesPerToken(MODEL_PROFILES['gemma-2-9b'], 'fp8')).toBe(172_032);
    // Llama 3.1 70B: 2 x 80 x 8 x 128 x 2 bytes.
    expect(kvBytesPerToken(MODEL_PROFILES['llama-3.1-70b'], 'fp16')).toBe(327_680);
  });

  it('carries the published architecture numbers', () => {
    expect(MODEL_PROFILES['mistral-7b-v0.3']).toMatchObject({ layers: 32, kvHeads: 8, headDim: 128 });
    expect(MODEL_PROFILES['llama-3.2-3b']).toMatchObject({ layers: 28, kvHeads: 8, headDim: 128 });
    expect(MODEL_PROFILES['qwen2.5-14b']).toMatchObject({ layers: 48, kvHeads: 8, headDim: 128 });
  });

  it('rejects a negative token count', () => {
    expect(() => estimateKvCacheBytes(-1, MODEL_PROFILES['llama-3.1-8b'])).toThrow(
      expect.objectContaining({ code: 'INVALID_INPUT', data: { field: 'tokens' } }),
    );
  });
});

describe('checkKvBudget', () => {
  const profile = MODEL_PROFILES['llama-3.1-8b'];

  it('asks to condense a plan over 90 % of the budget, by the tokens above it', () => {
    // 90,000 prompt + 10,000 headroom tokens against 12 GiB: trigger at floor(12 GiB x 0.9) = 11,596,411,699 bytes,
    // which holds floor(11,596,411,699 / 131,072) = 88,473 tokens, so 11,527 must go.
    const decision = checkKvBudget({ totalTokens: 90_000, headroomTokens: 10_000 }, { profile, kvBudgetBytes: 12 * GiB });
    expect(decision).toEqual({
      mustCondense: true,
      condenseTokens: 11_527,
      plannedTokens: 100_000,
      maxTokens: 88_473,
      bytesPerToken: 131_072,
      estimatedBytes: 13_107_200_000,
      triggerBytes: 11_596_411_699,
      kvBudgetBytes: 12 * GiB,
    });
  });

  it('triggers before the estimate reaches the budget', () => {
    // 95 % of an 8 GiB budget: still under it, but over the trigger.
    const tokens = Math.floor((8 * GiB * 0.95) / 131_072);
    const decision = checkKvBudget({ totalTokens: tokens, headroomTokens: 0 }, { profile, kvBudgetBytes: 8 * GiB });
    expect(decision.estimatedBytes).toBeLessThan(8 * GiB);
    expect(decision.mustCondense).toBe(true);
    expect(checkKvBudget({ totalTokens: 1000, headroomTokens: 1000 }, { profile, kvBudgetBytes: 8 * GiB })).toMatchObject({
      mustCondense: false,
      condenseTokens: 0,
    });
  });

  it('rejects a trigger fraction outside (0, 1]', () => {
    expect(() => checkKvBudget({ totalTokens: 1, headroomTokens: 0 }, { profile, kvBudgetBytes: GiB, triggerFraction: 0 })).toThrow(EngramError);
  });
});

describe('governHistory', () => {
  const items = (n: number, chars = 100) => Array.from({ length: n }, (_, i) => ({ id: i, text: String(i % 10).repeat(chars) }));

  it('keeps the newest N messages plus older pinned ones', () => {
    const history = items(10).map((item) => (item.id === 1 ? { ...item, isPinned: true } : item));
    const result = governHistory(history, { maxHistoryMessages: 4 });
    expect(result.kept.map((i) => i.id)).toEqual([1, 6, 7, 8, 9]);
    expect(result.droppedByDepth).toBe(5);
    expect(result.dropped.map((i) => i.id)).toEqual([0, 2, 3, 4, 5]);
  });

  it('drops the oldest unpinned items until the whole prompt is under the character cap', () => {
    const history = items(10).map((item) => (item.id === 0 ? { ...item, isPinned: true } : item));
    const result = governHistory(history, { maxTotalChars: 600, fixedChars: 200 });
    expect(result.kept.map((i) => i.id)).toEqual([0, 7, 8, 9]);
    expect(result).toMatchObject({ droppedByCharCap: 6, totalChars: 600, isWithinCharCap: true });
  });

  it('never drops pinned items or the newest one, and says when the cap cannot be met', () => {
    const history = items(5).map((item) => (item.id < 2 ? { ...item, isPinned: true } : item));
    const result = governHistory(history, { maxTotalChars: 150, maxHistoryMessages: 1 });
    expect(result.kept.map((i) => i.id)).toEqual([0, 1, 4]);
    expect(result).toMatchObject({ isWithinCharCap: false, totalChars: 300 });
  });

  it('applies no limit by default and names a bad option', () => {
    expect(governHistory(items(50)).kept).toHaveLength(50);
    expect(() => governHistory(items(1), { maxHistoryMessages: -1 })).toThrow(
      expect.objectContaining({ code: 'INVALID_INPUT', data: { field: 'maxHistoryMessages' } }),
    );
  });
});
