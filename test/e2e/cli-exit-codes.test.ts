import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/interfaces/cli/exit-codes.js';
import { cliEnv, ENGRAM_BIN, runEngram, type CliRun } from '../fixtures/cli.js';

/**
 * Walks the exit-code table of docs/interfaces.md (and docs/errors.md): for every code, a real `engram` process
 * (bin/engram.js in a temporary directory) that ends with it, and with --json the code of the error object it
 * prints on stderr. Exit 1 has no case: it means a bug, and no input triggers one on purpose.
 */

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-exit-'));
  expect(engram(['init']).code).toBe(EXIT.OK);
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

function engram(args: string[], options: { env?: Record<string, string>; input?: string } = {}): CliRun {
  return runEngram(['--embedder', 'none', ...args], { cwd: dir, ...options });
}

/** The `{"error": {...}}` object a --json run printed on stderr (its last line). */
function jsonError(r: CliRun): { code: string; message: string; data: Record<string, unknown> } {
  const lines = r.stderr.trim().split('\n');
  return (JSON.parse(lines[lines.length - 1]!) as { error: { code: string; message: string; data: Record<string, unknown> } }).error;
}

describe('engram exit codes, as documented', () => {
  it('walks every code of the table (a new code needs a case here)', () => {
    expect(Object.values(EXIT)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 130]);
  });

  it('0: a command that succeeds prints its result and no error', () => {
    const r = engram(['stats', '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ events: 0 });
    expect(r.stderr).toBe('');
  });

  it.skip('1: an unexpected failure (a bug): no input triggers one on purpose; exitCodeFor maps INTERNAL to 1 (exit-codes.test.ts)', () => {});

  it('2: invalid input, from the engine or from the argument parser, names the field', () => {
    const value = engram(['recall', 'ECONNREFUSED', '--k', 'many', '--json']);
    expect(value.code).toBe(2);
    expect(jsonError(value)).toMatchObject({ code: 'INVALID_INPUT', data: { field: 'k' } });

    const option = engram(['stats', '--no-such-option', '--json']);
    expect(option.code).toBe(2);
    expect(jsonError(option)).toMatchObject({ code: 'INVALID_INPUT', data: { parserCode: 'commander.unknownOption' } });
    expect(option.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('3: an id that does not exist', () => {
    const r = engram(['show', 'evt_00000000000000000000000000', '--json']);
    expect(r.code).toBe(3);
    expect(jsonError(r).code).toBe('NOT_FOUND');
  });

  it('4: a store that cannot be used (a file that is not an Engram store)', () => {
    const notAStore = join(dir, 'notes.txt');
    writeFileSync(notAStore, 'shopping list\n'.repeat(500));
    const r = engram(['--db', notAStore, 'stats', '--json']);
    expect(r.code).toBe(4);
    expect(jsonError(r).code).toBe('NOT_AN_ENGRAM_STORE');
  });

  it('5: a conflict (an agent name that is taken)', () => {
    expect(engram(['agent', 'add', 'reviewer', '--role', 'programmer']).code).toBe(0);
    const r = engram(['agent', 'add', 'reviewer', '--role', 'programmer', '--json']);
    expect(r.code).toBe(5);
    expect(jsonError(r)).toMatchObject({ code: 'CONFLICT', data: { field: 'name' } });
  });

  it('6: a budget refusal: an agent message over its inline budget, and a window too small for the task card', () => {
    expect(engram(['agent', 'add', 'alice', '--role', 'programmer']).code).toBe(0);
    const message = `ROLE: programmer\nTASK_STATUS: done\nOUTPUT:\n  summary: "${'pasted log line '.repeat(400)}"\n  next: review\n`;
    const rejected = engram(['bus', 'validate-message', '--as', 'alice', '-', '--json'], { input: message });
    expect(rejected.code).toBe(6);
    // The verdict is the answer on stdout; the refusal is the error on stderr.
    expect(JSON.parse(rejected.stdout)).toMatchObject({ ok: false });
    expect(jsonError(rejected)).toMatchObject({ code: 'BUDGET_EXCEEDED', data: { turn: 1 } });

    const card = JSON.stringify({ goals: ['a long goal that takes more than a handful of tokens to write out'] });
    expect(engram(['task', 'set', '--session', 's1', card]).code).toBe(0);
    const window = engram(['context', '--session', 's1', '--window', '600', '--json']);
    expect(window.code).toBe(6);
    expect(jsonError(window).code).toBe('BUDGET_EXCEEDED');
  });

  it('7: an import that stored the valid records and left invalid ones out (not an error)', () => {
    const file = join(dir, 'partly.jsonl');
    writeFileSync(file, `${JSON.stringify({ kind: 'user', content: 'first' })}\nnot json\n`);
    const r = engram(['ingest', file, '--session', 'partly', '--skip-invalid', '--json']);
    expect(r.code).toBe(7);
    expect(JSON.parse(r.stdout)).toMatchObject({ stored: 1, issueCount: 1 });
    expect(r.stderr).not.toContain('"error"');
  });

  it('8: the embedding provider fails (a server that refuses the key)', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'invalid api key' } }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
      // Asynchronous: the server answers from this process while the CLI waits for it.
      const r = await runAsync(['recall', 'anything', '--embedder', 'openai:test-model', '--json'], { ENGRAM_EMBEDDER_URL: url, ENGRAM_EMBEDDER_API_KEY: 'sk-wrong' });
      expect(r.code).toBe(8);
      expect(jsonError(r)).toMatchObject({ code: 'PROVIDER_ERROR', data: { status: 401, retryable: false } });
    } finally {
      await close(server);
    }
  });

  it('9: recall found no event matching the query (not an error; the answer says so on stdout)', () => {
    const file = join(dir, 'one.jsonl');
    writeFileSync(file, `${JSON.stringify({ kind: 'tool_result', toolName: 'Bash', content: 'Error: connect ECONNREFUSED 10.0.4.12:5433' })}\n`);
    expect(engram(['ingest', file, '--session', 'nine']).code).toBe(0);
    const none = engram(['recall', 'xyzzyqwerty', '--session', 'nine']);
    expect(none).toMatchObject({ code: 9, stdout: 'No event in memory matches "xyzzyqwerty".\n', stderr: '' });
    const json = engram(['recall', 'xyzzyqwerty', '--session', 'nine', '--json']);
    expect(json.code).toBe(9);
    expect(JSON.parse(json.stdout)).toMatchObject({ match: 'none', hits: [] });
    const found = engram(['recall', 'ECONNREFUSED', '--session', 'nine', '--json']);
    expect(found.code).toBe(0);
    expect(JSON.parse(found.stdout)).toMatchObject({ match: 'exact', hits: [{ isExactMatch: true, coverage: 1 }] });
  });

  it('130: interrupted (Ctrl-C while engram mcp serves)', async () => {
    const child = spawn(process.execPath, [ENGRAM_BIN, '--embedder', 'none', 'mcp', '--session', 's1'], { cwd: dir, env: cliEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    const serving = new Promise<void>((resolve) => {
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        if (stderr.includes('serving session')) resolve();
      });
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await serving;
    child.kill('SIGINT');
    expect(await exited).toBe(130);
  });
});

function runAsync(args: string[], env: Record<string, string>): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [ENGRAM_BIN, ...args], { cwd: dir, env: cliEnv(env) });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}
