import type { Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import type { Engram } from '../../engine.js';
import { EngramError } from '../../errors.js';
import { createHttpApp, type HttpAppOptions } from './app.js';
import { defaultAllowedHosts } from './host-check.js';

import { DEFAULT_HTTP_HOST, DEFAULT_HTTP_PORT } from './defaults.js';

export { DEFAULT_HTTP_HOST, DEFAULT_HTTP_PORT };
/** How long shutdown waits for in-flight requests before cutting the remaining connections. */
export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;
/**
 * How long an idle kept-alive connection stays open. Node's default, 5 s, is shorter than the idle timeouts of the
 * clients and proxies in front of a server (60 s for common load balancers): a request a client sends on a connection
 * the server is closing at that moment is reset (ECONNRESET; 26 of them in bench/http-load.ts at 1M events, where
 * requests waited past 5 s). The server keeps connections a little longer than those; shutdown still closes idle ones
 * at once.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;

export interface HttpServerOptions extends HttpAppOptions {
  /** Default {@link DEFAULT_HTTP_PORT}; 0 picks a free port (see the returned `url`). */
  port?: number;
  /** Interface to bind. Default {@link DEFAULT_HTTP_HOST}, loopback only. */
  host?: string;
  /** Default {@link DEFAULT_SHUTDOWN_GRACE_MS}. */
  shutdownGraceMs?: number;
  /**
   * Let `@hono/node-server` replace the global Request and Response classes with its lighter ones, which write
   * JSON responses without a web stream (about 15 % more requests per second in bench/http-load.ts). Only for
   * a process that exists to run this server, as `engram serve` does; an embedding process keeps its globals.
   * Default false.
   */
  overrideGlobalObjects?: boolean;
}

export interface RunningHttpServer {
  /** `http://host:port`, with the port actually bound. */
  url: string;
  port: number;
  /** Requests being answered now (their headers arrived, their response has not finished). */
  activeRequests(): number;
  /**
   * Graceful shutdown: stops accepting connections, lets every request in flight finish (writes included),
   * closes idle keep-alive connections, and resolves when nothing is left. The caller closes the store after.
   */
  close(): Promise<void>;
}

/** Serves the HTTP API of `mem` (see {@link createHttpApp}) on a Node.js HTTP server. */
export async function startHttpServer(mem: Engram, options: HttpServerOptions): Promise<RunningHttpServer> {
  const host = options.host ?? DEFAULT_HTTP_HOST;
  const port = options.port ?? DEFAULT_HTTP_PORT;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new EngramError('INVALID_INPUT', `port: ${port} is not a TCP port`, { field: 'port' });
  // The tokenizer's tables load on first use (~250 ms): load them now, not while the first request holds the thread.
  mem.tokenizer.count('engram');
  const { app, settled } = createHttpApp(mem, { ...options, allowedHosts: options.allowedHosts ?? defaultAllowedHosts(host) });
  const server = createAdaptorServer({ fetch: app.fetch, hostname: host, overrideGlobalObjects: options.overrideGlobalObjects ?? false }) as Server;
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  // A request's headers must be allowed at least as long as the connection stays open for them (Node's rule).
  server.headersTimeout = Math.max(server.headersTimeout, KEEP_ALIVE_TIMEOUT_MS + 1000);

  let isClosing = false;
  const open = new Set<ServerResponse>();
  server.on('request', (_req, res: ServerResponse) => {
    open.add(res);
    if (isClosing) res.setHeader('Connection', 'close');
    res.on('close', () => {
      open.delete(res);
      // A keep-alive connection that just finished its last response would otherwise linger until its timeout.
      if (isClosing) setImmediate(() => server.closeIdleConnections());
    });
  });

  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      reject(
        err.code === 'EADDRINUSE'
          ? new EngramError('INVALID_INPUT', `port: ${host}:${port} is already in use; pick another with --port`, { field: 'port' }, { cause: err })
          : new EngramError('INVALID_INPUT', `host: cannot listen on ${host}:${port} (${err.code ?? err.message})`, { field: 'host' }, { cause: err }),
      );
    };
    const onListening = () => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, host);
  });
  const bound = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;

  let closed: Promise<void> | undefined;
  return {
    url: `http://${urlHost}:${bound}`,
    port: bound,
    activeRequests: () => open.size,
    close: () =>
      (closed ??= (async () => {
        isClosing = true;
        // Responses not yet started tell their clients to reconnect elsewhere rather than reuse this connection.
        for (const res of open) if (!res.headersSent) res.setHeader('Connection', 'close');
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        const grace = setTimeout(() => server.closeAllConnections(), options.shutdownGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS);
        try {
          // Handlers first: a client that hung up must not cut off the write its request started.
          await settled();
          await stopped;
        } finally {
          clearTimeout(grace);
        }
      })()),
  };
}
