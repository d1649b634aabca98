import type { EventInput } from '../../src/model/event.js';
import type { TaskPhase, TaskState } from '../../src/model/task-state.js';
import type { ModifierFactor } from '../../src/memory/task-modifier.js';
import { sentence, toolCall, toolResult } from './agent-trace.js';
import { Prng } from './prng.js';

/**
 * A seeded multi-task agent history for the ablation of the task-conditioned modifier (ENGRAM §5.2, Annex
 * A.3), with probes: a question an agent would ask, the task card at that moment and the event that answers
 * it. The history has four tasks (one session each) whose events carry the metadata the factors read:
 * `taskId`, `premiseRef` (premises move on), `supersedes` (objectives revised), `constraint` tags, phases and
 * `mistake`/`lesson` tags. Around them is ordinary agent traffic (dialogue, tool calls, build logs, stack
 * traces), some of it mentioning the same components in passing.
 *
 * Every probe scenario sets up its answer among competitors on the same subject (the old objective, the other
 * task's value, the discussion around a rule), with lengths and wordings drawn at random, so the query alone
 * ranks either one first about as often; the task metadata is what could tell them apart. Some probe types
 * check that a factor does not get in the way: a question about the old objective with `requestHistorical`,
 * a question naming another task, a question about a decision asked while debugging, and plain lookups.
 * Deterministic for a seed. Steps are in time order: a probe sees only the events before it.
 */

/** Which factor a probe type exercises, and whether that factor should move the answer to the right event. */
export const PROBE_TYPES = {
  superseded: { factor: 'supersession', expect: 'helps', what: 'current objective after a revision (the old one is superseded)' },
  historical: { factor: 'supersession', expect: 'neutral', what: 'the old objective, asked with requestHistorical' },
  premise: { factor: 'premise', expect: 'helps', what: 'value under the premise the card now holds (the newer one)' },
  premiseLegacy: { factor: 'premise', expect: 'helps', what: 'value under the older premise the card still holds (a legacy line), a newer one exists' },
  crossTask: { factor: 'taskRelevance', expect: 'helps', what: 'same subject settled differently in another task' },
  otherTask: { factor: 'taskRelevance', expect: 'hurts', what: 'question that names another task explicitly' },
  constraint: { factor: 'constraintFloor', expect: 'helps', what: 'a hard rule buried under discussion of the same subject' },
  phaseDebugging: { factor: 'phase', expect: 'helps', what: 'the failing output while debugging, among speculation about it' },
  phasePlanning: { factor: 'phase', expect: 'helps', what: 'the decision while planning, among tool output about the subject' },
  phaseMismatch: { factor: 'phase', expect: 'hurts', what: 'a decision asked about while debugging, among tool output' },
  selfAssessment: { factor: 'selfAssessment', expect: 'helps', what: 'the recorded mistake or lesson when the card asks for a self-assessment' },
  plain: { factor: 'none', expect: 'neutral', what: 'a plain lookup of a unique subject (control)' },
} as const satisfies Record<string, { factor: ModifierFactor | 'none'; expect: 'helps' | 'hurts' | 'neutral'; what: string }>;
export type ProbeType = keyof typeof PROBE_TYPES;
export const PROBE_TYPE_NAMES = Object.keys(PROBE_TYPES) as ProbeType[];

/** An event to append; `label` names it for probes and `supersedesLabel` for a later event's `supersedes`. */
export interface LabelledEvent {
  event: EventInput;
  label?: string;
  supersedesLabel?: string;
}

export interface Probe {
  id: string;
  type: ProbeType;
  /** The asking session (the card's). */
  sessionId: string;
  query: string;
  /** The card at probe time, as stored in `sessionId`. */
  card: TaskState;
  /** Label of the event that answers the query. */
  expectedLabel: string;
}

export type ModifierTraceStep =
  | { type: 'append'; sessionId: string; events: LabelledEvent[] }
  /** The session's whole card from now on (stored as a new version). */
  | { type: 'card'; sessionId: string; card: TaskState }
  | { type: 'probe'; probe: Probe };

export interface ModifierTraceOptions {
  /** Default 42. */
  seed?: number;
  /** Probes per type. Default 14 (at most 16: every scenario has a subject of its own). */
  probesPerType?: number;
}

const TASKS = [
  { slug: 'checkout-revamp', name: 'checkout revamp' },
  { slug: 'search-reindex', name: 'search reindex' },
  { slug: 'billing-export', name: 'billing export' },
  { slug: 'auth-migration', name: 'auth migration' },
] as const;

const COMPONENTS = `webhook dispatcher|invoice exporter|session store|search indexer|rate limiter|image resizer|email sender|
  feature flag service|audit logger|payment gateway client|order router|report scheduler|cdn purger|token refresher|csv importer|
  notification queue|geo lookup|price calculator|inventory sync|backup job|metrics collector|pdf renderer|sso bridge|cart service`
  .split('|')
  .map((s) => s.trim());

/** Aspects of a component: a name used in the events, values, and ways an agent asks about it (`{c}`: component). */
const ASPECTS = [
  {
    name: 'retry policy',
    values: ['3 attempts with exponential backoff', '5 attempts at a fixed 2 s delay', 'no retries and a dead-letter queue', 'two retries then a page to on-call'],
    asks: ['how many times do we retry the {c}', 'what retry behaviour does the {c} have', 'retries for the {c}, what is the rule'],
  },
  {
    name: 'timeout',
    values: ['800 ms', '2 seconds', '30 seconds', '5 seconds with a 1 s connect timeout'],
    asks: ['what timeout is the {c} configured with', 'how long does the {c} wait before it times out', 'which timeout value does the {c} have'],
  },
  {
    name: 'cache backend',
    values: ['Redis', 'Memcached', 'an in-process LRU', 'DynamoDB with DAX'],
    asks: ['where does the {c} cache its data', 'which cache backend sits behind the {c}', 'what do we cache the {c} results in'],
  },
  {
    name: 'batch size',
    values: ['100 rows', '500 rows', '2000 rows', '50 items'],
    asks: ['what batch size does the {c} use', 'how big are the {c} batches', 'the {c}, how many rows per batch'],
  },
  {
    name: 'output format',
    values: ['Parquet', 'gzipped JSON lines', 'CSV with a header row', 'Avro'],
    asks: ['what format does the {c} write', 'which output format for the {c}', 'file format the {c} produces'],
  },
  {
    name: 'worker concurrency',
    values: ['4 workers', '16 workers', 'a single worker', '8 workers per node'],
    asks: ['how many workers does the {c} run', 'what concurrency for the {c} workers', 'worker count of the {c}'],
  },
  {
    name: 'log level',
    values: ['debug', 'warn', 'info with sampling', 'error only'],
    asks: ['what log level should the {c} use', 'how verbose is the {c} logging', 'which log level is the {c} set to'],
  },
  {
    name: 'schedule',
    values: ['every 5 minutes', 'hourly', 'nightly at 02:00 UTC', 'on every deploy'],
    asks: ['how often does the {c} run', 'when is the {c} scheduled', 'what schedule does the {c} follow'],
  },
] as const;

const PHASES: readonly TaskPhase[] = ['planning', 'implementing', 'debugging', 'testing', 'reviewing'];

interface Subject {
  component: string;
  aspect: (typeof ASPECTS)[number];
}

export function* modifierTrace(options: ModifierTraceOptions = {}): Generator<ModifierTraceStep> {
  const seed = options.seed ?? 42;
  const perType = options.probesPerType ?? 14;
  const maxPerType = Math.floor((COMPONENTS.length * ASPECTS.length) / PROBE_TYPE_NAMES.length);
  if (!Number.isInteger(perType) || perType < 1 || perType > maxPerType) throw new Error(`probesPerType: an integer from 1 to ${maxPerType}`);
  const rng = new Prng(seed);
  const subjects = shuffle(
    rng,
    COMPONENTS.flatMap((component) => ASPECTS.map((aspect) => ({ component, aspect }))),
  );
  const scenarios = shuffle(
    rng,
    PROBE_TYPE_NAMES.flatMap((type) => Array.from({ length: perType }, () => type)),
  );

  let ms = Date.parse('2026-03-02T08:00:00Z');
  const nextTs = (): number => (ms += rng.int(60, 600) * 1000);
  let labelCount = 0;
  const newLabel = (): string => `e${++labelCount}`;
  let callCount = 0;

  const sessionOf = (task: number): string => `abl-${TASKS[task]!.slug}`;
  const cards: TaskState[] = TASKS.map((t, i) => ({
    taskId: t.slug,
    goals: [`ship the ${t.name}`],
    constraints: [],
    openLoops: [],
    nextActions: [],
    keyEvents: [],
    premises: [`${t.slug}-baseline`],
    phase: PHASES[i % PHASES.length]!,
    requiresSelfAssessment: false,
    requestHistorical: false,
    extensions: {},
  }));
  const setCard = function* (task: number, patch: Partial<TaskState>): Generator<ModifierTraceStep> {
    const next: TaskState = { ...cards[task]!, ...patch };
    if (JSON.stringify(next) === JSON.stringify(cards[task])) return;
    cards[task] = next;
    yield { type: 'card', sessionId: sessionOf(task), card: structuredClone(next) };
  };
  for (let t = 0; t < TASKS.length; t++) yield { type: 'card', sessionId: sessionOf(t), card: structuredClone(cards[t]!) };

  /** Ordinary traffic in random sessions: dialogue, tool rounds, sometimes a passing mention of a component. */
  const filler = function* (count: number): Generator<ModifierTraceStep> {
    for (let i = 0; i < count; i++) {
      const task = rng.int(0, TASKS.length - 1);
      const meta = { taskId: TASKS[task]!.slug, ...(rng.chance(0.3) ? { premiseRef: rng.pick(cards[task]!.premises) } : {}) };
      const r = rng.next();
      let events: EventInput[];
      if (r < 0.1) {
        const c = rng.pick(COMPONENTS);
        const a = rng.pick(ASPECTS);
        events = [{ kind: rng.pick(['assistant', 'user'] as const), content: `${sentence(rng, rng.int(6, 20))} Also glanced at the ${c} ${a.name}; ${sentence(rng, rng.int(6, 20))}`, ts: nextTs(), ...meta }];
      } else if (r < 0.4) {
        events = [{ kind: rng.pick(['user', 'assistant', 'assistant'] as const), content: sentence(rng, rng.int(15, 90)), ts: nextTs(), ...meta }];
      } else {
        const tool = rng.pick(['Bash', 'Read', 'Grep', 'Edit']);
        const id = `call_abl_${++callCount}`;
        events = [
          { kind: 'tool_call', toolName: tool, toolCallId: id, content: toolCall(rng, tool), ts: nextTs(), ...meta },
          { kind: 'tool_result', toolName: tool, toolCallId: id, content: toolResult(rng, false), ts: nextTs(), ...meta },
        ];
      }
      yield { type: 'append', sessionId: sessionOf(task), events: events.map((event) => ({ event })) };
    }
  };
  const gap = (): Generator<ModifierTraceStep> => filler(rng.int(3, 12));

  /** One event of `task` on the subject. */
  const ev = (task: number, kind: EventInput['kind'], content: string, extra: Partial<EventInput> = {}, label?: string, supersedesLabel?: string): ModifierTraceStep => ({
    type: 'append',
    sessionId: sessionOf(task),
    events: [
      {
        event: { kind, content, ts: nextTs(), taskId: TASKS[task]!.slug, ...extra },
        ...(label ? { label } : {}),
        ...(supersedesLabel ? { supersedesLabel } : {}),
      },
    ],
  });
  const reason = (): string => sentence(rng, rng.int(4, 28));
  /** Mentions the task by name in about 70 % of its events, as agents do when they summarise work. */
  const taskMention = (task: number): string => (rng.chance(0.7) ? ` (${TASKS[task]!.name})` : '');
  const ask = (s: Subject): string => {
    const c = rng.chance(0.7) ? s.component : s.component.split(' ').at(-1)!;
    return rng.pick(s.aspect.asks).replace('{c}', c);
  };
  const stateLine = (s: Subject, v: string, task: number): string =>
    rng.pick([
      `Decision${taskMention(task)}: the ${s.component} ${s.aspect.name} is ${v}. ${reason()}`,
      `We settled the ${s.component} ${s.aspect.name}${taskMention(task)}: ${v}. ${reason()}`,
      `${reason()} So the ${s.aspect.name} for the ${s.component} becomes ${v}${taskMention(task)}.`,
    ]);
  const chatter = (s: Subject, task: number): ModifierTraceStep =>
    rng.chance(0.5)
      ? ev(task, 'assistant', `Looking at the ${s.component} ${s.aspect.name} again: ${reason()} maybe ${rng.chance(0.5) ? 'change it to ' : ''}${rng.pick(s.aspect.values)} would be better, ${reason()}`)
      : ev(task, 'tool_result', `${s.component.replace(/ /g, '_')}.${s.aspect.name.replace(/ /g, '_')} = ${rng.pick(s.aspect.values)}\n${toolResult(rng, false)}`, { toolName: 'Grep', toolCallId: `call_abl_${++callCount}` });

  let probeCount = 0;
  for (const [i, type] of scenarios.entries()) {
    const s = subjects[i]!;
    const [v1, v2] = shuffle(rng, [...s.aspect.values]);
    const home = rng.int(0, TASKS.length - 1);
    let other = rng.int(0, TASKS.length - 2);
    if (other >= home) other++;
    const want = newLabel();
    let query = ask(s);
    let patch: Partial<TaskState> = {};
    yield* gap();

    switch (type) {
      case 'superseded':
      case 'historical': {
        const old = newLabel();
        yield ev(home, 'decision', stateLine(s, v1!, home), {}, old);
        yield* gap();
        // Same wording family as the objective it revises, so neither side is favoured by its template.
        const revised = `${rng.pick(['Change of plan. ', 'Revised: ', ''])}${stateLine(s, v2!, home)}`;
        yield ev(home, rng.pick(['decision', 'user'] as const), revised, {}, type === 'superseded' ? want : newLabel(), old);
        if (type === 'historical') {
          // The old objective is the answer.
          yield* gap();
          // No word of the revision's wording ("change", "plan", "revised"), which would favour the new objective.
          query = `${rng.pick(['what was the original', 'what did we first pick as the', 'initially, what was the'])} ${s.aspect.name} of the ${s.component}`;
          patch = { requestHistorical: true };
          yield* probe(old);
          continue;
        }
        break;
      }
      case 'premise':
      case 'premiseLegacy': {
        const base = `${s.component.split(' ')[0]}-${s.aspect.name.split(' ')[0]}`;
        const pOld = `${base}-v1`;
        const pNew = `${base}-v2`;
        yield* setCard(home, { premises: [...cards[home]!.premises.filter((p) => !p.endsWith('-v1') && !p.endsWith('-v2')).slice(-2), pOld] });
        const oldLabel = type === 'premiseLegacy' ? want : newLabel();
        yield ev(home, rng.pick(['assistant', 'decision'] as const), stateLine(s, v1!, home), { premiseRef: pOld }, oldLabel);
        yield* gap();
        yield* setCard(home, { premises: [...cards[home]!.premises.filter((p) => p !== pOld), pNew] });
        yield ev(home, rng.pick(['assistant', 'decision'] as const), stateLine(s, v2!, home), { premiseRef: pNew }, type === 'premise' ? want : newLabel());
        if (type === 'premiseLegacy') {
          // Back on the legacy line: the card holds the old premise again.
          yield* gap();
          patch = { premises: [...cards[home]!.premises.filter((p) => p !== pNew), pOld] };
        }
        break;
      }
      case 'crossTask':
      case 'otherTask': {
        // `home` asks; `other` settled the same subject differently. The two events come in random order.
        const homeFirst = rng.chance(0.5);
        const homeEvent = (): ModifierTraceStep => ev(home, 'decision', stateLine(s, v1!, home), {}, type === 'crossTask' ? want : newLabel());
        const otherEvent = (): ModifierTraceStep => ev(other, 'decision', stateLine(s, v2!, other), {}, type === 'otherTask' ? want : newLabel());
        yield homeFirst ? homeEvent() : otherEvent();
        yield* gap();
        yield homeFirst ? otherEvent() : homeEvent();
        if (type === 'otherTask') query = `${rng.pick(['in the', 'for the'])} ${TASKS[other]!.name} work, ${ask(s)}`;
        break;
      }
      case 'constraint': {
        yield ev(home, rng.pick(['user', 'note'] as const), `Hard rule: never change the ${s.component} ${s.aspect.name} away from ${v1} without sign-off from the platform team. ${reason()}`, { tags: ['constraint'] }, want);
        yield* setCard(home, { constraints: [...cards[home]!.constraints, `${s.component} ${s.aspect.name} frozen`].slice(-12) });
        for (let k = rng.int(3, 5); k > 0; k--) {
          yield* filler(rng.int(1, 4));
          yield chatter(s, home);
        }
        query = rng.chance(0.5)
          ? `${rng.pick(['can I switch', 'is it fine to move'])} the ${s.component} ${s.aspect.name} to ${v2} now`
          : `${rng.pick(['are we allowed to change', 'any restriction on changing'])} the ${s.component} ${s.aspect.name}`;
        break;
      }
      case 'phaseDebugging': {
        for (let k = rng.int(1, 3); k > 0; k--) {
          yield ev(home, 'assistant', `The ${s.component} ${s.aspect.name} check probably fails because ${sentence(rng, rng.int(4, 40))}`);
          yield* filler(rng.int(0, 3));
        }
        const id = `call_abl_${++callCount}`;
        yield ev(home, 'tool_call', JSON.stringify({ command: `npm test -- ${s.component.replace(/ /g, '-')}` }), { toolName: 'Bash', toolCallId: id });
        // The failure alone, or inside a longer test log: output length varies as it does in real runs.
        const log = rng.chance(0.5) ? `\n${toolResult(rng, false)}` : '';
        yield ev(home, 'tool_result', `FAIL ${s.component} ${s.aspect.name} check\n  expected ${v1}\n  received ${v2}${log}`, { toolName: 'Bash', toolCallId: id }, want);
        if (rng.chance(0.5)) yield ev(home, 'assistant', `Still not sure why the ${s.component} ${s.aspect.name} check fails; ${reason()}`);
        query = `what exactly did the failing ${s.component} ${s.aspect.name} check print`;
        patch = { phase: 'debugging' };
        break;
      }
      case 'phasePlanning':
      case 'phaseMismatch': {
        const decisionFirst = rng.chance(0.5);
        if (!decisionFirst) for (let k = rng.int(1, 3); k > 0; k--) yield chatter(s, home);
        yield ev(home, 'decision', stateLine(s, v1!, home), {}, want);
        if (decisionFirst) for (let k = rng.int(1, 3); k > 0; k--) yield chatter(s, home);
        query = `${rng.pick(['what did we decide on', 'what did we agree for'])} the ${s.component} ${s.aspect.name}`;
        patch = { phase: type === 'phasePlanning' ? 'planning' : 'debugging' };
        break;
      }
      case 'selfAssessment': {
        yield ev(home, 'assistant', `The ${s.component} ${s.aspect.name} rollout to ${v2} is done. ${reason()}`);
        yield* filler(rng.int(1, 4));
        yield ev(home, rng.pick(['note', 'assistant'] as const), `${rng.pick(['Lesson', 'Mistake'])}: the ${s.component} ${s.aspect.name} rollout to ${v2} broke ${reason()}`, { tags: [rng.pick(['mistake', 'lesson'])] }, want);
        yield* filler(rng.int(1, 4));
        yield chatter(s, home);
        query = `${rng.pick(['what went wrong with', 'what did we learn from'])} the ${s.component} ${s.aspect.name} rollout`;
        patch = { requiresSelfAssessment: true, phase: rng.pick(['reviewing', 'done'] as const) };
        break;
      }
      case 'plain': {
        yield ev(home, rng.pick(['decision', 'assistant', 'user', 'note'] as const), stateLine(s, v1!, home), {}, want);
        break;
      }
    }
    yield* gap();
    yield* probe(want);

    function* probe(expectedLabel: string): Generator<ModifierTraceStep> {
      // Phase drifts as work goes on; probe types that test the phase set it explicitly.
      const drift: Partial<TaskState> = rng.chance(0.3) ? { phase: rng.pick(PHASES) } : {};
      yield* setCard(home, { ...drift, ...patch });
      yield { type: 'probe', probe: { id: `p${++probeCount}`, type, sessionId: sessionOf(home), query, card: structuredClone(cards[home]!), expectedLabel } };
      yield* setCard(home, { requestHistorical: false, requiresSelfAssessment: false });
    }
  }
}

function shuffle<T>(rng: Prng, items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}
