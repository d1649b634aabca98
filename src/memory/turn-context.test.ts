import { describe, expect, it } from 'vitest';
import { hasTurnContext, TURN_CONTEXT_WORDS, turnContext } from './turn-context.js';

const plain = (text: string) => ({ text, isMasked: false });

describe('turnContext', () => {
  it('keeps the distinct content words of the earlier events, nearest last, without stop words', () => {
    expect(turnContext([plain('Did you visit the Lighthouse museum?'), plain('Yes, the museum! Last Tuesday.')])).toBe('visit lighthouse\nyes museum last tuesday');
    expect(turnContext([])).toBe('');
    expect(turnContext([plain('  ?! ')])).toBe('');
  });

  it('is bounded: the nearest words win, whatever the length of a log before the event', () => {
    const log = Array.from({ length: 5000 }, (_, i) => `line${i} worker processed`).join('\n');
    const words = turnContext([plain('the request named the flaky suite'), plain(log)]).split(/\s+/);
    expect(words).toHaveLength(TURN_CONTEXT_WORDS);
    expect(words).toContain('line4999');
    expect(words).not.toContain('line0');
    expect(words).not.toContain('flaky');
  });

  it('masks private spans before cutting, so no part of one is indexed', () => {
    // maskPrivate leaves a placeholder where the span was.
    expect(turnContext([plain('code <private>zebra 4471</private> locker')])).not.toMatch(/zebra|4471/);
    expect(turnContext([{ text: 'already masked text', isMasked: true }])).toBe('already masked text');
  });

  it('takes dialogue only: tool records, decisions, notes and internal kinds are left out', () => {
    expect(hasTurnContext('user')).toBe(true);
    expect(hasTurnContext('assistant')).toBe(true);
    for (const kind of ['tool_call', 'tool_result', 'decision', 'note', 'system', 'task_state'] as const) expect(hasTurnContext(kind)).toBe(false);
  });
});
