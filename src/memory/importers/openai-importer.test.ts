import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { isEngramError } from '../../errors.js';
import { collect, parseText } from './test-support.js';
import { compactJsonText } from './openai-importer.js';
import { MAX_DOCUMENT_BYTES } from './types.js';
import type { ImportSource } from './types.js';

const PNG_BASE64 = 'iVBORw0KGgo=';

/** A chat in the documented Chat Completions shape, with every role and a tool round trip. */
const chat = [
  { role: 'system', content: 'You are terse.' },
  { role: 'developer', content: 'Prefer metric units.' },
  { role: 'user', content: 'Weather in Oslo?', name: 'ada' },
  {
    role: 'assistant',
    content: null,
    tool_calls: [
      { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{ "city": "Oslo",\n  "days": 1.50e1 }' } },
      { id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{}' } },
    ],
  },
  { role: 'tool', tool_call_id: 'call_1', content: '12 °C, rain' },
  { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: '14:05' }] },
  { role: 'assistant', content: 'Rainy, 12 °C.' },
];

describe('openai importer', () => {
  it('maps every role, tool call and tool result, with keys by conversation, message and part', async () => {
    const { events, issues, skips } = await parseText(JSON.stringify(chat), 'openai');
    expect(issues).toEqual([]);
    expect(skips).toEqual([]);
    expect(events.map((e) => e.event)).toEqual([
      { kind: 'system', content: 'You are terse.', key: 'oa:0:0:0' },
      { kind: 'system', content: 'Prefer metric units.', key: 'oa:0:1:0', meta: { role: 'developer' } },
      { kind: 'user', content: 'Weather in Oslo?', key: 'oa:0:2:0', meta: { name: 'ada' } },
      { kind: 'tool_call', content: '{"city":"Oslo","days":1.50e1}', key: 'oa:0:3:0', toolName: 'get_weather', toolCallId: 'call_1' },
      { kind: 'tool_call', content: '{}', key: 'oa:0:3:1', toolName: 'get_time', toolCallId: 'call_2' },
      { kind: 'tool_result', content: '12 °C, rain', key: 'oa:0:4:0', toolName: 'get_weather', toolCallId: 'call_1' },
      { kind: 'tool_result', content: '14:05', key: 'oa:0:5:0', toolName: 'get_time', toolCallId: 'call_2' },
      { kind: 'assistant', content: 'Rainy, 12 °C.', key: 'oa:0:6:0' },
    ]);
    expect(events.every((e) => e.sessionId === undefined)).toBe(true);
  });

  it('gives the line where each message starts', async () => {
    const text = JSON.stringify({ messages: chat.slice(0, 3) }, null, 2);
    const { events } = await parseText(text, 'openai');
    const lines = text.split('\n');
    for (const e of events) expect(lines[e.line - 1]?.trim()).toBe('{');
    expect(new Set(events.map((e) => e.line)).size).toBe(3);
  });

  it('keeps text next to tool calls, drops an empty text, and numbers parts after the content', async () => {
    const messages = [
      { role: 'assistant', content: 'Let me check.', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'look', arguments: '{"q":1}' } }] },
      { role: 'assistant', content: '', tool_calls: [{ id: 'c2', type: 'function', function: { name: 'look', arguments: 'not json' } }] },
    ];
    const { events } = await parseText(JSON.stringify({ messages }), 'openai');
    expect(events.map((e) => [e.event.key, e.event.kind, e.event.content])).toEqual([
      ['oa:0:0:0', 'assistant', 'Let me check.'],
      ['oa:0:0:1', 'tool_call', '{"q":1}'],
      ['oa:0:1:1', 'tool_call', 'not json'],
    ]);
  });

  it('turns content parts into events in order, with images as binaries', async () => {
    const messages = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is this?' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG_BASE64}`, detail: 'low' } },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
        ],
      },
      { role: 'assistant', content: [{ type: 'refusal', refusal: 'I cannot say.' }] },
    ];
    const { events, issues } = await parseText(JSON.stringify(messages), 'openai');
    expect(issues).toEqual([]);
    expect(events.map((e) => e.event)).toEqual([
      { kind: 'user', content: 'What is this?', key: 'oa:0:0:0' },
      {
        kind: 'user',
        content: '[image: image/png, 8 B]',
        key: 'oa:0:0:1',
        binary: { base64: PNG_BASE64, mediaType: 'image/png' },
        meta: { detail: 'low' },
      },
      { kind: 'user', content: '[image: https://example.com/cat.jpg]', key: 'oa:0:0:2', meta: { url: 'https://example.com/cat.jpg' } },
      { kind: 'assistant', content: 'I cannot say.', key: 'oa:0:1:0', tags: ['refusal'] },
    ]);
  });

  it('puts each conversation of an array in its own session, for messages and traj alike', async () => {
    const doc = [
      { task_id: 7, traj: [{ role: 'user', content: 'first' }] },
      { messages: [{ role: 'user', content: 'second' }] },
    ];
    const { events, issues } = await parseText(JSON.stringify(doc, null, 1), 'openai', { sessionId: 'runs' });
    expect(issues).toEqual([]);
    expect(events.map((e) => [e.sessionId, e.event.key, e.event.content])).toEqual([
      ['runs:0', 'oa:0:0:0', 'first'],
      ['runs:1', 'oa:1:0:0', 'second'],
    ]);
  });

  it('refuses an array of conversations without a base session id', async () => {
    const doc = JSON.stringify([{ traj: [{ role: 'user', content: 'x' }] }]);
    const err = await parseText(doc, 'openai').catch((e: unknown) => e);
    expect(isEngramError(err, 'INVALID_INPUT')).toBe(true);
    expect((err as { data: { field: string } }).data.field).toBe('sessionId');
  });

  it('uses the single conversation session as given, without a suffix', async () => {
    const { events } = await parseText(JSON.stringify({ messages: [{ role: 'user', content: 'x' }] }), 'openai', { sessionId: 's1' });
    expect(events[0]?.sessionId).toBe('s1');
  });

  it('reads a timestamp when the message has one', async () => {
    const { events } = await parseText(JSON.stringify([{ role: 'user', content: 'x', timestamp: '2025-03-04T05:06:07Z' }, { role: 'user', content: 'y' }]), 'openai');
    expect(events.map((e) => e.event.ts)).toEqual(['2025-03-04T05:06:07Z', undefined]);
  });

  it('reads the deprecated function_call and function replies, audio and file parts', async () => {
    const messages = [
      {
        role: 'user',
        content: [
          { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } },
          { type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERg==' } },
        ],
      },
      { role: 'assistant', content: null, function_call: { name: 'lookup', arguments: '{"id": 3}' } },
      { role: 'function', name: 'lookup', content: 'found' },
    ];
    const { events, issues } = await parseText(JSON.stringify(messages), 'openai');
    expect(issues).toEqual([]);
    expect(events.map((e) => e.event)).toEqual([
      { kind: 'user', content: '[audio: audio/wav, 3 B]', key: 'oa:0:0:0', binary: { base64: 'AAAA', mediaType: 'audio/wav' } },
      {
        kind: 'user',
        content: '[file "a.pdf": application/pdf, 4 B]',
        key: 'oa:0:0:1',
        binary: { base64: 'JVBERg==', mediaType: 'application/pdf', caption: 'a.pdf' },
      },
      { kind: 'tool_call', content: '{"id":3}', key: 'oa:0:1:0', toolName: 'lookup' },
      { kind: 'tool_result', content: 'found', key: 'oa:0:2:0', toolName: 'lookup' },
    ]);
  });

  it('falls back to the name on a tool reply whose call is not in the conversation', async () => {
    const { events } = await parseText(JSON.stringify([{ role: 'tool', tool_call_id: 'gone', name: 'search', content: 'r' }]), 'openai');
    expect(events[0]?.event).toMatchObject({ kind: 'tool_result', toolName: 'search', toolCallId: 'gone' });
  });

  it('reports an unknown role and an unknown part type by field, and skips an empty assistant turn', async () => {
    const messages = [
      { role: 'robot', content: 'x' },
      { role: 'user', content: [{ type: 'hologram' }] },
      { role: 'assistant', content: null },
      { role: 'user', content: 'still read' },
    ];
    const { events, issues, skips } = await parseText(JSON.stringify(messages, null, 2), 'openai');
    expect(events.map((e) => e.event.content)).toEqual(['still read']);
    expect(issues.map((i) => i.field)).toEqual(['[0].role', '[1].content[0].type']);
    expect(issues.map((i) => i.line)).toEqual([2, 6]);
    expect(skips).toHaveLength(1);
  });

  it('reports malformed JSON at the line where it breaks, with the parser message', async () => {
    const text = '[\n  {"role": "user", "content": "a"},\n  {"role": "user" "content": "b"}\n]';
    const { events, issues } = await parseText(text, 'openai');
    expect(events).toEqual([]);
    expect(issues).toHaveLength(1);
    expect(issues[0]?.line).toBe(3);
    expect(issues[0]?.message).toMatch(/^malformed JSON: \S/);
  });

  it('reports invalid UTF-8 with its line', async () => {
    const bytes = Buffer.concat([Buffer.from('[\n{"role": "user",\n "content": "'), Buffer.from([0xff]), Buffer.from('"}]')]);
    const { issues } = await parseText(bytes, 'openai');
    expect(issues).toEqual([{ line: 3, message: 'line 3 is not valid UTF-8: byte 0xff at byte 14 of the line' }]);
  });

  it('reports an empty file', async () => {
    expect(await parseText('  \n', 'openai')).toEqual({ events: [], skips: [], issues: [{ line: 0, message: 'the file is empty' }] });
  });

  it('refuses a document over the size limit without reading it', async () => {
    let opened = 0;
    const source: ImportSource = {
      sizeBytes: MAX_DOCUMENT_BYTES + 1,
      stream: () => {
        opened += 1;
        return Readable.from([]);
      },
    };
    const { issues } = await collect(source, 'openai');
    expect(opened).toBe(0);
    expect(issues).toHaveLength(1);
    expect(issues[0]?.message).toMatch(/documents over 256 MiB are not read whole/);
  });

  it('stops reading a stream of unknown size once it passes the size limit', async () => {
    const chunk = Buffer.alloc(64 * 1024 * 1024, 0x20); // one buffer yielded again and again: no real 256 MiB
    let served = 0;
    const source: ImportSource = {
      stream: async function* () {
        for (;;) {
          served += 1;
          yield chunk;
        }
      },
    };
    const { issues } = await collect(source, 'openai');
    expect(served).toBe(5);
    expect(issues).toMatchObject([{ line: 0 }]);
  });
});

describe('compactJsonText', () => {
  it('removes whitespace between tokens and keeps strings and number text exactly', () => {
    expect(compactJsonText('{ "a b": "x \\" y",\n "n": 12345678901234567890, "f": 1.0 }')).toBe('{"a b":"x \\" y","n":12345678901234567890,"f":1.0}');
  });

  it('returns null for text that is not JSON', () => {
    expect(compactJsonText('{oops')).toBeNull();
  });
});
