/**
 * A lean HTTP/1.1 client for load generators: node:http over a keep-alive agent, one socket per closed-loop
 * caller, the body sent as one string and the answer read as one string. Node's fetch (undici behind WHATWG
 * streams, Request and Response objects) costs the load generator several times the CPU per request, and on a
 * machine whose cores the server shares, a heavy client slows the server it measures (bench/http-load.ts).
 */
import { Agent, request } from 'node:http';

export interface HttpAnswer {
  status: number;
  ok: boolean;
  text: string;
}

export interface HttpClient {
  /** `POST path` with a JSON body (already serialised) and a bearer token. */
  post(path: string, token: string, json: string): Promise<HttpAnswer>;
  /** `GET path` with a bearer token. */
  get(path: string, token: string): Promise<HttpAnswer>;
  /** Closes the kept-alive sockets. */
  close(): void;
}

/** Which client a load generator uses: `node-http` (this file's lean one, the default) or Node's `fetch` (as before). */
export type HttpClientKind = 'node-http' | 'fetch';
export const HTTP_CLIENT_KINDS: readonly HttpClientKind[] = ['node-http', 'fetch'];

/** A client for `baseUrl` (`http://host:port`) keeping up to `sockets` connections open. */
export function createHttpClient(baseUrl: string, sockets: number, kind: HttpClientKind = 'node-http'): HttpClient {
  if (kind === 'fetch') return createFetchClient(baseUrl);
  const url = new URL(baseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: sockets, maxFreeSockets: sockets });
  const send = (method: 'GET' | 'POST', path: string, token: string, body?: string): Promise<HttpAnswer> =>
    new Promise((resolve, reject) => {
      const headers: Record<string, string | number> = { Authorization: `Bearer ${token}` };
      if (body !== undefined) {
        headers['Content-Type'] = 'application/json';
        headers['Content-Length'] = Buffer.byteLength(body);
      }
      const req = request({ host: url.hostname, port: url.port, path, method, agent, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          resolve({ status, ok: status >= 200 && status < 300, text: chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8') });
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  return {
    post: (path, token, json) => send('POST', path, token, json),
    get: (path, token) => send('GET', path, token),
    close: () => agent.destroy(),
  };
}

/** The same calls through Node's fetch (its own keep-alive pool), to compare the load generator's CPU with. */
function createFetchClient(baseUrl: string): HttpClient {
  const send = async (method: 'GET' | 'POST', path: string, token: string, body?: string): Promise<HttpAnswer> => {
    const headers: Record<string, string> = { Authorization: `Bearer ${token}` };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(`${baseUrl}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
    return { status: res.status, ok: res.ok, text: await res.text() };
  };
  return {
    post: (path, token, json) => send('POST', path, token, json),
    get: (path, token) => send('GET', path, token),
    close: () => {},
  };
}
