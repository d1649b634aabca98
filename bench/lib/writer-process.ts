/**
 * One concurrent writer for the multi-writer benchmark: its own process and connection, appending a
 * trace to its own sessions in batches. Prints `{ events, ms }` as JSON when done.
 *
 *   node --import tsx bench/lib/writer-process.ts '<store location JSON>' <writer index> <events> <batch>
 */
import { performance } from 'node:perf_hooks';
import { openEngram } from '../../src/engine.js';
import { agentTrace } from './agent-trace.js';

const [locationJson, indexArg, eventsArg, batchArg] = process.argv.slice(2);
const index = Number(indexArg);
const batch = Number(batchArg);
const mem = await openEngram(JSON.parse(locationJson!));
const trace = [...agentTrace(Number(eventsArg), { seed: 100 + index, sessions: 5 })];
const pending = new Map<string, Array<(typeof trace)[number]['event']>>();
// Start together: the parent releases all writers at once through stdin.
await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));
const start = performance.now();
for (const t of trace) {
  const session = `w${index}-${t.sessionId}`;
  const list = pending.get(session) ?? [];
  list.push(t.event);
  pending.set(session, list);
  if (list.length >= batch) {
    await mem.append(session, list);
    pending.set(session, []);
  }
}
for (const [session, list] of pending) if (list.length > 0) await mem.append(session, list);
const ms = performance.now() - start;
await mem.close();
process.stdout.write(`${JSON.stringify({ events: trace.length, ms })}\n`);
