import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTempRepo, numberedLines, type TempRepo } from '../../src/bus/resolvers/test-support.js';
import { cliEnv, ENGRAM_BIN, runEngram, type CliRun } from '../fixtures/cli.js';
import { dropSchema, testPgUrl, uniqueSchema } from '../fixtures/postgres.js';

/**
 * Two `engram serve` processes on different ports sharing one PostgreSQL schema (issue #8): concurrent
 * clients append (with idempotency keys, some retried against the other server) and recall through both; every
 * acknowledged event is stored exactly once at its acknowledged turn, and the bus's per-turn deref budget,
 * grants and engrams hold across both servers together, because they live in the database.
 */
const BIN = ENGRAM_BIN;

let dir: string;
let repo: TempRepo;
let sha: string;
let schema: string;
let pgUrl: string;
const tokens: Record<string, string> = {};
const servers: Array<{ child: ChildProcessWithoutNullStreams; url: string; exited: Promise<number | null>; stderr: () => string }> = [];

const env = (): Record<string, string> => cliEnv();

function engram(args: string[]): CliRun {
  return runEngram(['--pg', pgUrl, ...args], { cwd: dir });
}

async function serve(): Promise<(typeof servers)[number]> {
  const child = spawn(process.execPath, [BIN, 'serve', '--pg', pgUrl, '--port', '0', '--embedder', 'none', '--repo', repo.dir, '--json'], { cwd: dir, env: env() });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  const url = await new Promise<string>((done, fail) => {
    const timer = setInterval(() => {
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) {
        clearInterval(timer);
        done((JSON.parse(line) as { url: string }).url);
      }
    }, 20);
    void exited.then((code) => {
      clearInterval(timer);
      fail(new Error(`engram serve exited ${code}: ${err}`));
    });
  });
  const s = { child, url, exited, stderr: () => err };
  servers.push(s);
  return s;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-multi-'));
  repo = createTempRepo();
  sha = repo.commit({ 'services/gateway/routes.py': numberedLines(300, 'routes'), 'services/ledger/reservation.py': numberedLines(220, 'ledger') });
  schema = uniqueSchema('engram_ms');
  const url = new URL(testPgUrl());
  url.searchParams.set('schema', schema);
  pgUrl = url.toString();
  // Agents are created once, through the CLI, in the shared schema.
  for (const [name, args] of [
    ['lead', ['--role', 'manager', '--project', 'shop']],
    ['coder', ['--role', 'programmer', '--parent', 'lead', '--project', 'shop']],
    ['writer', ['--role', 'programmer', '--project', 'shop']],
  ] as const) {
    const r = engram(['agent', 'add', name, ...args, '--json']);
    expect(r.code, r.stderr).toBe(0);
    tokens[name] = (JSON.parse(r.stdout) as { token: string }).token;
  }
  // Both start at once against the same schema (migrations take an advisory lock).
  await Promise.all([serve(), serve()]);
}, 120_000);

afterAll(async () => {
  for (const s of servers) {
    if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  }
  await dropSchema(schema);
  repo.remove();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

async function api(server: number, path: string, options: { as?: string; body?: unknown; method?: string } = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(`${servers[server]!.url}${path}`, {
    method: options.method ?? (options.body !== undefined ? 'POST' : 'GET'),
    headers: { Authorization: `Bearer ${tokens[options.as ?? 'writer']}`, ...(options.body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

interface Ack {
  sessionId: string;
  key: string;
  id: string;
  turn: number;
  word: string;
}

describe('two engram serve processes on one PostgreSQL schema', () => {
  it('stores every acknowledged event exactly once, at its acknowledged turn, gap-free, with retries across servers', async () => {
    for (const s of servers) expect(await (await fetch(`${s.url}/healthz`)).json()).toEqual({ ok: true, backend: 'postgres' });
    expect(servers[0]!.url).not.toBe(servers[1]!.url);
    const SESSIONS = ['shared-a', 'shared-b', 'shared-c'];
    const WORKERS = 6;
    const BATCHES = 15;
    const acks: Ack[] = [];
    const recallMisses: string[] = [];

    const worker = async (w: number): Promise<void> => {
      for (let i = 0; i < BATCHES; i++) {
        const sessionId = SESSIONS[(w + i) % SESSIONS.length]!;
        const size = 1 + ((w + i) % 3);
        const events = Array.from({ length: size }, (_, j) => {
          const word = `zq${w}x${i}y${j}`;
          return { kind: 'tool_result', toolName: 'Bash', content: `worker ${w} batch ${i} event ${j}: token ${word} seen`, key: `w${w}-b${i}-e${j}` };
        });
        const primary = (w + i) % 2;
        const other = 1 - primary;
        let r: { status: number; body: any };
        if (i % 4 === 3) {
          // A lost acknowledgement: the first answer is dropped, the client retries on the other server, whose answer counts.
          expect((await api(primary, '/v1/events', { body: { sessionId, events } })).status).toBe(200);
          r = await api(other, '/v1/events', { body: { sessionId, events } });
          expect(r.body.events.every((e: { isDuplicate: boolean }) => e.isDuplicate)).toBe(true);
        } else {
          r = await api(primary, '/v1/events', { body: { sessionId, events } });
        }
        expect(r.status).toBe(200);
        const batch: Ack[] = r.body.events.map((e: { id: string; turn: number }, j: number) => ({ sessionId, key: events[j]!.key, id: e.id, turn: e.turn, word: `zq${w}x${i}y${j}` }));
        acks.push(...batch);
        if (i % 3 === 1) {
          // A plain retry on the other server: the same ids and turns, stored once.
          const again = await api(other, '/v1/events', { body: { sessionId, events } });
          expect(again.status).toBe(200);
          expect(again.body.events.map((e: { id: string; turn: number; isDuplicate: boolean }) => [e.id, e.turn, e.isDuplicate])).toEqual(batch.map((a) => [a.id, a.turn, true]));
        }
        if (i % 5 === 2) {
          // Read-after-write across servers: searchable on the other server as soon as the append returned.
          const target = batch[0]!;
          const found = await api(other, '/v1/recall', { body: { query: target.word, sessionIds: [sessionId], k: 5, ignoreTask: true } });
          expect(found.status).toBe(200);
          if (!found.body.results[0].hits.some((h: { eventId: string }) => h.eventId === target.id)) recallMisses.push(target.word);
        }
      }
    };
    await Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));
    expect(recallMisses).toEqual([]);

    // Each key was acknowledged once per attempt; every acknowledgement of a key names the same event.
    const byKey = new Map<string, Ack>();
    for (const a of acks) {
      const seen = byKey.get(`${a.sessionId}/${a.key}`);
      if (seen) expect([seen.id, seen.turn]).toEqual([a.id, a.turn]);
      else byKey.set(`${a.sessionId}/${a.key}`, a);
    }
    for (const sessionId of SESSIONS) {
      const expected = [...byKey.values()].filter((a) => a.sessionId === sessionId);
      const stored: Array<{ id: string; turn: number; key?: string }> = [];
      for (let after = 0, page = 0; ; page++) {
        const r = await api(page % 2, `/v1/sessions/${sessionId}/events?afterTurn=${after}&limit=50`);
        expect(r.status).toBe(200);
        stored.push(...r.body.events);
        if (r.body.nextAfterTurn === undefined) break;
        after = r.body.nextAfterTurn;
      }
      // Gap-free turns from 1, one event per acknowledged key, each acknowledged id at its acknowledged turn.
      expect(stored.map((e) => e.turn)).toEqual(stored.map((_, i) => i + 1));
      expect(stored).toHaveLength(expected.length);
      expect(new Set(stored.map((e) => e.key)).size).toBe(stored.length);
      const atTurn = new Map(stored.map((e) => [e.turn, e.id]));
      for (const a of expected) expect(atTurn.get(a.turn), `${a.key}`).toBe(a.id);
      expect((await api(1, `/v1/sessions/${sessionId}`)).body.eventCount).toBe(expected.length);
    }
  }, 120_000);

  it('enforces a deref budget of 3 repo spans per turn across both servers together, and grants and engrams across them', async () => {
    const span = (a: number, b: number) => `repo:services/gateway/routes.py#L${a}-L${b}@${sha}`;
    // Start a fresh turn for the coder through one server.
    const msg = await api(0, '/v1/messages/validate', { as: 'coder', body: { message: 'ROLE: programmer\nTASK_STATUS: starting\nOUTPUT:\n  summary: "starting"\n' } });
    expect(msg.status).toBe(200);
    const turn = msg.body.turn as number;

    const attempts = await Promise.all(
      Array.from({ length: 6 }, (_, i) => api(i % 2, '/v1/pointer/deref', { as: 'coder', body: { pointer: span(i * 10 + 1, i * 10 + 4), max_tokens: 60 } })),
    );
    const ok = attempts.filter((r) => r.status === 200);
    const denied = attempts.filter((r) => r.status === 403);
    expect(ok).toHaveLength(3);
    expect(denied).toHaveLength(3);
    for (const r of ok) expect(r.body).toMatchObject({ turn, content_digest: expect.stringMatching(/^[0-9a-f]{64}$/) });
    for (const r of denied) expect(r.body.error).toMatchObject({ code: 'DEREF_DENIED', data: { reason: 'count', kind: 'repo', turn } });
    // Both servers see the same meter.
    for (const s of [0, 1]) expect((await api(s, '/v1/bus/usage', { as: 'coder' })).body).toMatchObject({ turn, usage: { counts: { repo: 3 } } });

    // A grant issued through one server pays a deref through the other, once.
    const target = `repo:services/ledger/reservation.py#L1-L10@${sha}`;
    const grant = await api(0, '/v1/grants', { as: 'lead', body: { child: 'coder', pointer: target, cap_tokens: 200 } });
    expect(grant.status).toBe(201);
    const paid = await api(1, '/v1/pointer/deref', { as: 'coder', body: { pointer: target, budget_token: grant.body.budget_token } });
    expect(paid.status).toBe(200);
    expect(paid.body.excerpt).toContain('ledger 1');
    const replay = await api(0, '/v1/pointer/deref', { as: 'coder', body: { pointer: target, budget_token: grant.body.budget_token } });
    expect(replay.status).toBe(403);
    expect(replay.body.error.data.reason).toBe('used');

    // The next message, through the other server, starts the next turn for both.
    expect((await api(1, '/v1/messages/validate', { as: 'coder', body: { message: 'ROLE: programmer\nTASK_STATUS: next\nOUTPUT:\n  summary: "next"\n' } })).body.turn).toBe(turn + 1);
    const fresh = await api(0, '/v1/pointer/deref', { as: 'coder', body: { pointer: span(100, 102) } });
    expect(fresh.status).toBe(200);
    expect(fresh.body.turn).toBe(turn + 1);

    // An engram written through one server is found through the other.
    const put = await api(0, '/v1/engram', {
      as: 'coder',
      body: { kind: 'risk', claim: 'The ledger reservation is not atomic.', pointers: [{ type: 'repo', ref: target }], confidence: 0.7, ttl: 'P1D', scope: 'project' },
    });
    expect(put.status).toBe(201);
    const found = await api(1, '/v1/engram/query?text=ledger%20reservation%20atomic', { as: 'writer' });
    expect(found.body.engrams.map((e: { engram: { id: string } }) => e.engram.id)).toEqual([put.body.engram.id]);
  }, 60_000);
});
