import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startScriptedLlmServer, type ScriptedLlmServer } from '../../src/providers/llm/test-support.js';
import { cliEnv, ENGRAM_BIN, runEngram } from '../fixtures/cli.js';

// engram graph build --llm through the built CLI, against a local server speaking the OpenAI protocol with a scripted
// answer (the CLI runs as a child process, so the server in this process can answer while it waits).
let dir: string;
let server: ScriptedLlmServer;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'engram-cli-graph-llm-'));
  server = await startScriptedLlmServer();
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

const env = () => ({ ENGRAM_LLM_URL: server.baseUrl, ENGRAM_LLM: '', ENGRAM_LLM_MODEL: '', ENGRAM_LLM_API_KEY: '' });
const engramAsync = async (args: string[]) => {
  try {
    const r = await promisify(execFile)(process.execPath, [ENGRAM_BIN, '--embedder', 'none', ...args], { cwd: dir, env: cliEnv(env()), encoding: 'utf8' });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
};

it('extracts with the model of --llm, verified and merged; without a model, as before', async () => {
  const events = [
    { kind: 'user', content: 'The checkout service times out when the ledger is slow.' },
    { kind: 'assistant', content: 'The cache layer was warmed; nothing else changed.' },
  ];
  const ingested = runEngram(['--embedder', 'none', 'ingest', '-', '--session', 's1'], { cwd: dir, input: events.map((e) => JSON.stringify(e)).join('\n') + '\n' });
  expect(ingested.code, ingested.stderr).toBe(0);
  server.script.push({
    text: JSON.stringify({
      entities: [
        { kind: 'service', name: 'ledger', cites: [{ event: 'e1', quote: 'the ledger is slow' }] },
        { kind: 'service', name: 'payments', cites: [{ event: 'e9', quote: 'payments' }] },
      ],
      edges: [{ type: 'depends_on', src: { kind: 'service', name: 'checkout' }, dst: { kind: 'service', name: 'ledger' }, cites: [{ event: 'e1', quote: 'checkout service times out when the ledger is slow' }] }],
    }),
  });
  const built = await engramAsync(['graph', 'build', '--llm', 'openai:small']);
  expect(built.code, built.stderr).toBe(0);
  expect(server.requests).toHaveLength(1);
  expect(built.stdout).toContain('Sessions: 2 new events of 1 sessions read');
  expect(built.stdout).toMatch(/Model openai:small: 1 chunks \(normal 1, aggressive 0, deterministic 0\); 3 entity and 1 edge mentions added; dropped 1 cites of events not shown, 0 misquoted, 0 naming what the event does not, 1 items left uncited/);

  const listed = await engramAsync(['entities', '--kind', 'service', '--json']);
  expect((JSON.parse(listed.stdout) as Array<{ name: string }>).map((e) => e.name).sort()).toEqual(['checkout', 'ledger']);
  const impact = await engramAsync(['impact', 'service:ledger']);
  expect(impact.stdout).toContain('service:checkout (0.70, depends_on)');

  // --llm none: no model asked, no model line.
  runEngram(['--embedder', 'none', 'ingest', '-', '--session', 's2'], { cwd: dir, input: JSON.stringify(events[0]) + '\n' });
  const plain = await engramAsync(['graph', 'build', '--llm', 'none', '--json']);
  expect(plain.code, plain.stderr).toBe(0);
  expect(JSON.parse(plain.stdout)).toEqual({ sessions: expect.objectContaining({ events: 1 }) });
  expect(server.requests).toHaveLength(1);
});
