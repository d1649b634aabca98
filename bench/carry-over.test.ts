import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEngram } from '../src/engine.js';
import type { LocomoConversation } from '../src/eval/locomo-data.js';
import { askQuestions, gibberishPrompts, locomoProject, replayLocomo, resolveCitations, type Project } from './carry-over.js';
import { injectedText, installHookWorld, type HookWorld } from './lib/claude-hooks.js';
import { projectSessions } from './lib/claude-replay.js';
import { citedTurnRefs, isQuoted, mentionsPath, normalizeText, scoreEvidence } from './lib/injection-score.js';
import { locomoSessions, turnUuid } from './lib/locomo-transcripts.js';
import { sharedBenchData } from './lib/shared-data.js';
import { truthOfFile } from './lib/transcript-truth.js';

/** A made-up two-session conversation in LoCoMo's shape (no dataset text). */
const CONVERSATION: LocomoConversation = {
  sampleId: 'conv-test',
  turns: [
    { diaId: 'D1:1', session: 1, speaker: 'Ada', text: 'I finally repainted the garden shed a deep teal colour last weekend.', tsMs: Date.UTC(2023, 4, 8, 13) },
    { diaId: 'D1:2', session: 1, speaker: 'Brook', text: 'Teal! That must look great next to your lavender beds.', tsMs: Date.UTC(2023, 4, 8, 13, 0, 1) },
    { diaId: 'D1:3', session: 1, speaker: 'Ada', text: 'It does, and my neighbour Quentin asked for the paint brand.', tsMs: Date.UTC(2023, 4, 8, 13, 0, 2) },
    { diaId: 'D2:1', session: 2, speaker: 'Brook', text: 'I started volunteering at the riverside animal shelter on Tuesdays.', tsMs: Date.UTC(2023, 5, 2, 9) },
    { diaId: 'D2:2', session: 2, speaker: 'Ada', text: 'That is lovely, which animals do you look after there?', tsMs: Date.UTC(2023, 5, 2, 9, 0, 1) },
    { diaId: 'D2:3', session: 2, speaker: 'Brook', text: 'Mostly the elderly greyhounds nobody else wants to walk.', tsMs: Date.UTC(2023, 5, 2, 9, 0, 2) },
  ],
  questions: [
    { question: 'What colour did Ada paint her garden shed?', category: 4, evidence: ['D1:1'] },
    { question: 'Which dogs does Brook walk at the shelter?', category: 1, evidence: ['D2:1', 'D2:3'] },
  ],
};

describe('scoring what was injected', () => {
  const turn = 'I finally repainted the garden shed a deep teal colour last weekend, and it took three coats of paint.';

  it('counts a turn quoted whole, across line wraps, quote markers and case', () => {
    expect(isQuoted(turn, normalizeText(`Earlier:\n> I finally repainted the garden shed a deep TEAL colour\n> last weekend, and it took three coats of paint.`))).toBe(true);
  });

  it('counts an excerpt of at least half the turn, and not a shorter one', () => {
    expect(isQuoted(turn, normalizeText('... repainted the garden shed a deep teal colour last weekend, and it ...'))).toBe(true);
    expect(isQuoted(turn, normalizeText('the garden shed a deep teal colour'))).toBe(false);
  });

  it('does not count a turn that is absent, or a short turn quoted only in part', () => {
    expect(isQuoted(turn, normalizeText('Brook volunteers at the riverside animal shelter.'))).toBe(false);
    expect(isQuoted('Teal! That must look great.', normalizeText('That must look great.'))).toBe(false);
  });

  it('counts a turn cited by id even when its text is not quoted', () => {
    const outcome = scoreEvidence(
      [
        { id: 'D1:1', text: turn },
        { id: 'D2:3', text: 'Mostly the elderly greyhounds nobody else wants to walk.' },
        { id: 'D2:1', text: 'I started volunteering at the riverside animal shelter on Tuesdays.' },
      ],
      `[evt_01ABC] ${turn}`,
      new Set(['D2:3']),
    );
    expect(outcome).toEqual({ present: ['D1:1', 'D2:3'], quoted: ['D1:1'], cited: ['D2:3'] });
  });

  it('reads turn references under the prompt evidence\'s day lines and the brief\'s session headings, not under other sections', () => {
    const brief = [
      '### Session 2f6a1c3e, 8 May 2023 [sum_01M96SW84N5YDQHA2J4P6FK1XN]',
      '- #3 Ada: I finally repainted the garden shed.',
      '- Files edited: shed.md [#5]; tests [#7]',
      '## Decisions in force',
      '- #9 is not a turn of any session here [evt_01M96SW84N5YDQHA2J4P6FK1XN]',
      '2023-06-02 session 7d1e0b4a:',
      '- #12 Brook: "Mostly the elderly greyhounds…"',
    ].join('\n');
    expect(citedTurnRefs(brief)).toEqual([
      { session: '2f6a1c3e', turn: 3 },
      { session: '2f6a1c3e', turn: 5 },
      { session: '2f6a1c3e', turn: 7 },
      { session: '7d1e0b4a', turn: 12 },
    ]);
  });

  it('matches a file by its path or its path relative to the project root', () => {
    expect(mentionsPath('/repo/src/app.ts', 'edited src/app.ts (2 edits)', '/repo')).toBe(true);
    expect(mentionsPath('/repo/src/app.ts', 'edited src/other.ts', '/repo')).toBe(false);
  });

  it('reads the JSON and the plain-text forms of a hook injection', () => {
    expect(injectedText(JSON.stringify({ hookSpecificOutput: { hookEventName: 'SessionStart', additionalContext: 'brief' } }))).toBe('brief');
    expect(injectedText('plain context\n')).toBe('plain context');
    expect(injectedText('')).toBe('');
  });

  it('makes the same gibberish for the same seed', () => {
    expect(gibberishPrompts(7, 4)).toEqual(gibberishPrompts(7, 4));
    expect(gibberishPrompts(7, 4)).not.toEqual(gibberishPrompts(8, 4));
  });
});

describe('the carry-over harness through the real hook commands', () => {
  let root: string;
  let world: HookWorld;
  let project: Project;
  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'engram-carry-over-test-'));
    world = installHookWorld({ home: join(root, 'home'), db: join(root, 'engram.db'), cacheDir: join(root, 'cache') });
    project = locomoProject(CONVERSATION, join(root, 'projects'));
    await replayLocomo(world, [project], 1);
  }, 120_000);
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('writes one Claude Code transcript per session, speaker A as the user, each turn under its own uuid', () => {
    const sessions = locomoSessions(CONVERSATION, project.cwd);
    expect(sessions.map((s) => s.steps.map((step) => step.kind))).toEqual([
      ['prompt', 'reply', 'prompt'],
      ['reply', 'prompt', 'reply'],
    ]);
    const dir = join(world.home, '.claude', 'projects', project.cwd.replace(/[^A-Za-z0-9]/g, '-'));
    const files = readdirSync(dir);
    expect(files.sort()).toEqual(sessions.map((s) => `${s.sessionId}.jsonl`).sort());
    const first = readFileSync(join(dir, `${sessions[0]!.sessionId}.jsonl`), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(first.map((r) => [r.type, r.uuid, r.message.role])).toEqual([
      ['user', turnUuid('conv-test', 'D1:1'), 'user'],
      ['assistant', turnUuid('conv-test', 'D1:2'), 'assistant'],
      ['user', turnUuid('conv-test', 'D1:3'), 'user'],
    ]);
    expect(first[1].parentUuid).toBe(first[0].uuid);
    expect(first[0].message.content).toBe(`Ada: ${CONVERSATION.turns[0]!.text}`);
  });

  it("stores every turn through the hooks, and maps a cited event id back to its turn", async () => {
    const mem = await openEngram({ db: world.db });
    let id: string | undefined;
    try {
      const { hits } = await mem.recall('greyhounds');
      for (const hit of hits) {
        const event = await mem.getEvent(hit.eventId);
        if ((event.meta as Record<string, unknown> | null)?.uuid === turnUuid('conv-test', 'D2:3')) id = event.id;
      }
    } finally {
      await mem.close();
    }
    expect(id).toMatch(/^evt_/);
    const cited = await resolveCitations(world.db, [`see ${id} and evt_UNKNOWN`], [project]);
    expect([...cited.entries()]).toEqual([[id, 'conv-test|D2:3']]);
  });

  it('asks each question in a fresh session and scores it against the gold turns', async () => {
    const results = await askQuestions(world, [project], 1000, { categories: [1, 2, 3, 4], quick: false, jobs: 1 });
    expect(results.map((r) => [r.index, r.category, r.evidence])).toEqual([
      [0, 4, ['D1:1']],
      [1, 1, ['D2:1', 'D2:3']],
    ]);
    for (const r of results) {
      // Present is exactly quoted or cited, and only gold turns are counted.
      expect(r.present.sort()).toEqual([...new Set([...r.quoted, ...r.cited])].sort());
      expect(r.present.every((id) => r.evidence.includes(id))).toBe(true);
      expect(r.briefTokens).toBeGreaterThanOrEqual(0);
    }
  });
});

describe('ground truth from tool calls', () => {
  const fixtures = 'test/fixtures/transcripts';

  it('takes apply_patch paths and non-zero exit codes from a Codex rollout', () => {
    const truth = truthOfFile(join(fixtures, 'codex-rollout.jsonl'), 'codex');
    expect(truth.projectRoot).toBe('/home/dev/ledger');
    expect(truth.filesEdited).toContain('ledger/totals.py');
    expect(truth.failures[0]).toMatchObject({ command: 'pytest tests/test_totals.py -x -q' });
    expect(truth.failures[0]!.error).toContain('AssertionError');
  });

  it('takes str_replace_editor edits from a SWE-agent trajectory and error observations from OpenHands', () => {
    expect(truthOfFile(join(fixtures, 'swe-agent-textkit__textkit-231.traj'), 'swe-agent').filesEdited).toEqual(['/testbed/textkit/slug.py']);
    const openHands = truthOfFile(join(fixtures, 'openhands-trajectory.json'), 'openhands');
    expect(openHands.filesEdited).toEqual(['/workspace/scripts/rotate_logs.py']);
    expect(openHands.failures.map((f) => f.command)).toEqual(['read /workspace/tests/test_rotate_logs.py']);
  });

  const coding = join(sharedBenchData(), 'transcripts/claude-code-projects/-Users-dain-workspace-danieldemmel-me-next');
  it.skipIf(!existsSync(coding))('orders the real project sessions by time, without empty or sub-agent files (skipped: ../shared/bench-data absent)', () => {
    const sessions = projectSessions(coding);
    expect(sessions.length).toBeGreaterThan(1);
    expect(sessions.every((s, i) => i === 0 || s.startMs >= sessions[i - 1]!.startMs)).toBe(true);
    expect(sessions.some((s) => s.file.includes('agent-'))).toBe(false);
  });
});
