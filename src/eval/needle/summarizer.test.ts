import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isEngramError } from '../../errors.js';
import { createGptTokenizer } from '../../providers/gpt-tokenizer.js';
import { createExtractiveSummarizer, createLlmSummarizer, summarizerFromEnv } from './summarizer.js';
import { SimulatedWindow } from './window-sim.js';

const tokenizer = createGptTokenizer();

describe('extractive summarizer', () => {
  const items = [
    '[user] The checkout build is red. Find the commit that broke it.',
    '[tool_result Bash] [build] 1/3 compiled src/a.ts in 3ms\n[build] 2/3 compiled src/b.ts in 4ms\n[build] 3/3 compiled src/c.ts in 5ms',
    '[assistant] The bisect blames a7f3b2c9e1d8: that commit broke the checkout build.',
    '[decision] Use PostgreSQL over MySQL because of JSONB support.',
  ];

  it('keeps whole lines, dialogue and decisions first, in their original order, within the budget', async () => {
    const s = createExtractiveSummarizer(tokenizer);
    const summary = await s.summarize({ items, budgetTokens: 80, depth: 0 });
    expect(tokenizer.count(summary)).toBeLessThanOrEqual(80);
    expect(summary).toContain('The checkout build is red. Find the commit that broke it.');
    expect(summary).toContain('The bisect blames a7f3b2c9e1d8: that commit broke the checkout build.');
    expect(summary).toContain('Use PostgreSQL over MySQL because of JSONB support.');
    expect(summary).not.toContain('compiled');
    expect(summary.indexOf('bisect')).toBeLessThan(summary.indexOf('PostgreSQL'));
    expect(s.isSimulation).toBe(true);
  });

  it('never writes anything that is not in its input', async () => {
    const summary = await createExtractiveSummarizer(tokenizer).summarize({ items, budgetTokens: 1000, depth: 1 });
    for (const line of summary.split('\n').slice(1)) expect(items.some((i) => i.includes(line))).toBe(true);
  });
});

/** A local server speaking the OpenAI chat completions protocol, answering with a canned summary. */
let server: Server;
let baseUrl: string;
let requests: Array<{ url: string; auth?: string; body: { model: string; max_tokens: number; messages: Array<{ role: string; content: string }> } }>;
let status = 200;

beforeEach(async () => {
  requests = [];
  status = 200;
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => {
      requests.push({ url: req.url ?? '', body: JSON.parse(raw), ...(req.headers.authorization ? { auth: req.headers.authorization } : {}) });
      if (status !== 200) return void res.writeHead(status).end('{"error":{"message":"scripted"}}');
      const answer = 'The agent found that commit a7f3b2c broke the build and chose PostgreSQL. '.repeat(40);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id: 'c1', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: answer }, finish_reason: 'stop' }] }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

afterEach(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

describe('LLM summarizer', () => {
  it('posts the transcript to /chat/completions with the budget and cuts the answer to it', async () => {
    const s = createLlmSummarizer({ baseUrl, model: 'tiny-summarizer', apiKey: 'sk-test', tokenizer });
    const summary = await s.summarize({ items: ['[user] first', '[assistant] second'], budgetTokens: 50, depth: 0 });
    expect(requests).toHaveLength(1);
    expect(requests[0]!.url).toBe('/v1/chat/completions');
    expect(requests[0]!.auth).toBe('Bearer sk-test');
    expect(requests[0]!.body.model).toBe('tiny-summarizer');
    expect(requests[0]!.body.max_tokens).toBe(50);
    expect(requests[0]!.body.messages[1]!.content).toBe('[user] first\n\n[assistant] second');
    expect(summary.startsWith('The agent found that commit a7f3b2c broke the build')).toBe(true);
    expect(tokenizer.count(summary)).toBeLessThanOrEqual(50);
    expect(s).toMatchObject({ name: 'llm:tiny-summarizer', isSimulation: false });
  });

  it('drives the narrative baseline when ENGRAM_LLM_URL is set', async () => {
    const s = summarizerFromEnv(tokenizer, { ENGRAM_LLM_URL: baseUrl, ENGRAM_LLM_MODEL: 'm1' });
    expect(s.name).toBe('llm:m1');
    const w = new SimulatedWindow('narrative', { budgetTokens: 300, tokenizer, summarizer: s });
    for (let i = 0; i < 12; i++) await w.append([{ label: `e${i}`, event: { kind: 'assistant', content: `step ${i} `.repeat(20) } }]);
    expect(w.compactions).toBeGreaterThan(0);
    expect(requests.length).toBe(w.compactions);
    expect(w.text()).toContain('[summary] The agent found that commit a7f3b2c broke the build');
  });

  it('falls back to the extractive simulation without ENGRAM_LLM_URL', () => {
    expect(summarizerFromEnv(tokenizer, {})).toMatchObject({ name: 'extractive', isSimulation: true });
  });

  it('reports a failing endpoint as PROVIDER_ERROR', async () => {
    status = 503;
    const s = createLlmSummarizer({ baseUrl, model: 'm', tokenizer });
    const err = await s.summarize({ items: ['x'], budgetTokens: 10, depth: 0 }).catch((e: unknown) => e);
    expect(isEngramError(err, 'PROVIDER_ERROR')).toBe(true);
    expect((err as { data: { retryable: boolean } }).data.retryable).toBe(true);
  });
});
