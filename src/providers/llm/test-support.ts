/**
 * A local HTTP server on loopback that speaks OpenAI Chat Completions and the Anthropic Messages API with
 * scripted replies: the LLM cannot run here, so tests talk to a server that answers as the real protocols do,
 * malformed, slow and failing answers included. Test-only (ESLint lets only tests import test-support files).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One scripted answer. `text` is wrapped in the protocol's success body; `raw` is sent as the body verbatim. */
export interface ScriptedReply {
  status?: number;
  text?: string;
  raw?: string;
  headers?: Record<string, string>;
  /** Wait before answering; a value past the client's timeout makes it time out. */
  delayMs?: number;
  usage?: { inputTokens: number; outputTokens: number };
  /** `stop` (default) or `length`. */
  finish?: 'stop' | 'length';
}

export interface RecordedRequest {
  path: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
}

export interface ScriptedLlmServer {
  /** Root for clients: `http://127.0.0.1:<port>/v1`. */
  readonly baseUrl: string;
  readonly requests: RecordedRequest[];
  /** Replies used in order; when it is empty, `fallback` answers. */
  readonly script: ScriptedReply[];
  /** Answers requests the script does not cover; default: a 500. */
  fallback: (request: RecordedRequest) => ScriptedReply;
  /** Rejects every request whose key differs (401 with the protocol's error body). Unset: any key. */
  requiredKey?: string;
  close(): Promise<void>;
}

export async function startScriptedLlmServer(): Promise<ScriptedLlmServer> {
  const state: Omit<ScriptedLlmServer, 'baseUrl' | 'close'> = {
    requests: [],
    script: [],
    fallback: () => ({ status: 500, raw: JSON.stringify({ error: { message: 'script exhausted' } }) }),
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString()));
    req.on('end', () => {
      const request: RecordedRequest = { path: req.url ?? '', headers: req.headers, body: JSON.parse(raw || '{}') as Record<string, unknown> };
      state.requests.push(request);
      const isAnthropic = request.path.endsWith('/messages');
      const key = isAnthropic ? req.headers['x-api-key'] : req.headers.authorization?.replace(/^Bearer /, '');
      if (state.requiredKey !== undefined && key !== state.requiredKey) {
        const body = isAnthropic
          ? { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } }
          : { error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } };
        res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify(body));
        return;
      }
      const reply = state.script.shift() ?? state.fallback(request);
      const send = (): void => {
        if (res.destroyed) return;
        const body = reply.raw ?? JSON.stringify(isAnthropic ? anthropicBody(request, reply) : openAiBody(request, reply));
        res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers }).end(body);
      };
      if (reply.delayMs) setTimeout(send, reply.delayMs).unref();
      else send();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return Object.assign(state, {
    baseUrl,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  });
}

function usageOf(reply: ScriptedReply): { inputTokens: number; outputTokens: number } {
  return reply.usage ?? { inputTokens: 10, outputTokens: Math.max(1, Math.ceil((reply.text ?? '').length / 4)) };
}

function openAiBody(request: RecordedRequest, reply: ScriptedReply): unknown {
  const usage = usageOf(reply);
  return {
    id: 'chatcmpl-test',
    object: 'chat.completion',
    model: request.body.model,
    choices: [{ index: 0, message: { role: 'assistant', content: reply.text ?? '' }, finish_reason: reply.finish ?? 'stop' }],
    usage: { prompt_tokens: usage.inputTokens, completion_tokens: usage.outputTokens, total_tokens: usage.inputTokens + usage.outputTokens },
  };
}

function anthropicBody(request: RecordedRequest, reply: ScriptedReply): unknown {
  const usage = usageOf(reply);
  return {
    id: 'msg_test',
    type: 'message',
    role: 'assistant',
    model: request.body.model,
    content: [{ type: 'text', text: reply.text ?? '' }],
    stop_reason: reply.finish === 'length' ? 'max_tokens' : 'end_turn',
    usage: { input_tokens: usage.inputTokens, output_tokens: usage.outputTokens },
  };
}
