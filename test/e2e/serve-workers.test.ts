import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEngram } from '../../src/engine.js';
import { cliEnv, ENGRAM_BIN, runEngram } from '../fixtures/cli.js';

let dir: string;
const children: ChildProcessWithoutNullStreams[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-serve-workers-'));
});
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

interface Served {
  child: ChildProcessWithoutNullStreams;
  url: string;
  adminToken: string;
  stderr: () => string;
  exited: Promise<number | null>;
}

async function serve(workers: number): Promise<Served> {
  const child = spawn(process.execPath, [ENGRAM_BIN, 'serve', '--db', join(dir, 'engram.db'), '--port', '0', '--json', '--embedder', 'none', '--workers', String(workers)], {
    cwd: dir,
    env: cliEnv(),
  });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  const info = await new Promise<{ url: string; admin: { token: string }; workers: number }>((done, fail) => {
    const timer = setInterval(() => {
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) {
        clearInterval(timer);
        done(JSON.parse(line) as { url: string; admin: { token: string }; workers: number });
      }
    }, 20);
    void exited.then((code) => {
      clearInterval(timer);
      fail(new Error(`engram serve exited ${code}: ${err}`));
    });
  });
  expect(info.workers).toBe(workers);
  return { child, url: info.url, adminToken: info.admin.token, stderr: () => err, exited };
}

/** One request on a connection of its own (no keep-alive), so the primary hands each to the next worker. */
function call(url: string, method: string, path: string, token: string, body?: unknown): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method, agent: false, headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', Connection: 'close' } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, json: text ? JSON.parse(text) : null }));
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** The worker processes of a server (Linux /proc). */
function workerPids(pid: number): number[] {
  const file = `/proc/${pid}/task/${pid}/children`;
  return existsSync(file) ? readFileSync(file, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number) : [];
}

async function waitFor(check: () => boolean, ms = 15_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('engram serve --workers N', () => {
  it('serves from N processes on one port: appends stored once, recall, trust rules and revocation hold across workers; SIGTERM stops all, exit 0', async () => {
    const s = await serve(2);
    if (process.platform === 'linux') expect(workerPids(s.child.pid!)).toHaveLength(2);
    const add = async (name: string, project: string) => {
      const r = await call(s.url, 'POST', '/v1/agents', s.adminToken, { name, role: 'programmer', parent: 'admin', project });
      expect(r.status).toBe(201);
      return r.json.token as string;
    };
    const alice = await add('alice', 'red');
    const bob = await add('bob', 'blue');

    // 20 appends, each on a new connection (so both workers take some), turns gap-free in one session.
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await call(s.url, 'POST', '/v1/events', alice, { sessionId: 'red-1', events: [{ kind: 'user', content: `note ${i} marker-${i}x`, key: `k${i}` }] });
      expect(r.status).toBe(200);
      ids.push(r.json.events[0].id as string);
    }
    // A retry answered by whichever worker: the same id, a duplicate.
    const again = await call(s.url, 'POST', '/v1/events', alice, { sessionId: 'red-1', events: [{ kind: 'user', content: 'note 7 marker-7x', key: 'k7' }] });
    expect(again.json.events[0]).toMatchObject({ id: ids[7], isDuplicate: true });
    const page = await call(s.url, 'GET', '/v1/sessions/red-1/events?limit=100', alice);
    expect(page.json.events.map((e: { id: string }) => e.id)).toEqual(ids);
    expect(page.json.events.map((e: { turn: number }) => e.turn)).toEqual(ids.map((_, i) => i + 1));

    for (let i = 0; i < 4; i++) {
      const found = await call(s.url, 'POST', '/v1/recall', alice, { query: 'marker-13x', k: 3 });
      expect(found.status).toBe(200);
      expect(found.json.results[0].hits.map((h: { eventId: string }) => h.eventId)).toContain(ids[13]);
      // Another project's agent: the session does not exist for it, and recall never shows its events.
      expect((await call(s.url, 'GET', '/v1/sessions/red-1', bob)).status).toBe(404);
      const theirs = await call(s.url, 'POST', '/v1/recall', bob, { query: 'marker-13x', k: 3 });
      expect(theirs.json.results[0].hits).toEqual([]);
    }

    // Revoked from another process (the CLI), refused by every worker at once (no process keeps a verified token).
    expect(runEngram(['--db', join(dir, 'engram.db'), 'agent', 'revoke', 'bob'], { cwd: dir }).code).toBe(0);
    for (let i = 0; i < 4; i++) expect((await call(s.url, 'GET', '/v1/sessions', bob)).status).toBe(401);

    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
    const mem = await openEngram({ db: join(dir, 'engram.db') });
    try {
      expect((await mem.stats()).events).toBe(20);
    } finally {
      await mem.close();
    }
  }, 60_000);

  it('replaces a worker that dies, and keeps serving meanwhile', async () => {
    if (process.platform !== 'linux') return;
    const s = await serve(2);
    const [victim] = workerPids(s.child.pid!);
    process.kill(victim!, 'SIGKILL');
    await waitFor(() => {
      const pids = workerPids(s.child.pid!);
      return pids.length === 2 && !pids.includes(victim!);
    });
    expect(s.stderr()).toMatch(/worker \d+ exited \(SIGKILL\); starting another/);
    for (let i = 0; i < 4; i++) expect((await call(s.url, 'GET', '/v1/sessions', s.adminToken)).status).toBe(200);
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  }, 60_000);

  it('refuses a --workers that is not a whole number from 1 to 64, naming the flag', () => {
    for (const bad of ['0', '65', 'two', '1.5']) {
      const r = runEngram(['serve', '--db', join(dir, 'engram.db'), '--port', '0', '--workers', bad], { cwd: dir });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('--workers');
    }
  });
});
