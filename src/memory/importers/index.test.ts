import { describe, expect, it } from 'vitest';
import { detectFormat, IMPORT_FORMATS, parseImport } from './index.js';
import { jsonl, sourceOf } from './test-support.js';

describe('detectFormat', () => {
  it('detects Claude Code JSONL from a summary, user or assistant first line', () => {
    expect(detectFormat(jsonl({ type: 'summary', summary: 's', leafUuid: 'u1' }))).toBe('claude-code');
    expect(detectFormat(jsonl({ type: 'user', uuid: 'u1', sessionId: 's', message: { role: 'user', content: 'x' } }))).toBe('claude-code');
  });

  it('looks past leading Claude Code records of other types', () => {
    const text = jsonl({ type: 'file-history-snapshot', messageId: 'm', snapshot: {} }, { type: 'assistant', uuid: 'u2', sessionId: 's' });
    expect(detectFormat(text)).toBe('claude-code');
  });

  it('detects Engram JSONL by kind, even when the chunk ends mid-line', () => {
    expect(detectFormat(`${jsonl({ kind: 'user', content: 'a' })}{"kind": "ass`)).toBe('jsonl');
  });

  it('detects an OpenAI chat by tool calls, tool roles or traj', () => {
    expect(detectFormat(JSON.stringify({ messages: [{ role: 'system', content: 'x' }, { role: 'user', content: 'y' }] }, null, 2))).toBe('openai');
    const calls = [{ role: 'user', content: 'x' }, { role: 'assistant', content: null, tool_calls: [] }];
    expect(detectFormat(JSON.stringify(calls))).toBe('openai');
    // A tau-bench file cut off mid-document, as a first chunk is.
    const tau = JSON.stringify([{ task_id: 0, info: { task: { instruction: 'fly' } }, traj: [{ role: 'system', content: 'policy' }] }], null, 2);
    expect(detectFormat(tau.slice(0, tau.length - 20))).toBe('openai');
  });

  it('detects an Anthropic chat by content blocks or a top-level system field', () => {
    const blocks = [
      { role: 'user', content: 'x' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'n', input: {} }] },
    ];
    expect(detectFormat(JSON.stringify(blocks, null, 2))).toBe('anthropic');
    expect(detectFormat(JSON.stringify({ system: 'be brief', messages: [{ role: 'user', content: 'x' }] }))).toBe('anthropic');
  });

  it('calls a chat with only plain text turns openai', () => {
    expect(detectFormat(JSON.stringify([{ role: 'user', content: 'x' }, { role: 'assistant', content: 'y' }]))).toBe('openai');
  });

  it('detects a Codex rollout, with or without the envelope, and when its first line is longer than the chunk', () => {
    const meta = { timestamp: '2025-10-14T09:12:03.481Z', type: 'session_meta', payload: { id: 's', cwd: '/r', base_instructions: { text: 'x'.repeat(100) } } };
    const item = { timestamp: '2025-10-14T09:12:04.000Z', type: 'response_item', payload: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] } };
    expect(detectFormat(jsonl(meta, item))).toBe('codex');
    // The session_meta line cut off inside its base instructions, as a 64 KiB chunk cuts a long one.
    expect(detectFormat(JSON.stringify(meta).slice(0, 150))).toBe('codex');
    const legacy = jsonl(
      { id: '5973b6c0', timestamp: '2025-06-02T17:24:21.000Z', instructions: null },
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] },
    );
    expect(detectFormat(legacy)).toBe('codex');
    expect(detectFormat(jsonl({ type: 'function_call', name: 'shell', arguments: '{}', call_id: 'c1' }))).toBe('codex');
  });

  it('detects an OpenHands event stream as a JSON array (cut off mid-document) or as JSON Lines', () => {
    const events = [
      { id: 0, timestamp: '2025-05-21T14:03:01.002117', source: 'agent', message: 'sys', action: 'system', args: { content: 'You are OpenHands agent' } },
      {
        id: 5,
        source: 'agent',
        action: 'run',
        tool_call_metadata: { function_name: 'execute_bash', tool_call_id: 't1', model_response: { choices: [{ message: { role: 'assistant', content: 'x' } }] } },
        args: { command: 'ls' },
      },
      { id: 6, source: 'agent', cause: 5, observation: 'run', content: 'a.txt', extras: {} },
    ];
    const pretty = JSON.stringify(events, null, 2);
    expect(detectFormat(pretty)).toBe('openhands');
    expect(detectFormat(pretty.slice(0, pretty.length - 40))).toBe('openhands');
    expect(detectFormat(jsonl(...events))).toBe('openhands');
    // A stream that starts with an observation (an event file of a session directory) is still OpenHands.
    expect(detectFormat(jsonl(events[2]))).toBe('openhands');
  });

  it('detects a SWE-agent trajectory: pretty-printed and cut off, on one line, from 0.x, of a retrying agent', () => {
    const step = { action: 'ls -F\n', observation: 'src/', response: 'r', thought: 't', execution_time: 0.1, state: {}, query: [{ role: 'system', content: 's' }] };
    const doc = { trajectory: [step], history: [{ role: 'system', content: 's' }], info: { exit_status: 'submitted' } };
    const pretty = JSON.stringify(doc, null, 2);
    expect(detectFormat(pretty.slice(0, 120))).toBe('swe-agent');
    expect(detectFormat(JSON.stringify(doc))).toBe('swe-agent');
    expect(detectFormat(JSON.stringify({ environment: 'swe_main', ...doc }, null, 2))).toBe('swe-agent');
    expect(detectFormat(JSON.stringify({ attempts: [doc], ...doc }, null, 2))).toBe('swe-agent');
  });

  it('keeps detecting chats as chats when their text mentions OpenHands or SWE-agent fields', () => {
    const chat = [
      { role: 'user', content: 'run it' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'c', content: 'ok', source: 'agent', action: 'run' },
    ];
    expect(detectFormat(JSON.stringify(chat, null, 2))).toBe('openai');
    const anthropic = [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 'x' }], source: 'user', observation: 'run' }];
    expect(detectFormat(JSON.stringify(anthropic))).toBe('anthropic');
    // A chat whose messages come before a `trajectory` key stays a chat.
    expect(detectFormat(JSON.stringify({ messages: [{ role: 'user', content: 'x' }], trajectory: [] }, null, 2))).toBe('openai');
  });

  it('keeps detecting the older formats as before next to Codex-like lines', () => {
    // An Engram JSONL line with a Codex-like `type` field is still Engram JSONL, a Claude Code record still Claude Code.
    expect(detectFormat(jsonl({ kind: 'note', content: 'x', type: 'response_item', payload: {} }))).toBe('jsonl');
    expect(detectFormat(jsonl({ kind: 'note', content: 'x', source: 'user', action: 'message' }))).toBe('jsonl');
    expect(detectFormat(jsonl({ type: 'assistant', uuid: 'u', sessionId: 's', message: { type: 'message', role: 'assistant', content: [] } }))).toBe('claude-code');
    // Chat Completions messages are not bare Codex items: their content parts are `text`, not `input_text`.
    expect(detectFormat(jsonl({ type: 'message', role: 'user', content: [{ type: 'text', text: 'x' }] }))).toBeNull();
  });

  it('detects an OpenHands evaluation output whole, and from the start of a first line cut off', () => {
    const instance = {
      instance_id: 'ledgerly__ledgerly-88',
      test_result: { git_patch: 'diff' },
      instruction: 'fix it',
      metadata: { agent_class: 'CodeActAgent', llm_config: { model: 'm' } },
      // The LLM response inside tool_call_metadata holds `role` keys: what made the file look like an OpenAI chat.
      history: [{ id: 1, source: 'agent', action: 'run', args: {}, tool_call_metadata: { model_response: { choices: [{ message: { role: 'assistant' } }] } } }],
    };
    expect(detectFormat(jsonl(instance, instance))).toBe('openhands');
    expect(detectFormat(JSON.stringify(instance).slice(0, 100))).toBe('openhands');
    // Python's json.dumps writes a space after the colon.
    expect(detectFormat('{"instance_id": "x", "instruction": "y", "history": [{"id": 0, "mess')).toBe('openhands');
  });

  it('detects a Gemini CLI chat: indented (.json), on one line, or as JSON Lines with a header', () => {
    const chat = { sessionId: 's', projectHash: 'h', startTime: 't', lastUpdated: 'u', messages: [{ id: 'm', timestamp: 't', type: 'user', content: 'hi' }] };
    const pretty = JSON.stringify(chat, null, 2);
    expect(detectFormat(pretty)).toBe('gemini');
    expect(detectFormat(pretty.slice(0, 130))).toBe('gemini');
    expect(detectFormat(JSON.stringify(chat))).toBe('gemini');
    expect(detectFormat(jsonl({ sessionId: 's', projectHash: 'h', startTime: 't', lastUpdated: 'u', kind: 'main' }, chat.messages[0]))).toBe('gemini');
    // Not the other formats that name a sessionId.
    expect(detectFormat(jsonl({ kind: 'user', content: 'x', sessionId: 's' }))).toBe('jsonl');
    expect(detectFormat(jsonl({ type: 'user', sessionId: 's', uuid: 'u', projectHash: 'h' }))).toBe('claude-code');
  });

  it('returns null for what it does not recognise', () => {
    expect(detectFormat('')).toBeNull();
    expect(detectFormat('hello world')).toBeNull();
    expect(detectFormat(jsonl({ a: 1 }, { b: 2 }))).toBeNull();
    expect(detectFormat('[1, 2, 3]')).toBeNull();
  });
});

describe('parseImport', () => {
  it('accepts every listed format', async () => {
    for (const format of IMPORT_FORMATS) {
      const items = [];
      for await (const item of parseImport(sourceOf(''), format)) items.push(item);
      expect(items).toEqual([{ type: 'issue', value: { line: 0, message: 'the file is empty' } }]);
    }
  });

  it('reads from a plain async iterable of strings', async () => {
    const source = {
      stream: async function* () {
        yield '{"kind": "user", "cont';
        yield 'ent": "é"}\n';
      },
    };
    const items = [];
    for await (const item of parseImport(source, 'jsonl')) items.push(item);
    expect(items).toMatchObject([{ type: 'event', value: { line: 1, event: { kind: 'user', content: 'é' } } }]);
  });
});
