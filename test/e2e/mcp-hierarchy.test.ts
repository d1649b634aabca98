import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { openEngram, type Engram } from '../../src/engine.js';
import { startHttpServer, type RunningHttpServer } from '../../src/interfaces/http/server.js';

/**
 * The hierarchy tools through the real MCP SDK client over Streamable HTTP: a planner's client works in the planner
 * session, its executor's client in the delegated session (each MCP session is bound to one Engram session).
 */
let dir: string;
let mem: Engram;
let server: RunningHttpServer;
const tokens: Record<string, string> = {};
const clients: Client[] = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-mcp-hierarchy-'));
  mem = await openEngram({ db: join(dir, 'engram.db') });
  tokens.lead = (await mem.agents.add('lead', { role: 'manager', project: 'shop' })).token;
  tokens.alice = (await mem.agents.add('alice', { role: 'programmer', parent: 'lead', project: 'shop' })).token;
  server = await startHttpServer(mem, { port: 0, version: '0.0.0-test' });
});

afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  await server.close();
  await mem.close();
  rmSync(dir, { recursive: true, force: true });
});

async function connect(as: string, session: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${tokens[as]}`, 'X-Engram-Session': session, 'X-Engram-Tools': 'team' } },
  });
  const client = new Client({ name: 'engram-hierarchy-e2e', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

const text = (r: CallToolResult): string => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

it('delegates, reports with a digest from a deref, validates, and shows the tree through MCP tools', async () => {
  const planner = await connect('lead', 'plan');
  await call(planner, 'append_events', { events: [{ kind: 'decision', content: 'The capybara service moves to port 8443.' }] });

  const bad = await call(planner, 'delegate', { packet: { subtask_id: 'net', objective: 'Move the port' }, executor: 'alice' });
  expect(bad.isError).toBe(true);
  expect(text(bad)).toContain('packet.acceptance_criteria');

  const delegated = await call(planner, 'delegate', {
    packet: { subtask_id: 'net', objective: 'Move the capybara service to port 8443.', acceptance_criteria: ['The new port is cited from the config'] },
    executor: 'alice',
  });
  expect(delegated.isError).toBeFalsy();
  expect(delegated.structuredContent).toMatchObject({ child: { sessionId: 'plan.net', role: 'executor', writer: { name: 'alice' } } });

  const executor = await connect('alice', 'plan.net');
  const card = await call(executor, 'get_task_state', {});
  expect(text(card)).toContain('Move the capybara service to port 8443.');
  const stored = await call(executor, 'append_events', { events: [{ kind: 'tool_result', toolName: 'cat', content: 'listen: 8443 # capybara' }] });
  const eventId = (stored.structuredContent as { events: Array<{ id: string }> }).events[0]!.id;
  const deref = await call(executor, 'less_deref_pointer', { pointer: `sam:event:${eventId}` });
  const digest = (deref.structuredContent as { content_digest: string }).content_digest;
  expect(digest).toMatch(/^[0-9a-f]{64}$/);

  // The planner may not write into its executor's session.
  const intrusion = await call(await connect('lead', 'plan.net'), 'append_events', { events: [{ kind: 'note', content: 'x' }] });
  expect(intrusion.isError).toBe(true);
  expect(text(intrusion)).toContain('SCOPE_DENIED');
  expect(text(intrusion)).toContain('alice');

  const sent = await call(executor, 'report', {
    report: { status: 'done', summary: 'Port moved.', key_findings: [{ claim: 'The config listens on 8443', provenance: [{ pointer: `sam:event:${eventId}`, content_digest: digest }] }] },
  });
  expect(sent.isError).toBeFalsy();
  const badReport = await call(executor, 'report', { report: { status: 'finished', summary: 'x' } });
  expect(badReport.isError).toBe(true);
  expect(text(badReport)).toContain('report.status');

  const received = await call(planner, 'received_reports', { record: true });
  expect(received.isError).toBeFalsy();
  expect(text(received)).toContain('Verified: 1 pointer(s) verified, 0 failed');
  const [report] = (received.structuredContent as { reports: Array<{ validation: { isVerified: boolean }; validationEventId: string }> }).reports;
  expect(report).toMatchObject({ validation: { isVerified: true }, validationEventId: expect.stringMatching(/^evt_/) });

  const tree = await call(executor, 'hierarchy_tree', {});
  expect(text(tree)).toContain('plan.net  executor  writer alice  subtask net  last report: done');
  const up = await call(executor, 'hierarchy_recall', { query: 'capybara port', scope: 'ancestors' });
  expect((up.structuredContent as { sessionIds: string[] }).sessionIds).toEqual(['plan.net', 'plan']);
  expect(text(up)).toContain('8443');
});
