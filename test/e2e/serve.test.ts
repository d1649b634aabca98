import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEngram } from '../../src/engine.js';
import { cliEnv, ENGRAM_BIN, runEngram } from '../fixtures/cli.js';
import type { EventId } from '../../src/model/ids.js';

const BIN = ENGRAM_BIN;

let dir: string;
const children: ChildProcessWithoutNullStreams[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-serve-'));
});
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

function env(): Record<string, string> {
  // The CLI's default embedder (builtin) stays: serve embeds in the background unless told otherwise.
  return cliEnv({ ENGRAM_EMBEDDER: process.env.ENGRAM_EMBEDDER ?? '' });
}

function engram(args: string[]) {
  return runEngram(['--db', join(dir, 'engram.db'), ...args], { cwd: dir });
}

interface Served {
  child: ChildProcessWithoutNullStreams;
  url: string;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

/** Starts `engram serve` and resolves once it printed its address. */
async function serve(args: string[] = []): Promise<Served> {
  const child = spawn(process.execPath, [BIN, 'serve', '--db', join(dir, 'engram.db'), '--port', '0', ...args], { cwd: dir, env: env() });
  children.push(child);
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  const url = await new Promise<string>((done, fail) => {
    const timer = setInterval(() => {
      const m = /listening on (http:\/\/[^\s]+)/.exec(out);
      if (m) {
        clearInterval(timer);
        done(m[1]!);
      }
    }, 20);
    void exited.then((code) => {
      clearInterval(timer);
      fail(new Error(`engram serve exited ${code}: ${err}`));
    });
  });
  return { child, url, stdout: () => out, stderr: () => err, exited };
}

/** Reads from a socket until `done(text)` holds. */
function readUntil(socket: Socket, done: (text: string) => boolean): Promise<string> {
  return new Promise((ok, fail) => {
    let text = '';
    const onData = (d: Buffer) => {
      text += d.toString('utf8');
      if (done(text)) {
        socket.off('data', onData);
        ok(text);
      }
    };
    socket.on('data', onData);
    socket.once('error', fail);
  });
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('engram serve', () => {
  it('prints its address and an admin token once, answers /healthz, and the token works', async () => {
    const s = await serve();
    expect(s.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const token = /(eng_[A-Za-z0-9_-]{43})/.exec(s.stdout())?.[1];
    expect(token).toBeDefined();
    expect(s.stdout()).toContain('Created the admin agent "admin"');

    const health = await fetch(`${s.url}/healthz`);
    expect(health.status).toBe(200);
    const me = await fetch(`${s.url}/v1/agents/me`, { headers: { Authorization: `Bearer ${token}` } });
    expect(await me.json()).toMatchObject({ name: 'admin', isAdmin: true });

    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
    expect(s.stderr()).toContain('stopped');

    // A second start finds an agent and prints no token.
    const again = await serve();
    expect(again.stdout()).not.toMatch(/eng_[A-Za-z0-9_-]{43}/);
    expect(again.stdout()).toContain('engram agent add NAME --role ROLE');
    again.child.kill('SIGINT');
    expect(await again.exited).toBe(0);
  });

  it('on SIGTERM finishes a request in flight before exiting 0', async () => {
    const s = await serve();
    const token = /(eng_[A-Za-z0-9_-]{43})/.exec(s.stdout())![1]!;
    const { port } = new URL(s.url);
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise<void>((ok) => socket.once('connect', () => ok()));
    // A first request makes sure the server has accepted this connection.
    socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    await readUntil(socket, (t) => t.includes('"ok":true'));

    const body = JSON.stringify({ sessionId: 'late', events: [{ kind: 'note', content: 'written while shutting down', key: 'k1' }] });
    socket.write(
      `POST /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 20)}`,
    );
    await pause(150);
    s.child.kill('SIGTERM');
    await pause(150);
    expect(s.child.exitCode).toBeNull(); // still waiting for the request
    const response = readUntil(socket, (t) => t.includes('"isDuplicate"'));
    socket.write(body.slice(20));
    const text = await response;
    expect(text).toMatch(/^HTTP\/1\.1 200/);
    expect(text.toLowerCase()).toContain('connection: close');
    expect(await s.exited).toBe(0);
    socket.destroy();

    const stats = engram(['--json', 'stats']);
    expect(JSON.parse(stats.stdout).events).toBe(1);
  });

  it('serves MCP over Streamable HTTP to the real SDK client', async () => {
    const s = await serve();
    const token = /(eng_[A-Za-z0-9_-]{43})/.exec(s.stdout())![1]!;
    const client = new Client({ name: 'serve-e2e', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${s.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}`, 'X-Engram-Session': 'via-mcp' } } }),
    );
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).toContain('append_events');
      const r = await client.callTool({ name: 'append_events', arguments: { events: [{ kind: 'note', content: 'stored over MCP', key: 'm1' }] } });
      expect(r.isError).toBeFalsy();
      expect((r.structuredContent as { sessionId: string }).sessionId).toBe('via-mcp');
    } finally {
      await client.close();
    }
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
    expect(JSON.parse(engram(['--json', 'sessions']).stdout)[0]).toMatchObject({ id: 'via-mcp', eventCount: 1 });
  });

  it('embeds events appended while serving in the background (the built-in embedder by default)', async () => {
    const s = await serve();
    expect(s.stdout()).toMatch(/embeddings: builtin[^,]*, in the background/);
    const token = /(eng_[A-Za-z0-9_-]{43})/.exec(s.stdout())![1]!;
    const res = await fetch(`${s.url}/v1/events`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ sessionId: 'bg', events: [{ kind: 'user', content: 'the staging database refuses connections' }, { kind: 'decision', content: 'move staging to port 6543' }] }),
    });
    const ids = ((await res.json()) as { events: Array<{ id: EventId }> }).events.map((e) => e.id);
    // Read the store behind the server's back until the worker has embedded both events.
    const mem = await openEngram({ db: join(dir, 'engram.db'), sqlite: { create: false } });
    try {
      const model = await mem.store.getVectorModel();
      expect(model?.name).toMatch(/^builtin/);
      let vectors = 0;
      for (let i = 0; i < 200 && vectors < ids.length; i++) {
        vectors = (await mem.store.getVectors(model!.name, ids)).size;
        if (vectors < ids.length) await pause(50);
      }
      expect(vectors).toBe(ids.length);
      expect((await mem.store.pendingEmbeddings(ids)).size).toBe(0);
    } finally {
      await mem.close();
    }
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  });

  it('serves without embeddings under --embedder none', async () => {
    const s = await serve(['--embedder', 'none']);
    expect(s.stdout()).toContain('embeddings: off');
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  });

  it('refuses a non-loopback host without --allow-remote, naming --host', () => {
    const r = engram(['serve', '--port', '0', '--host', '0.0.0.0']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--host');
    expect(r.stderr).toContain('--allow-remote');
  });

  it('warns when allowed to listen beyond loopback', async () => {
    const s = await serve(['--host', '0.0.0.0', '--allow-remote']);
    expect(s.stderr()).toContain('WARNING');
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  });
});

describe('engram agent', () => {
  it('adds agents in a hierarchy, prints the token once, lists, rotates and revokes', () => {
    const root = engram(['agent', 'add', 'arch', '--role', 'architect', '--admin']);
    expect(root.code).toBe(0);
    expect(root.stdout).toMatch(/eng_[A-Za-z0-9_-]{43}/);
    expect(root.stdout).toContain('shown once');

    const child = engram(['--json', 'agent', 'add', 'prog-1', '--role', 'programmer', '--parent', 'arch', '--project', 'checkout']);
    expect(child.code).toBe(0);
    const added = JSON.parse(child.stdout) as { agent: { id: string; parentId: string }; token: string };
    expect(added.token).toMatch(/^eng_/);

    const dup = engram(['agent', 'add', 'PROG-1', '--role', 'programmer']);
    expect(dup.code).toBe(5);
    expect(dup.stderr).toContain('CONFLICT');
    const orphan = engram(['agent', 'add', 'x', '--role', 'programmer', '--parent', 'nobody']);
    expect(orphan.code).toBe(2);
    expect(orphan.stderr).toContain('parent');
    expect(engram(['agent', 'add', 'y']).code).toBe(2);

    const list = engram(['agent', 'list']);
    expect(list.stdout).toMatch(/prog-1\s+programmer\s+arch\s+checkout/);
    expect(list.stdout).not.toContain(added.token);

    const rotated = engram(['--json', 'agent', 'rotate', 'prog-1']);
    expect(JSON.parse(rotated.stdout).token).not.toBe(added.token);
    expect(engram(['agent', 'revoke', 'prog-1']).code).toBe(0);
    const after = JSON.parse(engram(['--json', 'agent', 'list']).stdout) as Array<{ name: string; revokedAt?: string }>;
    expect(after.find((a) => a.name === 'prog-1')?.revokedAt).toBeDefined();
    expect(engram(['agent', 'revoke', 'nobody']).code).toBe(3);
  });
});
