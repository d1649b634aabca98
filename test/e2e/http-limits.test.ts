import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { startHttpServer, type RunningHttpServer } from '../../src/interfaces/http/server.js';
import {
  MAX_APPEND_EVENTS,
  MAX_INLINE_CONTENT_BYTES,
  MAX_JSON_DEPTH,
  MAX_QUERY_CHARS,
  MAX_REQUEST_INDEXED_CHARS,
  MAX_REQUEST_JSON_DEPTH,
  MAX_REQUEST_JSON_VALUES,
} from '../../src/model/limits.js';

let dir: string;
let mem: Engram;
let server: RunningHttpServer;
let token: string;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-http-limits-'));
  mem = await openEngram({ db: join(dir, 'engram.db') });
  token = (await mem.agents.add('worker', { role: 'programmer', isAdmin: true })).token;
  server = await startHttpServer(mem, { port: 0, version: '0.0.0-test' });
});

afterEach(async () => {
  await server.close();
  await mem.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A request with its body sent exactly as given (a JSON text, or anything else), with this content type. */
async function send(path: string, options: { method?: string; body?: string | Uint8Array; contentType?: string | null } = {}) {
  const headers: Record<string, string> = { Authorization: `Bearer ${token}` };
  if (options.body !== undefined && options.contentType !== null) headers['Content-Type'] = options.contentType ?? 'application/json';
  const res = await fetch(`${server.url}${path}`, { method: options.method ?? (options.body !== undefined ? 'POST' : 'GET'), headers, ...(options.body !== undefined ? { body: options.body } : {}) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

const events = (list: unknown[], sessionId = 's') => JSON.stringify({ sessionId, events: list });
const storedEvents = async (): Promise<number> => (await mem.stats()).events;

describe('HTTP API: content types', () => {
  it.each([
    ['text/plain', 'text/plain;charset=UTF-8'],
    ['a form', 'application/x-www-form-urlencoded'],
    ['multipart', 'multipart/form-data; boundary=x'],
    ['XML', 'application/xml'],
  ])('answers 415 UNSUPPORTED_MEDIA_TYPE to an events body sent as %s, storing nothing', async (_what, contentType) => {
    const r = await send('/v1/events', { body: events([{ kind: 'user', content: 'hi' }]), contentType });
    expect(r.status).toBe(415);
    expect(r.body.error).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE', data: { field: 'Content-Type', accepted: ['application/json'] } });
    expect(await storedEvents()).toBe(0);
  });

  it('answers 415 on every JSON route, and accepts JSON with parameters, +json types and no declared type', async () => {
    expect((await send('/v1/recall', { body: JSON.stringify({ query: 'x' }), contentType: 'text/plain' })).status).toBe(415);
    expect((await send('/v1/sessions/s/task-state', { method: 'PUT', body: JSON.stringify({ update: { goals: ['g'] } }), contentType: 'application/x-www-form-urlencoded' })).status).toBe(415);
    expect((await send('/v1/events', { body: events([{ kind: 'user', content: 'a' }]), contentType: 'application/json; charset=utf-8' })).status).toBe(200);
    expect((await send('/v1/events', { body: events([{ kind: 'user', content: 'b' }]), contentType: 'application/vnd.engram+json' })).status).toBe(200);
    expect((await send('/v1/events', { body: new TextEncoder().encode(events([{ kind: 'user', content: 'c' }])), contentType: null })).status).toBe(200);
    expect(await storedEvents()).toBe(3);
  });

  it('still reads an agent message sent as text on the route that accepts text', async () => {
    const r = await send('/v1/messages/validate', { body: 'ROLE: programmer\nOUTPUT:\n  summary: done\n', contentType: 'text/plain' });
    expect(r.status).not.toBe(415);
    expect([200, 400, 422]).toContain(r.status);
  });
});

describe('HTTP API: bad values are 400, never 500 or 503', () => {
  it('refuses a timestamp past JavaScript dates (was STORAGE_ERROR, HTTP 500)', async () => {
    const r = await send('/v1/events', { body: `{"sessionId":"s","events":[{"kind":"note","content":"x","ts":8640000000000001}]}` });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'INVALID_INPUT', data: { field: 'events[0].ts', limit: 'MAX_TIMESTAMP_MS' } });
  });

  it('refuses keys differing only in lone surrogates with 400 each (was 503 with Retry-After on PostgreSQL)', async () => {
    for (const key of ['k\\ud800', 'k\\udbff']) {
      const r = await send('/v1/events', { body: `{"sessionId":"s","events":[{"kind":"note","content":"x","key":"${key}"}]}` });
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'INVALID_INPUT', data: { field: 'events[0].key' } });
    }
    expect(await storedEvents()).toBe(0);
  });

  it('refuses a recall query holding a NUL (was a 500 on SQLite) or a lone surrogate', async () => {
    await send('/v1/events', { body: events([{ kind: 'user', content: 'the staging database listens on port 5433' }]) });
    for (const query of ['port\\u0000 5433', 'port \\udc00']) {
      const r = await send('/v1/recall', { body: `{"query":"${query}"}` });
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ code: 'INVALID_INPUT', data: { field: 'query' } });
    }
  });

  it('refuses meta nested 100,000 deep before parsing it (was a stack overflow, HTTP 500), and 33 deep after', async () => {
    const deep = `{"sessionId":"s","events":[{"kind":"note","content":"x","meta":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}]}`;
    const r = await send('/v1/events', { body: deep });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'INVALID_INPUT', data: { field: 'body', limit: 'MAX_REQUEST_JSON_DEPTH', max: MAX_REQUEST_JSON_DEPTH } });
    const justOver = `{"sessionId":"s","events":[{"kind":"note","content":"x","meta":${'{"a":'.repeat(MAX_JSON_DEPTH + 1)}1${'}'.repeat(MAX_JSON_DEPTH + 1)}}]}`;
    const r2 = await send('/v1/events', { body: justOver });
    expect(r2.status).toBe(400);
    expect(r2.body.error).toMatchObject({ code: 'INVALID_INPUT', data: { limit: 'MAX_JSON_DEPTH' } });
    expect(await storedEvents()).toBe(0);
  });

  it('refuses a body of more JSON values than the limit before parsing it', async () => {
    const r = await send('/v1/events', { body: `[${'{},'.repeat(MAX_REQUEST_JSON_VALUES)}{}]` });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'INVALID_INPUT', data: { field: 'body', limit: 'MAX_REQUEST_JSON_VALUES' } });
    // Commas and brackets inside strings are content, not structure.
    const content = '[{},'.repeat(MAX_REQUEST_JSON_VALUES);
    expect((await send('/v1/events', { body: events([{ kind: 'user', content }]) })).status).toBe(200);
  });

  it('refuses content, batches and queries over their limits naming the limit', async () => {
    const big = await send('/v1/events', { body: events([{ kind: 'user', content: 'x'.repeat(MAX_INLINE_CONTENT_BYTES + 1) }]) });
    expect(big.status).toBe(400);
    expect(big.body.error.data).toMatchObject({ field: 'events[0].content', limit: 'MAX_INLINE_CONTENT_BYTES', max: MAX_INLINE_CONTENT_BYTES });
    const many = await send('/v1/events', { body: events(Array.from({ length: MAX_APPEND_EVENTS + 1 }, (_, i) => ({ kind: 'note', content: `n${i}` }))) });
    expect(many.status).toBe(400);
    expect(many.body.error.code).toBe('INVALID_INPUT');
    const indexed = await send('/v1/events', { body: events([1, 2].map((n) => ({ kind: 'tool_result', toolName: 'Bash', content: `${n} ${'log line\n'.repeat(180_000)}` }))) });
    expect(indexed.status).toBe(400);
    expect(indexed.body.error.data).toMatchObject({ field: 'events', limit: 'MAX_REQUEST_INDEXED_CHARS', max: MAX_REQUEST_INDEXED_CHARS });
    const long = await send('/v1/recall', { body: JSON.stringify({ query: 'q'.repeat(MAX_QUERY_CHARS + 1) }) });
    expect(long.status).toBe(400);
    expect(long.body.error.data).toMatchObject({ field: 'query', limit: 'MAX_QUERY_CHARS' });
    expect(await storedEvents()).toBe(0);
  });
});

describe('HTTP API: the worst inputs of the allowed size are answered', () => {
  it('packs the context of a session holding a 300 KB message without word breaks, within the window', async () => {
    for (const content of ['\\'.repeat(300_000), 'x'.repeat(300_000), '😀'.repeat(75_000)]) {
      const sessionId = `long-${content.charCodeAt(0)}`;
      expect((await send('/v1/events', { body: events([{ kind: 'user', content: 'look' }, { kind: 'user', content }], sessionId) })).status).toBe(200);
      const r = await send(`/v1/sessions/${sessionId}/context?window=32000`);
      expect(r.status).toBe(200);
      expect(r.body.totalTokens).toBeLessThanOrEqual(32_000);
      const history = r.body.blocks.find((b: { kind: string }) => b.kind === 'history');
      expect(history.tokens).toBeLessThanOrEqual(history.budget);
    }
  });

  it(`answers recall queries of ${MAX_QUERY_CHARS} characters of the shapes that were slow`, async () => {
    await send('/v1/events', { body: events([{ kind: 'user', content: 'a b "quoted" \\\\ café 😀 漢字' }]) });
    for (const query of ['\\'.repeat(MAX_QUERY_CHARS), '😀'.repeat(MAX_QUERY_CHARS / 2), 'é'.repeat(MAX_QUERY_CHARS), '"'.repeat(MAX_QUERY_CHARS), '"a b" '.repeat(MAX_QUERY_CHARS / 6)]) {
      const r = await send('/v1/recall', { body: JSON.stringify({ query }) });
      expect(r.status).toBe(200);
    }
  });
});

describe('MCP over HTTP: the same limits', () => {
  const mcp = (body: string) =>
    fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'X-Engram-Session': 'mcp' },
      body,
    });

  it('refuses a body nested past the limit before parsing it, with a JSON-RPC error naming the limit', async () => {
    const res = await mcp(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"append_events","arguments":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}}`);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { code: -32600, data: { limit: 'MAX_REQUEST_JSON_DEPTH' } } });
  });

  it('answers a tool call with a bad value as a tool error naming the field, storing nothing', async () => {
    const call = (id: number, name: string, args: unknown) => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
    // JSON.stringify writes the lone surrogate as the escape \ud83d, which the server parses back into one.
    const appended = await mcp(call(1, 'append_events', { events: [{ kind: 'user', content: 'half an emoji \ud83d' }] }));
    expect(appended.status).toBe(200);
    const result = ((await appended.json()) as { result: { isError: boolean; structuredContent: { error: { code: string; data: { field: string } } } } }).result;
    expect(result.isError).toBe(true);
    expect(result.structuredContent.error).toMatchObject({ code: 'INVALID_INPUT', data: { field: expect.stringMatching(/content$/) } });
    const recalled = await mcp(call(2, 'recall', { query: `port${'\u0000'}` }));
    expect(((await recalled.json()) as { result: { isError: boolean } }).result.isError).toBe(true);
    expect(await storedEvents()).toBe(0);
  });
});

describe('HTTP API: a body that is not UTF-8 (issue #31)', () => {
  /** A JSON append whose content holds `bad` between two ASCII words: valid JSON, but not valid UTF-8. */
  const appendWith = (bad: number[]): Uint8Array => {
    const [head, tail] = events([{ kind: 'user', content: 'before\u0001after' }]).split('\\u0001');
    return Buffer.concat([Buffer.from(head!, 'utf8'), Buffer.from(bad), Buffer.from(tail!, 'utf8')]);
  };

  it.each([
    ['a lone continuation byte', [0x80]],
    ['a truncated sequence', [0xe2, 0x82]],
    ['an overlong form', [0xc0, 0xaf]],
    ['Latin-1 text', [0xe9]],
  ])('refuses %s with 400 INVALID_INPUT naming the byte and its position, storing nothing (not U+FFFD)', async (_name, bad) => {
    const body = appendWith(bad);
    const offset = Buffer.from(body).indexOf(Buffer.from(bad));
    const res = await send('/v1/events', { body });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'INVALID_INPUT', data: { field: 'body', byteOffset: offset, byte: `0x${bad[0]!.toString(16)}` } });
    expect(res.body.error.message).toContain(`at byte ${offset + 1} of the body`);
    expect(await storedEvents()).toBe(0);
  });

  it('stores the same text sent as UTF-8', async () => {
    const res = await send('/v1/events', { body: Buffer.from(events([{ kind: 'user', content: 'before é after' }]), 'utf8') });
    expect(res.status).toBe(200);
    expect((await mem.listEvents({ sessionId: 's' as never }))[0]!.content).toBe('before é after');
  });

  it('refuses a text/plain agent message that is not UTF-8', async () => {
    const res = await send('/v1/messages/validate', { body: Buffer.from([0x6b, 0x69, 0x6e, 0x64, 0x3a, 0x20, 0xff]), contentType: 'text/plain' });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'INVALID_INPUT', data: { field: 'body', byteOffset: 6 } });
  });

  it('answers MCP with a JSON-RPC parse error naming the byte', async () => {
    const body = Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping","x":"', 'utf8'), Buffer.from([0xfe]), Buffer.from('"}', 'utf8')]);
    const res = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body,
    });
    expect(res.status).toBe(400);
    const answer = (await res.json()) as { error: { code: number; message: string } };
    expect(answer.error.code).toBe(-32700);
    expect(answer.error.message).toContain(`byte 0xfe at byte ${body.indexOf(0xfe) + 1} of the body`);
  });
});
