import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Prng } from './prng.js';

/**
 * The adversarial bench's probes (issue #31): checks that are not one request with an expected status, run against
 * the same server after the measured passes. Credentials in 31 forms (are they served verbatim?), a recall query that
 * is a bare secret (is it stored verbatim?), a purge followed by a grep of every file of the store, and the CLI's
 * answers to bad input. Each probe passes or fails; the report lists them all.
 */
export interface Probe {
  group: string;
  name: string;
  expected: string;
  observed: string;
  passed: boolean;
  latencyMs?: number;
}

export interface ProbeContext {
  send: (r: { method: string; path: string; body?: string; contentType?: string }) => Promise<{ status: number; text: string }>;
  /** The folder holding the server's store (its .db, -wal, -shm and cold folder). */
  dir: string;
  db: string;
  /**
   * Another server on a fresh store of its own, for the purges: a purge rewrites the whole store (bench/results/purge-scrub.md),
   * and the measured passes leave hundreds of MB in the first one.
   */
  freshServer: () => Promise<{ send: ProbeContext['send']; dir: string; stop: () => Promise<void> }>;
}

export async function runProbes(given: ProbeContext): Promise<Probe[]> {
  // A probe may spend seconds reading the store's files between two requests: the server has closed the idle
  // keep-alive connection by then, and a request sent on it as it closes fails at once. Sent again on a new one
  // (a purge sent twice purges nothing the second time).
  const send: ProbeContext['send'] = async (r) => {
    try {
      return await given.send(r);
    } catch {
      return given.send(r);
    }
  };
  const ctx = { ...given, send };
  const credentials = await credentialProbes(ctx);
  const fresh = await given.freshServer();
  let purges: Probe[];
  try {
    purges = await purgeProbes({ ...ctx, dir: fresh.dir, send: fresh.send });
  } finally {
    await fresh.stop();
  }
  return [...credentials, ...purges, ...(await cliProbes())];
}

// Synthetic credentials, made at run time from a seeded generator: no literal token sits in the repository.
const prng = new Prng(31);
const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const ALNUM = `${UPPER}abcdefghijklmnopqrstuvwxyz0123456789`;
const B64 = `${ALNUM}+/`;
const pick = (alphabet: string, n: number): string => Array.from({ length: n }, () => alphabet[prng.int(0, alphabet.length - 1)]!).join('');

interface CredentialForm {
  name: string;
  /** The event's content, holding the credential. */
  content: string;
  /** Served verbatim when every one of these is in the served content. */
  needles: string[];
}

function credentialForms(): CredentialForm[] {
  const ghp = `ghp_${pick(ALNUM, 36)}`;
  const form = (name: string, secret: string, line: (s: string) => string): CredentialForm => ({ name, content: line(secret), needles: [secret] });
  const b64 = Buffer.from(ghp).toString('base64');
  const split = `ghp_${pick(ALNUM, 36)}`;
  const escaped = pick(ALNUM, 36);
  const azureKey = `${pick(B64, 86)}==`;
  return [
    form('AWS access key id', `AKIA${pick(UPPER + '234567', 16)}`, (s) => `aws_access_key_id = ${s}`),
    form('AWS secret key assigned', pick(B64, 40), (s) => `aws_secret_access_key = ${s}`),
    form('GitHub ghp_ token', ghp, (s) => `I pushed with ${s} just now`),
    form('GitHub gho_ token', `gho_${pick(ALNUM, 36)}`, (s) => `oauth token ${s}`),
    form('GitHub ghs_ token', `ghs_${pick(ALNUM, 36)}`, (s) => `app token ${s}`),
    form('GitHub ghu_ token', `ghu_${pick(ALNUM, 36)}`, (s) => `user token ${s}`),
    form('GitHub ghr_ token', `ghr_${pick(ALNUM, 36)}`, (s) => `refresh token ${s}`),
    form('GitHub fine-grained PAT', `github_pat_${pick(ALNUM, 22)}_${pick(ALNUM, 59)}`, (s) => `GH_TOKEN=${s}`),
    form('GitLab token', `glpat-${pick(ALNUM, 20)}`, (s) => `gitlab: ${s}`),
    form('npm token', `npm_${pick(ALNUM, 36)}`, (s) => `//registry.npmjs.org/:_authToken=${s}`),
    form('Slack bot token', `xoxb-${pick('0123456789', 12)}-${pick('0123456789', 13)}-${pick(ALNUM, 24)}`, (s) => `slack ${s}`),
    form('Slack webhook', `https://hooks.slack.com/services/T${pick(UPPER, 8)}/B${pick(UPPER, 8)}/${pick(ALNUM, 24)}`, (s) => `post to ${s}`),
    form('Stripe live key', `sk_live_${pick(ALNUM, 24)}`, (s) => `stripe ${s}`),
    form('Google API key', `AIza${pick(ALNUM + '-_', 35)}`, (s) => `maps key ${s}`),
    form('OpenAI key', `sk-proj-${pick(ALNUM, 48)}`, (s) => `OPENAI_API_KEY=${s}`),
    form('Anthropic key', `sk-ant-api03-${pick(ALNUM + '-_', 93)}AA`, (s) => `key ${s}`),
    form('JWT', `eyJhbGciOiJIUzI1NiJ9.${Buffer.from(JSON.stringify({ sub: pick(ALNUM, 12) })).toString('base64url')}.${pick(ALNUM + '-_', 43)}`, (s) => `cookie session=${s}`),
    form('PEM private key', pick(B64, 64), (s) => `-----BEGIN RSA PRIVATE KEY-----\n${s}\n${pick(B64, 64)}\n-----END RSA PRIVATE KEY-----`),
    form('Authorization: Bearer', pick(ALNUM, 40), (s) => `curl -H "Authorization: Bearer ${s}" https://api.example.com`),
    form('Authorization: Basic', Buffer.from(`deploy:${pick(ALNUM, 16)}`).toString('base64'), (s) => `Authorization: Basic ${s}`),
    form('password in a URL', pick(ALNUM, 18), (s) => `DATABASE_URL=postgres://app:${s}@db.internal:5432/app`),
    form('password= line', `${pick(ALNUM, 14)}!9`, (s) => `DB_PASSWORD=${s}`),
    form('api_key in YAML', pick(ALNUM, 32), (s) => `service:\n  api_key: "${s}"`),
    form('client_secret in JSON', pick(ALNUM, 40), (s) => `{"client_id": "app", "client_secret": "${s}"}`),
    form('HuggingFace hf_ token', `hf_${pick(ALNUM.slice(0, 52), 34)}`, (s) => `huggingface-cli login --token ${s}`),
    form('Azure storage AccountKey=', azureKey, (s) => `DefaultEndpointsProtocol=https;AccountName=acct${pick('abcdef', 4)};AccountKey=${s};EndpointSuffix=core.windows.net`),
    form('SendGrid key', `SG.${pick(ALNUM + '-_', 22)}.${pick(ALNUM + '-_', 43)}`, (s) => `SENDGRID_API_KEY=${s}`),
    { name: 'a secret split over two lines', content: `export GITHUB_TOKEN="${split.slice(0, 20)}\\\n${split.slice(20)}"`, needles: [split.slice(4, 20), split.slice(20)] },
    { name: 'the base64 of a GitHub token', content: `token (base64): ${b64}`, needles: [b64] },
    { name: 'ghp\\u005f... written as a JSON escape', content: `{"token": "ghp\\u005f${escaped}"}`, needles: [escaped] },
  ];
}

async function credentialProbes(ctx: ProbeContext): Promise<Probe[]> {
  const probes: Probe[] = [];
  const forms = credentialForms();
  for (const [i, f] of forms.entries()) {
    const sessionId = `cred-${i}`;
    const t0 = performance.now();
    const appended = await ctx.send({ method: 'POST', path: '/v1/events', body: JSON.stringify({ sessionId, events: [{ kind: 'user', content: f.content }] }) });
    const served = await ctx.send({ method: 'GET', path: `/v1/sessions/${sessionId}/events` });
    const latencyMs = performance.now() - t0;
    const verbatim = appended.status === 200 && f.needles.every((n) => served.text.includes(jsonEscaped(n)) || served.text.includes(n));
    probes.push({
      group: 'credentials served verbatim',
      name: f.name,
      expected: 'redacted',
      observed: appended.status !== 200 ? `append answered ${appended.status}` : verbatim ? 'served verbatim' : 'redacted',
      passed: appended.status === 200 && !verbatim,
      latencyMs,
    });
  }
  // A recall query that is a bare secret value (no key name before it): is it written to the recall log as asked?
  const bare = `${pick(ALNUM, 20)}${pick('0123456789', 4)}${pick(ALNUM, 16)}`;
  const t0 = performance.now();
  const recalled = await ctx.send({ method: 'POST', path: '/v1/recall', body: JSON.stringify({ query: bare, k: 5 }) });
  const holders = filesHolding(ctx.dir, bare);
  probes.push({
    group: 'credentials served verbatim',
    name: 'a recall query that is a bare secret value: the recall log',
    expected: 'not in any file of the store',
    observed: recalled.status !== 200 ? `recall answered ${recalled.status}` : holders.length > 0 ? `stored verbatim (${holders.join(', ')})` : 'not stored verbatim',
    passed: recalled.status === 200 && holders.length === 0,
    latencyMs: performance.now() - t0,
  });
  return probes;
}

/** `text` as it reads inside a JSON string. */
function jsonEscaped(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}

/** Every file under `dir` whose bytes hold `text`, relative to `dir`. */
function filesHolding(dir: string, text: string): string[] {
  return Object.keys(grep(dir, [text]));
}

/** For each file under `dir` (relative to it) the `needles` its bytes hold; each file read once. */
function grep(dir: string, needles: readonly string[]): Record<string, string[]> {
  const walk = (d: string): string[] => readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(d, e.name)) : [join(d, e.name)]));
  const out: Record<string, string[]> = {};
  for (const f of walk(dir)) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(f);
    } catch {
      continue; // a file gone meanwhile (a WAL checkpointed away) holds nothing
    }
    const held = needles.filter((n) => bytes.includes(Buffer.from(n, 'utf8')));
    if (held.length > 0) out[f.slice(dir.length + 1)] = held;
  }
  return out;
}

/** The needles some file under `dir` holds. */
function needlesIn(dir: string, needles: readonly string[]): string[] {
  const found = new Set(Object.values(grep(dir, needles)).flat());
  return needles.filter((n) => found.has(n));
}

async function purgeProbes(ctx: ProbeContext): Promise<Probe[]> {
  const probes: Probe[] = [];
  const words = { a: `qx${pick('abcdefghijklmnopqrstuvwxyz', 9)}`, b: `zq${pick('abcdefghijklmnopqrstuvwxyz', 9)}`, c: `jx${pick('abcdefghijklmnopqrstuvwxyz', 9)}` };
  const sentence = `the courier codename is ${words.a} and the drop point is ${words.b} harbour`;
  const grepFor = [sentence, words.a.slice(2), words.b.slice(2), words.c.slice(2)];
  for (const [how, selector] of [
    ['a session', (s: string) => ({ sessionId: s })],
    ['by content', () => ({ match: words.a })],
  ] as const) {
    const session = `purge-probe-${how.replace(/\W+/g, '-')}`;
    await ctx.send({
      method: 'POST',
      path: '/v1/events',
      body: JSON.stringify({
        sessionId: session,
        events: [
          { kind: 'user', content: sentence },
          { kind: 'tool_result', toolName: 'Bash', content: `${'an ordinary line of output\n'.repeat(600)}handoff ${words.a} token ${words.c} accepted\n` },
          { kind: 'assistant', content: `noted: ${words.a} goes through ${words.b}; tests in src/${words.c}/dispatch.ts pass` },
        ],
      }),
    });
    await ctx.send({ method: 'POST', path: '/v1/recall', body: JSON.stringify({ query: `where does ${words.a} go after ${words.b}`, k: 5, sessionIds: [session] }) });
    const before = needlesIn(ctx.dir, grepFor);
    const t0 = performance.now();
    const purged = await ctx.send({ method: 'POST', path: '/v1/admin/purge', body: JSON.stringify({ ...selector(session), confirm: true }) });
    const latencyMs = performance.now() - t0;
    const scrub = (JSON.parse(purged.text) as { scrub?: { isComplete?: boolean } }).scrub;
    const left = needlesIn(ctx.dir, grepFor);
    probes.push({
      group: 'purge, then grep every file of the store',
      name: `POST /v1/admin/purge ${how}: the purged sentence and words in the .db, -wal, -shm and cold folder`,
      expected: `found before (${grepFor.length} of ${grepFor.length}), none after; scrub complete`,
      observed: `${purged.status}; found before ${before.length}, after ${left.length}${left.length > 0 ? ` (${left.join(', ')})` : ''}; scrub ${scrub?.isComplete === true ? 'complete' : 'not complete'}`,
      passed: purged.status === 200 && before.length === grepFor.length && left.length === 0 && scrub?.isComplete === true,
      latencyMs,
    });
  }
  return probes;
}

/** Runs the CLI from the sources (bench/lib/serve-child.ts) in `cwd`; `closeStdout` closes its reader before it writes. */
function cli(args: string[], cwd: string, closeStdout = false): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    // tsx by its resolved URL: the CLI runs in a temporary folder, where `--import tsx` would not resolve.
    const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), join(process.cwd(), 'bench/lib/serve-child.ts'), '--embedder', 'none', ...args], {
      cwd,
      env: { ...process.env, ENGRAM_DB: '', ENGRAM_PG_URL: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    if (closeStdout) child.stdout.destroy();
    else child.stdout.on('data', (b: Buffer) => (stdout += b.toString('utf8')));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

async function cliProbes(): Promise<Probe[]> {
  const cwd = mkdtempSync(join(tmpdir(), 'engram-adversarial-cli-'));
  const probes: Probe[] = [];
  const probe = (name: string, expected: string, observed: string, passed: boolean, latencyMs: number) =>
    probes.push({ group: 'the CLI on bad input', name, expected, observed, passed, latencyMs });
  try {
    let t0 = performance.now();
    const missing = await cli(['ingest', 'missing.jsonl'], cwd);
    const created = existsSync(join(cwd, '.engram'));
    probe('engram ingest missing.jsonl', 'exit 3, no store created', `exit ${missing.code}, ${created ? 'a store was created' : 'no store'}`, missing.code === 3 && !created, performance.now() - t0);

    writeFileSync(join(cwd, 't.jsonl'), `${JSON.stringify({ kind: 'user', content: 'hello there' })}\n`);
    await cli(['ingest', 't.jsonl', '--session', 'real'], cwd);
    t0 = performance.now();
    const context = await cli(['context', '--session', 'nosuch', '--window', '8000'], cwd);
    probe(
      'engram context --session nosuch',
      'exit 3 (NOT_FOUND), nothing on stdout',
      `exit ${context.code}, stdout ${JSON.stringify(context.stdout.slice(0, 20))}, ${/NOT_FOUND/.test(context.stderr) ? 'NOT_FOUND' : 'no error'}`,
      context.code === 3 && context.stdout === '' && /NOT_FOUND/.test(context.stderr),
      performance.now() - t0,
    );
    for (const args of [['summaries'], ['stats'], ['recall', 'hello']]) {
      t0 = performance.now();
      const r = await cli(args, cwd, true);
      const trace = /EPIPE|Error|\n\s+at /.test(r.stderr);
      probe(`engram ${args.join(' ')} | head (the reader gone)`, 'exit 0, no stack trace', `exit ${r.code}${trace ? ', a stack trace' : ', quiet'}`, r.code === 0 && !trace, performance.now() - t0);
    }
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
  return probes;
}

/** The probes' section of the report. */
export function renderProbes(probes: readonly Probe[]): string[] {
  if (probes.length === 0) return [];
  const failed = probes.filter((p) => !p.passed);
  const lines = [
    '## Probes (issue #31)',
    '',
    'Run after the measured passes (not counted in the gaps above). Credentials are appended to the same server in an event each,',
    'then read back (`GET /v1/sessions/{id}/events`): served verbatim fails. A recall query that is a bare secret fails when any',
    'file of the store holds it. The purges run on a second server with a fresh store of its own (a purge rewrites the whole',
    "store: bench/results/purge-scrub.md), and fail unless every planted sentence and word is in the store's files before it and",
    'in none after it (the database, its WAL and shared memory, the cold folder, while the server runs).',
    'The CLI probes run `engram` from the sources in a temporary folder.',
    '',
    `**${probes.length - failed.length} of ${probes.length} probes passed.**${failed.length > 0 ? ` Failed: ${failed.map((p) => p.name).join('; ')}.` : ''}`,
    '',
  ];
  for (const group of [...new Set(probes.map((p) => p.group))]) {
    lines.push(`### ${group}`, '', '| probe | expected | observed | passed | ms |', '| --- | --- | --- | --- | ---: |');
    for (const p of probes.filter((x) => x.group === group)) {
      lines.push(`| ${p.name.replace(/\|/g, '\\|')} | ${p.expected} | ${p.observed.replace(/\|/g, '\\|')} | ${p.passed ? 'yes' : '**no**'} | ${p.latencyMs === undefined ? '-' : Math.round(p.latencyMs)} |`);
    }
    lines.push('');
  }
  return lines;
}
