import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { eventInputSchema } from '../../model/event.js';
import { collect, jsonl, parseText, sourceOf } from './test-support.js';

const sha16 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 16);

describe('jsonl importer', () => {
  it('reads one event per line with its line number, session and every EventInput field', async () => {
    const full = {
      kind: 'decision',
      content: 'use SQLite',
      ts: '2025-01-02T03:04:05.000Z',
      key: 'my-key',
      taskId: 'task-1',
      premiseRef: 'premise-1',
      tags: ['db'],
      supersedes: 'evt_01hzzzzzzzzzzzzzzzzzzzzzzz',
      toolName: 'sqlite',
      toolCallId: 'call-1',
      meta: { why: 'embedded' },
      binary: { base64: 'AAEC', mediaType: 'application/octet-stream' },
      sessionId: 'sess-a',
    };
    const { events, issues } = await parseText(jsonl({ kind: 'user', content: 'hi', sessionId: 'sess-a' }, full), 'jsonl');
    expect(issues).toEqual([]);
    expect(events).toHaveLength(2);
    expect(events[0]).toMatchObject({ line: 1, sessionId: 'sess-a', event: { kind: 'user', content: 'hi' } });
    const { sessionId: _unused, ...eventFields } = full;
    expect(events[1]).toEqual({ line: 2, sessionId: 'sess-a', event: eventFields });
    for (const e of events) expect(eventInputSchema.safeParse(e.event).success).toBe(true);
  });

  it('keys a line without a key by its line number and the sha256 of the line', async () => {
    const line = JSON.stringify({ kind: 'note', content: 'remember this' });
    const { events } = await parseText(`\n${line}\n`, 'jsonl');
    expect(events[0]?.line).toBe(2);
    expect(events[0]?.event.key).toBe(`jsonl:2:${sha16(line)}`);
  });

  it('gives the same keys when parsed twice and after lines are appended', async () => {
    const first = jsonl({ kind: 'user', content: 'a' }, { kind: 'assistant', content: 'b' });
    const keysOf = async (text: string): Promise<string[]> => (await parseText(text, 'jsonl')).events.map((e) => e.event.key ?? '');
    const once = await keysOf(first);
    expect(await keysOf(first)).toEqual(once);
    const grown = await keysOf(first + jsonl({ kind: 'user', content: 'c' }));
    expect(grown.slice(0, 2)).toEqual(once);
    expect(new Set(grown).size).toBe(3);
  });

  it('reads CRLF line endings with the same keys as LF', async () => {
    const lf = jsonl({ kind: 'user', content: 'a' }, { kind: 'user', content: 'b' });
    const crlf = lf.replace(/\n/g, '\r\n');
    const keys = async (t: string): Promise<unknown[]> => (await parseText(t, 'jsonl')).events.map((e) => [e.line, e.event.key]);
    expect(await keys(crlf)).toEqual(await keys(lf));
  });

  it('ignores blank lines but keeps counting them', async () => {
    const text = `\n   \n${JSON.stringify({ kind: 'user', content: 'x' })}\n\t\n`;
    const { events, issues } = await parseText(text, 'jsonl');
    expect(issues).toEqual([]);
    expect(events.map((e) => e.line)).toEqual([3]);
  });

  it('reports an unknown field by name and still reads the other lines', async () => {
    const { events, issues } = await parseText(jsonl({ kind: 'user', content: 'ok' }, { kind: 'user', content: 'x', colour: 'red' }), 'jsonl');
    expect(events).toHaveLength(1);
    expect(issues).toEqual([{ line: 2, field: 'colour', message: "unknown field 'colour'" }]);
  });

  it('reports an unknown kind naming the kind field', async () => {
    const { issues } = await parseText(jsonl({ kind: 'shout', content: 'x' }), 'jsonl');
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatchObject({ line: 1, field: 'kind' });
    expect(issues[0]?.message).toMatch(/^kind: /);
  });

  it('reports a malformed line with its number and the parser message', async () => {
    const text = jsonl({ kind: 'user', content: 'a' }, '{"kind": "user", "content": ', { kind: 'user', content: 'c' });
    const { events, issues } = await parseText(text, 'jsonl');
    expect(events.map((e) => e.line)).toEqual([1, 3]);
    expect(issues).toHaveLength(1);
    expect(issues[0]?.line).toBe(2);
    expect(issues[0]?.message).toMatch(/^malformed JSON: \S/);
  });

  it('reports a line that is not an object', async () => {
    const { issues } = await parseText('[1, 2]\n', 'jsonl');
    expect(issues).toEqual([{ line: 1, message: 'each line must be a JSON object (an Engram event)' }]);
  });

  it('reports invalid UTF-8 on the line where it is and reads the rest', async () => {
    const bytes = Buffer.concat([
      Buffer.from(`${JSON.stringify({ kind: 'user', content: 'é ok' })}\n{"kind":"user","content":"`),
      Buffer.from([0xc3, 0x28]),
      Buffer.from(`"}\n${JSON.stringify({ kind: 'user', content: '\uFFFD is a real character' })}\n`),
    ]);
    const { events, issues } = await parseText(bytes, 'jsonl');
    expect(events.map((e) => [e.line, e.event.content])).toEqual([
      [1, 'é ok'],
      [3, '\uFFFD is a real character'],
    ]);
    expect(issues).toEqual([{ line: 2, message: 'line 2 is not valid UTF-8: byte 0xc3 at byte 27 of the line' }]);
  });

  it('reports an empty file once, at line 0', async () => {
    expect((await parseText('', 'jsonl')).issues).toEqual([{ line: 0, message: 'the file is empty' }]);
    expect(await parseText('\n \n', 'jsonl')).toEqual({ events: [], skips: [], issues: [{ line: 0, message: 'the file is empty' }] });
  });

  it("lets the caller's session override the line's, and checks session ids", async () => {
    const text = jsonl({ kind: 'user', content: 'a', sessionId: 'from-line' }, { kind: 'user', content: 'b', sessionId: 'bad id!' });
    const overridden = await parseText(text, 'jsonl', { sessionId: 'mine' });
    expect(overridden.events.map((e) => e.sessionId)).toEqual(['mine', 'mine']);
    const own = await parseText(text, 'jsonl');
    expect(own.events.map((e) => e.sessionId)).toEqual(['from-line']);
    expect(own.issues).toMatchObject([{ line: 2, field: 'sessionId' }]);
  });

  it('strips a byte order mark and reports progress up to the total size', async () => {
    const text = `\uFEFF${jsonl({ kind: 'user', content: 'a' })}`;
    const seen: number[] = [];
    const source = sourceOf(text, 5);
    const { events, issues } = await collect(source, 'jsonl', { onBytes: (n) => seen.push(n) });
    expect(issues).toEqual([]);
    expect(events).toHaveLength(1);
    expect(seen.at(-1)).toBe(source.sizeBytes);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
  });
});
