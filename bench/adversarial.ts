/**
 * Adversarial inputs of the largest allowed size through the real server, while a separate process polls
 * `/healthz` every ~10 ms: does any request hold the server's one JavaScript thread? For each input it records the
 * status, the latency, and the longest gap between two `/healthz` answers while the request ran (the server
 * answered nothing else for that long). Issue 12's done-when: no input of the allowed size blocks `/healthz` for
 * more than 100 ms. Writes bench/results/adversarial.{md,json}.
 *
 *   npm run bench -- adversarial [--repeats 1]
 *
 * Loopback only; about 90 requests, a few minutes at most.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { DEFAULT_MAX_BODY_BYTES } from '../src/interfaces/http/app.js';
import {
  MAX_APPEND_EVENTS,
  MAX_INLINE_CONTENT_BYTES,
  MAX_REQUEST_INDEXED_CHARS,
  MAX_JSON_DEPTH,
  MAX_JSON_ENTRIES,
  MAX_QUERY_CHARS,
  MAX_REQUEST_JSON_VALUES,
} from '../src/model/limits.js';
import { Prng } from './lib/prng.js';
import { renderProbes, runProbes, type Probe } from './lib/adversarial-probes.js';
import { machineLine, round } from './lib/stats.js';

export interface AdversarialArgs {
  /** Times each input is sent (fresh session each time); the report keeps the worst. */
  repeats: number;
  /**
   * Redaction of credentials on ingest, as `engram serve` does by default. `false` (`--no-redact`) serves with it off
   * and writes `adversarial-no-redact.{md,json}`: what redaction's scan adds to each request.
   */
  redact: boolean;
}

/** The done-when of issue 12. */
const MAX_HEALTHZ_GAP_MS = 100;
/** How often the poller asks `/healthz` (it waits for each answer, so a blocked server shows as one long gap). */
const POLL_INTERVAL_MS = 10;
const CONTEXT_WINDOW = 32_768;

interface Input {
  group: string;
  name: string;
  /** Requests sent in order before the measured one, unmeasured (e.g. storing the message a context pack reads). */
  setup?: Array<() => Request>;
  /** The measured request; `answers` holds the answer text of every earlier input, by name. */
  request: (answers: ReadonlyMap<string, string>) => Request;
  /** Statuses that count as the expected answer (a refusal is often the point). */
  expect: number[];
}

interface Request {
  method: string;
  path: string;
  /** Text, or bytes sent as they are (a body that is not UTF-8). */
  body?: string | Uint8Array;
  contentType?: string;
}

interface Measured {
  group: string;
  name: string;
  requestBytes: number;
  status: number;
  expected: boolean;
  errorCode?: string;
  latencyMs: number;
  /** Longest time between two /healthz answers overlapping the request. */
  healthzGapMs: number;
  /** Longest /healthz request sent while it ran. */
  healthzLatencyMs: number;
}

export async function runAdversarialBench(args: AdversarialArgs): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'engram-adversarial-'));
  const loadAverageAtStart = loadavg().map((l) => round(l, 2));
  const db = join(dir, 'engram.db');
  let server: ChildProcess | undefined;
  let poller: ChildProcess | undefined;
  try {
    console.error(`== starting engram serve on ${db}`);
    const started = await startServer(db, args.redact);
    server = started.child;
    const { url } = started;
    const admin = started.adminToken;
    const send = async (r: Request, token = admin): Promise<{ status: number; text: string }> => {
      const res = await fetch(`${url}${r.path}`, {
        method: r.method,
        headers: { Authorization: `Bearer ${token}`, ...(r.body !== undefined ? { 'Content-Type': r.contentType ?? 'application/json' } : {}) },
        ...(r.body !== undefined ? { body: r.body } : {}),
      });
      return { status: res.status, text: await res.text() };
    };

    console.error('== starting the /healthz poller');
    const polling = startPoller(url);
    poller = polling.child;
    await sleep(300);

    const results: Measured[] = [];
    // Pass 0 warms the server up (its code paths compiled, its caches of tables filled) and is not measured: a server
    // in use is warm; a cold one pays that once, not per input.
    for (let pass = 0; pass <= args.repeats; pass++) {
      const isMeasured = pass > 0;
      console.error(isMeasured ? `== pass ${pass} (measured)` : '== warm-up pass (not measured)');
      const answers = new Map<string, string>();
      for (const input of buildInputs(pass)) {
        for (const setup of input.setup ?? []) {
          const r = await send(setup());
          if (r.status >= 300) throw new Error(`${input.name}: setup answered ${r.status}: ${r.text.slice(0, 300)}`);
        }
        const request = input.request(answers);
        // Let the poller settle, so the window starts with a fresh answer.
        await sleep(4 * POLL_INTERVAL_MS);
        const t0 = now();
        const answer = await send(request);
        const t1 = now();
        answers.set(input.name, answer.text);
        await sleep(4 * POLL_INTERVAL_MS);
        if (!isMeasured) continue;
        const code = /"code":"(\w+)"/.exec(answer.text)?.[1];
        results.push({
          group: input.group,
          name: input.name,
          requestBytes: request.body === undefined ? 0 : typeof request.body === 'string' ? Buffer.byteLength(request.body) : request.body.byteLength,
          status: answer.status,
          expected: input.expect.includes(answer.status),
          ...(code ? { errorCode: code } : {}),
          latencyMs: t1 - t0,
          healthzGapMs: Number.NaN,
          healthzLatencyMs: Number.NaN,
          ...({ t0, t1 } as object),
        });
        console.error(`${input.name}: ${answer.status} in ${round(t1 - t0, 1)} ms`);
      }
    }
    console.error('== probes: credentials, purge and grep, the CLI');
    const probes = await runProbes({
      send,
      dir,
      db,
      freshServer: async () => {
        const freshDir = mkdtempSync(join(tmpdir(), 'engram-adversarial-purge-'));
        const fresh = await startServer(join(freshDir, 'engram.db'), args.redact);
        const sendFresh = async (r: Request): Promise<{ status: number; text: string }> => {
          const res = await fetch(`${fresh.url}${r.path}`, {
            method: r.method,
            headers: { Authorization: `Bearer ${fresh.adminToken}`, ...(r.body !== undefined ? { 'Content-Type': r.contentType ?? 'application/json' } : {}) },
            ...(r.body !== undefined ? { body: r.body } : {}),
          });
          return { status: res.status, text: await res.text() };
        };
        return {
          send: sendFresh,
          dir: freshDir,
          stop: async () => {
            fresh.child.kill('SIGTERM');
            await new Promise((resolve) => fresh.child.once('exit', resolve));
            rmSync(freshDir, { recursive: true, force: true });
          },
        };
      },
    });
    const polls = await polling.stop();
    poller = undefined;
    for (const r of results as Array<Measured & { t0: number; t1: number }>) {
      const window = healthzWindow(polls, r.t0, r.t1);
      r.healthzGapMs = window.gapMs;
      r.healthzLatencyMs = window.latencyMs;
    }
    const worst = new Map<string, Measured>();
    for (const r of results) {
      const prior = worst.get(r.name);
      if (!prior || r.healthzGapMs > prior.healthzGapMs) worst.set(r.name, r);
    }
    const rows = [...worst.values()].map((r) => ({
      group: r.group,
      name: r.name,
      requestBytes: r.requestBytes,
      status: r.status,
      expected: r.expected,
      ...(r.errorCode ? { errorCode: r.errorCode } : {}),
      latencyMs: round(r.latencyMs, 1),
      healthzGapMs: round(r.healthzGapMs, 1),
      healthzLatencyMs: round(r.healthzLatencyMs, 1),
    }));
    const failures = rows.filter((r) => r.healthzGapMs > MAX_HEALTHZ_GAP_MS || !r.expected);
    const failedProbes = probes.filter((p) => !p.passed);
    const report = {
      when: new Date().toISOString(),
      machine: machineLine(),
      cpus: cpus().length,
      memGiB: round(totalmem() / 2 ** 30, 0),
      loadAverage: loadavg().map((l) => round(l, 2)),
      loadAverageAtStart,
      config: {
        repeats: args.repeats,
        redact: args.redact,
        backend: 'sqlite',
        pollIntervalMs: POLL_INTERVAL_MS,
        maxHealthzGapMs: MAX_HEALTHZ_GAP_MS,
        contextWindow: CONTEXT_WINDOW,
        limits: { MAX_INLINE_CONTENT_BYTES, MAX_QUERY_CHARS, MAX_JSON_DEPTH, MAX_JSON_ENTRIES, MAX_REQUEST_JSON_VALUES, MAX_APPEND_EVENTS, MAX_REQUEST_INDEXED_CHARS, maxBodyBytes: DEFAULT_MAX_BODY_BYTES },
      },
      healthzPolls: polls.length,
      healthzFailures: polls.filter((p) => p[2] !== 200).length,
      rows,
      passed: failures.length === 0,
      failures: failures.map((f) => f.name),
      probes,
      probesPassed: failedProbes.length === 0,
    };
    mkdirSync('bench/results', { recursive: true });
    const out = args.redact ? 'bench/results/adversarial' : 'bench/results/adversarial-no-redact';
    writeFileSync(`${out}.json`, JSON.stringify(report, null, 2) + '\n');
    writeFileSync(`${out}.md`, renderReport(report));
    console.error(`== ${rows.length} inputs; ${failures.length} over ${MAX_HEALTHZ_GAP_MS} ms or unexpected: ${failures.map((f) => f.name).join(', ') || 'none'}`);
    console.error(`== ${probes.length} probes; ${failedProbes.length} failed: ${failedProbes.map((p) => p.name).join(', ') || 'none'}`);
  } finally {
    poller?.kill();
    if (server) {
      server.kill('SIGTERM');
      await new Promise((resolve) => server!.once('exit', resolve));
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------------------

const KB = 1000;
/** The largest message one request may carry: the inline limit, or the request's indexed limit with room for one more event. */
const HTTP_MAX_MESSAGE = Math.min(MAX_INLINE_CONTENT_BYTES, MAX_REQUEST_INDEXED_CHARS - 1000);

/** Text of about `bytes` UTF-8 bytes in a given shape: the runs without word breaks that made counting quadratic. */
const SHAPES: Record<string, (bytes: number, prng: Prng) => string> = {
  prose: (bytes) => fill('The staging database refuses connections on port 5433 after the migration; we retried twice. ', bytes),
  backslashes: (bytes) => '\\'.repeat(bytes),
  'one letter': (bytes) => 'a'.repeat(bytes),
  'random letters': (bytes, prng) => randomFrom('abcdefghijklmnopqrstuvwxyz', bytes, prng),
  // Distinct short words: the costliest text for the full-text index (a new term every few characters).
  'random words': (bytes, prng) => randomWords(bytes, prng),
  quotes: (bytes) => '"'.repeat(bytes),
  emoji: (bytes) => '😀'.repeat(Math.floor(bytes / 4)),
  'random emoji': (bytes, prng) => randomFrom('😀🎉👍🔥💡🚀✅❌🧪📦🐛🔧', bytes, prng),
  'accented letters': (bytes, prng) => randomFrom('àáâãäåèéêëìíîïòóôõöùúûüýÿçñ', bytes, prng),
  CJK: (bytes, prng) => Array.from({ length: Math.floor(bytes / 3) }, () => String.fromCharCode(0x4e00 + prng.int(0, 0x51ff))).join(''),
  'combining marks': (bytes) => 'e\u0301\u0308'.repeat(Math.floor(bytes / 5)),
  'random bytes as text': (bytes, prng) => {
    // Latin-1 decoding of random bytes: every char 1-2 UTF-8 bytes, control characters and NUL included.
    const b = Buffer.alloc(Math.floor(bytes / 1.5));
    for (let i = 0; i < b.length; i++) b[i] = prng.int(0, 255);
    return b.toString('latin1');
  },
};

function randomWords(chars: number, prng: Prng): string {
  const parts: string[] = [];
  let size = 0;
  while (size < chars) {
    const word = randomFrom('abcdefghijklmnopqrstuvwxyz0123456789', prng.int(2, 6), prng);
    parts.push(word);
    size += word.length + 1;
  }
  return parts.join(' ').slice(0, chars);
}

function fill(unit: string, bytes: number): string {
  return unit.repeat(Math.ceil(bytes / unit.length)).slice(0, bytes);
}

function randomFrom(alphabet: string, bytes: number, prng: Prng): string {
  const chars = [...alphabet];
  const perChar = Buffer.byteLength(chars[0]!);
  return Array.from({ length: Math.floor(bytes / perChar) }, () => prng.pick(chars)).join('');
}

/** Cuts `text` to at most `maxBytes` UTF-8 bytes at a character boundary. */
function capBytes(text: string, maxBytes: number): string {
  let out = text;
  while (Buffer.byteLength(out) > maxBytes) out = out.slice(0, Math.max(0, out.length - Math.ceil((Buffer.byteLength(out) - maxBytes) / 4) - 1));
  const last = out.charCodeAt(out.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? out.slice(0, -1) : out;
}

function buildInputs(repeat: number): Input[] {
  const prng = new Prng(42 + repeat);
  const inputs: Input[] = [];
  const events = (sessionId: string, list: unknown[]): Request => ({ method: 'POST', path: '/v1/events', body: JSON.stringify({ sessionId, events: list }) });
  const context = (sessionId: string): Request => ({ method: 'GET', path: `/v1/sessions/${sessionId}/context?window=${CONTEXT_WINDOW}` });

  // 1. Long messages without word breaks, then the context pack that counts their tokens (issue 12: 300 KB took 81 s).
  for (const [size, label] of [
    [300 * KB, '300 KB'],
    [HTTP_MAX_MESSAGE, `${Math.round(HTTP_MAX_MESSAGE / 1000)} KB (limit over HTTP)`],
  ] as const) {
    for (const [shape, make] of Object.entries(SHAPES)) {
      const sessionId = `msg-${repeat}-${shape.replace(/\W+/g, '-')}-${size}`;
      const content = capBytes(make(size, prng), size);
      const append = events(sessionId, [
        { kind: 'user', content: 'please look at this' },
        { kind: 'user', content },
      ]);
      inputs.push({ group: 'message then context', name: `append ${label} ${shape}`, request: () => append, expect: [200] });
      inputs.push({ group: 'message then context', name: `context after ${label} ${shape}`, request: () => context(sessionId), expect: [200] });
      inputs.push({ group: 'message then context', name: `context again after ${label} ${shape}`, request: () => context(sessionId), expect: [200] });
    }
  }
  inputs.push({
    group: 'message then context',
    name: 'append inline content over the limit',
    request: () => events(`over-${repeat}`, [{ kind: 'user', content: 'a'.repeat(MAX_INLINE_CONTENT_BYTES + 1) }]),
    expect: [400],
  });

  // 2. Recall queries at the longest allowed length, over a store that holds the messages above.
  const queryShapes: Record<string, string> = {
    backslashes: '\\'.repeat(MAX_QUERY_CHARS),
    emoji: '😀'.repeat(MAX_QUERY_CHARS / 2),
    'accented letters': randomFrom('àáâãäåèéêëìíîïòóôõöùúûüýÿçñ', MAX_QUERY_CHARS * 2, prng),
    quotes: '"'.repeat(MAX_QUERY_CHARS),
    'quoted phrases': '"a b" '.repeat(MAX_QUERY_CHARS / 6),
    CJK: Array.from({ length: MAX_QUERY_CHARS }, () => String.fromCharCode(0x4e00 + prng.int(0, 0x51ff))).join(''),
    'random letters': randomFrom('abcdefghijklmnopqrstuvwxyz', MAX_QUERY_CHARS, prng),
    'dots then a letter': `${'.'.repeat(MAX_QUERY_CHARS - 1)}a`,
    'many words': Array.from({ length: MAX_QUERY_CHARS / 8 }, () => randomFrom('abcdefghijklmnopqrstuvwxyz', 7, prng)).join(' '),
  };
  const recall = (query: string | string[]): Request => ({ method: 'POST', path: '/v1/recall', body: JSON.stringify({ query, k: 10, budgetTokens: 4000 }) });
  for (const [shape, query] of Object.entries(queryShapes)) {
    inputs.push({ group: 'recall', name: `recall ${MAX_QUERY_CHARS}-char ${shape}`, request: () => recall(query.slice(0, MAX_QUERY_CHARS)), expect: [200] });
  }
  inputs.push({ group: 'recall', name: `recall batch of 10 × ${MAX_QUERY_CHARS}-char words`, request: () => recall(Array.from({ length: 10 }, () => queryShapes['many words']!)), expect: [200] });
  inputs.push({ group: 'recall', name: 'recall query over the limit', request: () => recall('a'.repeat(MAX_QUERY_CHARS + 1)), expect: [400] });
  inputs.push({ group: 'recall', name: 'recall query with a NUL', request: () => recall('port\u0000 5433'), expect: [400] });

  // 3. Nesting and structure.
  const nested = (depth: number): unknown => {
    let v: unknown = 'leaf';
    for (let i = 0; i < depth; i++) v = { a: v };
    return v;
  };
  const wideMeta = Object.fromEntries(Array.from({ length: MAX_JSON_ENTRIES }, (_, i) => [`k${i}`, i]));
  inputs.push({ group: 'nesting', name: `meta ${MAX_JSON_DEPTH} levels deep (limit)`, request: () => events(`meta-${repeat}`, [{ kind: 'note', content: 'deep', meta: nested(MAX_JSON_DEPTH - 1) as Record<string, unknown> }]), expect: [200] });
  inputs.push({ group: 'nesting', name: `meta with ${MAX_JSON_ENTRIES} keys (limit)`, request: () => events(`meta-${repeat}`, [{ kind: 'note', content: 'wide', meta: wideMeta }]), expect: [200] });
  inputs.push({
    group: 'nesting',
    name: 'meta 100,000 levels deep',
    request: () => ({ method: 'POST', path: '/v1/events', body: `{"sessionId":"meta-${repeat}","events":[{"kind":"note","content":"x","meta":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}]}` }),
    expect: [400],
  });
  inputs.push({
    group: 'nesting',
    name: 'task card with every list full, then context',
    setup: [
      () => events(`card-${repeat}`, [{ kind: 'user', content: 'start' }]),
      () => ({
        method: 'PUT',
        path: `/v1/sessions/card-${repeat}/task-state`,
        body: JSON.stringify({ update: { goals: Array.from({ length: 20 }, (_, i) => `${i} ${'\\'.repeat(490)}`), constraints: Array.from({ length: 30 }, (_, i) => `${i} ${'😀'.repeat(240)}`) } }),
      }),
    ],
    request: () => ({ method: 'GET', path: `/v1/sessions/card-${repeat}/context?window=200000` }),
    // The card is placed whole or refused (422 when it exceeds the task block's budget): either is an answer.
    expect: [200, 422],
  });
  // As much inline text as one request may index (MAX_REQUEST_INDEXED_CHARS), as runs and as prose, then a pack.
  const perMessage = 240 * 1024;
  const fitting = Math.floor(MAX_REQUEST_INDEXED_CHARS / perMessage);
  const runs = [
    ...Array.from({ length: fitting }, (_, i) => ({ kind: 'user', content: `${i} ${randomFrom('abcdefghijklmnopqrstuvwxyz', perMessage - 8, prng)}` })),
    ...Array.from({ length: 30 }, (_, i) => ({ kind: 'assistant', content: `step ${i}: ${randomWords(2000, prng)}` })),
  ];
  const words = Array.from({ length: 5000 }, () => randomFrom('abcdefghijklmnopqrstuvwxyz', prng.int(3, 9), prng));
  const prose = (chars: number): string => {
    let s = '';
    while (s.length < chars) s += `${prng.pick(words)}${prng.chance(0.1) ? '. ' : ' '}`;
    return s.slice(0, chars);
  };
  const proseMessages = Array.from({ length: fitting }, () => ({ kind: 'assistant', content: prose(perMessage - 8) }));
  const what = fitting === 1 ? 'a message' : `${fitting} messages`;
  inputs.push({ group: 'message then context', name: `${what} of 240 KiB without breaks, and the body's other events`, request: () => events(`runs-${repeat}`, runs), expect: [200] });
  inputs.push({ group: 'message then context', name: `context after ${what} of 240 KiB without breaks`, request: () => context(`runs-${repeat}`), expect: [200] });
  inputs.push({ group: 'message then context', name: `${what} of 240 KiB of prose`, request: () => events(`prose-${repeat}`, proseMessages), expect: [200] });
  inputs.push({ group: 'message then context', name: `context after ${what} of 240 KiB of prose`, request: () => context(`prose-${repeat}`), expect: [200] });
  inputs.push({ group: 'message then context', name: '32 messages of 240 KiB in one body (over the indexed limit)', request: () => events(`many-${repeat}`, Array.from({ length: 32 }, () => runs[0]!)), expect: [400] });

  // 4. Bodies at the 8 MiB body limit.
  const bodyLimit = DEFAULT_MAX_BODY_BYTES;
  const logLines = (bytes: number): string => {
    const lines: string[] = [];
    let size = 0;
    for (let i = 0; size < bytes; i++) {
      const line = i % 997 === 0 ? `ERROR worker ${i}: ECONNREFUSED 10.0.4.12:5433 after ${i} ms` : `[build] compiling module ${i} ... ok (${prng.hex(8)})`;
      lines.push(line);
      size += line.length + 1;
    }
    return lines.join('\n');
  };
  const toolResult = (sessionId: string, content: string): Request => events(sessionId, [{ kind: 'tool_result', toolName: 'Bash', content }]);
  const big = bodyLimit - 200;
  // Each line break is two characters in JSON: keep the encoded body under the limit.
  inputs.push({ group: 'body limit', name: 'tool result: 8 MiB build log', request: () => toolResult(`log-${repeat}`, logLines(Math.floor(big * 0.97))), expect: [200] });
  inputs.push({ group: 'body limit', name: 'context after an 8 MiB build log', request: () => context(`log-${repeat}`), expect: [200] });
  inputs.push({
    group: 'body limit',
    name: 'expand the 8 MiB artifact (4,000 tokens)',
    request: (answers) => {
      const appended = JSON.parse(answers.get('tool result: 8 MiB build log') ?? '{}') as { events?: Array<{ artifactId?: string }> };
      return { method: 'POST', path: '/v1/expand', body: JSON.stringify({ id: appended.events?.[0]?.artifactId ?? 'art_missing', maxTokens: 4000 }) };
    },
    expect: [200],
  });
  inputs.push({ group: 'body limit', name: 'recall over the 8 MiB artifact', request: () => recall('ECONNREFUSED 10.0.4.12:5433'), expect: [200] });
  inputs.push({ group: 'body limit', name: 'tool result: 8 MiB of random letters (no breaks)', request: () => toolResult(`run-${repeat}`, randomFrom('abcdefghijklmnopqrstuvwxyz', big, prng)), expect: [200] });
  inputs.push({ group: 'body limit', name: 'tool result: 8 MiB of random words', request: () => toolResult(`words-${repeat}`, randomWords(big, prng)), expect: [200] });
  inputs.push({
    group: 'body limit',
    name: 'tool result: 8 MiB of random CJK',
    request: () => toolResult(`cjk-${repeat}`, Array.from({ length: Math.floor(big / 3) - 10 }, () => String.fromCharCode(0x4e00 + prng.int(0, 0x51ff))).join('')),
    expect: [200],
  });
  inputs.push({
    group: 'body limit',
    name: 'two tool results of 3.5 MiB (over the indexed limit)',
    request: () => events(`two-${repeat}`, [1, 2].map((n) => ({ kind: 'tool_result', toolName: 'Bash', content: logLines(3_500_000 + n) }))),
    expect: [400],
  });
  inputs.push({ group: 'body limit', name: 'tool result: 8 MiB of backslashes (escaped: 4 MiB)', request: () => toolResult(`bs-${repeat}`, '\\'.repeat(big / 2)), expect: [200] });
  inputs.push({
    group: 'body limit',
    name: 'binary attachment: 6 MiB base64',
    request: () => {
      const bytes = Buffer.alloc(Math.floor((big * 3) / 4) - 100);
      for (let i = 0; i < bytes.length; i += 4) bytes.writeUInt32LE(prng.int(0, 0xffffffff), Math.min(i, bytes.length - 4));
      return events(`bin-${repeat}`, [{ kind: 'user', content: 'screenshot', binary: { base64: bytes.toString('base64'), mediaType: 'image/png' } }]);
    },
    expect: [200],
  });
  // As many events as one request takes, as large as the indexed limit lets them be.
  const eventChars = Math.floor(MAX_REQUEST_INDEXED_CHARS / MAX_APPEND_EVENTS) - 10;
  const batch = Array.from({ length: MAX_APPEND_EVENTS }, (_, i) => ({ kind: i % 2 ? 'assistant' : 'user', content: fill(`turn ${i}: the deploy of service ${i % 37} failed with exit code ${i % 5}. `, eventChars), key: `b${i}` }));
  inputs.push({ group: 'body limit', name: `batch of ${MAX_APPEND_EVENTS} events of ${eventChars} characters (limit)`, request: () => events(`batch-${repeat}`, batch), expect: [200] });
  inputs.push({ group: 'body limit', name: `another batch of ${MAX_APPEND_EVENTS} in the same session`, request: () => events(`batch-${repeat}`, batch.map((e) => ({ ...e, key: `c${e.key}` }))), expect: [200] });
  inputs.push({ group: 'body limit', name: `context after ${2 * MAX_APPEND_EVENTS} events (compaction)`, request: () => context(`batch-${repeat}`), expect: [200] });
  inputs.push({ group: 'body limit', name: `batch of ${MAX_APPEND_EVENTS + 1} events`, request: () => events(`batch-${repeat}`, [...batch, { kind: 'note', content: 'one more' }]), expect: [400] });
  inputs.push({ group: 'body limit', name: 'nested arrays filling 8 MiB', request: () => ({ method: 'POST', path: '/v1/events', body: `${'['.repeat(big / 2)}${']'.repeat(big / 2)}` }), expect: [400] });
  inputs.push({ group: 'body limit', name: 'empty objects filling 8 MiB', request: () => ({ method: 'POST', path: '/v1/events', body: `[${'{},'.repeat(big / 3 - 1)}{}]` }), expect: [400] });
  inputs.push({
    group: 'body limit',
    name: 'object with 600,000 keys',
    request: () => ({ method: 'POST', path: '/v1/events', body: `{${Array.from({ length: 600_000 }, (_, i) => `"k${i}":1`).join(',')}}` }),
    expect: [400],
  });
  inputs.push({ group: 'body limit', name: 'body one byte over the limit', request: () => ({ method: 'POST', path: '/v1/events', body: 'x'.repeat(bodyLimit + 1) }), expect: [413] });

  // 5. Wrong content types.
  const demo = JSON.stringify({ sessionId: `type-${repeat}`, events: [{ kind: 'user', content: 'hi' }] });
  inputs.push({ group: 'content type', name: 'events as text/plain', request: () => ({ method: 'POST', path: '/v1/events', body: demo, contentType: 'text/plain' }), expect: [415] });
  inputs.push({
    group: 'content type',
    name: 'events as a form',
    request: () => ({ method: 'POST', path: '/v1/events', body: `payload=${encodeURIComponent(demo)}`, contentType: 'application/x-www-form-urlencoded' }),
    expect: [415],
  });

  // 6. The bus: long query texts and the longest agent message read.
  // The route takes at most 2,000 characters of text in its URL.
  inputs.push({ group: 'bus', name: 'engram query with a 2,000-char text', request: () => ({ method: 'GET', path: `/v1/engram/query?text=${encodeURIComponent(queryShapes['many words']!.slice(0, 2000))}` }), expect: [200] });
  const message = `ROLE: child\nOUTPUT:\n  summary: |\n${Array.from({ length: 2500 }, (_, i) => `    line ${i} ${'x'.repeat(70)}`).join('\n')}\n`;
  inputs.push({ group: 'bus', name: `agent message of ${Math.round(message.length / 1000)} K characters (YAML)`, request: () => ({ method: 'POST', path: '/v1/messages/validate', body: message, contentType: 'text/yaml' }), expect: [422, 400] });

  // 7. Bad input of issue #31: bodies that are not UTF-8 (stored as U+FFFD before), a session nobody wrote.
  const notUtf8 = (bad: number[]): Uint8Array => {
    const [head, tail] = JSON.stringify({ sessionId: `utf8-${repeat}`, events: [{ kind: 'user', content: 'before\u0001after' }] }).split('\\u0001');
    return Buffer.concat([Buffer.from(head!, 'utf8'), Buffer.from(bad), Buffer.from(tail!, 'utf8')]);
  };
  for (const [name, bad] of [
    ['a lone continuation byte', [0x80]],
    ['a truncated sequence', [0xe2, 0x82]],
    ['an overlong form', [0xc0, 0xaf]],
    ['a UTF-16 surrogate', [0xed, 0xa0, 0x80]],
    ['Latin-1 text', [0xe9]],
  ] as const) {
    inputs.push({ group: 'bad input (issue #31)', name: `events body with ${name} (not UTF-8)`, request: () => ({ method: 'POST', path: '/v1/events', body: notUtf8([...bad]) }), expect: [400] });
  }
  inputs.push({
    group: 'bad input (issue #31)',
    name: 'agent message (text/yaml) that is not UTF-8',
    request: () => ({ method: 'POST', path: '/v1/messages/validate', body: Buffer.from([0x52, 0x4f, 0x4c, 0x45, 0x3a, 0x20, 0xff, 0xfe]), contentType: 'text/yaml' }),
    expect: [400],
  });
  inputs.push({
    group: 'bad input (issue #31)',
    name: 'MCP body that is not UTF-8',
    request: () => ({ method: 'POST', path: '/mcp', body: Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping","x":"'), Buffer.from([0xfe]), Buffer.from('"}')]) }),
    expect: [400],
  });
  inputs.push({ group: 'bad input (issue #31)', name: 'context of a session nobody wrote', request: () => context(`nosuch-${repeat}`), expect: [404] });
  return inputs;
}

// ---------------------------------------------------------------------------------------------------------

function now(): number {
  return performance.timeOrigin + performance.now();
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** [sentAt, answeredAt, status] of each /healthz poll, in the shared wall clock (ms). */
type Poll = [number, number, number];

/**
 * Polls `/healthz` from its own process over a keep-alive connection: a request, its answer, the next request
 * POLL_INTERVAL_MS after the previous one was sent (or at once if it took longer). Prints every poll as JSON
 * when its stdin closes.
 */
const POLLER_SOURCE = `
const http = require('node:http');
const { performance } = require('node:perf_hooks');
const target = new URL('/healthz', process.argv[1]);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const now = () => performance.timeOrigin + performance.now();
const polls = [];
let stopping = false;
process.stdin.on('end', () => { stopping = true; });
process.stdin.resume();
function poll() {
  // Exit once the output is flushed: a pipe write is asynchronous, and exiting at once can cut it.
  if (stopping) { process.stdout.write(JSON.stringify(polls), () => process.exit(0)); return; }
  const sent = now();
  const next = (status) => { const answered = now(); polls.push([sent, answered, status]); setTimeout(poll, Math.max(0, ${POLL_INTERVAL_MS} - (answered - sent))); };
  http.get(target, { agent }, (res) => { res.resume(); res.on('end', () => next(res.statusCode)); }).on('error', () => next(0));
}
poll();
`;

function startPoller(url: string): { child: ChildProcess; stop: () => Promise<Poll[]> } {
  const child = spawn(process.execPath, ['-e', POLLER_SOURCE, url], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    stop: async () => {
      child.stdin!.end();
      await exited;
      return JSON.parse(out) as Poll[];
    },
  };
}

/** The longest gap between consecutive /healthz answers that overlaps [t0, t1], and the slowest poll sent in it. */
function healthzWindow(polls: Poll[], t0: number, t1: number): { gapMs: number; latencyMs: number } {
  let gapMs = 0;
  let latencyMs = 0;
  for (let i = 0; i + 1 < polls.length; i++) {
    const a = polls[i]![1];
    const b = polls[i + 1]![1];
    if (b >= t0 && a <= t1) gapMs = Math.max(gapMs, b - a);
  }
  for (const [sent, answered] of polls) if (sent <= t1 && answered >= t0) latencyMs = Math.max(latencyMs, answered - sent);
  return { gapMs, latencyMs };
}

async function startServer(db: string, redact: boolean): Promise<{ child: ChildProcess; url: string; adminToken: string }> {
  const flags = ['serve', '--db', db, '--port', '0', '--json', '--embedder', 'none', ...(redact ? [] : ['--no-redact'])];
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/lib/serve-child.ts', ...flags], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ENGRAM_DB: '', ENGRAM_PG_URL: '' },
  });
  const info = await new Promise<{ url: string; admin?: { token: string } }>((resolve, reject) => {
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve(JSON.parse(line) as { url: string; admin?: { token: string } });
    });
    child.once('exit', (code) => reject(new Error(`engram serve exited ${code} before listening`)));
  });
  if (!info.admin) throw new Error('expected a fresh store with a bootstrap admin token');
  return { child, url: info.url, adminToken: info.admin.token };
}

// ---------------------------------------------------------------------------------------------------------

interface Report {
  when: string;
  machine: string;
  cpus: number;
  memGiB: number;
  loadAverage: number[];
  loadAverageAtStart: number[];
  config: { repeats: number; redact: boolean; pollIntervalMs: number; maxHealthzGapMs: number; contextWindow: number; limits: Record<string, number> };
  healthzPolls: number;
  healthzFailures: number;
  rows: Array<{ group: string; name: string; requestBytes: number; status: number; expected: boolean; errorCode?: string; latencyMs: number; healthzGapMs: number; healthzLatencyMs: number }>;
  passed: boolean;
  failures: string[];
  probes: Probe[];
  probesPassed: boolean;
}

function renderReport(r: Report): string {
  const fmt = (n: number) => n.toLocaleString('en-US');
  const size = (b: number) => (b === 0 ? '-' : b >= 1024 * 1024 ? `${round(b / 1024 / 1024, 1)} MiB` : b >= 1024 ? `${round(b / 1024, 0)} KiB` : `${b} B`);
  const groups = [...new Set(r.rows.map((row) => row.group))];
  const lines = [
    '# Adversarial inputs through the server',
    '',
    `Generated by \`npm run bench -- adversarial\` on ${r.when} (${r.machine}, ${r.cpus} cores, ${r.memGiB} GiB; load average`,
    `${r.loadAverageAtStart.join(', ')} when it started and ${r.loadAverage.join(', ')} when it ended; the server, the poller and the client share these`,
    'cores, and other work on the machine lengthens every gap). Code: `bench/adversarial.ts`.',
    '',
    `**Setup.** \`engram serve\`${r.config.redact ? '' : ' --no-redact'} in its own process on a fresh SQLite store, bound to 127.0.0.1 (redaction of credentials on ingest ${r.config.redact ? 'on, the default' : 'off'}). A second process polls \`/healthz\``,
    `every ${r.config.pollIntervalMs} ms over a keep-alive connection (the next poll ${r.config.pollIntervalMs} ms after the previous one was sent, or as soon as it`,
    'is answered when that took longer). The client sends each input below once the poller has settled, waits for the whole answer,',
    `and repeats the list ${r.config.repeats} time(s) on fresh sessions, keeping the worst, after one unmeasured warm-up pass over the whole list`,
    '(a server in use has its code compiled). **gap** is the longest time between two',
    '`/healthz` answers that overlaps the request: how long the server answered nobody else. It includes up to one poll interval',
    `of waiting, so a server that never blocks shows gaps of about ${r.config.pollIntervalMs}-20 ms.`,
    '',
    `Limits in force (src/model/limits.ts): inline content ${size(r.config.limits.MAX_INLINE_CONTENT_BYTES!)}, query ${fmt(r.config.limits.MAX_QUERY_CHARS!)} characters,`,
    `meta depth ${r.config.limits.MAX_JSON_DEPTH} and ${fmt(r.config.limits.MAX_JSON_ENTRIES!)} entries, ${fmt(r.config.limits.MAX_REQUEST_JSON_VALUES!)} JSON values per body, body ${size(r.config.limits.maxBodyBytes!)},`,
    `${fmt(r.config.limits.MAX_APPEND_EVENTS!)} events and ${fmt(r.config.limits.MAX_REQUEST_INDEXED_CHARS!)} indexed characters per request.`,
    `Context packs for a ${fmt(r.config.contextWindow)}-token window.`,
    '',
    `**Result: ${r.passed ? `every input answered as expected and no gap exceeded ${r.config.maxHealthzGapMs} ms` : `over ${r.config.maxHealthzGapMs} ms or unexpected: ${r.failures.join('; ')}`}.**`,
    `${fmt(r.healthzPolls)} /healthz polls, ${r.healthzFailures} failed.`,
    '',
    r.config.redact
      ? 'The same inputs served without redaction (`--no-redact`) are in `bench/results/adversarial-no-redact.md`: the difference between the two is the cost of scanning every appended character for credentials.'
      : 'Redaction of credentials is off in this run (`--no-redact`); `bench/results/adversarial.md` has the default.',
    '',
  ];
  for (const group of groups) {
    lines.push(`## ${group}`, '', '| input | request | status | latency ms | /healthz gap ms | slowest /healthz ms |', '| --- | ---: | --- | ---: | ---: | ---: |');
    for (const row of r.rows.filter((x) => x.group === group)) {
      const status = `${row.status}${row.errorCode ? ` ${row.errorCode}` : ''}${row.expected ? '' : ' (unexpected)'}`;
      const gap = row.healthzGapMs > r.config.maxHealthzGapMs ? `**${row.healthzGapMs}**` : String(row.healthzGapMs);
      lines.push(`| ${row.name} | ${size(row.requestBytes)} | ${status} | ${row.latencyMs} | ${gap} | ${row.healthzLatencyMs} |`);
    }
    lines.push('');
  }
  lines.push(...renderProbes(r.probes));
  return lines.join('\n');
}
