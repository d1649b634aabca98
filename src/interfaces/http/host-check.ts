import { networkInterfaces } from 'node:os';
import type { MiddlewareHandler } from 'hono';
import { EngramError } from '../../errors.js';

/**
 * DNS-rebinding protection (MCP specification, transports, "Security Warning": servers MUST validate the `Origin`
 * header; issue 31 item 5). A web page on `evil.example.com` whose name the attacker re-points at 127.0.0.1 reaches a
 * loopback server as a same-origin page: its requests carry `Host: evil.example.com` and `Origin:
 * http://evil.example.com`. Checking both on every route (MCP, `/v1`, the dashboard and its live stream,
 * `/healthz`) refuses them before any handler runs.
 */
export interface HostCheckOptions {
  /**
   * Names the server answers to, as the `Host` header carries them: `name` (any port) or `name:port` (that port
   * only); IPv6 literals in brackets (`[::1]`). `*` accepts every host (a proxy that checks names itself).
   * Default: {@link LOOPBACK_HOSTS}, plus the machine's own addresses when bound beyond loopback
   * ({@link defaultAllowedHosts}).
   */
  allowedHosts?: readonly string[];
  /**
   * Browser origins allowed besides the server's own (an `Origin` whose host is the request's `Host`, as the
   * dashboard's requests are): `https://engram.example.com`; `*` accepts any. Requests without `Origin`
   * (agents, curl, MCP clients outside a browser) are not affected. Default: none.
   */
  allowedOrigins?: readonly string[];
}

/** The names of this machine's loopback interface a local client uses. */
export const LOOPBACK_HOSTS: readonly string[] = ['localhost', '127.0.0.1', '[::1]'];

/**
 * The hosts accepted when none are configured: the loopback names, and for a server bound beyond loopback the
 * address it is bound to (every interface address for `0.0.0.0` or `::`). IP literals cannot be rebound, so
 * they are safe to accept; a DNS name the server is reached by must be listed (`--allowed-hosts`), since any
 * name could be the attacker's.
 */
export function defaultAllowedHosts(bindHost: string): string[] {
  const hosts = [...LOOPBACK_HOSTS];
  if (isLoopbackName(bindHost)) return hosts;
  if (bindHost === '0.0.0.0' || bindHost === '::') {
    for (const list of Object.values(networkInterfaces())) {
      for (const a of list ?? []) hosts.push(a.family === 'IPv6' ? `[${a.address.split('%')[0]}]` : a.address);
    }
  } else {
    hosts.push(bindHost.includes(':') ? `[${bindHost}]` : bindHost);
  }
  return [...new Set(hosts.map((h) => h.toLowerCase()))];
}

/** Whether a bind address or host name is this machine's loopback. */
export function isLoopbackName(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h);
}

/** Splits a `Host` header value into its lower-cased name (brackets kept for IPv6) and port (empty when absent). */
export function splitHost(host: string): { name: string; port: string } {
  const h = host.trim().toLowerCase();
  if (h.startsWith('[')) {
    const close = h.indexOf(']');
    if (close < 0) return { name: h, port: '' };
    return { name: h.slice(0, close + 1), port: h.slice(close + 2) };
  }
  const colon = h.lastIndexOf(':');
  return colon < 0 ? { name: h, port: '' } : { name: h.slice(0, colon), port: h.slice(colon + 1) };
}

/** Whether `host` (a `Host` header value) is one of `allowed` (see {@link HostCheckOptions.allowedHosts}). */
export function isAllowedHost(host: string, allowed: readonly string[]): boolean {
  const { name, port } = splitHost(host);
  if (name === '') return false;
  for (const entry of allowed) {
    if (entry === '*') return true;
    const e = splitHost(entry);
    if (e.name === name && (e.port === '' || e.port === port)) return true;
  }
  return false;
}

/**
 * Whether a browser `Origin` may call: the server's own origin (its host is the request's `Host`), or one listed.
 * `null` (sandboxed frames, `file:` pages) is refused unless listed literally.
 */
export function isAllowedOrigin(origin: string, host: string, allowed: readonly string[]): boolean {
  const o = origin.trim().toLowerCase().replace(/\/+$/, '');
  if (allowed.some((a) => a === '*' || a.toLowerCase().replace(/\/+$/, '') === o)) return true;
  if (o === 'null') return false;
  try {
    return new URL(o).host === host.trim().toLowerCase();
  } catch {
    return false;
  }
}

/** Middleware refusing, with 403 FORBIDDEN, a request whose `Host` or `Origin` is not allowed. */
export function hostCheck(options: HostCheckOptions = {}): MiddlewareHandler {
  const hosts = options.allowedHosts ?? LOOPBACK_HOSTS;
  const origins = options.allowedOrigins ?? [];
  return async (c, next) => {
    // Node's adaptor builds the URL from the Host header; a request object made in-process (tests) has no header.
    const host = c.req.header('Host') ?? new URL(c.req.url).host;
    if (!isAllowedHost(host, hosts)) {
      throw new EngramError(
        'FORBIDDEN',
        `Host: ${host} is not a name this server answers to (DNS-rebinding protection); reach it as ${hosts.join(', ')}, or start it with --allowed-hosts`,
        { field: 'Host', host },
      );
    }
    const origin = c.req.header('Origin');
    if (origin !== undefined && !isAllowedOrigin(origin, host, origins)) {
      throw new EngramError(
        'FORBIDDEN',
        `Origin: ${origin} may not call this server (DNS-rebinding and cross-site protection); allow it with --allowed-origins`,
        { field: 'Origin', origin },
      );
    }
    await next();
  };
}
