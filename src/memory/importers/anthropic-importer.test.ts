import { describe, expect, it } from 'vitest';
import { parseText } from './test-support.js';

const PNG_BASE64 = 'iVBORw0KGgoAAAA=';

/** A conversation in the documented Messages API shape: system prompt, thinking, tools, an image. */
const conversation = {
  model: 'claude-sonnet-4-5',
  max_tokens: 1024,
  system: 'You are a careful coder.',
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'What is in this screenshot, and list the files.' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG_BASE64 } },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'I should list the directory.', signature: 'sig' },
        { type: 'text', text: 'A terminal. Listing files.' },
        { type: 'tool_use', id: 'toolu_1', name: 'bash', input: { command: 'ls -a' } },
        { type: 'tool_use', id: 'toolu_2', name: 'read', input: { path: '/nope' } },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_1', content: 'a.ts\nb.ts' },
        { type: 'tool_result', tool_use_id: 'toolu_2', content: [{ type: 'text', text: 'ENOENT' }, { type: 'text', text: '/nope' }], is_error: true },
      ],
    },
    { role: 'assistant', content: 'Two files.' },
  ],
};

describe('anthropic importer', () => {
  it('maps system, text, thinking, tool use, tool results and images, keyed by message and block', async () => {
    const { events, issues, skips } = await parseText(JSON.stringify(conversation), 'anthropic');
    expect(issues).toEqual([]);
    expect(skips).toEqual([]);
    expect(events.map((e) => e.event)).toEqual([
      { kind: 'system', content: 'You are a careful coder.', key: 'an:system:0' },
      { kind: 'user', content: 'What is in this screenshot, and list the files.', key: 'an:0:0' },
      { kind: 'user', content: '[image: image/png, 11 B]', key: 'an:0:1', binary: { base64: PNG_BASE64, mediaType: 'image/png' } },
      { kind: 'assistant', content: 'I should list the directory.', key: 'an:1:0', tags: ['thinking'] },
      { kind: 'assistant', content: 'A terminal. Listing files.', key: 'an:1:1' },
      { kind: 'tool_call', content: '{"command":"ls -a"}', key: 'an:1:2', toolName: 'bash', toolCallId: 'toolu_1' },
      { kind: 'tool_call', content: '{"path":"/nope"}', key: 'an:1:3', toolName: 'read', toolCallId: 'toolu_2' },
      { kind: 'tool_result', content: 'a.ts\nb.ts', key: 'an:2:0', toolName: 'bash', toolCallId: 'toolu_1' },
      {
        kind: 'tool_result',
        content: 'ENOENT\n/nope',
        key: 'an:2:1',
        toolName: 'read',
        toolCallId: 'toolu_2',
        tags: ['error'],
        meta: { isError: true },
      },
      { kind: 'assistant', content: 'Two files.', key: 'an:3:0' },
    ]);
  });

  it('gives the same keys on a second parse', async () => {
    const text = JSON.stringify(conversation);
    const keys = async (): Promise<unknown[]> => (await parseText(text, 'anthropic')).events.map((e) => e.event.key);
    expect(await keys()).toEqual(await keys());
  });

  it('reads a bare array of messages and system prompt blocks, with message lines', async () => {
    const messages = [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: [{ type: 'text', text: 'hello' }] },
    ];
    const bare = await parseText(JSON.stringify(messages, null, 2), 'anthropic', { sessionId: 'chat-1' });
    expect(bare.events.map((e) => [e.line, e.sessionId, e.event.key])).toEqual([
      [2, 'chat-1', 'an:0:0'],
      [6, 'chat-1', 'an:1:0'],
    ]);
    const withBlocks = await parseText(JSON.stringify({ system: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }], messages }), 'anthropic');
    expect(withBlocks.events.slice(0, 2).map((e) => [e.event.kind, e.event.key])).toEqual([
      ['system', 'an:system:0'],
      ['system', 'an:system:1'],
    ]);
  });

  it('keeps an image inside a tool result as its own tool result event', async () => {
    const messages = [
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'screenshot', input: {} }] },
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 't1',
            content: [
              { type: 'text', text: 'captured' },
              { type: 'image', source: { type: 'base64', media_type: 'image/jpeg', data: PNG_BASE64 } },
            ],
          },
        ],
      },
    ];
    const { events } = await parseText(JSON.stringify({ messages }), 'anthropic');
    expect(events.slice(1).map((e) => e.event)).toEqual([
      { kind: 'tool_result', content: 'captured', key: 'an:1:0', toolName: 'screenshot', toolCallId: 't1' },
      {
        kind: 'tool_result',
        content: '[image: image/jpeg, 11 B]',
        key: 'an:1:0:1',
        toolName: 'screenshot',
        toolCallId: 't1',
        binary: { base64: PNG_BASE64, mediaType: 'image/jpeg' },
      },
    ]);
  });

  it('reads timestamps when present and leaves ts unset otherwise', async () => {
    const messages = [
      { role: 'user', content: 'a', timestamp: 1_700_000_000_000 },
      { role: 'assistant', content: 'b' },
    ];
    const { events } = await parseText(JSON.stringify(messages), 'anthropic');
    expect(events.map((e) => e.event.ts)).toEqual([1_700_000_000_000, undefined]);
  });

  it('reports an unknown block type by field, skips redacted thinking, and keeps the other blocks', async () => {
    const messages = [
      {
        role: 'assistant',
        content: [
          { type: 'redacted_thinking', data: 'opaque' },
          { type: 'hologram', data: 'x' },
          { type: 'text', text: 'kept' },
        ],
      },
    ];
    const { events, issues, skips } = await parseText(JSON.stringify({ messages }), 'anthropic');
    expect(events.map((e) => e.event.key)).toEqual(['an:0:2']);
    expect(issues).toMatchObject([{ line: 1, field: 'messages[0].content[1].type' }]);
    expect(skips).toHaveLength(1);
  });

  it('reports a message with an unsupported role', async () => {
    const { issues } = await parseText(JSON.stringify([{ role: 'tool', content: 'x' }]), 'anthropic');
    expect(issues).toMatchObject([{ field: '[0].role' }]);
  });

  it('reports malformed JSON, an empty file and a document without messages', async () => {
    const malformed = await parseText('{\n"messages": [\n{"role": "user", "content": "a"},,\n]}', 'anthropic');
    expect(malformed.issues).toMatchObject([{ line: 3 }]);
    expect(malformed.issues[0]?.message).toMatch(/^malformed JSON: /);
    expect((await parseText('', 'anthropic')).issues).toEqual([{ line: 0, message: 'the file is empty' }]);
    expect((await parseText('{"model": "x"}', 'anthropic')).issues).toMatchObject([{ line: 1, field: 'messages' }]);
  });
});
