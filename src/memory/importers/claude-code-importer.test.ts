import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { jsonl, parseText } from './test-support.js';

const SESSION = '0b4c6a52-1f0e-4d0b-9d59-3f2d3c1e7a10';
const common = { userType: 'external', cwd: '/repo', sessionId: SESSION, version: '1.0.98', gitBranch: 'main', isSidechain: false };

/** A Claude Code session in the documented record shapes, one record per line. */
const records = [
  { type: 'file-history-snapshot', messageId: 'm0', snapshot: { trackedFileBackups: {} }, isSnapshotUpdate: false },
  { type: 'summary', summary: 'Fixing the build', leafUuid: 'u4' },
  { ...common, parentUuid: null, type: 'user', message: { role: 'user', content: 'fix the build' }, uuid: 'u1', timestamp: '2025-09-03T00:00:01.000Z' },
  {
    ...common,
    parentUuid: 'u1',
    type: 'assistant',
    message: {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-20250514',
      content: [
        { type: 'thinking', thinking: 'tsc first', signature: 'sig' },
        { type: 'text', text: 'Running tsc.' },
        { type: 'tool_use', id: 'toolu_1', name: 'Bash', input: { command: 'npx tsc' } },
      ],
      stop_reason: 'tool_use',
      usage: { input_tokens: 3, output_tokens: 9 },
    },
    requestId: 'req_1',
    uuid: 'u2',
    timestamp: '2025-09-03T00:00:02.000Z',
  },
  {
    ...common,
    parentUuid: 'u2',
    type: 'user',
    message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'error TS2322', is_error: true }] },
    toolUseResult: { stdout: '', stderr: 'error TS2322', interrupted: false },
    uuid: 'u3',
    timestamp: '2025-09-03T00:00:03.000Z',
  },
  {
    ...common,
    isSidechain: true,
    parentUuid: 'u3',
    type: 'assistant',
    message: { role: 'assistant', model: 'claude-sonnet-4-20250514', content: [{ type: 'text', text: 'sub-agent report' }] },
    uuid: 'u4',
    timestamp: '2025-09-03T00:00:04.000Z',
  },
  { ...common, type: 'system', content: 'Conversation compacted', subtype: 'compact_boundary', level: 'info', uuid: 'u5', parentUuid: 'u4', timestamp: '2025-09-03T00:00:05.000Z' },
];

const sha16 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 16);
const base = { cwd: '/repo', gitBranch: 'main' };

describe('claude-code importer', () => {
  it('maps every record and block, with uuid keys, tags, meta and timestamps', async () => {
    const text = jsonl(...records);
    const { events, issues, skips } = await parseText(text, 'claude-code');
    expect(issues).toEqual([]);
    expect(skips).toEqual([{ line: 1, reason: "Claude Code record type 'file-history-snapshot' is not imported" }]);
    expect(events.every((e) => e.sessionId === SESSION)).toBe(true);
    expect(events.map((e) => e.line)).toEqual([2, 3, 4, 4, 4, 5, 6, 7]);
    const model = 'claude-sonnet-4-20250514';
    expect(events.map((e) => e.event)).toEqual([
      { kind: 'note', content: 'Fixing the build', key: `cc:summary:${sha16(JSON.stringify(records[1]))}`, tags: ['summary'], meta: { leafUuid: 'u4' } },
      { kind: 'user', content: 'fix the build', key: 'cc:u1:0', ts: '2025-09-03T00:00:01.000Z', meta: { uuid: 'u1', ...base } },
      {
        kind: 'assistant',
        content: 'tsc first',
        key: 'cc:u2:0',
        ts: '2025-09-03T00:00:02.000Z',
        tags: ['thinking'],
        meta: { uuid: 'u2', parentUuid: 'u1', ...base, model },
      },
      { kind: 'assistant', content: 'Running tsc.', key: 'cc:u2:1', ts: '2025-09-03T00:00:02.000Z', meta: { uuid: 'u2', parentUuid: 'u1', ...base, model } },
      {
        kind: 'tool_call',
        content: '{"command":"npx tsc"}',
        key: 'cc:u2:2',
        ts: '2025-09-03T00:00:02.000Z',
        toolName: 'Bash',
        toolCallId: 'toolu_1',
        meta: { uuid: 'u2', parentUuid: 'u1', ...base, model },
      },
      {
        kind: 'tool_result',
        content: 'error TS2322',
        key: 'cc:u3:0',
        ts: '2025-09-03T00:00:03.000Z',
        toolName: 'Bash',
        toolCallId: 'toolu_1',
        tags: ['error'],
        meta: { uuid: 'u3', parentUuid: 'u2', ...base, isError: true, toolUseResult: { stdout: '', stderr: 'error TS2322', interrupted: false } },
      },
      {
        kind: 'assistant',
        content: 'sub-agent report',
        key: 'cc:u4:0',
        ts: '2025-09-03T00:00:04.000Z',
        tags: ['sidechain'],
        meta: { uuid: 'u4', parentUuid: 'u3', ...base, model },
      },
      {
        kind: 'system',
        content: 'Conversation compacted',
        key: 'cc:u5:0',
        ts: '2025-09-03T00:00:05.000Z',
        meta: { uuid: 'u5', parentUuid: 'u4', ...base, subtype: 'compact_boundary', level: 'info' },
      },
    ]);
  });

  it('gives the same keys when parsed twice and after records are appended', async () => {
    const keys = async (text: string): Promise<string[]> => (await parseText(text, 'claude-code')).events.map((e) => e.event.key ?? '');
    const text = jsonl(...records);
    const once = await keys(text);
    expect(await keys(text)).toEqual(once);
    const more = { ...common, parentUuid: 'u5', type: 'user', message: { role: 'user', content: 'thanks' }, uuid: 'u6' };
    expect((await keys(text + jsonl(more))).slice(0, once.length)).toEqual(once);
  });

  it("uses the caller's session instead of the records'", async () => {
    const { events } = await parseText(jsonl(...records), 'claude-code', { sessionId: 'imported' });
    expect(new Set(events.map((e) => e.sessionId))).toEqual(new Set(['imported']));
  });

  it('leaves a toolUseResult of 16 KiB or more out of meta but keeps the result text', async () => {
    const big = { ...records[4], toolUseResult: { stdout: 'x'.repeat(16 * 1024) } };
    const { events } = await parseText(jsonl(records[3], big), 'claude-code');
    const result = events.find((e) => e.event.kind === 'tool_result');
    expect(result?.event.content).toBe('error TS2322');
    expect(result?.event.meta).not.toHaveProperty('toolUseResult');
  });

  it('reports malformed lines, lines without a type and records without a message, and reads on', async () => {
    const text = jsonl(records[2], '{"type": "user", "uuid": ', { uuid: 'x' }, { ...common, type: 'user', uuid: 'u9' }, records[5]);
    const { events, issues } = await parseText(text, 'claude-code');
    expect(events.map((e) => e.line)).toEqual([1, 5]);
    expect(issues.map((i) => [i.line, i.field])).toEqual([
      [2, undefined],
      [3, 'type'],
      [4, 'message'],
    ]);
    expect(issues[0]?.message).toMatch(/^malformed JSON: /);
  });

  it('reports invalid UTF-8 on its line', async () => {
    const bytes = Buffer.concat([Buffer.from(jsonl(records[2])), Buffer.from([0x7b, 0xe2, 0x82, 0x0a])]);
    const { events, issues } = await parseText(bytes, 'claude-code');
    expect(events).toHaveLength(1);
    expect(issues).toEqual([{ line: 2, message: 'line 2 is not valid UTF-8: byte 0xe2 at byte 2 of the line' }]);
  });

  it('reports an empty file', async () => {
    expect(await parseText('', 'claude-code')).toEqual({ events: [], skips: [], issues: [{ line: 0, message: 'the file is empty' }] });
  });

  it('skips unknown record types without an issue, however many', async () => {
    const text = jsonl({ type: 'queue-operation', operation: 'enqueue' }, records[2], { type: 'file-history-snapshot', messageId: 'm1' });
    const { events, issues, skips } = await parseText(text, 'claude-code');
    expect(events).toHaveLength(1);
    expect(issues).toEqual([]);
    expect(skips.map((s) => s.line)).toEqual([1, 3]);
  });
});
