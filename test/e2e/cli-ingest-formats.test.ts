import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runEngram } from '../fixtures/cli.js';

const TRANSCRIPTS = resolve('test/fixtures/transcripts');

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-cli-ingest-formats-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** The CLI without embedding: these tests are about what is read and stored, not about vectors. */
function engram(args: string[]) {
  return runEngram([...args, '--embedder', 'none'], { cwd: dir });
}

/** Copies a fixture into the test's directory under the name a user's file would have. */
function place(fixture: string, as = fixture): string {
  copyFileSync(join(TRANSCRIPTS, fixture), join(dir, as));
  return as;
}

function ingestJson(args: string[]): Record<string, unknown> & { stored: number; format: string } {
  const r = engram(['ingest', ...args, '--json']);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

describe('engram ingest of agent transcript formats', () => {
  it('detects a Codex rollout, stores it in the rollout session once, and recalls its tool output', () => {
    const file = place('codex-rollout.jsonl', 'rollout-2025-10-14T09-12-03-0199a6f1-3c2e-7d40-9b1a-5e8f2c7d4a10.jsonl');
    const report = ingestJson([file]);
    expect(report.format).toBe('codex');
    expect(report.stored).toBe(8);
    expect(report.sessions).toEqual([{ id: '0199a6f1-3c2e-7d40-9b1a-5e8f2c7d4a10', stored: 8, duplicates: 0 }]);
    expect(report.skipped).toEqual({
      "Codex event_msg 'user_message' is not imported (response items hold the conversation)": 1,
      "Codex event_msg 'agent_reasoning' is not imported (response items hold the conversation)": 1,
      "Codex event_msg 'token_count' is not imported (response items hold the conversation)": 1,
      "Codex event_msg 'agent_message' is not imported (response items hold the conversation)": 1,
    });

    const recall = engram(['recall', 'AssertionError', '--kind', 'tool_result', '--json']);
    expect(recall.code, recall.stderr).toBe(0);
    const hit = JSON.parse(recall.stdout).hits[0];
    expect(hit).toMatchObject({ sessionId: '0199a6f1-3c2e-7d40-9b1a-5e8f2c7d4a10', kind: 'tool_result', toolName: 'shell' });

    // Codex appends to the same file: the same file again stores nothing new.
    const again = ingestJson([file, '--format', 'codex']);
    expect(again.stored).toBe(0);
    expect(again.duplicates).toBe(8);
  });

  it('stores a large Codex tool output as an artifact and still finds a line deep inside it', () => {
    const at = (s: number) => `2025-10-14T09:13:${String(s).padStart(2, '0')}.000Z`;
    const log = Array.from({ length: 400 }, (_, i) => `[build] compiling module ${i} of 400 ... ok`);
    log.push('error[E0308]: mismatched types in src/ledger/rounding.rs:88 (zebrafinch)');
    const lines = [
      { timestamp: at(0), type: 'session_meta', payload: { id: 'big-output-session', cwd: '/r', cli_version: '0.46.0' } },
      { timestamp: at(1), type: 'response_item', payload: { type: 'function_call', name: 'shell', arguments: '{"command":["cargo","build"]}', call_id: 'call_big' } },
      { timestamp: at(9), type: 'response_item', payload: { type: 'function_call_output', call_id: 'call_big', output: log.join('\n') } },
    ];
    writeFileSync(join(dir, 'big.jsonl'), lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
    expect(ingestJson(['big.jsonl']).stored).toBe(2);
    const hit = JSON.parse(engram(['recall', 'zebrafinch', '--json']).stdout).hits[0];
    expect(hit).toMatchObject({ sessionId: 'big-output-session', kind: 'tool_result', toolName: 'shell' });
    expect(hit.artifactId).toMatch(/^art_/);
    expect(hit.excerpt).toContain('zebrafinch');
  });

  it('prints the skipped Codex records by reason in the text report', () => {
    const r = engram(['ingest', place('codex-rollout.jsonl')]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/format\s+codex/);
    expect(r.stdout).toContain("skipped records: 1 Codex event_msg 'user_message' is not imported");
  });

  it('imports an OpenHands trajectory and a SWE-agent trajectory into sessions named after their files', () => {
    const openhands = ingestJson([place('openhands-trajectory.json')]);
    expect(openhands.format).toBe('openhands');
    expect(openhands.stored).toBe(12);
    const swe = ingestJson([place('swe-agent-textkit__textkit-231.traj')]);
    expect(swe.format).toBe('swe-agent');
    expect(swe.stored).toBe(17);
    expect(swe.sessions).toEqual([{ id: 'swe-agent-textkit__textkit-231', stored: 17, duplicates: 0 }]);

    const hit = JSON.parse(engram(['recall', 'rocknroll', '--kind', 'tool_result', '--json']).stdout).hits[0];
    expect(hit).toMatchObject({ sessionId: 'swe-agent-textkit__textkit-231', toolName: 'bash' });
  });

  it('detects an OpenHands evaluation output, stores each instance in its own session, and recalls a tool output', () => {
    const report = ingestJson([place('openhands-output.jsonl', 'output.jsonl')]);
    expect(report.format).toBe('openhands');
    expect(report.sessions).toEqual([
      { id: 'ledgerly__ledgerly-88', stored: 12, duplicates: 0 },
      { id: 'ledgerly__ledgerly-91', stored: 6, duplicates: 0 },
    ]);
    const hit = JSON.parse(engram(['recall', '8 passed in 0.41s', '--kind', 'tool_result', '--json']).stdout).hits[0];
    expect(hit).toMatchObject({ sessionId: 'ledgerly__ledgerly-88', kind: 'tool_result', toolName: 'execute_bash' });
    expect(ingestJson(['output.jsonl']).duplicates).toBe(18);
  });

  it('detects an evaluation output whose first line is over 64 KiB (issue #30: "malformed JSON ... position 214391")', () => {
    const [first, second] = readFileSync(join(TRANSCRIPTS, 'openhands-output.jsonl'), 'utf8').split('\n');
    const instance = JSON.parse(first!);
    // A long test run's output in an observation: the line grows past 200 KB, as in the file.
    instance.history[9].content = `${'tests/test_ledger.py::test_case PASSED\n'.repeat(5500)}8 passed in 0.41s`;
    const line = JSON.stringify(instance);
    expect(line.length).toBeGreaterThan(214_391);
    writeFileSync(join(dir, 'output.jsonl'), `${line}\n${second}\n`);
    const report = ingestJson(['output.jsonl']);
    expect(report.format).toBe('openhands');
    expect(report.stored).toBe(18);
  });

  it('detects Gemini CLI chats (.json and .jsonl) and pairs their tool calls with the results', () => {
    const json = ingestJson([place('gemini-session-2025-09-18T08-14-6f3c9a2e.json')]);
    expect(json.format).toBe('gemini');
    expect(json.sessions).toEqual([{ id: '6f3c9a2e-1b7d-4e58-9c0a-2d4b8e7f1a36', stored: 10, duplicates: 0 }]);
    const lines = ingestJson([place('gemini-session-2026-03-11T21-02-c41d7e9a.jsonl')]);
    expect(lines.format).toBe('gemini');
    expect(lines.sessions).toEqual([{ id: 'c41d7e9a-5b3f-4a2c-8e1d-6f0b9a3c7d25', stored: 10, duplicates: 0 }]);
    const hit = JSON.parse(engram(['recall', 'AssertionError 2.67', '--kind', 'tool_result', '--json']).stdout).hits[0];
    expect(hit).toMatchObject({ sessionId: 'c41d7e9a-5b3f-4a2c-8e1d-6f0b9a3c7d25', toolName: 'run_shell_command' });
  });

  it('names the format a file looks like when --format names another', () => {
    const r = engram(['ingest', place('codex-rollout.jsonl'), '--format', 'openai', '--session', 'x']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('codex-rollout.jsonl:');
    expect(r.stderr).toContain('The file looks like a Codex CLI rollout, not an OpenAI chat: pass --format codex.');
    const gemini = engram(['ingest', place('gemini-session-2026-03-11T21-02-c41d7e9a.jsonl'), '--format', 'claude-code']);
    expect(gemini.code).toBe(2);
    expect(gemini.stderr).toContain('The file looks like a Gemini CLI chat, not a Claude Code session: pass --format gemini.');
  });

  it('rejects a Codex rollout with a bad line, naming the line and field, and stores nothing', () => {
    const line = JSON.stringify({ timestamp: '2025-10-14T09:00:00Z', type: 'response_item', payload: { type: 'function_call', name: 'shell', arguments: '{}' } });
    const r = runEngram(['ingest', '-', '--format', 'codex', '--session', 'piped', '--embedder', 'none'], { cwd: dir, input: `${line}\n` });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('stdin:1: payload.call_id: missing; a function_call item needs a call id');
    expect(r.stderr).toContain('nothing was imported');
  });
});
