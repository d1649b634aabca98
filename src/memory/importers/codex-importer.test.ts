import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jsonl, parseText } from './test-support.js';

const FIXTURES = resolve(process.cwd(), 'test/fixtures/transcripts');
const fixture = (name: string): string => readFileSync(resolve(FIXTURES, name), 'utf8');
const lineOf = (text: string, line: number): string => text.split('\n')[line - 1] ?? '';
const sha16 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 16);
/** The key the importer gives part `part` of line `line`. */
const keyOf = (text: string, line: number, part = 0): string => `cx:${line}:${sha16(lineOf(text, line))}:${part}`;

const SESSION = '0199a6f1-3c2e-7d40-9b1a-5e8f2c7d4a10';
const envelope = (type: string, payload: unknown, timestamp = '2025-10-14T09:00:00.000Z') => ({ timestamp, type, payload });

describe('codex importer', () => {
  it('maps a rollout: messages, reasoning summary, function and custom tool calls paired with their outputs', async () => {
    const text = fixture('codex-rollout.jsonl');
    const { events, issues, skips } = await parseText(text, 'codex');
    expect(issues).toEqual([]);
    // Every event_msg repeats a response item or is telemetry: none is stored twice.
    expect(skips.map((s) => [s.line, s.reason])).toEqual([
      [4, "Codex event_msg 'user_message' is not imported (response items hold the conversation)"],
      [7, "Codex event_msg 'agent_reasoning' is not imported (response items hold the conversation)"],
      [10, "Codex event_msg 'token_count' is not imported (response items hold the conversation)"],
      [14, "Codex event_msg 'agent_message' is not imported (response items hold the conversation)"],
    ]);
    expect(events.every((e) => e.sessionId === SESSION)).toBe(true);
    expect(events.map((e) => e.line)).toEqual([2, 3, 6, 8, 9, 11, 12, 13]);
    const session = { cwd: '/home/dev/ledger', gitBranch: 'fix/rounding' };
    const model = { ...session, model: 'gpt-5-codex' };
    expect(events.map((e) => e.event)).toEqual([
      { kind: 'user', content: expect.stringContaining('<environment_context>'), key: keyOf(text, 2), ts: '2025-10-14T09:12:03.482Z', meta: session },
      {
        kind: 'user',
        content: 'The monthly totals are off by a cent. Find out why test_monthly_totals fails.',
        key: keyOf(text, 3),
        ts: '2025-10-14T09:12:10.015Z',
        meta: session,
      },
      { kind: 'assistant', content: '**Running the failing test first**', key: keyOf(text, 6), ts: '2025-10-14T09:12:14.220Z', tags: ['thinking', 'summary'], meta: model },
      {
        kind: 'tool_call',
        content: '{"command":["bash","-lc","pytest tests/test_totals.py -x -q"],"workdir":"/home/dev/ledger","timeout_ms":120000}',
        key: keyOf(text, 8),
        ts: '2025-10-14T09:12:14.530Z',
        toolName: 'shell',
        toolCallId: 'call_Qm7rT2vXk9LpA3sN',
        meta: model,
      },
      {
        kind: 'tool_result',
        content: expect.stringContaining("AssertionError: assert Decimal('1043.17') == Decimal('1043.18')"),
        key: keyOf(text, 9),
        ts: '2025-10-14T09:12:17.902Z',
        toolName: 'shell',
        toolCallId: 'call_Qm7rT2vXk9LpA3sN',
        meta: session,
      },
      {
        kind: 'tool_call',
        content: expect.stringMatching(/^\*\*\* Begin Patch\n\*\*\* Update File: ledger\/totals\.py\n/),
        key: keyOf(text, 11),
        ts: '2025-10-14T09:12:25.114Z',
        toolName: 'apply_patch',
        toolCallId: 'call_Hy4dW8nB2cVq6ZfJ',
        meta: model,
      },
      {
        kind: 'tool_result',
        content: expect.stringContaining('M ledger/totals.py'),
        key: keyOf(text, 12),
        ts: '2025-10-14T09:12:25.530Z',
        toolName: 'apply_patch',
        toolCallId: 'call_Hy4dW8nB2cVq6ZfJ',
        meta: session,
      },
      { kind: 'assistant', content: expect.stringContaining('rounds half-even'), key: keyOf(text, 13), ts: '2025-10-14T09:12:31.008Z', meta: model },
    ]);
  });

  it('reads an older rollout without envelopes: session header, bare items, legacy state lines', async () => {
    const text = fixture('codex-rollout-legacy.jsonl');
    const { events, issues, skips } = await parseText(text, 'codex');
    expect(issues).toEqual([]);
    expect(skips).toEqual([{ line: 5, reason: 'Codex legacy state record is not imported' }]);
    expect(new Set(events.map((e) => e.sessionId))).toEqual(new Set(['5973b6c0-94b8-487b-a530-2aeb6098ae0e']));
    expect(events.map((e) => [e.line, e.event.kind, e.event.toolName ?? null, e.event.toolCallId ?? null])).toEqual([
      [1, 'system', null, null],
      [2, 'user', null, null],
      [3, 'tool_call', 'local_shell', 'call_a1'],
      [4, 'tool_result', 'local_shell', 'call_a1'],
      [6, 'assistant', null, null],
    ]);
    expect(events[0]?.event).toMatchObject({ content: 'Always run the linter before committing.', ts: '2025-06-02T17:24:21.000Z', tags: ['instructions'] });
    expect(JSON.parse(events[2]?.event.content ?? '')).toMatchObject({ type: 'exec', command: ['bash', '-lc', 'grep -l invoices migrations/*.sql'] });
    expect(events[3]?.event.content).toBe('migrations/0007_invoices.sql\nmigrations/0012_invoice_totals.sql\n');
    expect(events[3]?.source).toBe('output');
  });

  it('gives the same keys when parsed twice and after lines are appended', async () => {
    const keys = async (text: string): Promise<string[]> => (await parseText(text, 'codex')).events.map((e) => e.event.key ?? '');
    const text = fixture('codex-rollout.jsonl');
    const once = await keys(text);
    expect(new Set(once).size).toBe(once.length);
    expect(await keys(text)).toEqual(once);
    const more = jsonl(envelope('response_item', { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'thanks' }] }));
    expect((await keys(text + more)).slice(0, once.length)).toEqual(once);
  });

  it("uses the caller's session instead of the rollout's", async () => {
    const { events } = await parseText(fixture('codex-rollout.jsonl'), 'codex', { sessionId: 'imported' });
    expect(new Set(events.map((e) => e.sessionId))).toEqual(new Set(['imported']));
  });

  it('marks a failed call, splits images out of an output and keeps a developer message as system', async () => {
    const png = 'data:image/png;base64,iVBORw0KGgo=';
    const text = jsonl(
      envelope('response_item', { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'sandbox: read-only' }] }),
      envelope('response_item', { type: 'function_call', name: 'mcp__shots__capture', arguments: '{}', call_id: 'c1' }),
      envelope('response_item', { type: 'function_call_output', call_id: 'c1', output: [{ type: 'input_text', text: 'captured' }, { type: 'input_image', image_url: png }] }),
      envelope('response_item', { type: 'function_call', name: 'shell', arguments: '{"command":["false"]}', call_id: 'c2' }),
      envelope('response_item', { type: 'function_call_output', call_id: 'c2', output: { content: 'exit 1', success: false } }),
    );
    const { events, issues } = await parseText(text, 'codex');
    expect(issues).toEqual([]);
    expect(events[0]?.event).toMatchObject({ kind: 'system', content: 'sandbox: read-only', meta: { role: 'developer' } });
    expect(events.slice(2, 4).map((e) => e.event)).toMatchObject([
      { kind: 'tool_result', content: 'captured', toolName: 'mcp__shots__capture', toolCallId: 'c1' },
      { kind: 'tool_result', content: '[image: image/png, 8 B]', toolCallId: 'c1', binary: { base64: 'iVBORw0KGgo=', mediaType: 'image/png' } },
    ]);
    expect(events[5]?.event).toMatchObject({ kind: 'tool_result', content: 'exit 1', tags: ['error'], meta: { isError: true } });
  });

  it('stores a compaction summary as a note and skips encrypted reasoning, bookkeeping items and unknown line types', async () => {
    const text = jsonl(
      envelope('compacted', { message: 'Fixed rounding in ledger/totals.py; tests pass.' }),
      envelope('response_item', { type: 'reasoning', summary: [], encrypted_content: 'gAAAA' }),
      envelope('response_item', { type: 'ghost_snapshot', ghost_commit: { id: 'abc' } }),
      envelope('world_state', { agents_md: '...' }),
      envelope('response_item', { type: 'image_generation_call', result: 'iVBOR' }),
    );
    const { events, issues, skips } = await parseText(text, 'codex');
    expect(issues).toEqual([]);
    expect(events.map((e) => e.event)).toMatchObject([{ kind: 'note', content: 'Fixed rounding in ledger/totals.py; tests pass.', tags: ['summary'], meta: { codexType: 'compacted' } }]);
    expect(skips).toEqual([
      { line: 2, reason: 'Codex reasoning is encrypted; there is no text to store' },
      { line: 3, reason: "Codex response item 'ghost_snapshot' holds no readable conversation" },
      { line: 4, reason: "Codex rollout line type 'world_state' is not imported" },
      { line: 5, reason: "Codex response item 'image_generation_call' is not imported" },
    ]);
  });

  it('names the line and field of bad input and reads on', async () => {
    const text = jsonl(
      envelope('response_item', { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'ok' }] }),
      '{"timestamp": "2025-10-14T09:00:00Z", "type": ',
      envelope('response_item', 'not an object'),
      envelope('response_item', { type: 'function_call', name: 'shell', arguments: '{}' }),
      envelope('response_item', { type: 'message', role: 'tool', content: [] }),
      envelope('response_item', { type: 'message', role: 'user', content: [{ type: 'input_file', file_id: 'f' }] }),
      envelope('response_item', { role: 'user' }),
      { payload: {} },
      [1, 2],
      envelope('response_item', { type: 'function_call_output', call_id: 'c9', output: 7 }),
    );
    const { events, issues } = await parseText(text, 'codex');
    expect(events.map((e) => e.line)).toEqual([1]);
    expect(issues.map((i) => [i.line, i.field ?? null])).toEqual([
      [2, null],
      [3, 'payload'],
      [4, 'payload.call_id'],
      [5, 'payload.role'],
      [6, 'payload.content[0].type'],
      [7, 'payload.type'],
      [8, 'type'],
      [9, null],
      [10, 'payload.output'],
    ]);
    expect(issues[0]?.message).toMatch(/^malformed JSON: /);
    expect(issues[2]?.message).toBe('payload.call_id: missing; a function_call item needs a call id');
    expect(issues[3]?.message).toBe('payload.role: expected one of user, assistant, developer, system, got "tool"');
    expect(issues[4]?.message).toBe("payload.content[0].type: unsupported content part type 'input_file'");
    expect(issues[7]?.message).toBe('a Codex rollout line must be a JSON object');
  });

  it('reports an empty file', async () => {
    expect(await parseText('', 'codex')).toEqual({ events: [], skips: [], issues: [{ line: 0, message: 'the file is empty' }] });
  });
});
