/**
 * The server of the HTTP floor (http-floor.ts): HTTP and JSON alone, nothing Engram does. `POST /v1/events` reads the
 * body, parses it and answers an id per event, the shape of Engram's answer; `POST /v1/recall` reads and parses its
 * body and answers a JSON document of `answerBytes`, about the size of Engram's recall answer. Over plain node:http
 * (`node-http`) or Hono on @hono/node-server, the framework `engram serve` runs on (`hono`). Prints its port.
 *
 *   node --import tsx bench/lib/http-floor-child.ts node-http|hono <answerBytes>
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';

const framework = process.argv[2];
const answerBytes = Number(process.argv[3]);
if ((framework !== 'node-http' && framework !== 'hono') || !Number.isInteger(answerBytes) || answerBytes < 2) {
  console.error('usage: http-floor-child.ts node-http|hono <answerBytes>');
  process.exit(2);
}
// A recall answer's text is excerpts; one string field of the asked size (less the JSON around it).
const recallAnswer = (query: unknown) => JSON.stringify({ query, text: 'x'.repeat(Math.max(0, answerBytes - 30)) });
const appendAnswer = (events: unknown[]) => JSON.stringify({ events: events.map((_, i) => ({ id: randomUUID(), turn: i + 1, isDuplicate: false })) });

function answer(path: string, body: string): string | null {
  const parsed = JSON.parse(body) as { events?: unknown[]; query?: unknown };
  if (path === '/v1/events' && Array.isArray(parsed.events)) return appendAnswer(parsed.events);
  if (path === '/v1/recall') return recallAnswer(parsed.query);
  return null;
}

if (framework === 'hono') {
  const app = new Hono();
  app.post('/v1/*', async (c) => {
    const out = answer(c.req.path, await c.req.text());
    return out === null ? c.text('not found', 404) : c.body(out, 200, { 'content-type': 'application/json' });
  });
  serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => console.log(info.port));
} else {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const out = answer(req.url ?? '', Buffer.concat(chunks).toString('utf8'));
      res.writeHead(out === null ? 404 : 200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out ?? '') });
      res.end(out ?? '');
    });
  });
  server.listen(0, '127.0.0.1', () => console.log((server.address() as { port: number }).port));
}
