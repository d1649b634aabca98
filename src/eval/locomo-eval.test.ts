import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { isEngramError } from '../errors.js';
import { createBuiltinEmbedder } from '../providers/builtin-embedder.js';
import type { Embedder } from '../providers/embedder.js';
import { parseLocomo } from './locomo-data.js';
import { evaluateLocomo, evidenceRecall, summarizeRecall } from './locomo-eval.js';

// Two made-up conversations in LoCoMo's shape (no benchmark data is copied into the project).
const conversations = parseLocomo([
  {
    sample_id: 'conv-a',
    conversation: {
      session_1_date_time: '1:56 pm on 8 May, 2023',
      session_1: [
        { speaker: 'Ann', dia_id: 'D1:1', text: 'I started a pottery class.' },
        { speaker: 'Bo', dia_id: 'D1:2', text: 'My sister plays the trombone.' },
        { speaker: 'Ann', dia_id: 'D1:3', text: 'The pottery bowl cracked in the kiln.' },
      ],
    },
    qa: [
      { question: 'Which class did she start?', evidence: ['D1:1'], category: 4 },
      { question: 'What happened to the pottery?', evidence: ['D1:1', 'D1:3'], category: 1 },
      { question: 'Who is braver?', evidence: [], category: 5 },
    ],
  },
  {
    sample_id: 'conv-b',
    conversation: {
      session_1_date_time: '9:00 am on 1 March, 2024',
      session_1: [
        { speaker: 'Cy', dia_id: 'D1:1', text: 'We hiked the ridge at dawn.' },
        { speaker: 'Di', dia_id: 'D1:2', text: 'The ridge was foggy.' },
      ],
    },
    qa: [{ question: 'Where did they hike?', evidence: ['D1:1'], category: 3 }],
  },
]);

const cacheDir = process.env.ENGRAM_TEST_CACHE_DIR ?? mkdtempSync(join(tmpdir(), 'engram-embedder-'));
let builtin: Embedder;
beforeAll(async () => {
  builtin = await createBuiltinEmbedder({ cacheDir });
}, 120_000);

describe('evidenceRecall and summarizeRecall', () => {
  it('scores the share of evidence retrieved, and nothing for a question without evidence', () => {
    expect(evidenceRecall(['D1:1', 'D2:4'], ['D2:4', 'D9:9'])).toBe(0.5);
    expect(evidenceRecall([], ['D1:1'])).toBeNull();
  });

  it('averages over questions with evidence, and gives null for an empty set', () => {
    const recalls = [{ recall: { 5: 1, 10: 1 } }, { recall: { 5: 0, 10: 0.5 } }, { recall: { 5: null, 10: null } }];
    expect(summarizeRecall(recalls, [5, 10])).toEqual({ questions: 2, recallAt5: 0.5, recallAt10: 0.75 });
    expect(summarizeRecall([], [5])).toEqual({ questions: 0, recallAt5: null });
  });
});

describe('evaluateLocomo', () => {
  it('asks every question through full-text recall, mapping hits back to turn ids, per conversation', async () => {
    const report = await evaluateLocomo(conversations, { ks: [1, 5], retriever: 'fts', embedder: null, keepQuestions: true });
    const byQuestion = Object.fromEntries(report.questionResults!.map((q) => [`${q.sampleId} ${q.question}`, q]));
    // "pottery" is in D1:1 and D1:3 of conv-a only: they come first, then D1:2, found through its indexed context
    // (D1:1 before it); the other conversation's turns never appear.
    const pottery = byQuestion['conv-a What happened to the pottery?']!.ranked[5]!.map((h) => h.diaId);
    expect(pottery.slice(0, 2).sort()).toEqual(['D1:1', 'D1:3']);
    expect(pottery.slice(2)).toEqual(['D1:2']);
    expect(byQuestion['conv-a What happened to the pottery?']!.recall).toEqual({ 1: 0.5, 5: 1 });
    expect(byQuestion['conv-a Who is braver?']!.recall).toEqual({ 1: null, 5: null });
    // "hike" (stemmed) matches D1:1 of conv-b on its own words, and the ridge turn after it only through its context.
    expect(byQuestion['conv-b Where did they hike?']!.ranked[5]!.map((h) => h.diaId)).toEqual(['D1:1', 'D1:2']);
    expect(report).toMatchObject({ turns: 5, questions: 4, questionsWithoutEvidence: 1, embedder: null });
    expect(report.overall).toEqual({ questions: 3, recallAt1: 0.8333, recallAt5: 1 });
    expect(report.byCategory['5']).toEqual({ name: 'adversarial', questions: 0, recallAt1: null, recallAt5: null });
  });

  it('embeds every turn for vector recall and leaves the caller its embedder open', async () => {
    let closes = 0;
    const embedder: Embedder = { name: builtin.name, dimensions: builtin.dimensions, embed: (t) => builtin.embed(t), close: async () => void closes++ };
    const progress: Array<{ phase: string; done: number; total: number }> = [];
    const report = await evaluateLocomo(conversations, { ks: [5], retriever: 'vector', embedder, keepQuestions: true, onProgress: (p) => progress.push(p) });
    // k exceeds each conversation's turns and every turn has a vector: vector recall returns them all, but for "Who is
    // braver?" (no evidence): no turn holds its words nor comes near it in meaning, so nothing matches (match none).
    expect(report.questionResults!.map((q) => q.ranked[5]!.length)).toEqual([3, 3, 0, 2]);
    expect(report.overall.recallAt5).toBe(1);
    expect(report.embedder).toBe(builtin.name);
    expect(closes).toBe(0);
    // Five turns embedded plus four recall calls, counted to the end.
    expect(progress.at(-1)).toMatchObject({ phase: 'recall', done: 9, total: 9 });
  });

  it('refuses vector and hybrid without an embedder, and bad depths, naming the field', async () => {
    for (const [options, field] of [
      [{ retriever: 'hybrid' as const, embedder: null }, 'retriever'],
      [{ retriever: 'fts' as const, embedder: null, ks: [0] }, 'ks'],
    ] as const) {
      const err = await evaluateLocomo(conversations, options).catch((e: unknown) => e);
      expect(isEngramError(err, 'INVALID_INPUT')).toBe(true);
      expect((err as { data: { field: string } }).data.field).toBe(field);
    }
  });
});
