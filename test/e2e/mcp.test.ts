import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const BIN = resolve('bin/engram.js');
// Every profile (--tools all) without --agent: the less_* bus tools act as an agent and are not listed without one
// (mcp-bus.test.ts); the profiles themselves are in mcp-profiles.test.ts.
const TOOLS = [
  'append_events',
  'delegate',
  'entities',
  'expand',
  'get_task_state',
  'graph_build',
  'hierarchy_recall',
  'hierarchy_tree',
  'impact',
  'recall',
  'received_reports',
  'report',
  'update_task_state',
];

let dir: string;
let client: Client;
let transportErrors: Error[];

/** The environment of the spawned server: no store from the developer's shell. */
function serverEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  return { ...env, ENGRAM_DB: '', ENGRAM_PG_URL: '', ENGRAM_SESSION: '' };
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-mcp-'));
  transportErrors = [];
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'mcp', '--db', join(dir, 'engram.db'), '--session', 's1', '--tools', 'all'],
    env: serverEnv(),
    cwd: dir,
    stderr: 'pipe',
  });
  client = new Client({ name: 'engram-e2e', version: '1.0.0' });
  client.onerror = (err) => transportErrors.push(err);
  await client.connect(transport);
});

afterEach(async () => {
  await client.close();
  // A line on stdout that is not JSON-RPC would have reached onerror.
  expect(transportErrors).toEqual([]);
  rmSync(dir, { recursive: true, force: true });
});

async function call(name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

function text(result: CallToolResult): string {
  return result.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
}

const BUILD_LOG = [
  ...Array.from({ length: 120 }, (_, i) => `[build] compiling module ${i} of 240 ... ok`),
  "src/api/client.ts(88,7): error TS2345: Argument of type 'string' is not assignable to parameter of type 'Port'.",
  ...Array.from({ length: 120 }, (_, i) => `[build] compiling module ${i + 121} of 240 ... ok`),
].join('\n');

async function appendDemo() {
  const r = await call('append_events', {
    events: [
      { kind: 'user', content: 'the staging database refuses connections, please look', key: 't1' },
      { kind: 'tool_result', toolName: 'Bash', content: 'psql: error: connect ECONNREFUSED 10.0.4.12:5433', key: 't2' },
      { kind: 'decision', content: 'We move the staging database to port 6543 after the incident.', key: 't3' },
      { kind: 'tool_result', toolName: 'Bash', content: BUILD_LOG, key: 't4' },
    ],
  });
  expect(r.isError).toBeFalsy();
  return r.structuredContent as { events: Array<{ id: string; turn: number; isDuplicate: boolean; artifactId?: string }> };
}

describe('engram mcp (stdio, real SDK client)', () => {
  it('lists the tools, each with a description and an input schema', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(TOOLS);
    for (const t of tools) {
      expect(t.description?.length ?? 0).toBeGreaterThan(40);
      expect(t.inputSchema.type).toBe('object');
    }
    const recall = tools.find((t) => t.name === 'recall')!;
    expect(recall.description).toContain('call recall before answering');
    expect(Object.keys(recall.inputSchema.properties ?? {}).sort()).toEqual(['budgetTokens', 'granularity', 'k', 'query', 'sessionOnly', 'summaries', 'summaryDepth']);
    // The task card's fields are advertised, though the engine validates them.
    const update = tools.find((t) => t.name === 'update_task_state')!;
    const updateProps = (update.inputSchema.properties as Record<string, { properties?: Record<string, unknown> }>).update!.properties!;
    expect(Object.keys(updateProps)).toContain('phase');
  });

  it('stores events idempotently and recalls an exact string from them', async () => {
    const first = await appendDemo();
    expect(first.events.map((e) => e.turn)).toEqual([1, 2, 3, 4]);
    const again = await appendDemo();
    expect(again.events.map((e) => e.id)).toEqual(first.events.map((e) => e.id));
    expect(again.events.every((e) => e.isDuplicate)).toBe(true);

    const r = await call('recall', { query: 'ECONNREFUSED 10.0.4.12:5433' });
    expect(r.isError).toBeFalsy();
    expect(text(r)).toContain('ECONNREFUSED 10.0.4.12:5433');
    const results = (r.structuredContent as { results: Array<{ hits: Array<{ eventId: string; isExactMatch: boolean }> }> }).results;
    expect(results[0]!.hits[0]!.eventId).toBe(first.events[1]!.id);
    expect(results[0]!.hits[0]!.isExactMatch).toBe(true);
  });

  it('answers a query nothing matches with a normal result that says so, not an error', async () => {
    await appendDemo();
    const r = await call('recall', { query: 'xyzzyqwerty' });
    expect(r.isError).toBeFalsy();
    expect(text(r)).toBe('No event in memory matches "xyzzyqwerty".');
    expect(r.structuredContent).toMatchObject({ results: [{ query: 'xyzzyqwerty', match: 'none', hits: [] }] });
    const found = await call('recall', { query: 'ECONNREFUSED' });
    expect(found.structuredContent).toMatchObject({ results: [{ match: 'exact', hits: [{ isExactMatch: true, coverage: 1 }] }] });
  });

  it('answers a batch of two queries in one call', async () => {
    const stored = await appendDemo();
    const r = await call('recall', { query: ['ECONNREFUSED', 'port 6543'] });
    const results = (r.structuredContent as { results: Array<{ query: string; hits: Array<{ eventId: string }> }> }).results;
    expect(results.map((x) => x.query)).toEqual(['ECONNREFUSED', 'port 6543']);
    expect(results[0]!.hits[0]!.eventId).toBe(stored.events[1]!.id);
    expect(results[1]!.hits[0]!.eventId).toBe(stored.events[2]!.id);
    expect(text(r)).toContain('10.0.4.12:5433');
    expect(text(r)).toContain('port 6543');
  });

  it('expands an event and an artifact, cutting at maxTokens with a notice', async () => {
    const stored = await appendDemo();
    const event = await call('expand', { id: stored.events[2]!.id });
    expect(text(event)).toContain('We move the staging database to port 6543 after the incident.');
    expect(text(event)).toContain('turn 3');

    // The 4th event's output is over 4 KiB, so it was kept whole as an artifact.
    const artifactId = stored.events[3]!.artifactId!;
    expect(artifactId).toMatch(/^art_/);
    const cut = await call('expand', { id: artifactId, maxTokens: 50 });
    expect(text(cut)).toMatch(/\[truncated: \d+ more tokens; ask with a larger maxTokens or recall a narrower query\]/);
    expect(text(cut)).not.toContain('TS2345');
    expect((cut.structuredContent as { isTruncated: boolean }).isTruncated).toBe(true);
    const whole = await call('expand', { id: artifactId.slice(0, 12), maxTokens: 100_000 });
    expect(text(whole)).toContain("error TS2345: Argument of type 'string'");
    expect(text(whole)).toContain('compiling module 240 of 240');
    expect(text(whole)).not.toContain('[truncated');
  });

  it('maps an unknown id to a NOT_FOUND error result the model can act on', async () => {
    const r = await call('expand', { id: 'evt_01jzzzzzzzzzzzzzzzzzzzzzzz' });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/^NOT_FOUND: /);
    expect(text(r)).toContain('recall');
  });

  it('rejects an invalid event naming the field, and stores none of the batch', async () => {
    const r = await call('append_events', { events: [{ kind: 'user', content: 'ok' }, { kind: 'shout', content: 'x' }] });
    expect(r.isError).toBe(true);
    expect(text(r)).toContain('INVALID_INPUT');
    expect(text(r)).toContain('events[1].kind');
    const recall = await call('recall', { query: 'ok' });
    expect((recall.structuredContent as { results: Array<{ hits: unknown[] }> }).results[0]!.hits).toEqual([]);
  });

  it('validates task state updates, versions them, and conditions session recall on the card', async () => {
    const stored = await appendDemo();
    const empty = await call('get_task_state');
    expect(empty.isError).toBeFalsy();
    expect(text(empty)).toContain('No task state yet');

    const bad = await call('update_task_state', { update: { phase: 'dreaming' } });
    expect(bad.isError).toBe(true);
    expect(text(bad)).toContain('INVALID_INPUT');
    expect(text(bad)).toContain('taskState.phase');
    // The hint names the argument as the model sent it.
    expect(text(bad)).toContain('`update.phase`');

    const decision = stored.events[2]!.id;
    const ok = await call('update_task_state', { update: { phase: 'debugging', goals: ['fix the staging connection'], keyEvents: [decision] } });
    expect(ok.isError).toBeFalsy();
    expect((ok.structuredContent as { version: number }).version).toBe(1);

    const got = await call('get_task_state');
    const card = got.structuredContent as { version: number; state: { phase: string; goals: string[] } };
    expect(card.version).toBe(1);
    expect(card.state.phase).toBe('debugging');
    expect(card.state.goals).toEqual(['fix the staging connection']);

    // The decision does not match the query; it is recalled because the card lists it as a key event.
    const r = await call('recall', { query: 'ECONNREFUSED', sessionOnly: true });
    const sc = r.structuredContent as { taskStateVersion?: number; results: Array<{ hits: Array<{ eventId: string; isKeyEvent: boolean }> }> };
    expect(sc.taskStateVersion).toBe(1);
    expect(sc.results[0]!.hits.find((h) => h.eventId === decision)?.isKeyEvent).toBe(true);

    const resource = await client.readResource({ uri: 'engram://session/s1/task-state' });
    const first = resource.contents[0] as { text: string };
    expect(JSON.parse(first.text).version).toBe(1);
  });
});

describe('engram mcp process', () => {
  let procDir: string;
  beforeEach(() => {
    procDir = mkdtempSync(join(tmpdir(), 'engram-mcp-proc-'));
  });
  afterEach(() => {
    rmSync(procDir, { recursive: true, force: true });
  });

  function start(args: string[], env: Record<string, string> = {}) {
    const child = spawn(process.execPath, [BIN, 'mcp', '--db', join(procDir, 'engram.db'), ...args], {
      cwd: procDir,
      env: { ...serverEnv(), ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    const exited = new Promise<number | null>((res) => child.on('exit', (code) => res(code)));
    return { child, exited, out: () => stdout, err: () => stderr };
  }

  const initialize = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  });

  it('writes only JSON-RPC to stdout, logs to stderr and exits 0 when stdin closes', async () => {
    const p = start(['--session', 's1']);
    p.child.stdin.write(`${initialize}\n`);
    p.child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
    p.child.stdin.end(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' })}\n`);
    expect(await p.exited).toBe(0);
    const lines = p.out().split('\n').filter((l) => l.length > 0);
    expect(lines.length).toBeGreaterThanOrEqual(1);
    for (const line of lines) expect(JSON.parse(line).jsonrpc).toBe('2.0');
    expect(p.err()).toContain('serving session s1');
  });

  it('takes the session from ENGRAM_SESSION and stops cleanly on SIGTERM', async () => {
    const p = start([], { ENGRAM_SESSION: 'from-env' });
    p.child.stdin.write(`${initialize}\n`);
    await new Promise<void>((res) => {
      const check = () => (p.err().includes('serving session from-env') ? res() : setTimeout(check, 20));
      check();
    });
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  });

  it("starts without a session for the agent host's current session of the project in its directory, and refuses an unknown --tools", async () => {
    const p = start([]);
    p.child.stdin.write(`${initialize}\n`);
    await new Promise<void>((res) => {
      const check = () => (p.err().includes("serving the agent host's current session of project") ? res() : setTimeout(check, 20));
      check();
    });
    p.child.stdin.end();
    expect(await p.exited).toBe(0);
    const bad = start(['--tools', 'most']);
    bad.child.stdin.end();
    expect(await bad.exited).toBe(2);
    expect(bad.err()).toContain('tools: unknown tool profile "most"');
    expect(bad.out()).toBe('');
  });
});
