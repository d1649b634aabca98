import { request } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { startHttpServer, type RunningHttpServer } from '../../src/interfaces/http/server.js';
import { defaultAllowedHosts, isAllowedHost, isAllowedOrigin } from '../../src/interfaces/http/host-check.js';

/**
 * DNS-rebinding protection (issue 31 item 5). The first cases send exactly the requests of the official MCP
 * conformance suite's `dns-rebinding-protection` scenario (@modelcontextprotocol/conformance 0.1.16, which needs
 * Node 22+ and so cannot run here on Node 20): a POST of `initialize` to /mcp with `Host` and `Origin` of
 * evil.example.com must get a 4xx; the same with the server's own `Host` and `Origin` a 2xx. Ours also carries
 * the agent's token (the scenario's client has none; /mcp answers 401 to anyone without one).
 */

let dir: string;
let mem: Engram;
let server: RunningHttpServer;
let token: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-host-'));
  mem = await openEngram({ db: join(dir, 'engram.db') });
  token = (await mem.agents.add('worker', { role: 'programmer' })).token;
  server = await startHttpServer(mem, { port: 0, version: '0.0.0-test' });
});

afterAll(async () => {
  await server.close();
  await mem.close();
  rmSync(dir, { recursive: true, force: true });
});

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'conformance-dns-rebinding-test', version: '1.0.0' } },
});

/** One request with exactly these headers (node:http, so `Host` is sent as given). */
function send(url: string, path: string, headers: Record<string, string>, body?: string): Promise<{ status: number; body: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path, method: body === undefined ? 'GET' : 'POST', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

const mcpHeaders = (host: string, origin = `http://${host}`): Record<string, string> => ({
  'Content-Type': 'application/json',
  Accept: 'application/json, text/event-stream',
  Host: host,
  Origin: origin,
  Authorization: `Bearer ${token}`,
});

describe('the conformance scenario dns-rebinding-protection, request for request', () => {
  it('refuses initialize on /mcp with Host and Origin of evil.example.com (4xx)', async () => {
    const r = await send(server.url, '/mcp', mcpHeaders('evil.example.com'), INITIALIZE);
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body).error).toMatchObject({ code: 'FORBIDDEN', data: { field: 'Host', host: 'evil.example.com' } });
  });

  it('accepts initialize on /mcp with the server\'s own Host and Origin (2xx), as localhost and as 127.0.0.1', async () => {
    const port = new URL(server.url).port;
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`]) {
      const r = await send(server.url, '/mcp', mcpHeaders(host), INITIALIZE);
      expect(r.status, host).toBe(200);
      expect(JSON.parse(r.body).result.serverInfo.name).toBe('engram');
    }
  });
});

describe('Host and Origin on every route', () => {
  const evil = { Host: 'evil.example.com', Origin: 'http://evil.example.com' };

  it('refuses a foreign Host on /v1, the dashboard, its live stream and /healthz, before authentication', async () => {
    for (const path of ['/v1/sessions', '/', '/v1/dashboard/stream', '/healthz', '/v1/openapi.json']) {
      const withToken = await send(server.url, path, { ...evil, Authorization: `Bearer ${token}` });
      expect(withToken.status, path).toBe(403);
      const without = await send(server.url, path, { Host: 'evil.example.com' });
      expect(without.status, path).toBe(403);
    }
  });

  it('refuses a foreign Origin with a loopback Host (a page of another site or another local port)', async () => {
    const port = new URL(server.url).port;
    for (const origin of ['http://evil.example.com', `http://localhost:${Number(port) + 1}`, 'null']) {
      const r = await send(server.url, '/v1/sessions', { Host: `127.0.0.1:${port}`, Origin: origin, Authorization: `Bearer ${token}` });
      expect(r.status, origin).toBe(403);
      expect(JSON.parse(r.body).error.data).toMatchObject({ field: 'Origin' });
    }
  });

  it('serves the dashboard\'s own origin and clients that send no Origin', async () => {
    const port = new URL(server.url).port;
    const same = await send(server.url, '/v1/sessions', { Host: `localhost:${port}`, Origin: `http://localhost:${port}`, Authorization: `Bearer ${token}` });
    expect(same.status).toBe(200);
    const agent = await send(server.url, '/v1/sessions', { Host: `[::1]:${port}`, Authorization: `Bearer ${token}` });
    expect(agent.status).toBe(200);
  });

  it('answers names and origins of an allow-list (a deployment behind a proxy), and still refuses others', async () => {
    const proxied = await startHttpServer(mem, {
      port: 0,
      version: 't',
      allowedHosts: [...defaultAllowedHosts('127.0.0.1'), 'engram.example.com'],
      allowedOrigins: ['https://dash.example.com'],
    });
    try {
      const ok = await send(proxied.url, '/v1/sessions', { Host: 'engram.example.com', Origin: 'https://dash.example.com', Authorization: `Bearer ${token}` });
      expect(ok.status).toBe(200);
      const local = await send(proxied.url, '/healthz', { Host: new URL(proxied.url).host });
      expect(local.status).toBe(200);
      const other = await send(proxied.url, '/v1/sessions', { Host: 'engram.example.com', Origin: 'https://evil.example.com', Authorization: `Bearer ${token}` });
      expect(other.status).toBe(403);
      const rebound = await send(proxied.url, '/mcp', mcpHeaders('evil.example.com'), INITIALIZE);
      expect(rebound.status).toBe(403);
    } finally {
      await proxied.close();
    }
  });
});

describe('host-check rules', () => {
  it('matches names with any port, name:port with that port only, IPv6 literals in brackets', () => {
    expect(isAllowedHost('localhost:7077', ['localhost'])).toBe(true);
    expect(isAllowedHost('LOCALHOST', ['localhost'])).toBe(true);
    expect(isAllowedHost('[::1]:7077', ['[::1]'])).toBe(true);
    expect(isAllowedHost('a.example:8443', ['a.example:8443'])).toBe(true);
    expect(isAllowedHost('a.example:9000', ['a.example:8443'])).toBe(false);
    expect(isAllowedHost('localhost.evil.example', ['localhost'])).toBe(false);
    expect(isAllowedHost('', ['localhost'])).toBe(false);
    expect(isAllowedHost('anything', ['*'])).toBe(true);
  });

  it('allows an Origin whose host is the request\'s Host, or one listed, and refuses null', () => {
    expect(isAllowedOrigin('http://localhost:7077', 'localhost:7077', [])).toBe(true);
    expect(isAllowedOrigin('http://localhost:7078', 'localhost:7077', [])).toBe(false);
    expect(isAllowedOrigin('https://dash.example/', 'localhost:7077', ['https://dash.example'])).toBe(true);
    expect(isAllowedOrigin('null', 'localhost:7077', [])).toBe(false);
    expect(isAllowedOrigin('not a url', 'localhost:7077', [])).toBe(false);
  });

  it('accepts the bound IP literal by default when bound beyond loopback, never a DNS name', () => {
    expect(defaultAllowedHosts('127.0.0.1')).toEqual(['localhost', '127.0.0.1', '[::1]']);
    expect(defaultAllowedHosts('192.168.1.20')).toContain('192.168.1.20');
    expect(defaultAllowedHosts('fd00::5')).toContain('[fd00::5]');
    expect(defaultAllowedHosts('0.0.0.0')).toContain('127.0.0.1');
    expect(defaultAllowedHosts('0.0.0.0').every((h) => /^[\d.]+$|^\[[0-9a-f:]+\]$|^localhost$/.test(h))).toBe(true);
  });
});
