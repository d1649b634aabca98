import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGptTokenizer } from '../../providers/gpt-tokenizer.js';
import { deriveNeedles, runNeedleReplay, toTurns, type ReplayReport } from './replay.js';
import { formatReplayMarkdown } from './replay-report.js';
import { createExtractiveSummarizer } from './summarizer.js';
import { claudeCodeTranscript } from './test-support.js';

const tokenizer = createGptTokenizer();
let dir: string;
let report: ReplayReport;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-replay-'));
  const file = join(dir, 'cc-replay-1.jsonl');
  writeFileSync(file, claudeCodeTranscript());
  report = await runNeedleReplay({ file, windowTokens: 4000, cycles: [1, 2], embedder: null, summarizer: createExtractiveSummarizer(tokenizer), tokenizer, earlyShare: 0.2 });
}, 60_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('runNeedleReplay', () => {
  it('reads the transcript in its own format and replays every event in turns', () => {
    expect(report.format).toBe('claude-code');
    expect(report.sessionId).toBe('cc-replay-1');
    // The summary line (a note), the request, four tool rounds, two remarks, forty test runs.
    expect(report.events).toBe(1 + 1 + 2 * 4 + 2 + 2 * 40);
    expect(report.turns).toBe(1 + 1 + 4 + 2 + 40);
  });

  it('derives probes from exact strings of the first part, asked with the words beside them and never quoting them', () => {
    const byType = Object.fromEntries(report.probes.map((p) => [p.type, p]));
    expect(byType.hash?.value).toBe('9c1d2e3f4a5b');
    expect(byType.path?.value).toBe('src/payments/refund.ts:131');
    expect(byType.error?.value).toBe('ECONNREFUSED 10.0.3.7:5432');
    expect(byType.parameter?.value).toBe('--max-retries=7 --timeout=3200ms');
    expect(byType.rationale?.value).toBe('the partner API drops webhooks during deploys');
    for (const p of report.probes) expect(p.question).not.toContain(p.value);
    expect(byType.rationale?.question).toMatch(/polling.*refund sync/);
  });

  it('compacts at the window, probes at each checkpoint, and Engram recalls what truncation lost', () => {
    const engram = report.checkpoints['engram-fts']!;
    expect(engram.map((s) => s.checkpoint)).toEqual([1, 2]);
    expect(report.conditions['engram-fts']!.oneHop).toBe(1);
    expect(report.conditions.truncation!.zeroHop).toBe(0);
    // Without an embedder the hybrid condition is left out rather than silently run as full-text.
    expect(report.config.conditions).not.toContain('engram');
    expect(formatReplayMarkdown(report)).toContain('| Engram, full-text recall only | 2 | ');
  });
});

describe('toTurns and deriveNeedles', () => {
  it('keeps a tool call and its result in one turn', () => {
    const turns = toTurns([
      { label: 'e1', event: { kind: 'user', content: 'go' } },
      { label: 'e2', event: { kind: 'tool_call', content: '{}', toolCallId: 'a' } },
      { label: 'e3', event: { kind: 'tool_result', content: 'ok', toolCallId: 'a' } },
      { label: 'e4', event: { kind: 'assistant', content: 'done' } },
    ]);
    expect(turns.map((t) => t.events.map((e) => e.label))).toEqual([['e1'], ['e2', 'e3'], ['e4']]);
  });

  it('skips values with fewer than two words beside them and counts every event holding the value as relevant', () => {
    const events = [
      { label: 'e1', event: { kind: 'tool_result' as const, content: 'a7f3b2c9e1d8' } },
      { label: 'e2', event: { kind: 'tool_result' as const, content: 'deploy failed at commit 0b1c2d3e4f5a on staging' } },
      { label: 'e3', event: { kind: 'assistant' as const, content: 'so 0b1c2d3e4f5a is the culprit' } },
    ];
    const { needles, probes } = deriveNeedles(events, 1, 10);
    expect(needles.map((n) => n.value)).toEqual(['0b1c2d3e4f5a']);
    expect(needles[0]!.episodeLabels).toEqual(['e2', 'e3']);
    expect(probes[0]!.question).toBe('Which commit or hash was it, the one with: deploy failed commit staging?');
  });
});
