import { describe, expect, it } from 'vitest';
import { evidenceConfidence, promptWords, recallForPrompt, type PromptRecallReaders } from './prompt-recall.js';

describe('prompt evidence confidence', () => {
  it('takes a date the prompt names out of its words and holds it by the event time', () => {
    const words = promptWords('What did Maria plan to do on the evening of 7 July, 2023?');
    expect(words.dates).toHaveLength(1);
    expect(words.content).not.toContain('juli');
    expect(words.content).not.toContain('2023');
    expect([...words.anchors]).toEqual(['maria']);
    const turn = 'Maria: I plan to bake bread this evening with my church friends.';
    const onTheDay = evidenceConfidence(words, turn, Date.UTC(2023, 6, 7, 18));
    const monthsLater = evidenceConfidence(words, turn, Date.UTC(2023, 9, 1));
    expect(onTheDay).toBe(1);
    expect(monthsLater).toBeLessThan(onTheDay);
    expect(monthsLater).toBeGreaterThan(0);
  });

  it('gives nothing to a text on the right day that lacks the name the prompt asks about', () => {
    const words = promptWords('What did Maria plan on 7 July, 2023?');
    expect(evidenceConfidence(words, 'John: I plan to go fishing.', Date.UTC(2023, 6, 7))).toBe(0);
  });

  it('counts a prompt without a date as before: the share of its words held, names twice', () => {
    const words = promptWords('What did Melanie paint at the lake?');
    expect(words.dates).toEqual([]);
    expect(evidenceConfidence(words, 'Melanie painted the lake.')).toBe(1);
    // melanie (2) of melanie (2), paint (1), lake (1).
    expect(evidenceConfidence(words, 'Melanie went camping.')).toBe(0.5);
  });
});

describe('prompt evidence options', () => {
  it('refuses a numeric option out of its range, naming it, before reading the store', async () => {
    const untouched = new Proxy({}, { get: () => { throw new Error('the store was read'); } }) as PromptRecallReaders;
    for (const [field, value] of [['fullShare', 1.5], ['previewChars', 5], ['budgetTokens', Number.NaN], ['fillConfidence', -0.1], ['tokensPerHit', 0], ['budgetTokens', 10.5]] as const) {
      await expect(recallForPrompt(untouched, 'where is the pause button wired up?', { project: 'p', sessionId: 's', [field]: value })).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        message: expect.stringContaining(`${field}:`),
      });
    }
  });
});
