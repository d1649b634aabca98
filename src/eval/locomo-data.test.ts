import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isEngramError } from '../errors.js';
import { evidenceIds, loadLocomo, parseLocomo, turnText } from './locomo-data.js';

// A made-up conversation in LoCoMo's shape (no benchmark data is copied into the project).
function sample(): Record<string, unknown> {
  return {
    sample_id: 'conv-test',
    conversation: {
      speaker_a: 'Ann',
      speaker_b: 'Bo',
      session_1_date_time: '1:56 pm on 8 May, 2023',
      session_1: [
        { speaker: 'Ann', dia_id: 'D1:1', text: 'I started a pottery class.' },
        { speaker: 'Bo', dia_id: 'D1:2', text: 'Nice! Look at this.', img_url: ['http://x'], blip_caption: 'a photo of a bowl', query: 'bowl' },
      ],
      session_2_date_time: '10:04 am on 20 June, 2023',
      session_2: [{ speaker: 'Ann', dia_id: 'D2:1', text: 'The bowl cracked in the kiln.' }],
    },
    qa: [
      { question: 'What class did Ann start?', answer: 'pottery', evidence: ['D1:1'], category: 4 },
      { question: 'What broke?', answer: 'the bowl', evidence: ['D1:2; D2:1'], category: 1 },
      { question: 'What did Bo bake?', adversarial_answer: 'bread', evidence: [], category: 5 },
    ],
    event_summary: {},
    observation: {},
    session_summary: {},
  };
}

const dir = mkdtempSync(join(tmpdir(), 'engram-locomo-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function errorOf(json: unknown): Error {
  try {
    parseLocomo(json, 'test.json');
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected parseLocomo to fail');
}

describe('parseLocomo', () => {
  it('reads turns in session order with their times, captions and extracted evidence ids', () => {
    const [conv] = parseLocomo([sample()]);
    expect(conv!.sampleId).toBe('conv-test');
    expect(conv!.turns.map((t) => t.diaId)).toEqual(['D1:1', 'D1:2', 'D2:1']);
    expect(conv!.turns[1]!.blipCaption).toBe('a photo of a bowl');
    expect(conv!.turns[0]!.tsMs).toBe(Date.UTC(2023, 4, 8, 13, 56));
    expect(conv!.turns[1]!.tsMs).toBe(Date.UTC(2023, 4, 8, 13, 56, 1));
    expect(conv!.turns[2]!.tsMs).toBe(Date.UTC(2023, 5, 20, 10, 4));
    expect(conv!.questions.map((q) => q.evidence)).toEqual([['D1:1'], ['D1:2', 'D2:1'], []]);
    expect(conv!.questions.map((q) => q.category)).toEqual([4, 1, 5]);
  });

  it('renders a turn as speaker: text, with the image caption', () => {
    const [conv] = parseLocomo([sample()]);
    expect(turnText(conv!.turns[0]!)).toBe('Ann: I started a pottery class.');
    expect(turnText(conv!.turns[1]!)).toBe('Bo: Nice! Look at this. [image: a photo of a bowl]');
  });

  it('extracts ids from malformed evidence strings, once each', () => {
    expect(evidenceIds(['D8:6; D9:17', 'D8:6', 'see D10:2'])).toEqual(['D8:6', 'D9:17', 'D10:2']);
    expect(evidenceIds(['none'])).toEqual([]);
  });

  it.each([
    ['not a list', () => ({ conversations: [] }), /test\.json: \(root\): expected a list of conversations/],
    ['an empty list', () => [], /\(root\): the list of conversations is empty/],
    ['a missing sample id', () => [{ ...sample(), sample_id: undefined }], /\[0\]\.sample_id: expected a string, found nothing/],
    ['no sessions', () => [{ ...sample(), conversation: { speaker_a: 'Ann' } }], /\[0\]\.conversation: has no session_<n> lists of turns/],
    [
      'a bad turn id',
      () => {
        const s = sample();
        ((s.conversation as Record<string, unknown[]>).session_2![0] as Record<string, unknown>).dia_id = 'D2-1';
        return [s];
      },
      /\[0\]\.conversation\.session_2\[0\]\.dia_id: "D2-1" does not look like D<session>:<turn>/,
    ],
    [
      'a turn without text',
      () => {
        const s = sample();
        delete ((s.conversation as Record<string, unknown[]>).session_1![1] as Record<string, unknown>).text;
        return [s];
      },
      /\[0\]\.conversation\.session_1\[1\]\.text: expected a string, found nothing/,
    ],
    [
      'an unreadable session time',
      () => {
        const s = sample();
        (s.conversation as Record<string, unknown>).session_2_date_time = 'yesterday';
        return [s];
      },
      /\[0\]\.conversation\.session_2_date_time: "yesterday" is not a time like "1:56 pm on 8 May, 2023"/,
    ],
    ['an unknown category', () => [{ ...sample(), qa: [{ question: 'q?', evidence: [], category: 9 }] }], /\[0\]\.qa\[0\]\.category: expected 1-5, found 9/],
    ['evidence that is not a list', () => [{ ...sample(), qa: [{ question: 'q?', evidence: 'D1:1', category: 1 }] }], /\[0\]\.qa\[0\]\.evidence: expected a list of turn ids/],
    ['a duplicate sample', () => [sample(), sample()], /\[1\]\.sample_id: "conv-test" appears twice/],
  ])('rejects %s with an error naming the field', (_name, make, message) => {
    const err = errorOf(make());
    expect(isEngramError(err, 'INVALID_INPUT')).toBe(true);
    expect(err.message).toMatch(message);
  });
});

describe('loadLocomo', () => {
  it('loads a file, and names the file when it is missing or not JSON', () => {
    const good = join(dir, 'good.json');
    writeFileSync(good, JSON.stringify([sample()]));
    expect(loadLocomo(good)[0]!.turns).toHaveLength(3);
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '[{"sample_id": ');
    expect(() => loadLocomo(bad)).toThrow(/bad\.json: not valid JSON/);
    expect(() => loadLocomo(join(dir, 'missing.json'))).toThrow(/missing\.json: cannot read the LoCoMo file/);
  });
});
