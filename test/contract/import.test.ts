import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { EngramError, isEngramError } from '../../src/errors.js';
import { refuseEventsContaining, storeTargetOf } from '../fixtures/refuse-events.js';
import { runStorageContract, useEngram } from './harnesses.js';

/** `n` JSONL event lines, line i (1-based) `{"kind":"user","content":"line i","key":"k-i"}`, with overrides by line. */
function jsonlLines(n: number, overrides: Record<number, unknown> = {}): string {
  const lines: string[] = [];
  for (let i = 1; i <= n; i++) {
    const line = overrides[i] ?? { kind: 'user', content: `line ${i}`, key: `k-${i}` };
    lines.push(typeof line === 'string' ? line : JSON.stringify(line));
  }
  return lines.join('\n') + '\n';
}

async function failure(p: Promise<unknown>): Promise<EngramError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isEngramError(err)) throw new Error(`expected an EngramError, got ${String(err)}`);
  return err;
}

runStorageContract('all-or-nothing imports', ({ createHarness }) => {
  const ctx = useEngram(createHarness);
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'engram-import-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  const file = (fileName: string, text: string): string => {
    const path = join(dir, fileName);
    writeFileSync(path, text);
    return path;
  };

  it('refuses a 1,000-line file whose line 901 reuses an earlier key with other content, naming line 901, storing nothing', async () => {
    const path = file('transcript.jsonl', jsonlLines(1000, { 901: { kind: 'user', content: 'other content', key: 'k-17' } }));
    const err = await failure(ctx.mem.importFile({ path }));
    expect(err.code).toBe('IDEMPOTENCY_CONFLICT');
    expect(err.message).toMatch(/^transcript\.jsonl:901: key "k-17" was already used on line 17 of this file with other content/);
    expect(err.message).toContain('nothing was imported');
    expect(err.data).toMatchObject({ file: 'transcript.jsonl', line: 901, field: 'key', issueCount: 1 });
    expect((await ctx.mem.stats()).events).toBe(0);
    expect(await ctx.mem.listSessions()).toEqual([]);
  });

  it('refuses line 901 reusing a key stored before with other content, keeping what was stored', async () => {
    await ctx.mem.append('transcript', { kind: 'user', content: 'stored before', key: 'k-901' });
    const path = file('transcript.jsonl', jsonlLines(1000));
    const err = await failure(ctx.mem.importFile({ path }));
    expect(err.code).toBe('IDEMPOTENCY_CONFLICT');
    expect(err.message).toMatch(/^transcript\.jsonl:901: key "k-901" was already stored with other content \(event evt_/);
    expect(err.data).toMatchObject({ line: 901, field: 'key' });
    const stored = await ctx.mem.listEvents({ sessionId: 'transcript' as never });
    expect(stored.map((e) => e.content)).toEqual(['stored before']);
  });

  it('refuses line 901 superseding an event that does not exist, and accepts one superseding a stored event', async () => {
    const [prior] = await ctx.mem.append('other', { kind: 'decision', content: 'use sqlite' });
    const path = file(
      'transcript.jsonl',
      jsonlLines(1000, {
        900: { kind: 'decision', content: 'use postgres', key: 'k-900', supersedes: prior!.record.id },
        901: { kind: 'decision', content: 'use mysql', key: 'k-901', supersedes: 'evt_01jbbbbbbbbbbbbbbbbbbbbbbb' },
      }),
    );
    const err = await failure(ctx.mem.importFile({ path }));
    expect(err.code).toBe('INVALID_INPUT');
    expect(err.message).toMatch(/^transcript\.jsonl:901: supersedes: no event evt_01jbbbbbbbbbbbbbbbbbbbbbbb exists/);
    expect(err.data).toMatchObject({ line: 901, field: 'supersedes', issueCount: 1 });
    expect((await ctx.mem.stats()).events).toBe(1);
  });

  it('refuses line 901 over a size limit, naming the field and the limit, storing nothing', async () => {
    const path = file('transcript.jsonl', jsonlLines(1000, { 901: { kind: 'user', content: 'x'.repeat(1_100_000), key: 'k-901' } }));
    const err = await failure(ctx.mem.importFile({ path }));
    expect(err.code).toBe('INVALID_INPUT');
    expect(err.message).toMatch(/^transcript\.jsonl:901: content: .*MAX_INLINE_CONTENT_BYTES/);
    expect(err.data).toMatchObject({ line: 901, field: 'content', issueCount: 1 });
    expect((await ctx.mem.stats()).events).toBe(0);
  });

  it('lists every problem of a strict import, in line order, in the error', async () => {
    await ctx.mem.append('transcript', { kind: 'user', content: 'stored before', key: 'k-990' });
    const path = file(
      'transcript.jsonl',
      jsonlLines(1000, {
        3: { kind: 'yell', content: 'x', key: 'k-3' },
        901: { kind: 'user', content: 'other content', key: 'k-17' },
        950: { kind: 'note', content: 'x', key: 'k-950', supersedes: 'evt_01jbbbbbbbbbbbbbbbbbbbbbbb' },
      }),
    );
    // Line 3 is refused by the first pass, before the store is touched: only it is listed.
    const first = await failure(ctx.mem.importFile({ path }));
    expect(first.code).toBe('INVALID_INPUT');
    expect((first.data.issues as Array<{ line: number }>).map((i) => i.line)).toEqual([3]);
    // Without it, the store pass finds the rest, all of them, and rolls back.
    const fixed = file('fixed.jsonl', jsonlLines(1000, { 901: { kind: 'user', content: 'other content', key: 'k-17' }, 950: { kind: 'note', content: 'x', key: 'k-950', supersedes: 'evt_01jbbbbbbbbbbbbbbbbbbbbbbb' } }));
    const err = await failure(ctx.mem.importFile({ path: fixed }, { sessionId: 'transcript' }));
    expect(err.message).toMatch(/^fixed\.jsonl:901: .*\(and 2 more invalid records\); nothing was imported/);
    expect((err.data.issues as Array<{ line: number; field?: string }>).map((i) => [i.line, i.field])).toEqual([
      [901, 'key'],
      [950, 'supersedes'],
      [990, 'key'],
    ]);
    expect((await ctx.mem.stats()).events).toBe(1);
  });

  it('with skipInvalid, skips and lists each bad line (line, field, reason) and stores everything else', async () => {
    await ctx.mem.append('transcript', { kind: 'user', content: 'stored before', key: 'k-990' });
    const path = file(
      'transcript.jsonl',
      jsonlLines(1000, {
        3: { kind: 'yell', content: 'x', key: 'k-3' },
        500: '{"kind": "user", oops}',
        901: { kind: 'user', content: 'other content', key: 'k-17' },
        950: { kind: 'note', content: 'x', key: 'k-950', supersedes: 'evt_01jbbbbbbbbbbbbbbbbbbbbbbb' },
      }),
    );
    const report = await ctx.mem.importFile({ path }, { skipInvalid: true });
    expect(report.issueCount).toBe(5);
    expect(report.issues.map((i) => [i.line, i.field])).toEqual([
      [3, 'kind'],
      [500, undefined],
      [901, 'key'],
      [950, 'supersedes'],
      [990, 'key'],
    ]);
    expect(report.issues[2]!.message).toBe('key "k-17" was already used on line 17 of this file with other content');
    expect(report.issues[4]!.message).toMatch(/^key "k-990" was already stored with other content/);
    expect(report.stored).toBe(995);
    expect((await ctx.mem.stats()).events).toBe(996);
    // The skipped lines' keys are not taken: line 901's content under k-17 is line 17's.
    const [k17] = await ctx.harness.backend.getEventsByKeys('transcript' as never, ['k-17']);
    expect(k17!.record.content).toBe('line 17');
  });

  it('stores nothing when the store fails mid-import (the second batch), with or without skipInvalid', async () => {
    await refuseEventsContaining(storeTargetOf(ctx.harness.backend), 'POISON');
    const path = file('transcript.jsonl', jsonlLines(1000, { 750: { kind: 'user', content: 'POISON', key: 'k-750' } }));
    for (const skipInvalid of [false, true]) {
      const err = await failure(ctx.mem.importFile({ path }, { skipInvalid }));
      expect(err.code).toBe('STORAGE_ERROR');
      expect(err.message).toMatch(/^transcript\.jsonl: storing lines 501-1000 failed, so nothing was imported/);
      expect((await ctx.mem.stats()).events).toBe(0);
      expect(await ctx.mem.listSessions()).toEqual([]);
    }
  });

  it('names the record line and the block of a Claude Code record that yields several events', async () => {
    const base = { sessionId: 'cc-1', cwd: '/repo', isSidechain: false, type: 'assistant' };
    const record = (second: string) => ({
      ...base,
      uuid: 'u2',
      message: { role: 'assistant', content: [{ type: 'text', text: 'first block' }, { type: 'text', text: second }, { type: 'tool_use', id: 't1', name: 'Bash', input: {} }] },
    });
    const lines = (second: string) =>
      [{ ...base, type: 'user', uuid: 'u1', message: { role: 'user', content: 'hello' } }, { type: 'summary', summary: 's', leafUuid: 'u2' }, record(second)]
        .map((r) => JSON.stringify(r))
        .join('\n') + '\n';
    await ctx.mem.importFile({ path: file('cc.jsonl', lines('second block')) });
    const err = await failure(ctx.mem.importFile({ path: file('cc.jsonl', lines('edited second block')) }));
    expect(err.code).toBe('IDEMPOTENCY_CONFLICT');
    expect(err.message).toMatch(/^cc\.jsonl:3: key "cc:u2:1" \(the event built from message\.content\[1\]\) was already stored with other content/);
    expect(err.data).toMatchObject({ line: 3, field: 'message.content[1]' });
    expect((await ctx.mem.stats()).events).toBe(5);
  });

  it('names the line and the JSON path inside an OpenAI document', async () => {
    const doc = (last: string) =>
      JSON.stringify({ messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hi' }, { role: 'assistant', content: last }] }, null, 2);
    await ctx.mem.importFile({ path: file('conv.json', doc('hello')) }, { format: 'openai' });
    const text = doc('hello again');
    const line = text.slice(0, text.indexOf('"role": "assistant"')).split('\n').length - 1;
    const report = await ctx.mem.importFile({ path: file('conv.json', text) }, { format: 'openai', skipInvalid: true });
    expect(report.issues).toEqual([
      {
        line,
        field: 'messages[2].content',
        code: 'IDEMPOTENCY_CONFLICT',
        message: expect.stringMatching(/^key "oa:0:2:0" \(the event built from messages\[2\]\.content\) was already stored with other content/),
      },
    ]);
    expect(report.duplicates).toBe(2);
  });

  it('names the line and the JSON path inside an Anthropic document', async () => {
    const doc = (answer: string) =>
      JSON.stringify({ system: 'be brief', messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: [{ type: 'text', text: answer }] }] }, null, 2);
    await ctx.mem.importFile({ path: file('conv.json', doc('hello')) }, { format: 'anthropic' });
    const text = doc('hello again');
    const line = text.slice(0, text.indexOf('"role": "assistant"')).split('\n').length - 1;
    const err = await failure(ctx.mem.importFile({ path: file('conv.json', text) }, { format: 'anthropic' }));
    expect(err.message).toMatch(new RegExp(`^conv\\.json:${line}: key "an:1:0" \\(the event built from messages\\[1\\]\\.content\\[0\\]\\) was already stored`));
    expect(err.data).toMatchObject({ line, field: 'messages[1].content[0]' });
    expect((await ctx.mem.stats()).events).toBe(3);
  });
});
