import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_INLINE_CONTENT_BYTES } from '../../model/limits.js';
import { parseText } from './test-support.js';

const FIXTURE = resolve(process.cwd(), 'test/fixtures/transcripts/swe-agent-textkit__textkit-231.traj');
const traj = (): string => readFileSync(FIXTURE, 'utf8');

describe('swe-agent importer', () => {
  it('maps the task, each step as thought, tool call and full observation, and the submission', async () => {
    const { events, issues, skips } = await parseText(traj(), 'swe-agent');
    expect(issues).toEqual([]);
    expect(skips.map((s) => s.reason)).toEqual(['SWE-agent demonstration message is not imported']);
    const kinds = events.map((e) => [e.event.key, e.event.kind, e.event.toolName ?? null, e.event.toolCallId ?? null]);
    expect(kinds).toEqual([
      ['swe:h:0', 'system', null, null],
      ['swe:h:2', 'user', null, null],
      ['swe:t:0:0', 'assistant', null, null],
      ['swe:t:0:1', 'tool_call', 'bash', 'toolu_01Fg7kLm2Qw'],
      ['swe:t:0:2', 'tool_result', 'bash', 'toolu_01Fg7kLm2Qw'],
      // Step 1 has no thought.
      ['swe:t:1:1', 'tool_call', 'str_replace_editor', 'toolu_02Vb8nHs4Rt'],
      ['swe:t:1:2', 'tool_result', 'str_replace_editor', 'toolu_02Vb8nHs4Rt'],
      ['swe:t:2:0', 'assistant', null, null],
      ['swe:t:2:1', 'tool_call', 'str_replace_editor', 'toolu_03Pq5cWe9Yx'],
      ['swe:t:2:2', 'tool_result', 'str_replace_editor', 'toolu_03Pq5cWe9Yx'],
      ['swe:t:3:0', 'assistant', null, null],
      ['swe:t:3:1', 'tool_call', 'bash', 'toolu_04Zr3dJk6Mn'],
      ['swe:t:3:2', 'tool_result', 'bash', 'toolu_04Zr3dJk6Mn'],
      ['swe:t:4:0', 'assistant', null, null],
      ['swe:t:4:1', 'tool_call', 'submit', 'toolu_05Hn2xTb7Ls'],
      ['swe:t:4:2', 'tool_result', 'submit', 'toolu_05Hn2xTb7Ls'],
      ['swe:submission', 'note', null, null],
    ]);
    const byKey = new Map(events.map((e) => [e.event.key, e.event]));
    expect(byKey.get('swe:h:0')).toEqual({ kind: 'system', content: expect.stringMatching(/^You are a helpful assistant/), key: 'swe:h:0', meta: { messageType: 'system_prompt' } });
    expect(byKey.get('swe:h:2')?.content).toContain('<pr_description>');
    expect(byKey.get('swe:t:0:1')?.content).toBe('grep -rn "def slugify" /testbed/textkit');
    // The observation in full, not the history's templated copy.
    expect(byKey.get('swe:t:3:2')).toEqual({
      kind: 'tool_result',
      content: 'rocknroll-4ever',
      key: 'swe:t:3:2',
      toolName: 'bash',
      toolCallId: 'toolu_04Zr3dJk6Mn',
      meta: { executionTimeSeconds: 0.412, workingDir: '/testbed', openFile: '/testbed/textkit/slug.py' },
    });
    expect(byKey.get('swe:t:0:2')?.meta).toEqual({ executionTimeSeconds: 0.214, workingDir: '/testbed' });
    expect(byKey.get('swe:submission')).toMatchObject({ content: expect.stringContaining('+_STRIP = re.compile'), tags: ['submission'], meta: { exitStatus: 'submitted' } });
    expect(events.every((e) => e.sessionId === undefined)).toBe(true);
  });

  it('gives each step the line where it starts, and the history message its own', async () => {
    const text = traj();
    const lines = text.split('\n');
    const { events } = await parseText(text, 'swe-agent');
    const lineOf = (key: string): number => events.find((e) => e.event.key === key)?.line ?? 0;
    expect(lines[lineOf('swe:t:0:1')]).toBe('      "action": "grep -rn \\"def slugify\\" /testbed/textkit",');
    expect(lines[lineOf('swe:t:4:2')]).toBe('      "action": "submit",');
    expect(lines[lineOf('swe:h:0')]).toBe('      "role": "system",');
    expect(lines[lineOf('swe:submission') - 1]).toBe('  "info": {');
  });

  it('reads a 0.x trajectory: no tool calls, the state as JSON text, the environment first', async () => {
    const old = {
      environment: 'swe_main',
      trajectory: [
        { action: 'ls -F\n', observation: 'AUTHORS.rst\nsrc/', response: 'DISCUSSION\nList files.\n\n```\nls -F\n```', thought: 'List files.\n', execution_time: 0.05, state: '{"open_file": "n/a", "working_dir": "/marshmallow"}' },
        { action: '', observation: '', response: 'oops', thought: 'Exit due to cost limit', execution_time: 0, state: '{}' },
      ],
      history: [
        { role: 'system', content: 'SETTING: ...', agent: 'primary' },
        { role: 'user', content: 'ISSUE: ...', agent: 'primary' },
        { role: 'assistant', content: 'DISCUSSION ...', thought: 'List files.\n', action: 'ls -F\n', agent: 'primary' },
        { role: 'user', content: 'AUTHORS.rst\nsrc/\n(Open file: n/a)', agent: 'primary' },
      ],
      info: { exit_status: 'exit_cost' },
    };
    const { events, issues, skips } = await parseText(JSON.stringify(old, null, 2), 'swe-agent', { sessionId: 'marshmallow-1359' });
    expect(issues).toEqual([]);
    expect(skips).toEqual([]);
    expect(events.map((e) => e.event)).toEqual([
      { kind: 'system', content: 'SETTING: ...', key: 'swe:h:0' },
      { kind: 'user', content: 'ISSUE: ...', key: 'swe:h:1' },
      { kind: 'assistant', content: 'List files.\n', key: 'swe:t:0:0' },
      { kind: 'tool_call', content: 'ls -F\n', key: 'swe:t:0:1', toolName: 'bash', toolCallId: 'swe-step-0' },
      { kind: 'tool_result', content: 'AUTHORS.rst\nsrc/', key: 'swe:t:0:2', toolName: 'bash', toolCallId: 'swe-step-0', meta: { executionTimeSeconds: 0.05, workingDir: '/marshmallow' } },
      { kind: 'assistant', content: 'Exit due to cost limit', key: 'swe:t:1:0' },
    ]);
    expect(new Set(events.map((e) => e.sessionId))).toEqual(new Set(['marshmallow-1359']));
  });

  it('skips the other attempts of a retrying agent and a submission too large for a note', async () => {
    const step = { action: 'submit', observation: 'diff', thought: '' };
    const doc = {
      attempts: [{ trajectory: [step], history: [], info: {} }, { trajectory: [step], history: [], info: {} }],
      trajectory: [step],
      history: [],
      info: { submission: 'x'.repeat(MAX_INLINE_CONTENT_BYTES + 1), exit_status: 'submitted' },
    };
    const { events, skips } = await parseText(JSON.stringify(doc, null, 2), 'swe-agent');
    expect(events.map((e) => e.event.key)).toEqual(['swe:t:0:1', 'swe:t:0:2']);
    expect(skips.map((s) => s.reason)).toEqual([
      'SWE-agent retry attempt is not imported (the chosen attempt is the top-level trajectory)',
      'SWE-agent retry attempt is not imported (the chosen attempt is the top-level trajectory)',
      'SWE-agent submission over 384.0 KB is not imported as a note',
    ]);
  });

  it('names the field of bad steps and messages and reads on', async () => {
    const doc = {
      trajectory: [{ action: 'ls', observation: 'a' }, 'oops', { action: ['ls'], observation: '' }, { action: 'ls', observation: { out: 'a' } }],
      history: [{ role: 'system', content: 's' }, { role: 'narrator', content: 'x' }, { role: 'user', content: 42 }, 7],
    };
    const text = JSON.stringify(doc, null, 2);
    const { events, issues } = await parseText(text, 'swe-agent');
    expect(events.map((e) => e.event.key)).toEqual(['swe:h:0', 'swe:t:0:1', 'swe:t:0:2']);
    expect(issues.map((i) => [i.field, i.message])).toEqual([
      ['history[1].role', 'history[1].role: expected system, user or assistant, got "narrator"'],
      ['history[2].content', 'history[2].content: expected a string or an array of text parts'],
      ['history[3]', 'history[3]: a history message must be an object'],
      ['trajectory[1]', 'trajectory[1]: a step must be an object'],
      ['trajectory[2].action', 'trajectory[2].action: expected a string'],
      ['trajectory[3].observation', 'trajectory[3].observation: expected a string'],
    ]);
    const lines = text.split('\n');
    for (const i of issues) expect(lines[i.line - 1]?.trim()).toMatch(/^(?:\{|"oops",|7)$/);
  });

  it('refuses a document that is not a trajectory, and reports an empty file', async () => {
    expect((await parseText('{"history": []}', 'swe-agent')).issues).toEqual([
      { line: 1, message: 'trajectory: expected a SWE-agent trajectory, an object with a trajectory array', field: 'trajectory' },
    ]);
    expect((await parseText('[]', 'swe-agent')).issues).toHaveLength(1);
    expect(await parseText('', 'swe-agent')).toEqual({ events: [], skips: [], issues: [{ line: 0, message: 'the file is empty' }] });
  });
});
