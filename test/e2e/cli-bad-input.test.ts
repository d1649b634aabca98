import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/interfaces/cli/exit-codes.js';
import { cliEnv, ENGRAM_BIN, runEngram } from '../fixtures/cli.js';

// Bad inputs of issue #31 through the built CLI, each answered as docs/interfaces.md says.

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-cli-bad-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const engram = (args: string[]) => runEngram(['--embedder', 'none', ...args], { cwd: dir });
const store = () => join(dir, '.engram', 'engram.db');

/** Runs `engram ARGS` with its stdout's reader gone before it writes (as `engram ... | head` once head has exited). */
function runWithClosedStdout(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [ENGRAM_BIN, '--embedder', 'none', ...args], { cwd: dir, env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

// Each test runs the CLI several times: on a loaded machine a run takes seconds.
describe('engram CLI: bad inputs answered as documented', { timeout: 90_000 }, () => {
  it('context and compact of a session nobody wrote: NOT_FOUND, exit 3, nothing on stdout', () => {
    writeFileSync(join(dir, 't.jsonl'), `${JSON.stringify({ kind: 'user', content: 'hello there' })}\n`);
    expect(engram(['ingest', join(dir, 't.jsonl'), '--session', 'real']).code).toBe(EXIT.OK);
    for (const verb of ['context', 'compact']) {
      const r = engram([verb, '--session', 'nosuch', '--window', '8000']);
      expect(r.code, verb).toBe(EXIT.NOT_FOUND);
      expect(r.stdout, verb).toBe('');
      expect(r.stderr, verb).toMatch(/NOT_FOUND: no session nosuch/);
    }
    const json = engram(['context', '--session', 'nosuch', '--window', '8000', '--json']);
    expect(JSON.parse(json.stderr.trim()).error).toMatchObject({ code: 'NOT_FOUND', data: { field: 'session', id: 'nosuch' } });
    expect(engram(['context', '--session', 'real', '--window', '8000']).stdout).toContain('hello there');
  });

  it('a reader that goes away early (| head): every command ends quietly, with its own exit code and no stack trace', async () => {
    writeFileSync(join(dir, 't.jsonl'), `${JSON.stringify({ kind: 'user', content: 'hello there' })}\n`);
    expect(engram(['ingest', join(dir, 't.jsonl'), '--session', 'real']).code).toBe(EXIT.OK);
    for (const args of [['summaries'], ['stats'], ['stats', '--json'], ['recall', 'hello'], ['--help']]) {
      const r = await runWithClosedStdout(args);
      expect(r.stderr, args.join(' ')).not.toMatch(/EPIPE|Error|at /);
      expect(r.code, args.join(' ')).toBe(EXIT.OK);
    }
    // An error still reaches stderr, and its exit code stands.
    const failed = await runWithClosedStdout(['show', 'evt_nosuch']);
    expect(failed.code).toBe(EXIT.NOT_FOUND);
    expect(failed.stderr).toMatch(/^engram: NOT_FOUND/);
  });

  it('ingest of a missing file: NOT_FOUND, exit 3, and no store created; other creating verbs check their @FILE first', () => {
    const r = engram(['ingest', 'missing.jsonl']);
    expect(r.code).toBe(EXIT.NOT_FOUND);
    expect(r.stderr).toMatch(/NOT_FOUND: missing\.jsonl: no such file/);
    expect(existsSync(join(dir, '.engram'))).toBe(false);
    const folder = engram(['ingest', dir]);
    expect(folder.code).toBe(EXIT.INVALID_INPUT);
    expect(existsSync(store())).toBe(false);
    for (const args of [
      ['task', 'set', '@missing.json', '--session', 's'],
      ['bus', 'validate-message', '@missing.yaml'],
    ]) {
      const r = engram(args);
      expect(r.code, args.join(' ')).toBe(EXIT.NOT_FOUND);
      expect(r.stderr, args.join(' ')).toMatch(/missing\.(json|yaml): no such file \(no store was created\)/);
      expect(existsSync(store()), args.join(' ')).toBe(false);
    }
    // A karma fact that starts with "@" is text, not a file: it is stored.
    expect(engram(['karma', 'add', '@alice verified the deploy key rotation']).code).toBe(EXIT.OK);
    expect(existsSync(store())).toBe(true);
  });
});
