import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cliEnv, ENGRAM_BIN, runEngram } from '../fixtures/cli.js';

let dir: string;
let db: string;
const engram = (...args: string[]) => runEngram(['--db', db, '--embedder', 'none', ...args], { cwd: dir });

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'engram-cli-access-'));
  db = join(dir, 'engram.db');
  writeFileSync(
    join(dir, 'shop.jsonl'),
    [
      { kind: 'user', content: 'the flamingoid deploy fails' },
      { kind: 'decision', content: 'We pin the flamingoid image to 3.2.1.' },
    ]
      .map((e) => JSON.stringify(e))
      .join('\n'),
  );
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('engram share / unshare and sessions (the local CLI is full trust)', () => {
  it('lists sessions with their project and shares, and shares and unshares them', () => {
    expect(engram('ingest', join(dir, 'shop.jsonl'), '--session', 'deploy').code).toBe(0);
    expect(engram('sessions').stdout).toMatch(/^deploy {2}project default {2}2 events/m);

    const shared = engram('share', 'deploy', 'audit');
    expect(shared.code).toBe(0);
    expect(shared.stdout).toContain('shared read-only with: audit');
    expect(JSON.parse(engram('--json', 'sessions').stdout)[0]).toMatchObject({ id: 'deploy', project: 'default', sharedWith: ['audit'] });

    expect(engram('unshare', 'deploy', 'audit').stdout).toContain('no longer shared with project audit');
    expect(JSON.parse(engram('--json', 'sessions').stdout)[0].sharedWith).toEqual([]);
    expect(engram('unshare', 'deploy', 'audit').stdout).toContain('was not shared');
  });

  it('imports new sessions into the project given with --project, and refuses a bad project name (exit 2)', () => {
    expect(engram('ingest', join(dir, 'shop.jsonl'), '--session', 'deploy', '--project', 'shop').code).toBe(0);
    expect(JSON.parse(engram('--json', 'sessions').stdout)[0]).toMatchObject({ id: 'deploy', project: 'shop' });
    const bad = engram('ingest', join(dir, 'shop.jsonl'), '--session', 'other', '--project', 'a\u0007b');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('project');
  });

  it('refuses to share a session that does not exist, naming it', () => {
    expect(engram('init').code).toBe(0);
    const r = engram('share', 'nope', 'audit');
    expect(r.stderr).toContain('no session nope');
    expect(r.code).not.toBe(0);
  });

  it('bounds `engram mcp --agent` on stdio by the agent\'s project; without --agent it is the local user', async () => {
    expect(engram('ingest', join(dir, 'shop.jsonl'), '--session', 'deploy').code).toBe(0);
    expect(engram('agent', 'add', 'eve', '--role', 'programmer', '--project', 'other').code).toBe(0);
    const connect = async (args: string[]): Promise<Client> => {
      const transport = new StdioClientTransport({ command: process.execPath, args: [ENGRAM_BIN, 'mcp', '--db', db, '--embedder', 'none', ...args], env: cliEnv() });
      const client = new Client({ name: 'cli-access', version: '1.0.0' });
      await client.connect(transport);
      return client;
    };
    const text = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

    const eve = await connect(['--session', 'deploy', '--agent', 'eve']);
    try {
      // `deploy` of the default project is not eve's: it names her own, empty session of that name.
      const recall = (await eve.callTool({ name: 'recall', arguments: { query: 'flamingoid', sessionOnly: true } })) as CallToolResult;
      expect(recall.isError).toBeFalsy();
      expect((recall.structuredContent as { results: Array<{ hits: unknown[] }> }).results[0]!.hits).toEqual([]);
      const wide = (await eve.callTool({ name: 'recall', arguments: { query: 'flamingoid image' } })) as CallToolResult;
      expect((wide.structuredContent as { results: Array<{ hits: unknown[] }> }).results[0]!.hits).toEqual([]);
      const append = (await eve.callTool({ name: 'append_events', arguments: { events: [{ kind: 'note', content: 'x' }] } })) as CallToolResult;
      expect(append.isError).toBeFalsy();
      expect(append.structuredContent).toMatchObject({ sessionId: 'deploy' });
    } finally {
      await eve.close();
    }

    const local = await connect(['--session', 'deploy']);
    try {
      const recall = (await local.callTool({ name: 'recall', arguments: { query: 'flamingoid image', sessionOnly: true } })) as CallToolResult;
      expect(text(recall)).toContain('3.2.1');
    } finally {
      await local.close();
    }
  });
});
