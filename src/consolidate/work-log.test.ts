import { describe, expect, it } from 'vitest';
import type { EventKind, EventRecord } from '../model/event.js';
import type { EventId, SessionId } from '../model/ids.js';
import { createGptTokenizer } from '../providers/gpt-tokenizer.js';
import { buildWorkLog, errorLine, renderWorkLog } from './work-log.js';

let turn = 0;
function ev(kind: EventKind, content: string, extra: Partial<EventRecord> = {}): EventRecord {
  turn++;
  return {
    id: `evt_${String(turn).padStart(26, '0')}` as EventId,
    sessionId: 's' as SessionId,
    turn,
    kind,
    ts: new Date(Date.UTC(2026, 0, 1, 0, turn)).toISOString(),
    content,
    tags: [],
    ...extra,
  };
}
const call = (tool: string, id: string, input: unknown, meta?: Record<string, unknown>) =>
  ev('tool_call', typeof input === 'string' ? input : JSON.stringify(input), { toolName: tool, toolCallId: id, ...(meta ? { meta } : {}) });
const result = (tool: string, id: string, content: string, meta?: Record<string, unknown>) => ev('tool_result', content, { toolName: tool, toolCallId: id, ...(meta ? { meta } : {}) });

describe('buildWorkLog', () => {
  it('reads a Claude Code session: requests, files created and edited, a failing test fixed by a later run, the open plan', () => {
    const cwd = { cwd: '/home/me/app' };
    const events = [
      ev('user', '<ide_opened_file>The user opened the file x in the IDE.</ide_opened_file>', { meta: cwd }),
      ev('user', 'The pause button does not stop the countdown; fix it and add a test.', { meta: cwd }),
      ev('user', '<command-name>/clear</command-name>', { meta: cwd }),
      call('Write', 't1', { file_path: '/home/me/app/src/timer.test.js', content: '...' }, cwd),
      result('Write', 't1', 'File created successfully', { ...cwd, toolUseResult: { type: 'create' } }),
      call('Edit', 't2', { file_path: '/home/me/app/src/timer.js', old_string: 'a', new_string: 'b' }, cwd),
      result('Edit', 't2', '<tool_use_error>String to replace not found in file.</tool_use_error>', { ...cwd, isError: true }),
      call('Edit', 't3', { file_path: '/home/me/app/src/timer.js', old_string: 'c', new_string: 'd' }, cwd),
      result('Edit', 't3', 'The file /home/me/app/src/timer.js has been updated.', { ...cwd, toolUseResult: { type: 'update' } }),
      call('Bash', 't4', { command: 'npm test', description: 'run tests' }, cwd),
      result('Bash', 't4', 'FAIL src/timer.test.js\n  ✕ pauses (5 ms)\nError: expected 3 to be 2\nExit code 1', { ...cwd, isError: true }),
      call('Bash', 't5', { command: 'npm test' }, cwd),
      result('Bash', 't5', 'PASS src/timer.test.js', { ...cwd, isError: false, toolUseResult: { stdout: 'PASS', stderr: '' } }),
      call('TodoWrite', 't6', { todos: [{ content: 'Fix pause', status: 'completed' }, { content: 'Update the README', status: 'pending' }] }, cwd),
      ev('assistant', 'Fixed: pause now clears the interval. The test passes.', { meta: cwd }),
    ];
    const log = buildWorkLog(events);
    expect(log.requests.map((r) => r.text)).toEqual(['The pause button does not stop the countdown; fix it and add a test.']);
    expect(log.files).toEqual([
      { path: 'src/timer.test.js', action: 'created', writes: 1, eventId: events[3]!.id, isFailed: false },
      { path: 'src/timer.js', action: 'edited', writes: 1, eventId: events[7]!.id, isFailed: false },
    ]);
    expect(log.commands).toMatchObject([
      { command: 'npm test', status: 'failed', exitCode: 1, isTest: true, error: 'Error: expected 3 to be 2', fixedBy: events[11]!.id },
      { command: 'npm test', status: 'ok', isTest: true },
    ]);
    expect(log.open.map((o) => o.text)).toEqual(['Update the README']);
    expect(log.outcome?.text).toBe('Fixed: pause now clears the interval. The test passes.');
    expect(log.toolCalls).toBe(6);
  });

  it('reads Codex apply_patch and shell calls with exit codes, and leaves a last failing run open', () => {
    const events = [
      call('shell', 'c1', { command: ['bash', '-lc', 'pytest tests/test_totals.py -x'], workdir: '/w' }),
      result('shell', 'c1', JSON.stringify({ output: 'E   AssertionError: assert 1 == 2\n1 failed', metadata: { exit_code: 1 } })),
      call('apply_patch', 'c2', '*** Begin Patch\n*** Update File: ledger/totals.py\n@@\n-a\n+b\n*** Add File: ledger/round.py\n+x\n*** End Patch'),
      result('apply_patch', 'c2', JSON.stringify({ output: 'Success.', metadata: { exit_code: 0 } })),
    ];
    const log = buildWorkLog(events);
    expect(log.files.map((f) => [f.path, f.action])).toEqual([
      ['ledger/totals.py', 'edited'],
      ['ledger/round.py', 'created'],
    ]);
    expect(log.commands).toMatchObject([{ command: 'pytest tests/test_totals.py -x', status: 'failed', exitCode: 1, error: 'E AssertionError: assert 1 == 2' }]);
    expect(log.open.map((o) => o.text)).toEqual(['still failing: pytest tests/test_totals.py -x']);
  });

  it('reads SWE-agent and OpenHands editor calls, and OpenHands exit codes', () => {
    const events = [
      call('str_replace_editor', 'a1', 'str_replace_editor str_replace /testbed/pkg/slug.py --old_str x --new_str y'),
      call('str_replace_editor', 'a2', 'str_replace_editor view /testbed/pkg/other.py'),
      call('str_replace_editor', 'a3', { command: 'create', path: '/workspace/tests/test_x.py', file_text: '...' }),
      call('execute_bash', 'a4', { command: 'python -m pytest -q' }),
      result('execute_bash', 'a4', '2 passed', { exitCode: 0 }),
    ];
    const log = buildWorkLog(events);
    expect(log.files.map((f) => [f.path, f.action])).toEqual([
      ['/testbed/pkg/slug.py', 'edited'],
      ['/workspace/tests/test_x.py', 'created'],
    ]);
    expect(log.commands).toMatchObject([{ command: 'python -m pytest -q', status: 'ok', exitCode: 0, isTest: true }]);
  });

  it('takes stated decisions from requests, leaves Engram-written events out, and a rejected call is no error', () => {
    const events = [
      ev('user', "Let's use PostgreSQL for the ledger. Also rename the module."),
      ev('user', '<engram-brief project="p">…</engram-brief>', { tags: ['engram:derived'] }),
      call('Bash', 'b1', { command: 'rm -rf build' }),
      result('Bash', 'b1', "The user doesn't want to proceed with this tool use.", { isError: true }),
    ];
    const log = buildWorkLog(events);
    expect(log.requests).toHaveLength(1);
    expect(log.decisions.map((d) => d.text)).toEqual(["Let's use PostgreSQL for the ledger."]);
    expect(log.commands).toMatchObject([{ command: 'rm -rf build', status: 'unknown' }]);
    expect(log.errors).toEqual([]);
  });
});

describe('errorLine', () => {
  it('prefers the line that says what failed, joining a bare label with the line after it', () => {
    expect(errorLine('compiling...\nsrc/a.ts(3,1): error TS2304: Cannot find name x\nmore')).toBe('src/a.ts(3,1): error TS2304: Cannot find name x');
    expect(errorLine('ERROR:\nInvalid `path` parameter: /x does not exist.')).toBe('ERROR: Invalid `path` parameter: /x does not exist.');
    expect(errorLine('')).toBe('');
  });
});

describe('renderWorkLog', () => {
  const tok = createGptTokenizer();
  const many = Array.from({ length: 40 }, (_, i) => [
    call('Edit', `e${i}`, { file_path: `/r/src/module-${i}/index.ts` }, { cwd: '/r' }),
    result('Edit', `e${i}`, 'updated', { cwd: '/r' }),
    call('Bash', `b${i}`, { command: `node scripts/step-${i}.js --verbose` }, { cwd: '/r' }),
    result('Bash', `b${i}`, 'ok', { cwd: '/r', isError: false }),
  ]).flat();
  const log = buildWorkLog([ev('user', 'Refactor every module to the new loader.'), ...many, call('Bash', 'x', { command: 'npm run build' }), result('Bash', 'x', 'error TS2304: Cannot find name', { isError: true })]);

  it('cites an event on every line and fits the budget, cutting the least useful lists first', () => {
    for (const budget of [400, 200, 120]) {
      const text = renderWorkLog(log, budget, tok);
      expect(tok.count(text)).toBeLessThanOrEqual(budget);
      for (const line of text.split('\n')) expect(line).toMatch(/\[evt_[0-9a-z]{26}\]/);
      expect(text).toContain('Failed: `npm run build`');
    }
    const tight = renderWorkLog(log, 200, tok);
    expect(tight).toMatch(/Files edited: .*\(\+\d+ more\)/);
    expect(tight).not.toContain('Ran:');
  });

  it('lists all 40 edited files when the budget holds them', () => {
    const text = renderWorkLog(log, 2000, tok);
    for (let i = 0; i < 40; i++) expect(text).toContain(`src/module-${i}/index.ts`);
  });

  it('past its budget keeps every file and failure up to the ceiling, and still drops what was merely run', () => {
    const within = renderWorkLog(log, 200, tok, 600);
    expect(tok.count(within)).toBeLessThanOrEqual(600);
    expect(tok.count(within)).toBeGreaterThan(200);
    for (let i = 0; i < 40; i++) expect(within).toContain(`src/module-${i}/index.ts`);
    expect(within).toContain('Failed: `npm run build`');
    expect(within).not.toContain('Ran:');
    // A ceiling too low for every file: the list is cut as before.
    const low = renderWorkLog(log, 120, tok, 150);
    expect(tok.count(low)).toBeLessThanOrEqual(150);
    expect(low).toMatch(/\(\+\d+ more\)/);
  });

  it('says a repeated failure once with its count, and names the files a tool refused to write', () => {
    const events = [
      ev('user', 'Make the build pass.', { meta: { cwd: '/r' } }),
      ...[1, 2, 3].flatMap((i) => [call('Bash', `nb${i}`, { command: 'npm run build' }), result('Bash', `nb${i}`, 'Build error occurred\nExit code 1', { isError: true })]),
      call('Edit', 'r1', { file_path: '/r/next.config.js', old_string: 'a', new_string: 'b' }, { cwd: '/r' }),
      result('Edit', 'r1', '<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>', { cwd: '/r', isError: true }),
      call('Edit', 'r2', { file_path: '/r/vercel.json', old_string: 'a', new_string: 'b' }, { cwd: '/r' }),
      result('Edit', 'r2', '<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>', { cwd: '/r', isError: true }),
    ];
    const text = renderWorkLog(buildWorkLog(events), 400, tok);
    expect(text.match(/Failed/g)).toHaveLength(1);
    expect(text).toContain('Failed (3x): `npm run build` (exit 1): Build error occurred');
    expect(text).toContain('Error (Edit next.config.js, vercel.json, 2x): File has not been read yet.');
  });
});
