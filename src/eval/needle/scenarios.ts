/**
 * The seed-phase episodes: for each needle type two scenarios of a coding agent's work that produce the
 * needle (a bisect, a release tag, a crash, a log search, a failing job, a slow cache, flag tuning, a load
 * test, a technology and a design decision), with look-alike values inside the episode itself, and three
 * probe templates each. The templates were written before any result was seen and are not tuned to them:
 * they ask the way an agent returning to the task would, and never quote the value.
 */
import type { EventInput } from '../../model/event.js';
import type { NeedleType } from './needle-types.js';
import type { Prng } from '../../util/prng.js';
import {
  AUTHORS, CHOICES, DESIGN_CHOICES, ERROR_CODES, FILES, JOBS, NOUNS, PORTS, PROPS, REASONS,
  commitSubject, ipAddress,
} from './vocabulary.js';

/** An event of an episode before the generator gives it a time and a key. */
export type DraftEvent = Omit<EventInput, 'ts' | 'key'>;

export interface EpisodeDraft {
  value: string;
  subject: string;
  /** Turns of the episode, each one or more events (a tool call and its result share a turn). */
  turns: DraftEvent[][];
  /** Probe questions, one per template; the generator picks one. */
  questions: string[];
}

export interface ScenarioContext {
  rng: Prng;
  component: string;
  /** Draws a value with `make` until it is not used by another needle of the trace. */
  fresh: (make: () => string) => string;
  /** Whether another needle of the trace already has this value. */
  isTaken: (value: string) => boolean;
  /** A tool call id unique in the trace. */
  callId: () => string;
}

type Scenario = (ctx: ScenarioContext) => EpisodeDraft;

function call(ctx: ScenarioContext, tool: string, input: Record<string, unknown>, result: string): DraftEvent[] {
  const id = ctx.callId();
  return [
    { kind: 'tool_call', toolName: tool, toolCallId: id, content: JSON.stringify(input) },
    { kind: 'tool_result', toolName: tool, toolCallId: id, content: result },
  ];
}
const user = (content: string): DraftEvent[] => [{ kind: 'user', content }];
const assistant = (content: string): DraftEvent[] => [{ kind: 'assistant', content }];

const bisect: Scenario = (ctx) => {
  const { rng, component: c, fresh } = ctx;
  const bad = fresh(() => rng.hex(12));
  const others = [rng.hex(12), rng.hex(12), `${bad.slice(0, 7)}${rng.hex(5)}`];
  const subject = commitSubject(rng, c);
  const author = rng.pick(AUTHORS);
  const log = [
    'Bisecting: 6 revisions left to test after this (roughly 3 steps)',
    `[${others[0]}] ${commitSubject(rng, c)}`,
    `running npm run build -w ${c}`,
    'build ok',
    'Bisecting: 2 revisions left to test after this (roughly 1 step)',
    `[${others[1]}] ${commitSubject(rng, c)}`,
    `running npm run build -w ${c}`,
    'build ok',
    `Bisecting: 0 revisions left to test after this (roughly 0 steps)`,
    `[${others[2]}] ${commitSubject(rng, c)}`,
    `running npm run build -w ${c}`,
    `src/${c}/${rng.pick(FILES)}.ts(${rng.int(10, 300)},${rng.int(1, 40)}): error TS2345: Argument of type 'string' is not assignable to parameter of type 'number'.`,
    `${bad} is the first bad commit`,
    `Author: ${author}`,
    `    ${subject}`,
    'bisect found first bad commit',
  ].join('\n');
  return {
    value: bad,
    subject: `${c} build`,
    turns: [
      user(`The ${c} build has been red since this morning. Can you bisect and find the commit that broke it?`),
      call(ctx, 'Bash', { command: `git bisect start HEAD ${c}-last-green && git bisect run npm run build -w ${c}` }, log),
      assistant(`The bisect blames ${bad} (${subject}, by ${author}): that commit broke the ${c} build. I'll read its diff next.`),
      call(ctx, 'Bash', { command: `git show --stat ${bad}` }, `${bad} ${subject}\n package.json | 4 ++--\n pnpm-lock.yaml | 112 +++++++++++-----------\n 2 files changed, 60 insertions(+), 56 deletions(-)`),
    ],
    questions: [
      `Which commit did the bisect blame for the broken ${c} build?`,
      `What was the hash of the change that broke the ${c} build this morning?`,
      `Remind me which commit turned the ${c} build red.`,
    ],
  };
};

const releaseTag: Scenario = (ctx) => {
  const { rng, component: c, fresh } = ctx;
  const head = fresh(() => rng.hex(12));
  const version = `${rng.int(1, 4)}.${rng.int(0, 19)}.${rng.int(0, 9)}`;
  const log = [
    `${head} (HEAD -> main, tag: ${c}-v${version}) release(${c}): ${version}`,
    `${rng.hex(12)} ${commitSubject(rng, c)}`,
    `${`${head.slice(0, 6)}${rng.hex(6)}`} ${commitSubject(rng, c)}`,
    `${rng.hex(12)} ${commitSubject(rng, c)}`,
  ].join('\n');
  return {
    value: head,
    subject: `${c} ${version} release tag`,
    turns: [
      user(`Tag the ${c} release ${version} and tell me which commit the tag points to.`),
      call(ctx, 'Bash', { command: `git tag -a ${c}-v${version} -m "${c} ${version}" && git log --oneline --decorate --abbrev=12 -4` }, log),
      assistant(`Tagged ${c}-v${version}; the tag points at commit ${head}, the release commit on main.`),
    ],
    questions: [
      `Which commit does the ${c} ${version} release tag point to?`,
      `What hash did we tag as the ${c} ${version} release?`,
      `I need the commit behind the ${c} v${version} tag again.`,
    ],
  };
};

const crashSite: Scenario = (ctx) => {
  const { rng, component: c, fresh } = ctx;
  const prop = rng.pick(PROPS);
  const noun = rng.pick(NOUNS);
  const file = rng.pick(FILES);
  const value = fresh(() => `src/${c}/${file}.ts:${rng.int(20, 480)}`);
  const caller = `src/${c}/${rng.pick(FILES.filter((f) => f !== file))}.ts:${rng.int(20, 480)}`;
  const fn = `${noun}${rng.pick(['Handler', 'Mapper', 'Step', 'Job'])}`;
  const trace = [
    `${new Date(Date.UTC(2026, 2, 4, 9, rng.int(0, 59))).toISOString()} ERROR ${c}-worker unhandled rejection`,
    `TypeError: Cannot read properties of undefined (reading '${prop}')`,
    `    at ${fn} (${value}:${rng.int(5, 40)})`,
    `    at process${noun[0]!.toUpperCase()}${noun.slice(1)} (${caller}:${rng.int(5, 40)})`,
    `    at src/${c}/queue.ts:${rng.int(20, 300)}:${rng.int(5, 40)}`,
    '    at processTicksAndRejections (node:internal/process/task_queues:95:5)',
  ].join('\n');
  return {
    value,
    subject: `${c} worker crash`,
    turns: [
      user(`The ${c} workers keep crashing on some ${noun} requests. Find where it blows up.`),
      call(ctx, 'Bash', { command: `kubectl logs deploy/${c}-worker --since=1h | grep -A6 TypeError | tail -20` }, trace),
      assistant(`The crash is at ${value}: ${fn} reads ${prop} from an undefined ${noun}. Its caller passes the ${noun} through without a check.`),
    ],
    questions: [
      `Where exactly did the ${c} worker crash? I need the file and line.`,
      `Which line was the ${prop} TypeError in the ${c} workers coming from?`,
      `Point me back to the code location that crashes the ${c} workers.`,
    ],
  };
};

const logLocation: Scenario = (ctx) => {
  const { rng, component: c, fresh } = ctx;
  const log = `/var/log/nginx/${c}-error.log`;
  const first = rng.int(900, 6000);
  const value = fresh(() => `${log}:${first}`);
  const upstream = `${ipAddress(rng)}:8080`;
  const lines = [first, first + rng.int(3, 40), first + rng.int(41, 300), first + rng.int(301, 900)].map(
    (n, i) =>
      `${log}:${n}:2026/03/04 10:${String(12 + i * 3).padStart(2, '0')}:07 [error] 311#311: *${rng.int(1000, 99999)} upstream timed out (110: Connection timed out) while reading response header from upstream, upstream: "http://${upstream}/api/${c}"`,
  );
  return {
    value,
    subject: `first ${c} upstream timeout`,
    turns: [
      user(`Nginx in front of ${c} returns 502s since the deploy. Find the first upstream error in the logs.`),
      call(ctx, 'Bash', { command: `grep -Hn 'upstream timed out' ${log} | head -4` }, lines.join('\n')),
      assistant(`The first upstream timeout is at ${value}, two minutes after the deploy finished; the later ones follow every few seconds.`),
    ],
    questions: [
      `Where in the nginx error log did the first ${c} upstream timeout show up?`,
      `Which log file and line had the first 502 timeout for ${c}?`,
      `Give me the location of the first upstream timeout for ${c} again.`,
    ],
  };
};

const refusedConnection: Scenario = (ctx) => {
  const { rng, component: c, fresh } = ctx;
  const job = rng.pick(JOBS);
  const port = rng.pick(PORTS);
  const ip = ipAddress(rng);
  const value = fresh(() => `ECONNREFUSED ${ip}:${port}`);
  const replica = `${ipAddress(rng)}:${port}`;
  const out = [
    `> ${c}@1.${rng.int(0, 9)}.${rng.int(0, 9)} ${job}`,
    `> node dist/${job}.js`,
    `[${job}] connecting to primary at ${ip}:${port}`,
    `Error: connect ${value}`,
    '    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16)',
    `[${job}] replica ${replica} reachable, refusing to write to a replica`,
    `[${job}] giving up after 3 attempts`,
  ].join('\n');
  return {
    value,
    subject: `${c} ${job} job connection failure`,
    turns: [
      user(`The ${c} ${job} job fails right after it starts. What is it failing on?`),
      call(ctx, 'Bash', { command: `npm run ${job} -w ${c} 2>&1 | tail -20` }, out),
      assistant(`The ${job} job cannot reach the primary database: ${value}. The replica at ${replica} answers, so the primary is down or firewalled.`),
    ],
    questions: [
      `What exact error did the ${c} ${job} job hit when connecting to the primary database?`,
      `Which connection error, code and address, stopped the ${c} ${job} job?`,
      `Remind me what the ${c} ${job} job failed with on startup.`,
    ],
  };
};

const cacheTimeout: Scenario = (ctx) => {
  const { rng, component: c, fresh } = ctx;
  const code = rng.pick(ERROR_CODES.filter((e) => e !== 'ECONNREFUSED'));
  const ip = ipAddress(rng);
  const port = rng.pick(PORTS);
  const value = fresh(() => `${code} ${ip}:${port}`);
  const pid = rng.int(1000, 9999);
  const out = [
    `Mar 04 11:02:13 ${c}-7f9c ${c}[${pid}]: WARN slow query orders_by_tenant took ${rng.int(900, 2400)}ms`,
    `Mar 04 11:02:44 ${c}-7f9c ${c}[${pid}]: ERROR cache client error: ${value} after 30000ms`,
    `Mar 04 11:03:15 ${c}-7f9c ${c}[${pid}]: WARN retry budget at ${rng.int(40, 90)}%`,
    `Mar 04 11:04:02 ${c}-7f9c ${c}[${pid}]: ERROR cache client error: ${value} after 30000ms`,
  ].join('\n');
  return {
    value,
    subject: `${c} cache client timeouts`,
    turns: [
      user(`Requests to ${c} sometimes hang for 30 seconds. Check the service logs.`),
      call(ctx, 'Bash', { command: `journalctl -u ${c} --since '-2h' | grep -iE 'error|warn' | tail -15` }, out),
      assistant(`The hangs line up with cache errors: ${value} from the ${c} cache client, each after 30 s.`),
    ],
    questions: [
      `What error explained the 30-second hangs in ${c}?`,
      `Which error and address did the ${c} cache client log when requests hung?`,
      `What did the ${c} logs show as the cause of the hanging requests?`,
    ],
  };
};

const FLAG_PAIRS = [
  ['max-retries', 'timeout', (r: Prng) => String(r.int(2, 12)), (r: Prng) => `${r.int(5, 60) * 100}ms`],
  ['batch-size', 'concurrency', (r: Prng) => String(r.int(5, 80) * 10), (r: Prng) => String(r.int(2, 32))],
  ['backoff', 'jitter', (r: Prng) => `${r.int(2, 40) * 50}ms`, (r: Prng) => `${r.int(1, 9) * 10}ms`],
] as const;

function flags(rng: Prng, pair: (typeof FLAG_PAIRS)[number]): string {
  return `--${pair[0]}=${pair[2](rng)} --${pair[1]}=${pair[3](rng)}`;
}

const retryFlags: Scenario = (ctx) => {
  const { rng, component: c, fresh } = ctx;
  const job = rng.pick(JOBS);
  const pair = rng.pick(FLAG_PAIRS);
  const value = fresh(() => flags(rng, pair));
  const failed = flags(rng, pair);
  return {
    value,
    subject: `${c} ${job} job flags`,
    turns: [
      user(`The ${c} ${job} job is flaky against the staging API. Tune its settings until it passes three runs in a row.`),
      call(ctx, 'Bash', { command: `./bin/${job} --env staging ${failed}` }, `run 1: ${rng.int(100, 900)} records in ${rng.int(10, 40)}.${rng.int(0, 9)}s\nrun 2: failed after ${rng.int(2, 9)} retries (HTTP 503)`),
      call(ctx, 'Bash', { command: `for i in 1 2 3; do ./bin/${job} --env staging ${value} || break; done` }, [1, 2, 3].map((i) => `run ${i}: ${rng.int(100, 900)} records in ${rng.int(10, 40)}.${rng.int(0, 9)}s (${rng.int(0, 3)} retries)`).join('\n') + '\nall runs passed'),
      assistant(`Three clean runs with ${value}; the first settings failed on run 2. I'll keep these flags for the ${c} ${job} job.`),
    ],
    questions: [
      `Which flags did we settle on for the ${c} ${job} job?`,
      `What settings made the ${c} ${job} runs pass against staging?`,
      `Remind me of the parameters we ended up using for ${job} in ${c}.`,
    ],
  };
};

const poolTuning: Scenario = (ctx) => {
  const { rng, component: c, fresh } = ctx;
  const make = (): string => `--pool-size=${rng.int(4, 64)} --idle-timeout=${rng.int(5, 120)}s`;
  const value = fresh(make);
  const tried = [make(), make()];
  const best = rng.int(120, 260);
  const table = [
    'flags                                   p50     p95     errors',
    `${tried[0]!.padEnd(40)}${rng.int(60, 110)}ms   ${best + rng.int(80, 300)}ms   ${rng.int(0, 40)}`,
    `${value.padEnd(40)}${rng.int(50, 90)}ms   ${best}ms   0`,
    `${tried[1]!.padEnd(40)}${rng.int(60, 110)}ms   ${best + rng.int(40, 200)}ms   ${rng.int(0, 12)}`,
  ].join('\n');
  return {
    value,
    subject: `${c} API pool settings`,
    turns: [
      user(`Latency of the ${c} API spikes under load. Try a few connection pool settings with the load test.`),
      call(ctx, 'Bash', { command: `for f in "${tried[0]}" "${value}" "${tried[1]}"; do k6 run load/${c}.js -e FLAGS="$f" --quiet; done | summarize-k6` }, table),
      assistant(`Best p95 (${best}ms, no errors) comes from ${value}; I'll set that as the ${c} API pool configuration.`),
    ],
    questions: [
      `Which pool settings gave the ${c} API the best p95 in the load test?`,
      `What were the winning connection pool flags for the ${c} API?`,
      `Remind me which pool configuration we picked for ${c} after load testing.`,
    ],
  };
};

const technologyChoice: Scenario = (ctx) => {
  const { rng, component: c, fresh } = ctx;
  const [chosen, rejected, thing] = rng.pick(CHOICES);
  const value = fresh(() => {
    const [a, b] = rng.shuffle(REASONS);
    return `${a} and ${b}`;
  });
  const [p1, p2] = rng.shuffle(REASONS.filter((r) => !value.includes(r)));
  return {
    value,
    subject: `${chosen} over ${rejected} for the ${c} ${thing}`,
    turns: [
      user(`For the ${c} ${thing}, should we use ${chosen} or ${rejected}? Pick one and note why.`),
      assistant(`Comparing ${chosen} and ${rejected} for the ${c} ${thing}: ${rejected} offers ${p1}, ${chosen} offers ${p2}; both are supported by our platform team.`),
      [{ kind: 'decision', content: `Use ${chosen} over ${rejected} for the ${c} ${thing} because of ${value}.` }],
      assistant(`Decided: ${chosen} for the ${c} ${thing}. I'll write the migration plan next.`),
    ],
    questions: [
      `Why did we go with ${chosen} instead of ${rejected} for the ${c} ${thing}?`,
      `What was the reasoning for picking ${chosen} for the ${c} ${thing}?`,
      `Remind me why ${rejected} lost out for the ${c} ${thing}.`,
    ],
  };
};

const designChoice: Scenario = (ctx) => {
  const { rng, component: c, fresh } = ctx;
  const open = DESIGN_CHOICES.filter(([, , reason]) => !ctx.isTaken(reason));
  // Six design decisions: past them (more than six rationale needles in a trace) choose technologies instead.
  if (open.length === 0) return technologyChoice(ctx);
  const [kept, lost, reason] = rng.pick(open);
  const value = fresh(() => reason);
  return {
    value,
    subject: `${kept} instead of ${lost} in ${c}`,
    turns: [
      user(`Should ${c} switch from ${kept} to ${lost}? It would simplify the code a lot.`),
      call(ctx, 'Bash', { command: `git log --oneline --grep='${lost}' -5 -- src/${c}` }, `${rng.hex(12)} revert(${c}): back to ${kept}\n${rng.hex(12)} feat(${c}): try ${lost}`),
      [{ kind: 'decision', content: `Keep ${kept} instead of ${lost} in ${c} because ${value}.` }],
      assistant(`We stay with ${kept} in ${c}; I noted the reason in the decision log.`),
    ],
    questions: [
      `Why are we keeping ${kept} rather than moving ${c} to ${lost}?`,
      `What was the reason ${c} stays on ${kept}?`,
      `Remind me why we rejected ${lost} for ${c}.`,
    ],
  };
};

/** Two scenarios per needle type. */
export const SCENARIOS: Record<NeedleType, readonly Scenario[]> = {
  hash: [bisect, releaseTag],
  path: [crashSite, logLocation],
  error: [refusedConnection, cacheTimeout],
  parameter: [retryFlags, poolTuning],
  rationale: [technologyChoice, designChoice],
};
