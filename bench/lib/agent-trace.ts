import type { EventInput } from '../../src/model/event.js';
import { Prng } from './prng.js';

/**
 * A synthetic coding-agent trace with realistic tool outputs: build logs, JSON API responses, file
 * listings, test runs, stack traces, grep output and dialogue. Events average about 120 words; about 4 %
 * of tool results are large enough to become artifacts. Deterministic for a seed.
 */
/** Function words: about a third of the tokens of English prose, as in real agent dialogue. */
const FUNCTION_WORDS = `the a to of and in is for that it on with as this be are was by at from or an not we can have will
  should if then so but all do does did has had you i our they them which when what there their would could been also just`
  .split(/\s+/)
  .filter(Boolean);
const DOMAIN_WORDS = `config service request response handler module function build test deploy cache queue worker retry
  timeout connection database migration schema index query user session token auth payment order invoice customer product
  inventory search release branch commit merge review pipeline container cluster node pod memory cpu latency throughput error
  warning debug refactor rename extract interface type generic promise async await stream buffer file path directory import
  export parser lexer compiler bundle chunk asset style layout render component state props hook effect reducer store action`
  .split(/\s+/)
  .filter(Boolean);
const SYLLABLES = 'ka lo mi ren tas vor pel dun sik ra ba tel mon fi gor nu xal pre cit dor lem sa vin tro'.split(' ');

/**
 * Content vocabulary with a Zipf(1.0) frequency: the domain words are the most frequent, followed by
 * 6,000 generated words. Real text has this long tail; a small uniform vocabulary would put every
 * word in a third of all events and make every query scan huge posting lists.
 */
const CONTENT_WORDS: string[] = (() => {
  const words = [...DOMAIN_WORDS];
  const seen = new Set(words);
  for (let i = 0; words.length < DOMAIN_WORDS.length + 6000; i++) {
    let n = i;
    let w = '';
    do {
      w += SYLLABLES[n % SYLLABLES.length];
      n = Math.floor(n / SYLLABLES.length);
    } while (n > 0);
    if (w.length >= 4 && !seen.has(w)) {
      seen.add(w);
      words.push(w);
    }
  }
  return words;
})();
const ZIPF_CDF: number[] = (() => {
  const weights = CONTENT_WORDS.map((_, r) => 1 / (r + 1));
  const total = weights.reduce((a, b) => a + b, 0);
  let acc = 0;
  return weights.map((w) => (acc += w / total));
})();

function contentWord(rng: Prng, minRank = 0): string {
  const u = rng.next();
  let lo = 0;
  let hi = ZIPF_CDF.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ZIPF_CDF[mid]! < u) lo = mid + 1;
    else hi = mid;
  }
  return CONTENT_WORDS[Math.max(lo, minRank)]!;
}

export const MODULES = ['api', 'db', 'auth', 'payments', 'search', 'orders', 'ui', 'worker', 'cache', 'billing', 'cli', 'core'];
const FILES = ['client', 'pool', 'router', 'handler', 'schema', 'index', 'utils', 'config', 'service', 'model', 'types', 'queue'];
export const ERRORS = ['ECONNREFUSED', 'ETIMEDOUT', 'ECONNRESET', 'ENOENT', 'EADDRINUSE', 'EACCES', 'TS2345', 'TS2322', 'E11000'];

export interface TraceEvent {
  sessionId: string;
  event: EventInput;
}

export interface TraceOptions {
  seed?: number;
  sessions?: number;
  /** Share of tool results that are large (artifacts). Default 0.04. */
  largeShare?: number;
}

export function* agentTrace(count: number, options: TraceOptions = {}): Generator<TraceEvent> {
  const rng = new Prng(options.seed ?? 42);
  const sessions = options.sessions ?? 20;
  const largeShare = options.largeShare ?? 0.04;
  const t0 = Date.parse('2026-01-01T00:00:00Z');
  for (let i = 0; i < count; i++) {
    const sessionId = `bench-${i % sessions}`;
    const ts = t0 + i * 1500;
    const r = rng.next();
    let event: EventInput;
    if (r < 0.15) event = { kind: 'user', content: sentence(rng, rng.int(40, 140)), ts };
    else if (r < 0.3) event = { kind: 'assistant', content: sentence(rng, rng.int(60, 180)), ts };
    else if (r < 0.55) {
      const tool = rng.pick(['Bash', 'Read', 'Grep', 'Edit']);
      event = { kind: 'tool_call', toolName: tool, toolCallId: `call_${i}`, content: toolCall(rng, tool), ts };
    } else if (r < 0.95) {
      const tool = rng.pick(['Bash', 'Read', 'Grep', 'Bash']);
      const large = rng.chance(largeShare);
      event = { kind: 'tool_result', toolName: tool, toolCallId: `call_${i - 1}`, content: toolResult(rng, large), ts };
    } else {
      event = { kind: rng.chance(0.5) ? 'decision' : 'note', content: sentence(rng, rng.int(30, 90)), ts };
    }
    yield { sessionId, event };
  }
}

/** A source path such as `src/auth/pool.ts`. */
export function path(rng: Prng): string {
  return `src/${rng.pick(MODULES)}/${rng.pick(FILES)}.ts`;
}

/** Prose of `words` words over the Zipfian vocabulary, with paths, hashes and error codes sprinkled in. */
export function sentence(rng: Prng, words: number): string {
  const out: string[] = [];
  for (let i = 0; i < words; i++) {
    const r = rng.next();
    if (r < 0.04) out.push(`${path(rng)}:${rng.int(1, 400)}`);
    else if (r < 0.06) out.push(rng.hex(7));
    else if (r < 0.07) out.push(rng.pick(ERRORS));
    else if (r < 0.4) out.push(rng.pick(FUNCTION_WORDS));
    else out.push(contentWord(rng));
  }
  return `${out.join(' ')}.`;
}

/** A tool call's JSON arguments for `Bash`, `Read`, `Grep` or `Edit`. */
export function toolCall(rng: Prng, tool: string): string {
  switch (tool) {
    case 'Bash':
      return JSON.stringify({ command: rng.pick(['npm test -- ', 'npm run build ', 'git log --oneline ', 'pytest -x ', 'curl -s localhost:8080/']) + path(rng) });
    case 'Read':
      return JSON.stringify({ file_path: path(rng) });
    case 'Grep':
      return JSON.stringify({ pattern: contentWord(rng), path: `src/${rng.pick(MODULES)}` });
    default:
      return JSON.stringify({ file_path: path(rng), old_string: sentence(rng, 12), new_string: sentence(rng, 14) });
  }
}

/** A tool's output: a build log, a JSON response, grep hits, a test run or a stack trace; `large` gives 150-600 lines. */
export function toolResult(rng: Prng, large: boolean): string {
  const lines = large ? rng.int(150, 600) : rng.int(8, 24);
  const kind = rng.int(0, 4);
  const out: string[] = [];
  if (kind === 0) {
    for (let i = 0; i < lines; i++) out.push(`[build] ${i + 1}/${lines} compiled ${path(rng)} in ${rng.int(2, 900)}ms`);
    if (rng.chance(0.3)) out.push(`ERROR in ${path(rng)}:${rng.int(1, 300)}:${rng.int(1, 80)} ${rng.pick(ERRORS)}: ${sentence(rng, 10)}`);
  } else if (kind === 1) {
    const items = Array.from({ length: Math.max(1, Math.floor(lines / 4)) }, (_, i) => ({
      id: `${rng.pick(['ord', 'usr', 'inv'])}_${rng.hex(10)}`,
      status: rng.pick(['paid', 'pending', 'failed', 'refunded']),
      amount: rng.int(100, 99999),
      note: sentence(rng, 6),
      index: i,
    }));
    out.push(JSON.stringify({ data: items, page: 1, total: items.length * 3 }, null, 2));
  } else if (kind === 2) {
    for (let i = 0; i < lines; i++) out.push(`${path(rng)}:${rng.int(1, 500)}:  ${sentence(rng, 8)}`);
  } else if (kind === 3) {
    for (let i = 0; i < lines; i++) out.push(`${rng.pick(['PASS', 'PASS', 'PASS', 'FAIL'])} tests/${rng.pick(MODULES)}/${rng.pick(FILES)}.test.ts (${rng.int(5, 900)} ms)`);
    out.push(`Tests: ${rng.int(0, 3)} failed, ${rng.int(20, 300)} passed`);
  } else {
    out.push(`Error: ${rng.pick(ERRORS)} ${sentence(rng, 6)}`);
    for (let i = 0; i < lines; i++) out.push(`    at ${rng.pick(FILES)}${rng.pick(['.handle', '.run', '.next', ''])} (${path(rng)}:${rng.int(1, 400)}:${rng.int(1, 60)})`);
  }
  return out.join('\n');
}

/** Queries an agent would send: identifiers that occur in the trace, and short natural-language ones. */
export function recallQueries(count: number, seed = 7): string[] {
  const rng = new Prng(seed);
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const r = rng.next();
    if (r < 0.25) out.push(`${rng.pick(ERRORS)} in ${rng.pick(MODULES)}`);
    else if (r < 0.45) out.push(`${path(rng)}:${rng.int(1, 400)}`);
    else out.push(`${rng.pick(['how did we fix the', 'what about', 'why the', 'find'])} ${Array.from({ length: rng.int(3, 5) }, () => contentWord(rng, 10)).join(' ')}`);
  }
  return out;
}

/**
 * Appends a trace as an agent's hooks do: each session's events in batches of `batch`, through `append` (an engine's
 * `mem.append`, or an earlier tree's). `onEvent` sees the running count (progress lines). Returns the events appended.
 */
export async function appendTraceInBatches(
  append: (sessionId: string, events: EventInput[]) => Promise<unknown>,
  trace: Iterable<TraceEvent>,
  batch: number,
  onEvent?: (n: number) => void,
): Promise<number> {
  const pending = new Map<string, EventInput[]>();
  let n = 0;
  for (const t of trace) {
    const list = pending.get(t.sessionId) ?? [];
    list.push(t.event);
    pending.set(t.sessionId, list);
    if (list.length >= batch) {
      await append(t.sessionId, list);
      pending.set(t.sessionId, []);
    }
    onEvent?.(++n);
  }
  for (const [s, list] of pending) if (list.length > 0) await append(s, list);
  return n;
}
