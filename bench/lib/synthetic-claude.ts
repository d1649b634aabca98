/**
 * Synthetic Claude Code sessions (SYNTHETIC: made-up coding work) to fill a store to a size for hook latency:
 * each exchange is a prompt, an assistant reply with a Bash or Edit call, and the tool result, four events
 * (one per content block, as the importer stores them).
 */
import { deterministicUuid } from './locomo-transcripts.js';
import { Prng } from './prng.js';

const MODULES = ['auth', 'billing', 'search', 'ledger', 'export', 'sync', 'render', 'cache', 'queue', 'mailer'];
const VERBS = ['fix', 'refactor', 'speed up', 'test', 'document', 'rename the options of', 'add retries to', 'log errors in'];
const ERRORS = ['TypeError: cannot read properties of undefined', 'AssertionError: expected 200 to equal 404', 'ECONNREFUSED 127.0.0.1:5432', 'SyntaxError: unexpected token'];

/** Events one exchange stores. */
export const EVENTS_PER_EXCHANGE = 4;

/** A session of `exchanges` exchanges in `cwd`, its records timestamped from `startMs`. */
export function syntheticSession(options: { seed: number; sessionId: string; cwd: string; exchanges: number; startMs: number }): Array<Record<string, unknown>> {
  const prng = new Prng(options.seed);
  const pick = <T>(list: T[]): T => list[Math.floor(prng.next() * list.length)]!;
  const records: Array<Record<string, unknown>> = [];
  let parentUuid: string | null = null;
  let ms = options.startMs;
  const push = (type: 'user' | 'assistant', content: unknown): void => {
    const uuid = deterministicUuid(`synthetic:${options.sessionId}:${records.length}`);
    ms += 1000 + Math.floor(prng.next() * 20_000);
    records.push({
      parentUuid,
      isSidechain: false,
      userType: 'external',
      cwd: options.cwd,
      sessionId: options.sessionId,
      version: '1.0.98',
      type,
      uuid,
      timestamp: new Date(ms).toISOString(),
      message: type === 'user' ? { role: 'user', content } : { id: `msg_${uuid.slice(0, 8)}`, type: 'message', role: 'assistant', model: 'synthetic', content, stop_reason: 'end_turn', usage: { input_tokens: 0, output_tokens: 0 } },
    });
    parentUuid = uuid;
  };
  for (let i = 0; i < options.exchanges; i++) {
    const mod = pick(MODULES);
    const file = `src/${mod}/${pick(['index', 'client', 'store', 'handler'])}-${Math.floor(prng.next() * 50)}.ts`;
    push('user', `${pick(VERBS)} the ${mod} module, ${file} (ticket ${mod.toUpperCase()}-${Math.floor(prng.next() * 9000) + 1000})`);
    const toolId = `toolu_${deterministicUuid(`${options.sessionId}:tool:${i}`).replace(/-/g, '').slice(0, 24)}`;
    const isEdit = prng.next() < 0.5;
    push('assistant', [
      { type: 'text', text: `Looking at ${file}; the ${mod} code path ${pick(['needs a guard', 'misses a retry', 'has a stale cache', 'logs too little'])}.` },
      isEdit
        ? { type: 'tool_use', id: toolId, name: 'Edit', input: { file_path: `${options.cwd}/${file}`, old_string: `const ${mod}Limit = ${i};`, new_string: `const ${mod}Limit = ${i + 1};` } }
        : { type: 'tool_use', id: toolId, name: 'Bash', input: { command: `npx vitest run test/${mod}.test.ts`, description: `run the ${mod} tests` } },
    ]);
    const failed = !isEdit && prng.next() < 0.3;
    push('user', [{ type: 'tool_result', tool_use_id: toolId, content: failed ? `${pick(ERRORS)}\n    at ${file}:${Math.floor(prng.next() * 300)}` : isEdit ? `The file ${file} has been updated.` : `Test Files 1 passed (1)\nTests ${Math.floor(prng.next() * 40) + 1} passed`, is_error: failed }]);
  }
  return records;
}
