import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { startHttpServer, type RunningHttpServer } from '../../src/interfaces/http/server.js';

// Concurrent POST /v1/events over loopback, as a team of agents sends them: on SQLite they are group-committed
// (src/store/sqlite/group-commit.ts). Each request is answered for its own events only: one refused inside the
// store gets its error and stores nothing, the others are stored and answered 200 with gap-free turns.
let dir: string;
let mem: Engram;
let server: RunningHttpServer;
const tokens: string[] = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-http-concurrent-'));
  mem = await openEngram({ db: join(dir, 'engram.db') });
  await mem.agents.add('lead', { role: 'architect', project: 'team' });
  tokens.length = 0;
  for (const name of ['a', 'b', 'c', 'd']) tokens.push((await mem.agents.add(name, { role: 'programmer', parent: 'lead', project: 'team' })).token);
  tokens.push((await mem.agents.add('outsider', { role: 'programmer', project: 'elsewhere' })).token);
  server = await startHttpServer(mem, { port: 0, version: '0.0.0-test' });
});

afterEach(async () => {
  await server.close();
  await mem.close();
  rmSync(dir, { recursive: true, force: true });
});

const post = async (token: string, body: unknown) => {
  const res = await fetch(`${server.url}/v1/events`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
};

it('answers each concurrent append for its own events: a conflicting one fails alone, a foreign one goes to its own session, the rest are stored on gap-free turns', async () => {
  await post(tokens[0]!, { sessionId: 'shared', events: [{ kind: 'note', content: 'first', key: 'k0' }] });
  const requests = [
    ...[0, 1, 2, 3].flatMap((agent) =>
      [0, 1, 2].map((i) =>
        post(tokens[agent]!, {
          sessionId: agent === 0 ? 'shared' : `own-${agent}`,
          events: [0, 1, 2, 3].map((j) => ({ kind: 'note', content: `agent ${agent} turn ${i} event ${j}`, key: `${agent}:${i}:${j}` })),
        }),
      ),
    ),
    // Same key as an event stored before, other content: 409, and its first event is not stored either.
    post(tokens[1]!, { sessionId: 'shared', events: [{ kind: 'note', content: 'would be stored', key: 'fresh' }, { kind: 'note', content: 'other', key: 'k0' }] }),
    // Another project's agent naming the team's session writes its own session of that name (docs/security.md).
    post(tokens[4]!, { sessionId: 'shared', events: [{ kind: 'note', content: 'intruder' }] }),
  ];
  const answers = await Promise.all(requests);
  expect(answers.slice(0, 12).map((a) => a.status)).toEqual(Array(12).fill(200));
  expect(answers[12]!.status).toBe(409);
  expect(answers[12]!.body.error.code).toBe('IDEMPOTENCY_CONFLICT');
  expect(answers[13]!.status).toBe(200);
  expect(answers[13]!.body.sessionId).toBe('shared');
  expect((await mem.getSession('elsewhere~shared')).eventCount).toBe(1);

  for (const answer of answers.slice(0, 12)) {
    const turns = answer.body.events.map((e: { turn: number }) => e.turn) as number[];
    expect(turns.map((t) => t - turns[0]!)).toEqual([0, 1, 2, 3]);
  }
  const shared = await mem.listEvents({ sessionId: 'shared' as never, limit: 100 });
  expect(shared.map((e) => e.turn)).toEqual(Array.from({ length: 13 }, (_, i) => i + 1));
  expect(shared.map((e) => e.content)).not.toContain('would be stored');
  expect(shared.map((e) => e.content)).not.toContain('intruder');
  for (const agent of [1, 2, 3]) expect((await mem.getSession(`own-${agent}`)).eventCount).toBe(12);
  // Every acknowledged id is the stored one.
  const acked = answers.slice(0, 12).flatMap((a) => a.body.events.map((e: { id: string }) => e.id) as string[]);
  expect((await mem.store.getEvents(acked as never)).length).toBe(48);
});
