import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jsonl, parseText } from './test-support.js';

const FIXTURES = resolve(process.cwd(), 'test/fixtures/transcripts');
const fixture = (name: string): string => readFileSync(resolve(FIXTURES, name), 'utf8');
const CHAT_JSON = 'gemini-session-2025-09-18T08-14-6f3c9a2e.json';
const CHAT_JSONL = 'gemini-session-2026-03-11T21-02-c41d7e9a.jsonl';
const PROJECT_HASH = '9b1e4c7a2f5d8e3b6a0c9f2e5d8b1a4c7e0f3a6d9c2b5e8f1a4d7c0b3e6f9a2d';

describe('gemini importer', () => {
  it('reads a .json chat: user and model messages, thoughts, and each tool call paired with its result', async () => {
    const { events, issues, skips } = await parseText(fixture(CHAT_JSON), 'gemini');
    expect(issues).toEqual([]);
    expect(skips).toEqual([]);
    expect(new Set(events.map((e) => e.sessionId))).toEqual(new Set(['6f3c9a2e-1b7d-4e58-9c0a-2d4b8e7f1a36']));
    expect(events.map((e) => [e.event.kind, e.event.toolName ?? null, e.event.tags ?? []])).toEqual([
      ['user', null, []],
      ['assistant', null, ['thinking']],
      ['tool_call', 'read_file', []],
      ['tool_result', 'read_file', []],
      ['tool_call', 'replace', []],
      ['tool_result', 'replace', []],
      ['tool_call', 'run_shell_command', []],
      ['tool_result', 'run_shell_command', []],
      ['system', null, ['info']],
      ['assistant', null, []],
    ]);
    const calls = events.filter((e) => e.event.kind === 'tool_call').map((e) => e.event.toolCallId);
    const results = events.filter((e) => e.event.kind === 'tool_result').map((e) => e.event.toolCallId);
    expect(results).toEqual(calls);
    expect(new Set(calls).size).toBe(3);
    expect(events[2]?.event).toEqual({
      kind: 'tool_call',
      content: '{"absolute_path":"/home/dev/ledgerly/ledgerly/ledger.py"}',
      key: 'gm:a7d3f1e9-6b2c-4c8a-9e5f-0d1b7a3c6e28:tc:read_file-1758183249551-3b8e1f0c2d7a4',
      ts: '2025-09-18T08:14:09.551Z',
      toolName: 'read_file',
      toolCallId: 'read_file-1758183249551-3b8e1f0c2d7a4',
      meta: { projectHash: PROJECT_HASH, model: 'gemini-2.5-pro' },
    });
    expect(events[7]?.event).toMatchObject({
      kind: 'tool_result',
      content: expect.stringContaining('8 passed in 0.41s'),
      ts: '2025-09-18T08:15:35.412Z',
      meta: { projectHash: PROJECT_HASH, status: 'success' },
    });
    expect(events[1]?.event.content).toBe('Locating the rounding: I should read ledgerly/ledger.py to see how total() sums the entries.');
    expect(events[9]?.event.meta).toEqual({ projectHash: PROJECT_HASH, model: 'gemini-2.5-flash' });
    // Each event names the line where its message starts in the indented document.
    const lines = fixture(CHAT_JSON).split('\n');
    for (const e of events) expect(lines[e.line - 1]).toBe('    {');
    expect(new Set(events.map((e) => e.event.key)).size).toBe(events.length);
  });

  it('reads a .jsonl chat: the last version of each message, the rewind as an event, cwd from the header', async () => {
    const { events, issues, skips } = await parseText(fixture(CHAT_JSONL), 'gemini');
    expect(issues).toEqual([]);
    expect(skips).toEqual([]);
    expect(new Set(events.map((e) => e.sessionId))).toEqual(new Set(['c41d7e9a-5b3f-4a2c-8e1d-6f0b9a3c7d25']));
    expect(events.map((e) => [e.line, e.event.kind, e.event.tags ?? []])).toEqual([
      [2, 'user', []],
      [5, 'assistant', ['thinking']],
      [5, 'tool_call', []],
      [5, 'tool_result', []],
      [7, 'assistant', []],
      [9, 'user', []],
      [10, 'tool_call', []],
      [10, 'tool_result', ['error']],
      [11, 'system', ['rewind']],
      [12, 'user', []],
    ]);
    // The call was written twice (executing, then done): one call, paired with the result of the later version.
    expect(events[2]?.event).toMatchObject({ toolName: 'run_shell_command', toolCallId: 'run_shell_command_1773262973302_0', ts: '2026-03-11T21:02:53.302Z' });
    expect(events[3]?.event).toMatchObject({ toolCallId: 'run_shell_command_1773262973302_0', content: expect.stringContaining("assert Decimal('2.67') == Decimal('2.68')") });
    expect(events[7]?.event).toMatchObject({ content: expect.stringMatching(/^Failed to edit, 0 occurrences/), meta: { status: 'error', isError: true } });
    expect(events[8]?.event).toMatchObject({ key: 'gm:rewind:L11', content: expect.stringContaining('9d2a5f7c-1e3b-4c6a-8f0d-4a7e1b9c3d58') });
    for (const e of events) expect(e.event.meta).toMatchObject({ cwd: '/home/dev/ledgerly', projectHash: PROJECT_HASH });
  });

  it('stores the same events for the part of a .jsonl chat written so far, so a chat that grew imports only what is new', async () => {
    const lines = fixture(CHAT_JSONL).split('\n');
    const full = await parseText(fixture(CHAT_JSONL), 'gemini');
    const byKey = new Map(full.events.map((e) => [e.event.key, e.event]));
    for (let n = 1; n <= lines.length; n++) {
      const part = await parseText(lines.slice(0, n).join('\n'), 'gemini');
      for (const e of part.events) expect(e.event, `first ${n} lines, ${e.event.key}`).toEqual(byKey.get(e.event.key!));
    }
  });

  it('reads a chat written on one line, and a message that only a $set of the message list holds', async () => {
    const message = { id: 'm1', timestamp: '2025-09-18T08:14:02.117Z', type: 'user', content: [{ text: 'hi' }, { inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } }] };
    const oneLine = await parseText(JSON.stringify({ sessionId: 's1', projectHash: 'h', startTime: 'x', lastUpdated: 'y', messages: [message] }), 'gemini');
    expect(oneLine.issues).toEqual([]);
    expect(oneLine.events.map((e) => e.event)).toEqual([
      { kind: 'user', content: 'hi', key: 'gm:m1:c0', ts: '2025-09-18T08:14:02.117Z', meta: { projectHash: 'h' } },
      {
        kind: 'user',
        content: '[image: image/png, 8 B]',
        key: 'gm:m1:c1',
        ts: '2025-09-18T08:14:02.117Z',
        meta: { projectHash: 'h' },
        binary: { base64: 'iVBORw0KGgo=', mediaType: 'image/png' },
      },
    ]);
    // Indented with CRLF line ends, after white space: still the document.
    const crlf = `\r\n  ${JSON.stringify({ sessionId: 's1', projectHash: 'h', messages: [message] }, null, 2).replace(/\n/g, '\r\n')}`;
    expect((await parseText(crlf, 'gemini')).events.map((e) => [e.line, e.event.key])).toEqual([
      [6, 'gm:m1:c0'],
      [6, 'gm:m1:c1'],
    ]);
    const summary = { id: 'm2', timestamp: '2025-09-18T09:00:00.000Z', type: 'user', content: [{ text: 'earlier turns, summarized' }] };
    const withSet = await parseText(jsonl({ sessionId: 's2', projectHash: 'h' }, message, { $set: { messages: [message, summary] } }), 'gemini');
    expect(withSet.events.map((e) => [e.line, e.event.key])).toEqual([
      [2, 'gm:m1:c0'],
      [2, 'gm:m1:c1'],
      [3, 'gm:m2:c0'],
    ]);
  });

  it("uses the caller's session", async () => {
    const { events } = await parseText(fixture(CHAT_JSON), 'gemini', { sessionId: 'mine' });
    expect(new Set(events.map((e) => e.sessionId))).toEqual(new Set(['mine']));
  });

  it('names the field of a bad message or tool call and reads on', async () => {
    const doc = {
      sessionId: 's',
      projectHash: 'h',
      messages: [
        'oops',
        { timestamp: 't', type: 'user', content: 'no id' },
        { id: 'g1', type: 'gemini', content: '', toolCalls: [{ id: 'c1', args: {} }, { id: 'c2', name: 'ls', args: { path: '.' }, status: 'cancelled' }] },
        { id: 'g2', type: 'gemini', content: 'fine', toolCalls: 'none' },
        { id: 'x1', type: 'compression', content: 'x' },
      ],
    };
    const { events, issues, skips } = await parseText(JSON.stringify(doc, null, 2), 'gemini');
    expect(issues.map((i) => [i.field, i.message])).toEqual([
      ['messages[0]', 'messages[0]: a Gemini CLI message must be an object'],
      ['messages[1].id', 'messages[1].id: missing; every Gemini CLI message has a string id'],
      ['messages[2].toolCalls[0].name', 'messages[2].toolCalls[0].name: missing; a tool call needs a tool name'],
      ['messages[3].toolCalls', 'messages[3].toolCalls: expected an array of tool calls'],
    ]);
    expect(events.map((e) => [e.event.kind, e.event.content])).toEqual([
      ['tool_call', '{"path":"."}'],
      ['assistant', 'fine'],
    ]);
    expect(skips.map((s) => s.reason)).toEqual(['Gemini CLI message type "compression" is not imported']);
    expect((await parseText('{\n  "sessionId": "s",\n  "messages": 3\n}', 'gemini')).issues).toEqual([
      { line: 1, field: 'messages', message: 'messages: a Gemini CLI chat is an object with a messages array' },
    ]);
  });

  it('reports an empty file', async () => {
    expect((await parseText('', 'gemini')).issues).toEqual([{ line: 0, message: 'the file is empty' }]);
    expect((await parseText(' \n', 'gemini')).issues).toEqual([{ line: 0, message: 'the file is empty' }]);
  });
});
