import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Context, Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { Engram } from '../../engine.js';
import { agentPrincipal } from '../../model/access.js';
import type { AgentRecord } from '../../model/agent.js';
import { DashboardView } from '../../view/dashboard-view.js';

/**
 * The dashboard's static UI at `/` (built by `npm run build` into dist/dashboard/; no build at run time, no
 * network) and its live stream `GET /v1/dashboard/stream`: server-sent events over a response the client reads
 * with fetch, so the bearer token travels in the Authorization header, never in a URL. Static files need no
 * token; every byte of data comes through the authenticated API.
 */

/** How often the stream looks for new telemetry and session activity. */
export const STREAM_POLL_MS = 1000;
/** Most recently active sessions compared at each poll to notice activity. */
const SESSIONS_WATCHED = 50;
/** A comment line this often keeps proxies from closing an idle stream. */
const HEARTBEAT_MS = 15_000;
/** A stream ends after this long; the client reconnects (and authenticates again). */
const STREAM_MAX_MS = 10 * 60_000;

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
};
const CSP = "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; frame-ancestors 'none'";

/** The built UI: dist/dashboard/ beside the compiled server, or the repository's dist/ when run from source. */
export function dashboardDir(): string | null {
  for (const rel of ['../../dashboard/', '../../../dist/dashboard/']) {
    const dir = fileURLToPath(new URL(rel, import.meta.url));
    if (existsSync(`${dir}index.html`)) return dir;
  }
  return null;
}

type Env = { Variables: { agent: AgentRecord } };

export interface DashboardMount {
  /** Ends every open stream (graceful shutdown must not wait for them). */
  closeStreams(): void;
}

/** Adds the stream (behind the app's `/v1/*` authentication) and the static UI to `app`. */
export function mountDashboard(app: Hono<Env>, mem: Engram): DashboardMount {
  const open = new Set<() => void>();
  app.get('/v1/dashboard/stream', (c) => stream(c, mem, open));

  const dir = dashboardDir();
  const cache = new Map<string, Buffer>();
  const serveFile = async (c: Context, name: string): Promise<Response> => {
    if (dir === null) {
      return c.html('<!doctype html><title>Engram</title><p>The dashboard is not built: run <code>npm run build</code>.</p>', 404);
    }
    let body = cache.get(name);
    if (body === undefined) {
      try {
        body = await readFile(`${dir}${name}`);
      } catch {
        return c.json({ error: { code: 'NOT_FOUND', message: `no file /${name}`, data: { field: 'path' } } }, 404);
      }
      cache.set(name, body);
    }
    const isHashed = name.startsWith('assets/');
    return c.body(new Uint8Array(body), 200, {
      'Content-Type': TYPES[extname(name)] ?? 'application/octet-stream',
      'Content-Security-Policy': CSP,
      'X-Content-Type-Options': 'nosniff',
      'Cache-Control': isHashed ? 'public, max-age=31536000, immutable' : 'no-cache',
    });
  };
  app.get('/', (c) => serveFile(c, 'index.html'));
  app.get('/favicon.svg', (c) => serveFile(c, 'favicon.svg'));
  // Only flat, hashed names under assets/: no path reaches outside the folder.
  app.get('/assets/:name{[A-Za-z0-9_.-]+}', (c) => serveFile(c, `assets/${c.req.param('name')}`));

  return {
    closeStreams: () => {
      for (const close of [...open]) close();
    },
  };
}

function stream(c: Context<Env>, mem: Engram, open: Set<() => void>): Response {
  const agent = c.get('agent');
  const view = mem.viewAs(agentPrincipal(agent));
  const dashboard = new DashboardView(mem, view, agent);
  c.header('Cache-Control', 'no-store');
  c.header('X-Accel-Buffering', 'no');
  return streamSSE(c, async (sse) => {
    let isOpen = true;
    let wake: (() => void) | undefined;
    const close = () => {
      isOpen = false;
      wake?.();
    };
    open.add(close);
    sse.onAbort(close);
    const sleep = (ms: number) =>
      new Promise<void>((resolve) => {
        const t = setTimeout(resolve, ms);
        wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
    // The most recently active sessions change first when anything is appended or created.
    const sessionsSignature = async () =>
      (await view.listSessions({ limit: SESSIONS_WATCHED })).map((s) => `${s.id}:${s.eventCount}:${s.lastTurn}`).join('|');
    const started = Date.now();
    let lastId = 0;
    let sinceMs = started - 1000;
    let sessionsSig = '';
    let lastBeat = started;
    try {
      // The cursor starts at the newest event now: the client loads the panels itself, then follows changes.
      const initial = await dashboard.telemetrySince(0, sinceMs);
      lastId = initial.reduce((m, e) => Math.max(m, e.id), 0);
      sessionsSig = await sessionsSignature();
      await sse.writeSSE({ event: 'ready', data: JSON.stringify({ agent: agent.name, pollMs: STREAM_POLL_MS }) });
      while (isOpen && Date.now() - started < STREAM_MAX_MS) {
        await sleep(STREAM_POLL_MS);
        if (!isOpen) break;
        // A token revoked while its page is open stops being served at the next poll.
        if ((await mem.agents.get(agent.id)).revokedAt !== undefined) break;
        const events = await dashboard.telemetrySince(lastId, sinceMs);
        for (const e of events) {
          lastId = Math.max(lastId, e.id);
          sinceMs = Math.max(sinceMs, e.tsMs - 60_000);
          await sse.writeSSE({ event: 'bus', id: String(e.id), data: JSON.stringify({ id: e.id, type: e.type, agentId: e.agentId ?? null, role: e.role ?? null, ts: new Date(e.tsMs).toISOString(), data: e.data }) });
        }
        const sig = await sessionsSignature();
        if (sig !== sessionsSig) {
          await sse.writeSSE({ event: 'sessions', data: '{}' });
          sessionsSig = sig;
        }
        if (Date.now() - lastBeat > HEARTBEAT_MS) {
          lastBeat = Date.now();
          await sse.write(': keep-alive\n\n');
        }
      }
    } finally {
      open.delete(close);
    }
  });
}
