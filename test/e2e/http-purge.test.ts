import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { startHttpServer, type RunningHttpServer } from '../../src/interfaces/http/server.js';

// Secrets and privacy over real HTTP on loopback: redaction of appends and the admin-only purge route.

let dir: string;
let mem: Engram;
let server: RunningHttpServer;
let adminToken: string;
let workerToken: string;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-http-purge-'));
  mem = await openEngram({ db: join(dir, 'engram.db') });
  adminToken = (await mem.agents.add('boss', { role: 'architect', isAdmin: true })).token;
  workerToken = (await mem.agents.add('worker', { role: 'programmer', parent: 'boss' })).token;
  server = await startHttpServer(mem, { port: 0, version: '0.0.0-test' });
});
afterEach(async () => {
  await server.close();
  await mem.close();
  rmSync(dir, { recursive: true, force: true });
});

async function api(path: string, token: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${server.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { Authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** The files of the store's folder holding `text` (the database, its WAL and shared memory, the cold folder). */
function filesHolding(text: string): string[] {
  const walk = (d: string): string[] => readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(d, e.name)) : [join(d, e.name)]));
  return walk(dir).filter((f) => readFileSync(f).includes(Buffer.from(text)));
}

const GH_TOKEN = 'ghp_' + 'Xy12Zw34Vu56Ts78Rq90Po12Nm34Lk56Ji78';

describe('HTTP: secrets and purge', () => {
  it('stores appended credentials redacted and serves private spans as [private]', async () => {
    const appended = await api('/v1/events', workerToken, {
      sessionId: 'w1',
      events: [{ kind: 'user', content: `push with ${GH_TOKEN}, pin <private>4321</private>` }],
    });
    expect(appended.status).toBe(200);
    expect(appended.body.events[0].redactions).toEqual({ count: 1, byKind: { 'github-token': 1 } });
    const page = await api('/v1/sessions/w1/events', workerToken);
    expect(page.body.events[0].content).toMatch(/^push with \[REDACTED:github-token:[0-9a-f]{8}\], pin \[private\]$/);
    const expanded = await api('/v1/expand', workerToken, { id: appended.body.events[0].id });
    expect(expanded.body.text).not.toContain('4321');
  });

  it('purges only for an admin, and only with confirm: true', async () => {
    await api('/v1/events', workerToken, { sessionId: 'w1', events: [{ kind: 'user', content: 'the door code is osprey-2291' }] });
    const denied = await api('/v1/admin/purge', workerToken, { match: 'osprey-2291', confirm: true });
    expect(denied.status).toBe(403);
    const unconfirmed = await api('/v1/admin/purge', adminToken, { match: 'osprey-2291' });
    expect(unconfirmed.status).toBe(400);
    expect(unconfirmed.body.error).toMatchObject({ code: 'INVALID_INPUT', data: { field: 'confirm' } });
    const dry = await api('/v1/admin/purge', adminToken, { match: 'osprey-2291', dryRun: true });
    expect(dry.body).toMatchObject({ isDryRun: true, bySession: { w1: 1 }, counts: { events: 1 } });
    expect((await api('/v1/sessions/w1/events', workerToken)).body.events[0].content).toContain('osprey-2291');

    expect(filesHolding('osprey-2291').length).toBeGreaterThan(0);
    const done = await api('/v1/admin/purge', adminToken, { match: 'osprey-2291', confirm: true });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ id: expect.stringMatching(/^prg_/), counts: { events: 1 }, scrub: { isComplete: true, steps: ['vacuum', 'wal-truncate'] } });
    // The server still runs, its store open: no file of it holds a byte of the purged text.
    expect(filesHolding('osprey-2291')).toEqual([]);
    expect(filesHolding('the door code is')).toEqual([]);
    expect((await api('/v1/sessions/w1/events', workerToken)).body.events[0].content).toMatch(/^\[purged .* by boss\]$/);
    expect((await mem.store.listPurgeLog())[0]).toMatchObject({ actor: 'agent:boss', selector: { match: { chars: 11 } } });
    const both = await api('/v1/admin/purge', adminToken, { sessionId: 'w1', match: 'osprey-2291', confirm: true });
    expect(both.status).toBe(400);
  });
});
