import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { jsonl, parseText } from './test-support.js';

const FIXTURES = resolve(process.cwd(), 'test/fixtures/transcripts');
const fixture = (name: string): string => readFileSync(resolve(FIXTURES, name), 'utf8');

const ts = (seconds: string): string => `2025-05-21T14:03:${seconds}`;
const skipsOfFixture = [
  "OpenHands action 'recall' is not imported",
  "OpenHands observation 'agent_state_changed' is not imported",
  "OpenHands observation 'recall' is not imported",
  "OpenHands observation 'think' is not imported",
  "OpenHands observation 'agent_state_changed' is not imported",
];

describe('openhands importer', () => {
  it('maps a saved trajectory: messages, thoughts, tool calls paired with their observations by cause, and the shell working directory from the first command on', async () => {
    const { events, issues, skips } = await parseText(fixture('openhands-trajectory.json'), 'openhands');
    expect(issues).toEqual([]);
    expect(skips.map((s) => s.reason)).toEqual(skipsOfFixture);
    expect(events.every((e) => e.sessionId === undefined)).toBe(true);
    expect(events.map((e) => e.event)).toEqual([
      {
        kind: 'system',
        content: expect.stringMatching(/^You are OpenHands agent/),
        key: 'oh:0:0',
        ts: ts('01.002117'),
        meta: { agentClass: 'CodeActAgent', openhandsVersion: '0.39.1' },
      },
      { kind: 'user', content: 'Add a --dry-run flag to scripts/rotate_logs.py that lists what would be deleted.', key: 'oh:1:0', ts: ts('01.310554') },
      { kind: 'assistant', content: 'Let me see how the script parses its arguments.', key: 'oh:5:0', ts: ts('06.120443') },
      {
        kind: 'tool_call',
        content: JSON.stringify({
          command: 'grep -n "argparse\\|add_argument" scripts/rotate_logs.py',
          is_input: false,
          blocking: false,
          is_static: false,
          cwd: null,
          hidden: false,
          confirmation_state: 'confirmed',
        }),
        key: 'oh:5:1',
        ts: ts('06.120443'),
        toolName: 'execute_bash',
        toolCallId: 'toolu_01Rq8sVfXb2Lm',
        meta: { action: 'run' },
      },
      {
        kind: 'tool_result',
        content: expect.stringContaining('parser.add_argument("--days", type=int, default=14)'),
        key: 'oh:6:0',
        ts: ts('06.845930'),
        toolName: 'execute_bash',
        toolCallId: 'toolu_01Rq8sVfXb2Lm',
        meta: { cwd: '/workspace', observation: 'run', exitCode: 0 },
      },
      {
        kind: 'tool_call',
        content: expect.stringContaining('"command":"str_replace"'),
        key: 'oh:7:1',
        ts: ts('12.402118'),
        toolName: 'str_replace_editor',
        toolCallId: 'toolu_02Kp4wNz7Hc',
        meta: { cwd: '/workspace', action: 'edit' },
      },
      {
        kind: 'tool_result',
        content: expect.stringContaining('has been edited'),
        key: 'oh:8:0',
        ts: ts('12.530074'),
        toolName: 'str_replace_editor',
        toolCallId: 'toolu_02Kp4wNz7Hc',
        meta: { cwd: '/workspace', observation: 'edit', path: '/workspace/scripts/rotate_logs.py' },
      },
      { kind: 'assistant', content: 'Is there a test file?', key: 'oh:9:0', ts: ts('15.004551'), meta: { cwd: '/workspace' } },
      {
        kind: 'tool_call',
        content: '{"path":"/workspace/tests/test_rotate_logs.py","start":0,"end":-1,"impl_source":"oh_aci","view_range":null}',
        key: 'oh:9:1',
        ts: ts('15.004551'),
        toolName: 'str_replace_editor',
        toolCallId: 'toolu_03Zt6yGm1Qd',
        meta: { cwd: '/workspace', action: 'read' },
      },
      {
        kind: 'tool_result',
        content: expect.stringContaining('does not exist'),
        key: 'oh:10:0',
        ts: ts('15.088127'),
        toolName: 'str_replace_editor',
        toolCallId: 'toolu_03Zt6yGm1Qd',
        tags: ['error'],
        meta: { cwd: '/workspace', observation: 'error', isError: true },
      },
      { kind: 'assistant', content: expect.stringContaining('skip os.remove'), key: 'oh:11:0', ts: ts('18.771903'), tags: ['thinking'], meta: { cwd: '/workspace' } },
      {
        kind: 'assistant',
        content: expect.stringMatching(/^Added --dry-run/),
        key: 'oh:13:0',
        ts: ts('25.310006'),
        tags: ['finish'],
        meta: { cwd: '/workspace', taskCompleted: 'true' },
      },
    ]);
  });

  it('gives each event the line where it starts in the array', async () => {
    const text = fixture('openhands-trajectory.json');
    const lines = text.split('\n');
    const { events } = await parseText(text, 'openhands');
    for (const e of events) expect(lines[e.line - 1]).toBe('  {');
    // The line after the opening brace (lines is 0-based, line numbers 1-based).
    expect(lines[events.find((e) => e.event.key === 'oh:6:0')?.line ?? 0]).toBe('    "id": 6,');
  });

  it('reads the same events from JSON Lines, one event per line', async () => {
    const fromArray = await parseText(fixture('openhands-trajectory.json'), 'openhands');
    const fromLines = await parseText(fixture('openhands-events.jsonl'), 'openhands');
    expect(fromLines.issues).toEqual([]);
    expect(fromLines.events.map((e) => e.event)).toEqual(fromArray.events.map((e) => e.event));
    expect(fromLines.skips.map((s) => s.reason)).toEqual(skipsOfFixture);
    expect(fromLines.events.map((e) => e.line)).toEqual([1, 2, 6, 6, 7, 8, 9, 10, 10, 11, 12, 14]);
  });

  it("uses the caller's session", async () => {
    const { events } = await parseText(fixture('openhands-events.jsonl'), 'openhands', { sessionId: 'oh-run-1' });
    expect(new Set(events.map((e) => e.sessionId))).toEqual(new Set(['oh-run-1']));
  });

  it('pairs by cause without LLM metadata, keeps images of a message and maps uncaused observations', async () => {
    const text = jsonl(
      { id: 1, source: 'user', action: 'message', args: { content: 'see screenshot', image_urls: ['data:image/png;base64,iVBORw0KGgo=', 'https://example.com/a.png'] } },
      { id: 2, source: 'user', action: 'run', args: { command: 'ls', thought: '' } },
      { id: 3, source: 'environment', cause: 2, observation: 'run', content: 'a.txt', extras: { command: 'ls', exit_code: 2 } },
      { id: 4, source: 'user', observation: 'chat', content: 'old-style user chat' },
      { id: 5, source: 'environment', observation: 'error', content: 'runtime lost' },
      { id: 6, source: 'agent', action: 'condensation', args: { forgotten_event_ids: [1, 2], summary: 'User wants ls output.' } },
      { id: 7, source: 'agent', observation: 'run', content: 'orphan' },
      { source: 'agent', action: 'change_agent_state', args: { agent_state: 'paused' } },
    );
    const { events, issues, skips } = await parseText(text, 'openhands');
    expect(issues).toEqual([]);
    expect(events.map((e) => e.event)).toEqual([
      { kind: 'user', content: 'see screenshot', key: 'oh:1:0' },
      { kind: 'user', content: '[image: image/png, 8 B]', key: 'oh:1:1', binary: { base64: 'iVBORw0KGgo=', mediaType: 'image/png' } },
      { kind: 'user', content: '[image: https://example.com/a.png]', key: 'oh:1:2', meta: { url: 'https://example.com/a.png' } },
      { kind: 'tool_call', content: '{"command":"ls"}', key: 'oh:2:1', toolName: 'run', toolCallId: 'oh-2', meta: { action: 'run', source: 'user' } },
      { kind: 'tool_result', content: 'a.txt', key: 'oh:3:0', toolName: 'run', toolCallId: 'oh-2', meta: { observation: 'run', exitCode: 2 } },
      { kind: 'user', content: 'old-style user chat', key: 'oh:4:0' },
      { kind: 'system', content: 'runtime lost', key: 'oh:5:0', tags: ['error'], meta: { observation: 'error' } },
      { kind: 'note', content: 'User wants ls output.', key: 'oh:6:0', tags: ['summary'] },
    ]);
    expect(skips).toEqual([
      { line: 7, reason: "OpenHands observation 'run' without a matching action is not imported" },
      { line: 8, reason: "OpenHands action 'change_agent_state' is not imported" },
    ]);
  });

  it('names the line and field of bad events and reads on', async () => {
    const text = jsonl(
      { id: 1, source: 'user', action: 'message', args: { content: 'ok' } },
      { id: 2, source: 'user' },
      { id: 3, source: 'robot', action: 'message', args: { content: 'x' } },
      { id: 4, source: 'agent', action: 'message', args: { text: 'x' } },
      { id: 5, source: 'agent', action: 'run', args: 'ls' },
      { id: 6, source: 'agent', observation: 'run', content: { stdout: 'x' } },
      '{"id": 7, "source": ',
      'null',
    );
    const { events, issues } = await parseText(text, 'openhands');
    expect(events.map((e) => e.line)).toEqual([1]);
    expect(issues.map((i) => [i.line, i.field ?? null])).toEqual([
      [2, 'action'],
      [3, 'source'],
      [4, 'args.content'],
      [5, 'args'],
      [6, 'content'],
      [7, null],
      [8, null],
    ]);
    expect(issues[0]?.message).toBe('action: an OpenHands event needs a string action or observation');
    expect(issues[1]?.message).toBe('source: expected user, agent or environment, got "robot"');
  });

  it('names the array element of a bad event, and refuses a document that is not an array of events', async () => {
    const text = JSON.stringify([{ id: 0, source: 'user', action: 'message', args: { content: 'ok' } }, 'oops', { id: 2, source: 'agent' }], null, 2);
    const { issues } = await parseText(text, 'openhands');
    expect(issues).toEqual([
      { line: 10, message: '[1]: an OpenHands event must be an object', field: '[1]' },
      { line: 11, message: '[2].action: an OpenHands event needs a string action or observation', field: '[2].action' },
    ]);
    expect((await parseText('[\n  {"id": 1,\n', 'openhands')).issues).toEqual([{ line: 3, message: expect.stringMatching(/^malformed JSON/) }]);
    expect((await parseText('[]', 'openhands')).issues).toEqual([{ line: 1, message: 'the document holds no events' }]);
  });

  it('reads an evaluation output: each instance a session, tool calls paired with their observations, the patch as a note', async () => {
    const { events, issues, skips } = await parseText(fixture('openhands-output.jsonl'), 'openhands');
    expect(issues).toEqual([]);
    expect(skips.map((s) => s.reason)).toEqual([
      "OpenHands action 'recall' is not imported",
      "OpenHands observation 'recall' is not imported",
      "OpenHands observation 'agent_state_changed' is not imported",
      "OpenHands observation 'null' is not imported",
      "OpenHands observation 'null' is not imported",
    ]);
    const first = events.filter((e) => e.sessionId === 'ledgerly__ledgerly-88');
    const second = events.filter((e) => e.sessionId === 'ledgerly__ledgerly-91');
    expect(first.length + second.length).toBe(events.length);
    expect(first.map((e) => [e.event.kind, e.event.toolName ?? null])).toEqual([
      ['system', null],
      ['user', null],
      ['assistant', null],
      ['tool_call', 'execute_bash'],
      ['tool_result', 'execute_bash'],
      ['assistant', null],
      ['tool_call', 'str_replace_editor'],
      ['tool_result', 'str_replace_editor'],
      ['tool_call', 'execute_bash'],
      ['tool_result', 'execute_bash'],
      ['assistant', null],
      ['note', null],
    ]);
    const callIds = (kind: string) => events.filter((e) => e.event.kind === kind).map((e) => e.event.toolCallId);
    expect(callIds('tool_result')).toEqual(callIds('tool_call'));
    expect(callIds('tool_call')).toEqual(['toolu_01LgR8aVd2Qx', 'toolu_02Hq5mWc8Nz', 'toolu_03Tz6yGm1Qd', 'oh-3']);
    expect(first[3]?.event.meta).toEqual({ model: 'anthropic/claude-3-7-sonnet-20250219', action: 'run' });
    // The working directory is known from the first command's observation on.
    expect(first.map((e) => e.event.meta?.cwd ?? null)).toEqual([null, null, null, null, ...Array(7).fill('/workspace/ledgerly__ledgerly__0.4'), null]);
    expect(first[11]?.event).toMatchObject({ kind: 'note', tags: ['patch'], content: expect.stringMatching(/^diff --git a\/ledgerly\/ledger.py/) });
    expect(first.every((e) => e.line === 1) && second.every((e) => e.line === 2)).toBe(true);

    // An older output: [action, observation] pairs, the observation without a cause; an error.
    expect(second.map((e) => [e.event.kind, e.event.tags ?? []])).toEqual([
      ['user', []],
      ['assistant', []],
      ['tool_call', []],
      ['tool_result', []],
      ['assistant', ['finish']],
      ['system', ['error']],
    ]);
    expect(second[3]?.event).toMatchObject({ content: '30:    def add(self, entry: Entry) -> None:', toolName: 'run', toolCallId: 'oh-3' });
    expect(second[5]?.event.content).toBe('Agent reached maximum iteration in headless mode.');
    expect(new Set(events.map((e) => `${e.sessionId} ${e.event.key}`)).size).toBe(events.length);
  });

  it('names sessions after instance ids, within the session id alphabet, under the caller\'s base session', async () => {
    const line = (id: unknown, history: unknown = []) => ({ instance_id: id, instruction: `task ${String(id)}`, history, test_result: {} });
    const text = jsonl(line('HumanEval/0'), line('HumanEval-0'), line(17), line('a'.repeat(140)), line('__x y__'));
    const { events, issues } = await parseText(text, 'openhands');
    expect(issues).toEqual([]);
    const sessions = events.map((e) => e.sessionId!);
    expect(sessions[0]).toMatch(/^HumanEval-0-[0-9a-f]{8}$/);
    expect(sessions.slice(1, 3)).toEqual(['HumanEval-0', '17']);
    expect(sessions[3]).toMatch(/^a{119}-[0-9a-f]{8}$/);
    expect(sessions[4]).toMatch(/^x-y__-[0-9a-f]{8}$/);
    for (const id of sessions) expect(id).toMatch(/^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/);
    const based = await parseText(text, 'openhands', { sessionId: 'run-7' });
    expect(based.events.map((e) => e.sessionId).slice(1, 3)).toEqual(['run-7:HumanEval-0', 'run-7:17']);
  });

  it("reads an evaluation output of the OpenHands agent SDK (1.x): its events' tool calls paired with their observations by call id", async () => {
    const { events, issues, skips } = await parseText(fixture('openhands-sdk-output.jsonl'), 'openhands');
    expect(issues).toEqual([]);
    expect(skips.map((s) => s.reason)).toEqual(["OpenHands SDK event 'ConversationStateUpdateEvent' is not imported"]);
    expect(new Set(events.map((e) => e.sessionId))).toEqual(new Set(['ledgerly__ledgerly-102']));
    expect(events.map((e) => [e.event.kind, e.event.toolName ?? null, e.event.tags ?? []])).toEqual([
      ['system', null, []],
      ['user', null, []],
      ['assistant', null, []],
      ['tool_call', 'terminal', []],
      ['tool_result', 'terminal', []],
      ['assistant', null, []],
      ['tool_call', 'file_editor', []],
      ['tool_result', 'file_editor', ['error']],
      ['assistant', null, []],
      ['tool_call', 'terminal', []],
      ['tool_result', 'terminal', []],
      ['note', null, ['summary']],
      ['assistant', null, []],
      ['tool_call', 'finish', []],
      ['tool_result', 'finish', []],
    ]);
    const callIds = (kind: string) => events.filter((e) => e.event.kind === kind).map((e) => e.event.toolCallId);
    expect(callIds('tool_result')).toEqual(callIds('tool_call'));
    expect(events[3]?.event).toEqual({
      kind: 'tool_call',
      content: '{"command": "grep -n \\"reversed\\" ledgerly/ledger.py", "security_risk": "LOW"}',
      key: 'oh:3e0a4f5b-8c6d-4b1e-8d9f-4a5b6c7d8e93:1',
      ts: '2025-11-20T09:41:06.517204',
      toolName: 'terminal',
      toolCallId: 'toolu_01Vq7bXe3Rk',
      meta: { model: 'litellm_proxy/claude-sonnet-4-5-20250929', action: 'TerminalAction' },
    });
    expect(events[4]?.event).toMatchObject({ meta: { cwd: '/workspace/ledgerly', observation: 'TerminalObservation', exitCode: 0 } });
    expect(events[8]?.event.content).toMatch(/^The grep line starts with 8 spaces/);
    expect(events[10]?.event).toMatchObject({ content: expect.stringContaining('1 failed, 7 passed'), meta: { exitCode: 1 } });
    expect(events.map((e) => e.event.meta?.cwd ?? null).slice(0, 5)).toEqual([null, null, null, null, '/workspace/ledgerly']);
  });

  it('names the field of a bad SDK event, and keeps the images of an SDK message', async () => {
    const history = [
      { kind: 'ActionEvent', id: 'a1', source: 'agent', thought: [], action: { kind: 'TerminalAction', command: 'ls' }, tool_call_id: 't1' },
      { kind: 'ObservationEvent', id: 'o1', source: 'environment', tool_name: 'terminal', observation: { content: [{ type: 'text', text: 'x' }] } },
      { kind: 'MessageEvent', id: 'm1', source: 'robot', llm_message: { role: 'user', content: [] } },
      { kind: 'MessageEvent', id: 'm2', source: 'user', llm_message: { role: 'user', content: [{ type: 'text', text: 'see' }, { type: 'image', image_urls: ['https://example.com/a.png'] }] } },
      { kind: 'UserRejectObservation', id: 'r1', source: 'environment', tool_name: 'terminal', tool_call_id: 't2', rejection_reason: 'not on main' },
      { kind: 'HookExecutionEvent', id: 'h1', source: 'environment' },
    ];
    const { events, issues, skips } = await parseText(jsonl({ instance_id: 'i1', test_result: {}, history }), 'openhands');
    expect(issues.map((i) => i.field)).toEqual(['history[0].tool_name', 'history[1].tool_call_id', 'history[2].source']);
    expect(events.map((e) => e.event)).toEqual([
      { kind: 'user', content: 'see', key: 'oh:m2:1' },
      { kind: 'user', content: '[image: https://example.com/a.png]', key: 'oh:m2:2.0', meta: { url: 'https://example.com/a.png' } },
      { kind: 'tool_result', content: 'not on main', key: 'oh:r1:0', toolName: 'terminal', toolCallId: 't2', tags: ['rejected'] },
    ]);
    expect(skips.map((s) => s.reason)).toEqual(["OpenHands SDK event 'HookExecutionEvent' (unknown kind) is not imported"]);
  });

  it('states the instruction when no user message of the history holds it', async () => {
    const text = jsonl({ instance_id: 'i1', instruction: 'Fix the flaky test.', history: [], test_result: {}, error: 'RuntimeError: sandbox did not start' });
    const { events } = await parseText(text, 'openhands');
    expect(events.map((e) => e.event)).toEqual([
      { kind: 'user', content: 'Fix the flaky test.', key: 'oh:instance:0', tags: ['instruction'] },
      { kind: 'system', content: 'RuntimeError: sandbox did not start', key: 'oh:instance:2', tags: ['error'] },
    ]);
  });

  it('names the line and field of a bad instance and reads on', async () => {
    const text = jsonl(
      { instance_id: null, history: [] },
      { instance_id: 'i1', history: 'none' },
      { instance_id: 'i2', history: [[{ id: 1, source: 'agent', action: 'run', args: { command: 'ls' } }], 7, { id: 3, source: 'agent', action: 'message', args: { content: 'ok' } }] },
    );
    const { events, issues } = await parseText(text, 'openhands');
    expect(issues).toEqual([
      { line: 1, field: 'instance_id', message: 'instance_id: an evaluation output line needs a string instance id' },
      { line: 2, field: 'history', message: 'history: expected an array of OpenHands events' },
      { line: 3, field: 'history[0]', message: 'history[0]: expected an OpenHands event or an [action, observation] pair' },
      { line: 3, field: 'history[1]', message: 'history[1]: an OpenHands event must be an object' },
    ]);
    expect(events.map((e) => [e.sessionId, e.event.content])).toEqual([['i2', 'ok']]);
  });

  it('reports an empty file', async () => {
    expect(await parseText('', 'openhands')).toEqual({ events: [], skips: [], issues: [{ line: 0, message: 'the file is empty' }] });
    expect((await parseText(' \n\n', 'openhands')).issues).toEqual([{ line: 0, message: 'the file is empty' }]);
  });
});
