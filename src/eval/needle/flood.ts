/**
 * The flood phase (ENGRAM §10.1): the tool output a coding agent produces while it works on other things
 * (build logs, JSON API responses, file listings, test runs, stack traces, git logs, process listings)
 * plus its short remarks. About half of the outputs carry a look-alike of a needle: a near miss
 * (near-miss.ts), often beside the needle's own component name so that words alone cannot tell them apart,
 * and unrelated values of the same shapes. No flood turn contains a needle's exact value.
 */
import type { NeedleType } from './needle-types.js';
import type { Prng } from '../../util/prng.js';
import type { DraftEvent } from './scenarios.js';
import { nearMiss } from './near-miss.js';
import {
  COMPONENTS, DESIGN_CHOICES, ERROR_CODES, FILES, JOBS, PORTS, REASONS, CHOICES,
  commitSubject, ipAddress, sourcePath,
} from './vocabulary.js';

/** What the flood knows of the trace's needles: enough to plant near misses and to avoid the values. */
export interface FloodNeedle {
  type: NeedleType;
  value: string;
  component: string;
}

export interface FloodOptions {
  /** Share of tool outputs that are large (150-400 lines, stored as artifacts by Engram). Default 0.08. */
  largeShare?: number;
  /** Share of tool outputs that carry a near miss of some needle. Default 0.5. */
  nearMissShare?: number;
}

const GENERIC_REASONS = [
  'the first run hit a cold cache', 'the lockfile changed upstream', 'the staging database was being restored',
  'the flaky test depends on wall-clock time', 'the container ran out of memory during the build',
  'the previous deploy left a stale config map', 'the fixture data predates the schema change',
];

/**
 * One flood step: a tool call with its result, sometimes preceded by a user request or followed by an
 * assistant remark. Regenerated (with the next draws) in the rare case it contains a needle value.
 */
export function floodTurns(rng: Prng, needles: readonly FloodNeedle[], callId: () => string, options: FloodOptions = {}): DraftEvent[][] {
  for (let attempt = 0; ; attempt++) {
    const turns = draftFlood(rng, needles, callId, options);
    const text = turns.flat().map((e) => e.content).join('\n');
    if (!needles.some((n) => text.includes(n.value))) return turns;
    if (attempt > 20) throw new Error('flood: could not draw a turn free of needle values');
  }
}

function draftFlood(rng: Prng, needles: readonly FloodNeedle[], callId: () => string, options: FloodOptions): DraftEvent[][] {
  const c = rng.pick(COMPONENTS);
  const large = rng.chance(options.largeShare ?? 0.08);
  const lines = large ? rng.int(150, 400) : rng.int(12, 45);
  const planted = rng.chance(options.nearMissShare ?? 0.5) && needles.length > 0 ? rng.pick(needles) : undefined;
  const miss = planted ? { type: planted.type, value: nearMiss(rng, planted.type, planted.value), component: planted.component } : undefined;
  const kind = rng.int(0, 6);
  const { command, output } = OUTPUTS[kind]!(rng, c, lines, miss);
  const id = callId();
  const turns: DraftEvent[][] = [];
  if (rng.chance(0.15)) turns.push([{ kind: 'user', content: userAsk(rng, c) }]);
  turns.push([
    { kind: 'tool_call', toolName: 'Bash', toolCallId: id, content: JSON.stringify({ command }) },
    { kind: 'tool_result', toolName: 'Bash', toolCallId: id, content: output },
  ]);
  if (rng.chance(0.35)) turns.push([{ kind: 'assistant', content: remark(rng, c, miss) }]);
  return turns;
}

type Miss = { type: NeedleType; value: string; component: string } | undefined;
type Output = (rng: Prng, c: string, lines: number, miss: Miss) => { command: string; output: string };

/** Inserts `line` at a random position of `out`. */
function plant(rng: Prng, out: string[], line: string): void {
  out.splice(rng.int(0, out.length), 0, line);
}

/** A line that carries a near miss in the way this kind of output would show it. */
function missLine(rng: Prng, miss: NonNullable<Miss>): string {
  const c = miss.component;
  switch (miss.type) {
    case 'hash':
      return rng.pick([`${miss.value} ${commitSubject(rng, c)}`, `[${miss.value}] build(${c}): rerun after cache purge`, `deployed ${c} at commit ${miss.value}`]);
    case 'path':
      return rng.pick([`WARN ${miss.value}:${rng.int(1, 40)} unused variable 'tmp' in ${c}`, `    at ${c}Step (${miss.value}:${rng.int(1, 40)})`, `${miss.value}: // TODO(${c}) handle missing tenant`]);
    case 'error':
      return rng.pick([`Error: connect ${miss.value} (${c} health check)`, `${c} client error: ${miss.value} after 30000ms`, `[${c}] retrying after ${miss.value}`]);
    case 'parameter':
      return rng.pick([`${c}  ${rng.int(1000, 9999)}  node dist/${rng.pick(JOBS)}.js ${miss.value}`, `# ${c}: previous settings ${miss.value}`, `args: ${miss.value}`]);
    case 'rationale':
      return `note(${c}): considered this earlier because ${miss.value}.`;
  }
}

function randomFlags(rng: Prng): string {
  return rng.pick([
    `--max-retries=${rng.int(1, 15)} --timeout=${rng.int(5, 90) * 100}ms`,
    `--batch-size=${rng.int(1, 99) * 10} --concurrency=${rng.int(1, 40)}`,
    `--pool-size=${rng.int(2, 80)} --idle-timeout=${rng.int(5, 200)}s`,
    `--backoff=${rng.int(1, 50) * 50}ms --jitter=${rng.int(1, 9) * 10}ms`,
  ]);
}

const OUTPUTS: Output[] = [
  // Build log.
  (rng, c, lines, miss) => {
    const out: string[] = [];
    for (let i = 0; i < lines; i++) {
      if (rng.chance(0.1)) out.push(`WARN ${sourcePath(rng, rng.pick(COMPONENTS))}:${rng.int(1, 480)}:${rng.int(1, 60)} 'result' is possibly 'undefined'`);
      else out.push(`[build] ${i + 1}/${lines} compiled ${sourcePath(rng, c)} in ${rng.int(2, 900)}ms`);
    }
    if (miss) plant(rng, out, missLine(rng, miss));
    out.push(rng.chance(0.8) ? `build finished in ${rng.int(3, 90)}.${rng.int(0, 9)}s` : `ERROR ${sourcePath(rng, c)}:${rng.int(1, 480)} TS2322: Type 'null' is not assignable to type 'string'.`);
    return { command: `npm run build -w ${c}`, output: out.join('\n') };
  },
  // JSON API response.
  (rng, c, lines, miss) => {
    const items = Array.from({ length: Math.max(2, Math.floor(lines / 7)) }, (_, i) => ({
      id: `${c.slice(0, 3)}_${rng.hex(10)}`,
      status: rng.pick(['ok', 'pending', 'failed', 'retrying']),
      endpoint: `${ipAddress(rng)}:${rng.pick(PORTS)}`,
      revision: rng.hex(12),
      updatedAt: new Date(Date.UTC(2026, 2, 4, rng.int(0, 23), rng.int(0, 59))).toISOString(),
      index: i,
    }));
    const body = JSON.stringify({ data: items, page: 1, total: items.length * rng.int(2, 9) }, null, 2).split('\n');
    if (miss) plant(rng, body, `  "_debug": ${JSON.stringify(missLine(rng, miss))},`);
    return { command: `curl -s localhost:${rng.pick(PORTS)}/api/${c}/status?limit=${items.length}`, output: body.join('\n') };
  },
  // File listing.
  (rng, c, lines, miss) => {
    const out = [`total ${lines * 8}`];
    for (let i = 0; i < lines; i++) {
      out.push(`-rw-r--r--  1 dev  staff  ${String(rng.int(200, 48000)).padStart(6)} Mar  4 ${rng.int(8, 18)}:${String(rng.int(0, 59)).padStart(2, '0')} src/${c}/${rng.pick(FILES)}${rng.chance(0.3) ? '.test' : ''}.ts`);
    }
    if (miss) plant(rng, out, missLine(rng, miss));
    return { command: `ls -la src/${c} && find src/${c} -name '*.ts' -newer package.json`, output: out.join('\n') };
  },
  // Test run.
  (rng, c, lines, miss) => {
    const out: string[] = [];
    for (let i = 0; i < lines; i++) out.push(`${rng.chance(0.9) ? ' ✓' : ' ✗'} src/${c}/${rng.pick(FILES)}.test.ts > ${rng.pick(FILES)} ${rng.pick(['handles retries', 'maps tenants', 'rejects bad input', 'paginates', 'times out'])} ${rng.int(2, 900)}ms`);
    if (rng.chance(0.5)) {
      out.push(` FAIL src/${c}/${rng.pick(FILES)}.test.ts`, `Error: connect ${rng.pick(ERROR_CODES)} ${ipAddress(rng)}:${rng.pick(PORTS)}`, ` ❯ ${sourcePath(rng, c)}:${rng.int(1, 480)}:${rng.int(1, 60)}`);
    }
    if (miss) plant(rng, out, missLine(rng, miss));
    out.push(` Tests  ${rng.int(0, 4)} failed | ${rng.int(20, 400)} passed`);
    return { command: `npx vitest run src/${c}`, output: out.join('\n') };
  },
  // Stack traces from a service log.
  (rng, c, lines, miss) => {
    const out: string[] = [];
    while (out.length < lines) {
      out.push(`${new Date(Date.UTC(2026, 2, 4, rng.int(0, 23), rng.int(0, 59))).toISOString()} ERROR ${c} ${rng.pick(ERROR_CODES)} ${ipAddress(rng)}:${rng.pick(PORTS)}`);
      for (let i = rng.int(2, 6); i > 0; i--) out.push(`    at ${rng.pick(FILES)}.${rng.pick(['run', 'next', 'handle'])} (${sourcePath(rng, rng.pick(COMPONENTS))}:${rng.int(1, 480)}:${rng.int(1, 60)})`);
    }
    if (miss) plant(rng, out, missLine(rng, miss));
    return { command: `kubectl logs deploy/${c} --since=30m | grep -A6 ERROR | tail -${lines}`, output: out.join('\n') };
  },
  // Git log.
  (rng, c, lines, miss) => {
    const out: string[] = [];
    for (let i = 0; i < lines; i++) out.push(`${rng.hex(12)} ${commitSubject(rng, rng.chance(0.5) ? c : rng.pick(COMPONENTS))}`);
    if (miss) plant(rng, out, missLine(rng, miss));
    return { command: `git log --oneline --abbrev=12 -${lines} -- src/${c}`, output: out.join('\n') };
  },
  // Process listing with flags.
  (rng, c, lines, miss) => {
    const out = ['USER       PID  %CPU  %MEM COMMAND'];
    for (let i = 0; i < Math.max(4, Math.floor(lines / 2)); i++) {
      out.push(`app      ${String(rng.int(100, 99999)).padStart(5)}  ${rng.int(0, 99)}.${rng.int(0, 9)}   ${rng.int(0, 30)}.${rng.int(0, 9)} node dist/${rng.pick(JOBS)}.js --env production ${randomFlags(rng)}`);
    }
    if (miss) plant(rng, out, missLine(rng, miss));
    return { command: `ps aux | grep -E 'dist/(${JOBS.join('|')})' | grep -v grep  # ${c}`, output: out.join('\n') };
  },
];

function userAsk(rng: Prng, c: string): string {
  return rng.pick([
    `Now run the ${c} tests again and tell me what fails.`,
    `Can you check the ${c} service status?`,
    `Look at the recent ${c} commits, something changed the build time.`,
    `Keep going with the ${c} cleanup.`,
  ]);
}

/** An assistant remark; a third of them explain a choice with "because", some about another component's decision. */
function remark(rng: Prng, c: string, miss: Miss): string {
  const r = rng.next();
  if (miss?.type === 'rationale' && r < 0.5) return `For ${miss.component} we looked at this before because ${miss.value}.`;
  if (r < 0.2) {
    const [chosen, rejected, thing] = rng.pick(CHOICES);
    const [a, b] = rng.shuffle(REASONS);
    return `Other teams use ${chosen} over ${rejected} for the ${c} ${thing} because of ${a} and ${b}; that does not change our plan.`;
  }
  if (r < 0.35) {
    const [kept, lost] = rng.pick(DESIGN_CHOICES);
    return `The ${c} service still uses ${kept}, not ${lost}, because ${rng.pick(GENERIC_REASONS)}.`;
  }
  return rng.pick([
    `I'll rerun the ${c} step because ${rng.pick(GENERIC_REASONS)}.`,
    `The ${c} output looks normal; moving on to the next check.`,
    `Nothing in the ${c} logs relates to the current task.`,
    `The ${c} tests pass locally; the failure seems environment-specific.`,
  ]);
}
