/**
 * The example agent from the command line (see README.md beside this file):
 *
 *   ENGRAM_LLM_URL=http://localhost:11434/v1 ENGRAM_LLM_MODEL=qwen2.5:7b npx tsx examples/agent/run.ts "task..." ["next message"...]
 *   ... run.ts --planner "task..."      a planner delegating to two executors through the Engram Bus
 *   ... run.ts --print-pack "task..."   also print every pack sent to the model
 */
import { parseArgs } from 'node:util';
import { openEngram, isEngramError, DEFAULT_DB_PATH } from '../../src/index.js';
import { AGENT_IDENTITY, runTurn, type PackSent } from './agent.js';
import { chatModelFromEnv } from './chat-model.js';
import { runTeam } from './team.js';

const USAGE = `usage: npx tsx examples/agent/run.ts [options] "message" ["next message" ...]
  --db PATH        the Engram store (default ${DEFAULT_DB_PATH}; $ENGRAM_DB)
  --session ID     the agent's session (default example-agent); each message is one turn
  --window N       the model's context window in tokens (default 8000; try 1500 to watch compaction)
  --planner        a planner delegating the task to two executors through the Engram Bus
  --run ID         the planner run's name (default run-<time>); its sessions are <run>.planner, <run>.executor-N
  --print-pack     print every pack (Chat Completions messages) before it is sent
  --max-steps N    model calls per turn (default 8)
environment: ENGRAM_LLM_URL (required), ENGRAM_LLM_MODEL (default gpt-4o-mini), ENGRAM_LLM_API_KEY`;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      db: { type: 'string' },
      session: { type: 'string', default: 'example-agent' },
      window: { type: 'string', default: '8000' },
      planner: { type: 'boolean', default: false },
      run: { type: 'string' },
      'print-pack': { type: 'boolean', default: false },
      'max-steps': { type: 'string', default: '8' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help || positionals.length === 0) {
    process.stdout.write(`${USAGE}\n`);
    return values.help ? 0 : 2;
  }
  const windowTokens = positiveInteger(values.window, 'window');
  const maxSteps = positiveInteger(values['max-steps'], 'max-steps');
  const model = chatModelFromEnv();
  const mem = await openEngram({ db: values.db ?? process.env.ENGRAM_DB ?? DEFAULT_DB_PATH });
  const onPack = (sent: PackSent): void => {
    const c = sent.pack.compaction;
    if (c) process.stderr.write(`[engram] ${sent.sessionId}: compacted ${c.evicted.length} events into markers (${c.tokensBefore} -> ${c.tokensAfter} tokens); they stay in the store\n`);
    if (values['print-pack']) {
      process.stdout.write(`--- pack for ${sent.sessionId}, model call ${sent.step} (${sent.pack.pack.totalTokens} of ${sent.pack.pack.windowTokens} tokens) ---\n`);
      process.stdout.write(`${JSON.stringify(sent.messages, null, 2)}\n`);
    }
  };
  try {
    if (values.planner) {
      const runId = values.run ?? `run-${new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14)}`;
      const result = await runTeam({ mem, model, runId, windowTokens, maxSteps, onPack }, positionals.join(' '));
      for (const r of result.reports) process.stdout.write(`[${r.executor}] ${r.report.claim}\n  (${r.pointer.ref}, content_digest ${r.contentDigest.slice(0, 16)}...)\n`);
      process.stdout.write(`\n${result.answer}\n`);
      process.stderr.write(`[engram] sessions: ${[result.sessions.planner, ...result.sessions.executors].join(', ')}\n`);
      return 0;
    }
    for (const message of positionals) {
      const turn = await runTurn({ mem, model, sessionId: values.session, windowTokens, maxSteps, identity: AGENT_IDENTITY, onPack }, message);
      process.stdout.write(`${turn.reply}\n`);
    }
    return 0;
  } finally {
    await mem.close();
  }
}

function positiveInteger(value: string, field: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw Object.assign(new Error(`--${field}: expected a positive integer, got "${value}"`), { exitCode: 2 });
  return n;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    if (isEngramError(err)) process.stderr.write(`${err.code}: ${err.message}\n`);
    else process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = isEngramError(err) && err.code === 'INVALID_INPUT' ? 2 : ((err as { exitCode?: number }).exitCode ?? 1);
  },
);
