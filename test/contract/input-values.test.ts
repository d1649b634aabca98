import { expect, it } from 'vitest';
import { z } from 'zod';
import type { EventInput } from '../../src/model/event.js';
import {
  MAX_APPEND_EVENTS,
  MAX_ARTIFACT_CONTENT_BYTES,
  MAX_INLINE_CONTENT_BYTES,
  MAX_JSON_DEPTH,
  MAX_JSON_ENTRIES,
  MAX_QUERY_CHARS,
  MAX_TIMESTAMP_MS,
} from '../../src/model/limits.js';
import { riskEngram } from '../fixtures/engrams.js';
import { runStorageContract, useEngram } from './harnesses.js';

/** `depth` levels of `{ a: ... }` around a leaf: depth 1 is `{ a: 'leaf' }`. */
function nested(depth: number): Record<string, unknown> {
  let value: unknown = 'leaf';
  for (let i = 0; i < depth; i++) value = { a: value };
  return value as Record<string, unknown>;
}

/** Strings that must survive storage unchanged on every backend. */
const TEXTS = [
  'plain ascii',
  'emoji 😀🎉👍🏽🇫🇷👨‍👩‍👧 and astral 𝄞',
  'CJK 漢字仮名 한국어, RTL שלום مرحبا \u200f\u200e',
  'combining e\u0301 a\u0308\u0301 and zero-width \u200b\u200d\ufeff',
  'NUL \u0000 in the middle, controls \u0001\u0007\u001b[31m and DEL \u007f',
  'replacement char \ufffd and noncharacters \ufdd0 \uffff',
  'backslashes \\\\ quotes " \' ` and JSON-ish {"a":[1,2]}',
  'line\nbreaks\r\nand\ttabs   ',
];

runStorageContract('input values', ({ createHarness }) => {
  const ctx = useEngram(createHarness);
  const storedEvents = async (): Promise<number> => (await ctx.mem.stats()).events;

  it('returns every accepted string, meta value and timestamp byte-identical', async () => {
    const meta = {
      texts: TEXTS,
      'ключ 🔑': 'value with NUL \u0000',
      'key\u0000with NUL': true,
      numbers: [0, -1, 2 ** 53 - 1, 1.5e-300, 123.456],
      nothing: null,
      deep: nested(MAX_JSON_DEPTH - 2),
    };
    const inputs: EventInput[] = TEXTS.map((content, i) => ({
      kind: 'user',
      content,
      key: `key ${i} ключ 🔑`,
      tags: [`tag-${i}-é`, '标签'],
      taskId: 'задача-1',
      premiseRef: 'premise 😀',
      toolName: 'Bash·tool',
      toolCallId: `call-${i}`,
      meta,
    }));
    inputs.push({ kind: 'note', content: 'first instant of year 0000', ts: '0000-01-01T00:00:00.000Z' });
    inputs.push({ kind: 'note', content: 'last instant of year 9999', ts: MAX_TIMESTAMP_MS });
    const out = await ctx.mem.append('values', inputs);
    for (const [i, input] of inputs.entries()) {
      const back = await ctx.mem.getEvent(out[i]!.record.id);
      expect(back.content).toBe(input.content);
      expect(Buffer.from(back.content, 'utf8').equals(Buffer.from(input.content, 'utf8'))).toBe(true);
      if (input.key !== undefined) {
        expect(back.key).toBe(input.key);
        expect(back.tags).toEqual(input.tags);
        expect(back.taskId).toBe(input.taskId);
        expect(back.premiseRef).toBe(input.premiseRef);
        expect(back.toolName).toBe(input.toolName);
        expect(JSON.stringify(back.meta)).toBe(JSON.stringify(input.meta));
      }
    }
    const listed = await ctx.mem.listEvents({ sessionId: 'values' as never });
    expect(listed.map((e) => e.content)).toEqual(inputs.map((e) => e.content));
    expect(listed.at(-2)!.ts).toBe('0000-01-01T00:00:00.000Z');
    expect(listed.at(-1)!.ts).toBe('9999-12-31T23:59:59.999Z');
    // The same keys again are duplicates of these events, not new ones and not conflicts.
    const again = await ctx.mem.append('values', inputs.slice(0, TEXTS.length));
    expect(again.every((o) => o.isDuplicate)).toBe(true);
  });

  it('returns a large tool result byte-identical from its artifact', async () => {
    const content = `${'😀 line of output\n'.repeat(40_000)}NUL \u0000 end`;
    const [out] = await ctx.mem.append('artifact', { kind: 'tool_result', toolName: 'Bash', content });
    expect(out!.record.artifact).toBeDefined();
    const { bytes } = await ctx.mem.readArtifact(out!.record.artifact!.id);
    expect(bytes.equals(Buffer.from(content, 'utf8'))).toBe(true);
  });

  it('reads base64 attachments with white space anywhere and refuses malformed ones naming the field', async () => {
    const bytes = Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7) % 256));
    const wrapped = bytes.toString('base64').replace(/.{76}/g, '$&\r\n');
    const [out] = await ctx.mem.append('bin', { kind: 'user', content: 'a picture', binary: { base64: `  ${wrapped}\n`, mediaType: 'image/png' } });
    expect((await ctx.mem.readArtifact(out!.record.artifact!.id)).bytes.equals(bytes)).toBe(true);
    for (const base64 of ['aGVs bG8=', 'aGVsbG8= \n']) await expect(ctx.mem.append('bin', { kind: 'user', content: 'ok', binary: { base64, mediaType: 'image/png' } })).resolves.toHaveLength(1);
    for (const base64 of ['aGVs*bG8=', 'aGV=sbG8', 'aGVsbG8===', 'aGVsbG8=x']) {
      await expect(ctx.mem.append('bin', { kind: 'user', content: 'bad', binary: { base64, mediaType: 'image/png' } })).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        data: { field: 'events[0].binary.base64' },
      });
    }
  });

  const refusals: Array<[string, Partial<EventInput> & Record<string, unknown>, string]> = [
    ['content', { content: 'a\ud800b' }, 'events[0].content'],
    ['a trailing high surrogate', { content: 'text ends in half an emoji \ud83d' }, 'events[0].content'],
    ['key', { key: 'k\udc00' }, 'events[0].key'],
    ['a tag', { tags: ['ok', 't\ud800'] }, 'events[0].tags[1]'],
    ['taskId', { taskId: '\ud800' }, 'events[0].taskId'],
    ['premiseRef', { premiseRef: 'p\udfff' }, 'events[0].premiseRef'],
    ['toolName', { toolName: 'Bash\ud800' }, 'events[0].toolName'],
    ['toolCallId', { toolCallId: 'c\ud800' }, 'events[0].toolCallId'],
    ['a meta value', { meta: { a: { b: ['ok', 'x\ud800'] } } }, 'events[0].meta.a.b[1]'],
    ['a meta key', { meta: { 'k\ud800': 1 } }, 'events[0].meta.k\ud800'],
    ['an attachment caption', { binary: { base64: 'aGVsbG8=', mediaType: 'image/png', caption: '\ud800' } }, 'events[0].binary.caption'],
  ];
  for (const [what, fields, field] of refusals) {
    it(`refuses a lone surrogate in ${what} with INVALID_INPUT naming ${field}, storing nothing`, async () => {
      await ctx.mem.append('s', { kind: 'user', content: 'before' });
      await expect(ctx.mem.append('s', [{ kind: 'user', content: 'x', ...fields } as EventInput])).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field } });
      expect(await storedEvents()).toBe(1);
    });
  }

  it('refuses two keys that differ only in lone surrogates as invalid, not as a retryable conflict', async () => {
    await expect(ctx.mem.append('s', { kind: 'user', content: 'one', key: 'k\ud800' })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'events[0].key' } });
    await expect(ctx.mem.append('s', { kind: 'user', content: 'two', key: 'k\udbff' })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'events[0].key' } });
    expect(await storedEvents()).toBe(0);
  });

  it('refuses NUL in identifiers', async () => {
    await expect(ctx.mem.append('s', { kind: 'user', content: 'x', key: 'a\u0000b' })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'events[0].key' } });
    await expect(ctx.mem.append('s', { kind: 'user', content: 'x', tags: ['a\u0000'] })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'events[0].tags[0]' } });
  });

  it('refuses timestamps outside years 0000-9999 with INVALID_INPUT naming the limit', async () => {
    for (const ts of [8_640_000_000_000_001, 8_640_000_000_000_000, MAX_TIMESTAMP_MS + 1]) {
      await expect(ctx.mem.append('s', { kind: 'note', content: 'late', ts })).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        data: { field: 'events[0].ts', limit: 'MAX_TIMESTAMP_MS', max: MAX_TIMESTAMP_MS },
      });
    }
    await expect(ctx.mem.append('s', { kind: 'note', content: 'early', ts: '-000001-01-01T00:00:00Z' })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      data: { field: 'events[0].ts', limit: 'MIN_TIMESTAMP_MS' },
    });
    await expect(ctx.mem.append('s', { kind: 'note', content: 'x', ts: 'not a date' })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'events[0].ts' } });
    expect(await storedEvents()).toBe(0);
  });

  it('refuses meta nested too deep, even 100,000 levels, without a stack overflow', async () => {
    for (const depth of [MAX_JSON_DEPTH + 1, 100_000]) {
      await expect(ctx.mem.append('s', { kind: 'note', content: 'deep', meta: nested(depth) })).rejects.toMatchObject({
        code: 'INVALID_INPUT',
        data: { limit: 'MAX_JSON_DEPTH', max: MAX_JSON_DEPTH },
      });
    }
    const atLimit = await ctx.mem.append('s', { kind: 'note', content: 'deep enough', meta: nested(MAX_JSON_DEPTH) });
    expect(JSON.stringify((await ctx.mem.getEvent(atLimit[0]!.record.id)).meta)).toBe(JSON.stringify(nested(MAX_JSON_DEPTH)));
  });

  it('refuses meta with too many entries, too large, or holding values JSON cannot', async () => {
    const wide = Object.fromEntries(Array.from({ length: MAX_JSON_ENTRIES + 1 }, (_, i) => [`k${i}`, i]));
    await expect(ctx.mem.append('s', { kind: 'note', content: 'wide', meta: wide })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'events[0].meta', limit: 'MAX_JSON_ENTRIES' } });
    await expect(ctx.mem.append('s', { kind: 'note', content: 'big', meta: { a: 'x'.repeat(70_000) } })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'events[0].meta', limit: 'MAX_META_JSON_CHARS' } });
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    for (const meta of [{ a: Number.NaN }, { a: 10n }, { a: new Date(0) }, cycle]) {
      await expect(ctx.mem.append('s', { kind: 'note', content: 'odd', meta } as EventInput)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    }
    expect(await storedEvents()).toBe(0);
  });

  it('refuses content over its limit by kind, naming the limit, and keeps tool results up to theirs', async () => {
    await expect(ctx.mem.append('s', { kind: 'assistant', content: 'x'.repeat(MAX_INLINE_CONTENT_BYTES + 1) })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
      data: { field: 'events[0].content', limit: 'MAX_INLINE_CONTENT_BYTES', max: MAX_INLINE_CONTENT_BYTES, actual: MAX_INLINE_CONTENT_BYTES + 1 },
    });
    // Bytes, not characters: 3-byte characters reach the limit at a third of the length.
    await expect(ctx.mem.append('s', { kind: 'user', content: '漢'.repeat(MAX_INLINE_CONTENT_BYTES / 3 + 1) })).rejects.toMatchObject({ data: { limit: 'MAX_INLINE_CONTENT_BYTES' } });
    await expect(ctx.mem.append('s', { kind: 'tool_result', content: 'x'.repeat(MAX_ARTIFACT_CONTENT_BYTES + 1) })).rejects.toMatchObject({ data: { limit: 'MAX_ARTIFACT_CONTENT_BYTES' } });
    const [accepted] = await ctx.mem.append('s', { kind: 'tool_result', toolName: 'Bash', content: 'y'.repeat(MAX_INLINE_CONTENT_BYTES * 2) });
    expect(accepted!.record.artifact?.sizeBytes).toBe(MAX_INLINE_CONTENT_BYTES * 2);
    expect(await storedEvents()).toBe(1);
  });

  it(`refuses more than ${MAX_APPEND_EVENTS} events in one append`, async () => {
    const events = Array.from({ length: MAX_APPEND_EVENTS + 1 }, (_, i) => ({ kind: 'note' as const, content: `n${i}` }));
    await expect(ctx.mem.append('s', events)).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'events', limit: 'MAX_APPEND_EVENTS' } });
    expect(await storedEvents()).toBe(0);
  });

  it('refuses recall queries with a NUL, a lone surrogate or over the length limit', async () => {
    await ctx.mem.append('s', { kind: 'user', content: 'the staging database listens on port 5433' });
    await expect(ctx.mem.recall('port\u0000 5433')).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'query' } });
    await expect(ctx.mem.recall('port \ud800')).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'query' } });
    await expect(ctx.mem.recall('p'.repeat(MAX_QUERY_CHARS + 1))).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'query', limit: 'MAX_QUERY_CHARS' } });
    await expect(ctx.mem.recallBatch(['port', 'x\u0000'])).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'query' } });
    // At the limit, of the shapes that made recall slow, a query is answered.
    for (const query of ['\\'.repeat(MAX_QUERY_CHARS), '😀'.repeat(MAX_QUERY_CHARS / 2), '"a b" '.repeat(MAX_QUERY_CHARS / 6), `${'port '.repeat(800)}5433`.slice(0, MAX_QUERY_CHARS)]) {
      await expect(ctx.mem.recall(query)).resolves.toMatchObject({ hits: expect.any(Array) });
    }
  });

  it('refuses lone surrogates and NUL in a task card, and extensions nested too deep', async () => {
    await ctx.mem.append('s', { kind: 'user', content: 'start' });
    await expect(ctx.mem.taskStates.update('s', { goals: ['ship \ud800'] })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'taskState.goals[0]' } });
    await expect(ctx.mem.taskStates.update('s', { constraints: ['no \u0000'] })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'taskState.constraints[0]' } });
    ctx.mem.taskStates.registerExtension('deep', z.unknown());
    await expect(ctx.mem.taskStates.update('s', { extensions: { deep: nested(100_000) } })).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { limit: 'MAX_JSON_DEPTH' } });
    expect(await ctx.mem.taskStates.get('s')).toBeNull();
  });

  it('refuses a lone surrogate in a karma fact', async () => {
    await expect(ctx.mem.karma.add('the port is 5433 \ud800')).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'text' } });
    const kept = await ctx.mem.karma.add('emoji 😀 and accents é stay');
    expect((await ctx.mem.karma.list({})).find((k) => k.id === kept.id)?.text).toBe('emoji 😀 and accents é stay');
  });

  it('refuses lone surrogates and NUL in an engram and in a query text of the bus', async () => {
    await ctx.mem.agents.add('writer', { role: 'programmer', project: 'shop' });
    const writer = await ctx.mem.busAgent('writer');
    const pointer = ['sam:event:evt_01hzzzzzzzzzzzzzzzzzzzzzzz'];
    await expect(ctx.mem.bus.engrams.put(writer, riskEngram('the ledger \ud800 is not atomic', pointer), 'r1')).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'claim' } });
    await expect(ctx.mem.bus.engrams.put(writer, riskEngram('the ledger is not atomic', pointer, { tags: ['t\u0000'] }), 'r1')).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'tags[0]' } });
    await expect(ctx.mem.bus.engrams.query(writer, { text: 'ledger\u0000' }, 'r1')).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { field: 'text' } });
    await expect(ctx.mem.bus.engrams.query(writer, { text: 'l'.repeat(MAX_QUERY_CHARS + 1) }, 'r1')).rejects.toMatchObject({ code: 'INVALID_INPUT', data: { limit: 'MAX_QUERY_CHARS' } });
  });
});
