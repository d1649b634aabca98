import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runEngram } from '../fixtures/cli.js';

// Secrets and privacy through the built CLI, as a person uses it: redaction on ingest (and --no-redact), and
// `engram purge`, which refuses without --yes.

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-cli-purge-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function engram(args: string[]) {
  return runEngram(['--embedder', 'none', ...args], { cwd: dir });
}

// Synthetic credentials, assembled so that no literal token sits in the repository.
const AWS_KEY = 'AKIA' + 'QX7Z2M4N6P8R0T2V';
const GH_TOKEN = 'ghp_' + 'Xy12Zw34Vu56Ts78Rq90Po12Nm34Lk56Ji78';
const PEM_BODY = 'MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun';
const PASSWORD = 'Hunter2-Sw0rdfish';

/** A transcript (generic JSONL) that leaks all four, into session `leaky`. */
function writeTranscript(): string {
  const lines = [
    { kind: 'user', content: `deploy with AWS_ACCESS_KEY_ID=${AWS_KEY} please`, key: 'l1' },
    { kind: 'tool_result', toolName: 'Bash', content: `$ cat id_rsa\n-----BEGIN RSA PRIVATE KEY-----\n${PEM_BODY}\n-----END RSA PRIVATE KEY-----\n`, key: 'l2' },
    { kind: 'tool_result', toolName: 'Read', content: `DB_PASSWORD=${PASSWORD}\napi_password: "${PASSWORD}"\n`, key: 'l3' },
    { kind: 'assistant', content: `I pushed with ${GH_TOKEN}; the deploy of the kestrel service worked`, key: 'l4' },
  ];
  const file = join(dir, 'leaky.jsonl');
  writeFileSync(file, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  return file;
}

const SECRETS = [AWS_KEY, GH_TOKEN, PEM_BODY, PASSWORD];

/** The files of the store folder (`.engram/`, recursively) holding `text`. */
function filesHolding(text: string): string[] {
  const walk = (d: string): string[] => readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(d, e.name)) : [join(d, e.name)]));
  return walk(join(dir, '.engram')).filter((f) => readFileSync(f).includes(Buffer.from(text)));
}

describe('engram CLI: secrets and purge', () => {
  it('redacts credentials on ingest: recall, context and show never return them', () => {
    expect(engram(['ingest', writeTranscript(), '--session', 'leaky']).code).toBe(0);
    const recall = engram(['recall', 'deploy', 'kestrel', 'pushed', 'password', '--json']);
    expect(recall.code).toBe(0);
    const hits = JSON.parse(recall.stdout).hits as Array<{ eventId: string }>;
    expect(hits.length).toBeGreaterThan(0);
    const context = engram(['context', '--session', 'leaky', '--window', '8000']);
    expect(context.code).toBe(0);
    const shown = hits.map((h) => engram(['show', h.eventId]).stdout).join('\n');
    for (const secret of SECRETS) {
      expect(recall.stdout).not.toContain(secret);
      expect(context.stdout).not.toContain(secret);
      expect(shown).not.toContain(secret);
    }
    expect(shown).toMatch(/\[REDACTED:(aws-access-key|github-token|password):[0-9a-f]{8}\]/);
  });

  it('stores content verbatim with --no-redact', () => {
    expect(engram(['--no-redact', 'ingest', writeTranscript(), '--session', 'raw']).code).toBe(0);
    const hit = JSON.parse(engram(['recall', 'kestrel', '--json']).stdout).hits[0] as { eventId: string };
    expect(engram(['show', hit.eventId]).stdout).toContain(GH_TOKEN);
  });

  it('refuses to purge without --yes and changes nothing; purges with --yes and logs it', () => {
    expect(engram(['ingest', writeTranscript(), '--session', 'leaky']).code).toBe(0);
    expect(engram(['ingest', writeTranscript(), '--session', 'kept']).code).toBe(0);
    const before = engram(['recall', 'kestrel', '--session', 'leaky', '--json']);
    const ids = JSON.parse(before.stdout).hits as Array<{ eventId: string }>;
    expect(ids).toHaveLength(1);

    const refused = engram(['purge', '--session', 'leaky']);
    expect(refused.code).toBe(2);
    expect(refused.stdout).toContain('Would purge 4 events');
    expect(refused.stdout).toContain('session leaky: 4 events');
    expect(refused.stderr).toContain('--yes');
    expect(engram(['show', ids[0]!.eventId]).stdout).toContain('kestrel');
    expect(JSON.parse(engram(['purge', '--log', '--json']).stdout)).toEqual([]);

    const dry = engram(['purge', '--session', 'leaky', '--dry-run', '--json']);
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({ isDryRun: true, counts: { events: 4 } });

    const done = engram(['purge', '--session', 'leaky', '--yes']);
    expect(done.code).toBe(0);
    expect(done.stdout).toMatch(/^Purged 4 events \(prg_/);
    expect(done.stdout).toMatch(/Store scrubbed after the purge \(vacuum, wal-truncate; \d+ ms\)/);
    expect(engram(['show', ids[0]!.eventId]).stdout).toMatch(/\[purged \d{4}-\d{2}-\d{2} by .+\]/);
    const after = JSON.parse(engram(['recall', 'kestrel', '--json']).stdout).hits as Array<{ sessionId: string }>;
    expect(after.map((h) => h.sessionId)).toEqual(['kept']);
    const log = JSON.parse(engram(['purge', '--log', '--json']).stdout) as Array<{ actor: string; selector: unknown; counts: { events: number } }>;
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ actor: expect.stringMatching(/^os:/), selector: { session: 'leaky' }, counts: { events: 4 } });
  });

  it('purges by content and by event, and rejects a purge with no selector', () => {
    expect(engram(['ingest', writeTranscript(), '--session', 'leaky']).code).toBe(0);
    expect(filesHolding('kestrel service')).toEqual([join(dir, '.engram', 'engram.db')]);
    const byMatch = engram(['purge', '--match', 'kestrel service', '--yes', '--json']);
    expect(byMatch.code).toBe(0);
    expect(JSON.parse(byMatch.stdout)).toMatchObject({ bySession: { leaky: 1 }, selector: { match: { chars: 15 } }, scrub: { isComplete: true } });
    // No byte of it in any file of the store: not in a freed page, an FTS5 block or the WAL.
    expect(filesHolding('kestrel service')).toEqual([]);
    expect(filesHolding('kestrel')).toEqual([]);
    expect(JSON.parse(engram(['recall', 'kestrel', '--json']).stdout).hits).toEqual([]);
    const [deploy] = JSON.parse(engram(['recall', 'deploy', 'please', '--json']).stdout).hits as Array<{ eventId: string }>;
    const byEvent = engram(['purge', '--event', deploy!.eventId, '--yes', '--json']);
    expect(byEvent.code).toBe(0);
    expect(JSON.parse(byEvent.stdout)).toMatchObject({ bySession: { leaky: 1 }, selector: { events: [deploy!.eventId] } });
    expect(engram(['show', deploy!.eventId]).stdout).toMatch(/\[purged /);
    expect(filesHolding('deploy with AWS_ACCESS_KEY_ID')).toEqual([]);
    const none = engram(['purge']);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('--session');
  });
});
