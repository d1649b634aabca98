import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runEngram } from '../fixtures/cli.js';


let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-cli-bench-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function engram(args: string[], env: Record<string, string> = {}) {
  return runEngram(args, { cwd: dir, env });
}

/**
 * A made-up conversation in LoCoMo's shape (no benchmark data is copied into the project): 2 sessions,
 * 10 turns, 3 questions whose full-text recall is known by hand. Question words that are stop words or
 * speaker names are avoided, so each question matches only the turns named below.
 */
function writeConversation(): string {
  const turn = (speaker: string, diaId: string, text: string) => ({ speaker, dia_id: diaId, text });
  const data = [
    {
      sample_id: 'conv-test',
      conversation: {
        speaker_a: 'Mira',
        speaker_b: 'Tomas',
        session_1_date_time: '1:56 pm on 8 May, 2023',
        session_1: [
          turn('Mira', 'D1:1', 'I finally moved to Lisbon last week.'),
          turn('Tomas', 'D1:2', 'Congratulations! How is the new apartment?'),
          turn('Mira', 'D1:3', 'Small but bright, with a balcony full of basil.'),
          turn('Tomas', 'D1:4', 'I adopted a greyhound and named him Pixel.'),
          turn('Mira', 'D1:5', 'Send me a photo of the dog sometime.'),
        ],
        session_2_date_time: '10:04 am on 20 June, 2023',
        session_2: [
          turn('Tomas', 'D2:1', 'Pixel learned to open the fridge door.'),
          turn('Mira', 'D2:2', 'Ha! I started learning the cello.'),
          turn('Tomas', 'D2:3', 'Which teacher are you studying with?'),
          turn('Mira', 'D2:4', 'An old violinist from the conservatory.'),
          turn('Tomas', 'D2:5', 'Good luck with the recital.'),
        ],
      },
      qa: [
        // "balcony" occurs in D1:3 only: found at every k.
        { question: 'What grows on the balcony?', answer: 'basil', evidence: ['D1:3'], category: 4 },
        // "name(d)" and "greyhound" occur in D1:4 only; D2:1 shares no word with the question, but follows D1:4
        // and D1:5 in the store's one session, so their words are its indexed context: both found.
        { question: 'What is the name of the greyhound and what trick can it do?', answer: 'Pixel; the fridge', evidence: ['D1:4', 'D2:1'], category: 1 },
        // No word of the question occurs in any turn: nothing found.
        { question: 'When did the instrument lessons begin?', answer: 'June 2023', evidence: ['D2:2'], category: 2 },
      ],
    },
  ];
  const path = join(dir, 'conversation.json');
  writeFileSync(path, JSON.stringify(data));
  return path;
}

describe('engram bench locomo', () => {
  it('reports full-text evidence recall@k overall and per category', () => {
    const r = engram(['bench', 'locomo', '--data', writeConversation(), '--retriever', 'fts', '--k', '5,10', '--json']);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report).toMatchObject({ retriever: 'fts', embedder: null, ks: [5, 10], conversations: ['conv-test'], turns: 10, questions: 3, questionsWithoutEvidence: 0 });
    expect(report.overall).toEqual({ questions: 3, recallAt5: 0.6667, recallAt10: 0.6667 });
    expect(report.allCategories).toEqual({ questions: 3, recallAt5: 0.6667, recallAt10: 0.6667 });
    expect(report.byCategory).toEqual({
      1: { name: 'multi-hop', questions: 1, recallAt5: 1, recallAt10: 1 },
      2: { name: 'temporal', questions: 1, recallAt5: 0, recallAt10: 0 },
      3: { name: 'open-domain', questions: 0, recallAt5: null, recallAt10: null },
      4: { name: 'single-hop', questions: 1, recallAt5: 1, recallAt10: 1 },
      5: { name: 'adversarial', questions: 0, recallAt5: null, recallAt10: null },
    });
    expect(Object.keys(report.timingsMs).sort()).toEqual(['append', 'embed', 'queryP50', 'queryP95', 'total']);
  });

  it('prints a table in percent without --json', () => {
    const r = engram(['bench', 'locomo', '--data', writeConversation(), '--retriever', 'fts', '--k', '10']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('retriever fts: 1 conversation, 10 turns, 3 questions');
    expect(r.stdout).toMatch(/^4 single-hop\s+100\.0\s+1$/m);
    expect(r.stdout).toMatch(/^3 open-domain\s+-\s+0$/m);
    expect(r.stdout).toMatch(/^categories 1-4\s+66\.7\s+3$/m);
  });

  it('embeds the turns with the built-in embedder for hybrid recall, the default', () => {
    const r = engram(['bench', 'locomo', '--data', writeConversation(), '--k', '10', '--json']);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.retriever).toBe('hybrid');
    expect(report.embedder).toBe('builtin-glove-100d@1');
    // Every turn is a vector candidate, and k is the number of turns: recall returns them all, but only
    // if every turn was embedded before the questions were asked.
    expect(report.overall).toEqual({ questions: 3, recallAt10: 1 });
  });

  it('rejects --retriever vector with --embedder none', () => {
    const r = engram(['bench', 'locomo', '--data', writeConversation(), '--retriever', 'vector', '--embedder', 'none']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('INVALID_INPUT: --retriever: "vector" needs vectors, but --embedder is none');
  });

  it('names the file and the field of a malformed file, and a missing file', () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify([{ sample_id: 'conv-x', conversation: { session_1: [] }, qa: [] }]));
    const r = engram(['bench', 'locomo', '--data', bad, '--json']);
    expect(r.code).toBe(2);
    const { error } = JSON.parse(r.stderr);
    expect(error.code).toBe('INVALID_INPUT');
    expect(error.message).toBe(`${bad}: [0].conversation.session_1_date_time: expected a string, found nothing`);

    const missing = engram(['bench', 'locomo', '--data', 'nowhere.json']);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain('nowhere.json: cannot read the LoCoMo file');
  });

  it('rejects a --k that is not a list of whole numbers', () => {
    const r = engram(['bench', 'locomo', '--data', writeConversation(), '--k', '10,0']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--k: "10,0" is not a comma-separated list of whole numbers from 1 to 1000');
  });
});
