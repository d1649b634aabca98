/**
 * The dashboard's only way to data: the authenticated HTTP API of the same origin. The token lives in
 * sessionStorage (gone when the tab closes) and travels as a Bearer header, never in a URL; the live stream is
 * read with fetch for the same reason (EventSource cannot set headers).
 */

const TOKEN_KEY = 'engram.token';

export function storedToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function storeToken(token: string | null): void {
  if (token === null) sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, token);
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export async function api<T>(path: string, init: { method?: string; body?: unknown; token?: string } = {}): Promise<T> {
  const token = init.token ?? storedToken();
  const headers: Record<string, string> = {};
  if (token) headers.Authorization = `Bearer ${token}`;
  if (init.body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, {
    method: init.method ?? (init.body !== undefined ? 'POST' : 'GET'),
    headers,
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const body = (await res.json().catch(() => ({}))) as { error?: { code: string; message: string } };
  if (!res.ok) throw new ApiError(res.status, body.error?.code ?? 'HTTP_ERROR', body.error?.message ?? `HTTP ${res.status}`);
  return body as T;
}

export interface BusEvent {
  id: number;
  type: string;
  agentId: string | null;
  role: string | null;
  ts: string;
  data: Record<string, unknown>;
}

/**
 * Follows `GET /v1/dashboard/stream` (server-sent events over fetch), reconnecting after a drop, until the
 * returned function is called.
 */
export function followStream(handlers: { onBus(e: BusEvent): void; onSessions(): void; onState(live: boolean): void }): () => void {
  let stopped = false;
  let controller: AbortController | null = null;
  const run = async () => {
    while (!stopped) {
      controller = new AbortController();
      try {
        const res = await fetch('/v1/dashboard/stream', { headers: { Authorization: `Bearer ${storedToken() ?? ''}` }, signal: controller.signal });
        if (!res.ok || !res.body) throw new Error(`stream: HTTP ${res.status}`);
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = '';
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          buffer += value;
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const event = /^event: (.*)$/m.exec(block)?.[1];
            const data = block
              .split('\n')
              .filter((l) => l.startsWith('data: '))
              .map((l) => l.slice(6))
              .join('\n');
            if (event === 'ready') handlers.onState(true);
            else if (event === 'bus') handlers.onBus(JSON.parse(data) as BusEvent);
            else if (event === 'sessions') handlers.onSessions();
          }
        }
      } catch {
        // dropped or aborted: reconnect below unless stopped
      }
      handlers.onState(false);
      if (!stopped) await new Promise((r) => setTimeout(r, 1500));
    }
  };
  void run();
  return () => {
    stopped = true;
    controller?.abort();
  };
}
