import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpClient, HTTP_CLIENT_KINDS } from './http-client.js';

/** A loopback server that answers with what it received, and counts the connections opened to it. */
let server: Server;
let url: string;
let connections = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', () => {
      const status = req.url === '/missing' ? 404 : req.method === 'POST' ? 201 : 200;
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ method: req.method, path: req.url, auth: req.headers.authorization, type: req.headers['content-type'] ?? null, body }));
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe.each(HTTP_CLIENT_KINDS)('createHttpClient (%s)', (kind) => {
  it('posts a JSON body with the bearer token and reads the whole answer, status included', async () => {
    const client = createHttpClient(url, 2, kind);
    const body = JSON.stringify({ text: 'é'.repeat(70_000) }); // multi-byte and larger than one chunk
    const res = await client.post('/v1/events', 'tok-1', body);
    expect(res.status).toBe(201);
    expect(res.ok).toBe(true);
    expect(JSON.parse(res.text)).toEqual({ method: 'POST', path: '/v1/events', auth: 'Bearer tok-1', type: 'application/json', body });
    const got = await client.get('/missing', 'tok-2');
    expect([got.status, got.ok]).toEqual([404, false]);
    expect(JSON.parse(got.text)).toMatchObject({ method: 'GET', auth: 'Bearer tok-2', type: null, body: '' });
    client.close();
  });
});

describe('createHttpClient (node-http) connections', () => {
  it('keeps its sockets alive: closed-loop callers reuse at most `sockets` connections', async () => {
    const before = connections;
    const client = createHttpClient(url, 4, 'node-http');
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let i = 0; i < 25; i++) expect((await client.post('/x', 't', '{}')).status).toBe(201);
      }),
    );
    client.close();
    expect(connections - before).toBeGreaterThan(0);
    expect(connections - before).toBeLessThanOrEqual(4);
  });

  it('rejects when nothing listens', async () => {
    const client = createHttpClient('http://127.0.0.1:1', 1, 'node-http');
    await expect(client.post('/x', 't', '{}')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    client.close();
  });
});
