import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cliEnv, ENGRAM_BIN, runEngram } from '../fixtures/cli.js';

// engram serve's consolidation worker through the built binary: a session idle past --consolidate-idle is
// summarized without being asked, and the summary is served by GET /v1/summaries.
let dir: string;
let child: ChildProcessWithoutNullStreams | undefined;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-serve-consolidation-'));
});
afterAll(() => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

it('summarizes an idle session in the background and stops cleanly', async () => {
  const t0 = Date.now() - 3_600_000;
  const lines: string[] = [];
  for (let i = 0; i < 6; i++) {
    lines.push(JSON.stringify({ kind: 'user', ts: t0 + i * 1000, content: `Step ${i}: the nightly backup job fails, find out why and fix it.` }));
    lines.push(JSON.stringify({ kind: 'assistant', ts: t0 + i * 1000 + 500, content: `Backup step ${i} failed with ERR_BACKUP_${i}; fixed in scripts/backup${i}.sh and it runs.` }));
  }
  const ingested = runEngram(['--db', join(dir, 'engram.db'), '--embedder', 'none', 'ingest', '-', '--session', 'nightly'], { cwd: dir, input: `${lines.join('\n')}\n` });
  expect(ingested.code, ingested.stderr).toBe(0);

  child = spawn(process.execPath, [ENGRAM_BIN, '--embedder', 'none', '--llm', 'none', 'serve', '--db', join(dir, 'engram.db'), '--port', '0', '--consolidate-idle', '2s'], {
    cwd: dir,
    env: cliEnv({}),
  });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<number | null>((done) => child!.once('exit', (code) => done(code)));
  const deadline = Date.now() + 30_000;
  while (!/listening on http/.test(out) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const url = /listening on (http:\/\/[^\s]+)/.exec(out)?.[1];
  expect(url, err).toBeDefined();
  expect(out).toContain('consolidation: sessions idle 2 s, deterministic');
  const token = /(eng_[A-Za-z0-9_-]{43})/.exec(out)![1]!;

  let summaries: Array<{ sessionId: string; depth: number; sourceEventIds: string[] }> = [];
  while (summaries.length === 0 && Date.now() < deadline) {
    const res = await fetch(`${url}/v1/summaries`, { headers: { Authorization: `Bearer ${token}` } });
    summaries = ((await res.json()) as { summaries: typeof summaries }).summaries;
    if (summaries.length === 0) await new Promise((r) => setTimeout(r, 250));
  }
  expect(summaries).toHaveLength(1);
  expect(summaries[0]).toMatchObject({ sessionId: 'nightly', depth: 0 });
  expect(summaries[0]!.sourceEventIds).toHaveLength(12);

  child.kill('SIGTERM');
  expect(await exited).toBe(0);
  expect(err).toContain('engram serve: stopped');
  expect(err).not.toContain('consolidation of session');
}, 60_000);
