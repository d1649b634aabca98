import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEngram, type Engram, type OpenAiMessage, type OpenAiToolCall } from '../../src/index.js';
import { AGENT_IDENTITY, runTurn, type PackSent } from '../../examples/agent/agent.js';
import { createChatModel, type ChatTool } from '../../examples/agent/chat-model.js';
import { EXECUTORS, runTeam } from '../../examples/agent/team.js';

/** A request the scripted model received, as the agent sent it. */
interface ChatRequest {
  model: string;
  messages: OpenAiMessage[];
  tools?: ChatTool[];
}
/** `argsAsObject`: send `arguments` as an object without an `id`, as some OpenAI-compatible servers do. */
type ScriptedReply = { content: string } | { toolCalls: Array<{ name: string; args: Record<string, unknown> }>; argsAsObject?: boolean };
/** Decides the reply from the request, as a model would: the script sees exactly what the agent sent. */
type Script = (request: ChatRequest) => ScriptedReply;

/**
 * A local server speaking the OpenAI Chat Completions protocol on loopback, answering from a script: the only
 * fake of these tests (no model can run here), and it speaks the real wire format.
 */
let server: Server;
let baseUrl: string;
let requests: ChatRequest[];
let script: Script;
let dir: string;
let mem: Engram;

beforeEach(async () => {
  requests = [];
  let callNo = 0;
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => {
      if (req.url !== '/v1/chat/completions') return void res.writeHead(404).end();
      const body = JSON.parse(raw) as ChatRequest;
      requests.push(body);
      let reply: ScriptedReply;
      try {
        reply = script(body);
      } catch (err) {
        return void res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: String(err) } }));
      }
      const message =
        'content' in reply
          ? { role: 'assistant', content: reply.content }
          : {
              role: 'assistant',
              content: null,
              tool_calls: reply.toolCalls.map((c, i) =>
                reply.argsAsObject
                  ? { type: 'function', function: { name: c.name, arguments: c.args } }
                  : ({ id: `call_${++callNo}_${i}`, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.args) } } satisfies OpenAiToolCall),
              ),
            };
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ id: `chatcmpl-${callNo}`, object: 'chat.completion', model: body.model, choices: [{ index: 0, message, finish_reason: 'stop' }] }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  dir = mkdtempSync(join(tmpdir(), 'engram-example-agent-'));
  mem = await openEngram({ db: join(dir, 'engram.db') });
});

afterEach(async () => {
  await mem.close();
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
  rmSync(dir, { recursive: true, force: true });
});

const execFileAsync = promisify(execFile);
/** The last message that is not a pack block: the task card follows the history as a system message. */
const lastMessage = (r: ChatRequest): OpenAiMessage => r.messages.filter((m) => m.role !== 'system').at(-1)!;
/** The name of the tool whose call has this id, as the pack paired them. */
const calledTool = (r: ChatRequest, id: string): string | undefined =>
  r.messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []) : [])).find((c) => c.id === id)?.function.name;
const text = (r: ChatRequest): string => r.messages.map((m) => m.content ?? '').join('\n');
const systemText = (r: ChatRequest, tag: string): string | undefined =>
  r.messages.flatMap((m) => (m.role === 'system' && m.content.startsWith(`<${tag}>`) ? [m.content] : []))[0];

describe('example agent', () => {
  it('sends the pack every call, runs update_task through the task-state schema and stores every step as events', async () => {
    script = (r) => {
      const last = lastMessage(r);
      if (last.role === 'user') {
        return { toolCalls: [{ name: 'update_task', args: { goals: ['fix checkout DB connection'], constraints: ['never restart the primary'], phase: 'debugging' } }] };
      }
      if (last.role === 'tool' && last.content.startsWith('Task card is now version 1')) return { toolCalls: [{ name: 'update_task', args: { phase: 'sleeping' } }] };
      return { content: 'Card set; the checkout DB is next.' };
    };
    const packs: PackSent[] = [];
    const model = createChatModel({ baseUrl, model: 'scripted', apiKey: 'sk-test' });
    const turn = await runTurn(
      { mem, model, sessionId: 's1', windowTokens: 8000, identity: AGENT_IDENTITY, onPack: (p) => packs.push(p) },
      'checkout fails with ECONNREFUSED 10.0.4.12:5433',
    );

    expect(turn).toMatchObject({ reply: 'Card set; the checkout DB is next.', steps: 3 });
    expect(requests).toHaveLength(3);
    expect(requests.map((r) => r.messages)).toEqual(packs.map((p) => p.messages));
    // Call 1: the identity and the user's input; the tools are declared with the engine's schema.
    expect(requests[0]!.messages[0]).toEqual({ role: 'system', content: `<identity>\n${AGENT_IDENTITY}\n</identity>` });
    expect(lastMessage(requests[0]!)).toEqual({ role: 'user', content: 'checkout fails with ECONNREFUSED 10.0.4.12:5433' });
    expect(requests[0]!.tools!.map((t) => t.function.name)).toEqual(['recall', 'expand', 'update_task']);
    const phase = (requests[0]!.tools![2]!.function.parameters as { properties: { phase: { enum: string[] } } }).properties.phase;
    expect(phase.enum).toContain('debugging');
    // Call 2: the card the tool stored is in the pack, and the tool round is paired.
    const card2 = systemText(requests[1]!, 'task_state');
    expect(card2).toContain('fix checkout DB connection');
    expect(card2).toContain('never restart the primary');
    expect(requests[1]!.messages.some((m) => m.role === 'assistant' && m.tool_calls?.[0]?.function.name === 'update_task')).toBe(true);
    // Call 3: the invalid phase was refused by name and nothing was stored.
    expect(lastMessage(requests[2]!)).toMatchObject({ role: 'tool' });
    expect(lastMessage(requests[2]!).content).toMatch(/^ERROR INVALID_INPUT: phase: /);
    const card = await mem.taskStates.get('s1');
    expect(card).toMatchObject({ version: 1, state: { phase: 'debugging', goals: ['fix checkout DB connection'] } });

    const events = await mem.listEvents({ sessionId: 's1' as never });
    expect(events.map((e) => `${e.kind}${e.toolName ? `:${e.toolName}` : ''}`)).toEqual([
      'user',
      'tool_call:update_task',
      'task_state',
      'tool_result:update_task',
      'tool_call:update_task',
      'tool_result:update_task',
      'assistant',
    ]);
    expect(events.at(-1)!.id).toBe(turn.replyEventId);
  });

  it('pairs tool calls whose arguments come as an object and without an id, and tells the model about bad arguments', async () => {
    script = (r) => {
      const last = lastMessage(r);
      if (last.role === 'user') return { toolCalls: [{ name: 'recall', args: { query: 'checkout' } }, { name: 'expand', args: { id: 42 } }], argsAsObject: true };
      return { content: 'done' };
    };
    const model = createChatModel({ baseUrl, model: 'scripted' });
    await runTurn({ mem, model, sessionId: 'loose', windowTokens: 8000, identity: AGENT_IDENTITY }, 'checkout is slow');
    const second = requests[1]!;
    const calls = second.messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []) : []));
    expect(calls.map((c) => [c.function.name, c.function.arguments])).toEqual([
      ['recall', '{"query":"checkout"}'],
      ['expand', '{"id":42}'],
    ]);
    const results = second.messages.flatMap((m) => (m.role === 'tool' ? [m] : []));
    expect(results.map((m) => m.tool_call_id)).toEqual(calls.map((c) => c.id));
    expect(results[0]!.content).toContain('checkout is slow');
    expect(results[1]!.content).toMatch(/^ERROR INVALID_INPUT: id: /);
  });

  it('compacts as the window fills, shows markers in the pack and recalls and expands an evicted detail', async () => {
    const windowTokens = 2000;
    script = (r) => {
      const last = lastMessage(r);
      if (last.role === 'user' && last.content.startsWith('What was the port')) return { toolCalls: [{ name: 'recall', args: { query: 'ECONNREFUSED' } }] };
      if (last.role === 'tool' && calledTool(r, last.tool_call_id) === 'recall') {
        // Read the evidence as a model would: the hit quoting the error (the recall call itself is a hit too).
        const hit = last.content.split(/(?=^\[\d+\] evt_)/m).find((h) => h.includes('10.0.4.12'))!;
        const id = /evt_[0-9a-z]{26}/.exec(hit)![0];
        return { toolCalls: [{ name: 'expand', args: { id } }] };
      }
      if (last.role === 'tool') return { content: `The port was 5433 (from ${last.content.length} characters of the stored event).` };
      return { content: `Noted (${(last.content ?? '').length} characters).` };
    };
    const packs: PackSent[] = [];
    const model = createChatModel({ baseUrl, model: 'scripted' });
    const options = { mem, model, sessionId: 'long', windowTokens, identity: AGENT_IDENTITY, onPack: (p: PackSent) => packs.push(p) };
    await runTurn(options, 'checkout fails: connect ECONNREFUSED 10.0.4.12:5433 from the payments worker');
    const filler = (i: number): string => `Status report ${i}: ` + `the nightly build of module m${i} compiled, linted and passed its suite. `.repeat(12);
    let compactions = 0;
    for (let i = 1; i <= 12; i++) compactions += (await runTurn(options, filler(i))).compactions.length;
    expect(compactions).toBeGreaterThan(0);

    const turn = await runTurn(options, 'What was the port in the first error?');
    expect(turn.reply).toMatch(/^The port was 5433/);
    const [ask, afterRecall, afterExpand] = requests.slice(-3);
    // The first error is no longer in the window: a marker stands in its place, and recall brings it back.
    expect(text(ask!)).not.toContain('10.0.4.12:5433');
    expect(systemText(ask!, 'markers')).toMatch(/\[Events T1-T\d+ evicted\. Key topics: .*Use recall\(query\) to retrieve details\.\]/);
    expect(lastMessage(afterRecall!).content).toContain('connect ECONNREFUSED 10.0.4.12:5433');
    expect(lastMessage(afterExpand!).content).toContain('connect ECONNREFUSED 10.0.4.12:5433 from the payments worker');
    for (const p of packs) expect(p.pack.pack.totalTokens).toBeLessThanOrEqual(windowTokens);
    // Nothing was lost: every turn is still stored.
    const users = await mem.listEvents({ sessionId: 'long' as never, kinds: ['user'] });
    expect(users).toHaveLength(14);
  });

  it('runs a planner that delegates to two executors through the bus and answers from their reports', async () => {
    const objectives: Record<string, string> = {
      'executor-1': 'Find which port the checkout DB listens on; the log says ECONNREFUSED 10.0.4.12:5433.',
      'executor-2': 'Check whether the payments worker retries on connection errors.',
    };
    const answers: Record<string, string> = {
      'executor-1': 'The checkout DB listens on 5432; the worker is configured with 5433.',
      'executor-2': 'The payments worker retries 3 times with backoff.',
    };
    script = (r) => {
      const identity = r.messages[0]!.content ?? '';
      const last = lastMessage(r);
      const executor = EXECUTORS.find((e) => identity.includes(`You are ${e}`));
      if (executor) return { content: answers[executor]! };
      if (last.role === 'user' && last.content.startsWith('Reports from your executors')) return { content: 'Fix: point the worker at port 5432; it already retries 3 times.' };
      if (last.role === 'user') return { toolCalls: EXECUTORS.map((e) => ({ name: 'delegate', args: { executor: e, objective: objectives[e]! } })) };
      return { content: 'Delegated both pieces.' };
    };
    const packs: PackSent[] = [];
    const model = createChatModel({ baseUrl, model: 'scripted' });
    const result = await runTeam({ mem, model, runId: 'run1', windowTokens: 8000, onPack: (p) => packs.push(p) }, 'Why does checkout fail, and is a retry enough?');

    expect(result.answer).toBe('Fix: point the worker at port 5432; it already retries 3 times.');
    // The planner posted one todo per executor, each pointing at the stored objective.
    expect(result.delegated.map((e) => e.kind)).toEqual(['todo', 'todo']);
    for (const todo of result.delegated) expect(todo.pointers[0]!.ref).toMatch(/^sam:event:evt_/);
    // Each executor found its work on the bus, in its own session with its own pack.
    expect(result.executed.map((x) => x.executor)).toEqual([...EXECUTORS]);
    for (const x of result.executed) {
      const sessionPacks = packs.filter((p) => p.sessionId === `run1.${x.executor}`);
      expect(sessionPacks).toHaveLength(1);
      const user = lastMessage({ model: '', messages: sessionPacks[0]!.messages }).content!;
      expect(user).toContain(objectives[x.executor]!);
      expect(user).toContain(`content_digest ${x.objectiveDigest}`);
      expect(text({ model: '', messages: sessionPacks[0]!.messages })).not.toContain(objectives[x.executor === 'executor-1' ? 'executor-2' : 'executor-1']!);
      expect(x.report).toMatchObject({ kind: 'fact', tags: [`report:${x.todo.id}`] });
      expect(x.report.pointers[0]!.ref).toBe(`sam:event:${x.turn.replyEventId}`);
    }
    // The planner read both reports through their pointers, and its last pack carries them with digests.
    expect(result.reports.map((r) => [r.executor, r.excerpt])).toEqual(EXECUTORS.map((e) => [e, answers[e]]));
    const finalPack = packs.filter((p) => p.sessionId === 'run1.planner').at(-1)!;
    const finalInput = lastMessage({ model: '', messages: finalPack.messages }).content!;
    for (const r of result.reports) expect(finalInput).toContain(`content_digest ${r.contentDigest}`);
    expect(finalInput).toContain(answers['executor-2']!);
    // Everything is stored: the planner's session holds the delegations, each executor's its own turn.
    const plannerEvents = await mem.listEvents({ sessionId: 'run1.planner' as never });
    expect(plannerEvents.filter((e) => e.kind === 'note').map((e) => e.content)).toEqual(EXECUTORS.map((e) => objectives[e]));
    const executorAnswer = await mem.listEvents({ sessionId: 'run1.executor-2' as never, kinds: ['assistant'] });
    expect(executorAnswer.map((e) => e.content)).toEqual([answers['executor-2']]);
  });

  it('runs from the command line against the endpoint in ENGRAM_LLM_URL and prints the pack with --print-pack', async () => {
    script = (r) => (lastMessage(r).role === 'user' ? { toolCalls: [{ name: 'update_task', args: { goals: ['say hello'], phase: 'implementing' } }] } : { content: 'Hello from the example.' });
    const db = join(dir, 'cli.db');
    const { stdout, stderr } = await execFileAsync(
      process.execPath,
      ['--import', 'tsx', 'examples/agent/run.ts', '--db', db, '--session', 'cli', '--print-pack', 'say hello'],
      { encoding: 'utf8', env: { ...process.env, ENGRAM_LLM_URL: baseUrl, ENGRAM_LLM_MODEL: 'scripted-cli', ENGRAM_LLM_API_KEY: '' } },
    );
    expect(stderr).toBe('');
    expect(requests.map((r) => r.model)).toEqual(['scripted-cli', 'scripted-cli']);
    expect(stdout).toContain('--- pack for cli, model call 1');
    expect(stdout).toContain('--- pack for cli, model call 2');
    expect(stdout).toContain('<task_state>');
    expect(stdout.trimEnd().endsWith('Hello from the example.')).toBe(true);
    const check = await openEngram({ db });
    try {
      expect((await check.taskStates.get('cli'))?.state.goals).toEqual(['say hello']);
    } finally {
      await check.close();
    }
  });
});
