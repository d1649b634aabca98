/**
 * A planner delegating to two executors through the Engram Bus. Nothing is pasted between the agents:
 * - the planner's `delegate` tool stores the objective as an event in the planner's session and posts a `todo`
 *   engram tagged `assignee:<executor>` whose pointer (`sam:event:<id>`) names that event;
 * - each executor finds its work by querying the bus, dereferences the pointer (within its deref budget; the
 *   answer carries the `content_digest` of what was read), and runs its own agent loop in its own session;
 * - it reports with a child-to-parent message checked by the bus gateway and a `fact` engram tagged
 *   `report:<todo id>` pointing at its answer event;
 * - the planner queries the reports, dereferences their pointers and writes the final answer from them.
 * Every step goes through the library (`mem.bus`, `mem.append`), so the same flow works across processes
 * sharing one store.
 */
import type { BusAgent, Engram, EngramClaim, Pointer } from '../../src/index.js';
import { isEngramError } from '../../src/index.js';
import { parseToolArgs, runTurn, toolParameters, type AgentOptions, type AgentTool, type TurnResult } from './agent.js';
import { z } from 'zod';

export const EXECUTORS = ['executor-1', 'executor-2'] as const;
export const PLANNER = 'planner';
/** The agents' project: bus agents read only their project's sessions, so the sessions are created in it. */
export const TEAM_PROJECT = 'example-agent';

export const PLANNER_IDENTITY =
  `You are the planner of a team of three agents. Split the user's task into two independent pieces of work and ` +
  `hand one to each executor (${EXECUTORS.join(', ')}) with the delegate tool, then stop. When the executors' reports ` +
  `arrive, write the final answer from them. Your memory is Engram: recall(query) finds anything said earlier; ` +
  `keep your task card current with update_task.`;

export const executorIdentity = (name: string): string =>
  `You are ${name}, an executor. Do exactly the work your planner gave you and answer with your result, briefly and ` +
  `precisely. Your memory is Engram: the conversation is a window over a lossless store; recall(query) and ` +
  `expand(id) bring back exact details; keep your task card current with update_task.`;

export interface TeamOptions extends Pick<AgentOptions, 'mem' | 'model' | 'windowTokens' | 'maxSteps' | 'onPack'> {
  /** Names this run: the bus scope of its engrams and the prefix of its sessions. */
  runId: string;
}

/** What an executor read from the bus and what it reported. */
export interface ExecutorReport {
  executor: string;
  todo: EngramClaim;
  /** The `content_digest` of the objective the executor dereferenced. */
  objectiveDigest: string;
  turn: TurnResult;
  report: EngramClaim;
}

/** What the planner read back: each report's claim, its pointer and the excerpt with its digest. */
export interface ReportRead {
  executor: string;
  report: EngramClaim;
  pointer: Pointer;
  excerpt: string;
  contentDigest: string;
}

export interface TeamResult {
  answer: string;
  delegated: EngramClaim[];
  executed: ExecutorReport[];
  reports: ReportRead[];
  sessions: { planner: string; executors: string[] };
}

export const sessionOf = (runId: string, agent: string): string => `${runId}.${agent}`;

/** The planner and its two executors in the agent registry (created on first use). */
export async function ensureTeam(mem: Engram): Promise<{ planner: BusAgent; executors: BusAgent[] }> {
  const ensure = async (name: string, role: string, parent?: string): Promise<BusAgent> => {
    try {
      return await mem.busAgent(name);
    } catch (err) {
      if (!isEngramError(err, 'NOT_FOUND')) throw err;
      await mem.agents.add(name, { role, project: TEAM_PROJECT, ...(parent ? { parent } : {}) });
      return mem.busAgent(name);
    }
  };
  const planner = await ensure(PLANNER, 'manager');
  const executors = [];
  for (const name of EXECUTORS) executors.push(await ensure(name, 'programmer', PLANNER));
  return { planner, executors };
}

/** The whole flow: the planner delegates, each executor works and reports, the planner answers from the reports. */
export async function runTeam(options: TeamOptions, task: string): Promise<TeamResult> {
  const { mem, runId } = options;
  const { planner } = await ensureTeam(mem);
  const plannerSession = sessionOf(runId, PLANNER);
  const delegated: EngramClaim[] = [];
  const base = { mem, model: options.model, windowTokens: options.windowTokens, project: TEAM_PROJECT, ...pick(options) };

  await runTurn(
    { ...base, sessionId: plannerSession, identity: PLANNER_IDENTITY, extraTools: [delegateTool(mem, planner, plannerSession, runId, delegated)] },
    task,
  );

  const executed: ExecutorReport[] = [];
  for (const name of EXECUTORS) executed.push(...(await runExecutor(options, name)));

  const reports = await readReports(mem, planner, runId, delegated);
  const summary = [
    'Reports from your executors, read from the Engram Bus (each excerpt was dereferenced from the report\'s pointer; the digest is the sha256 of what was read):',
    ...reports.map((r) => `- ${r.executor}: ${r.report.claim}\n  pointer ${r.pointer.ref}, content_digest ${r.contentDigest}\n  ${r.excerpt.replace(/\n/g, '\n  ')}`),
    'Write the final answer to the task from these reports.',
  ].join('\n');
  const final = await runTurn({ ...base, sessionId: plannerSession, identity: PLANNER_IDENTITY }, summary);
  return {
    answer: final.reply,
    delegated,
    executed,
    reports,
    sessions: { planner: plannerSession, executors: EXECUTORS.map((e) => sessionOf(runId, e)) },
  };
}

const delegateArgs = z.object({
  executor: z.enum(EXECUTORS).describe('Who does the work.'),
  objective: z.string().min(1).max(4000).describe('What to do, with everything the executor needs to know.'),
});

/** The planner's `delegate` tool: the objective becomes an event, and a `todo` engram points at it. */
function delegateTool(mem: Engram, planner: BusAgent, plannerSession: string, runId: string, delegated: EngramClaim[]): AgentTool {
  return {
    definition: {
      type: 'function',
      function: {
        name: 'delegate',
        description: `Hand a piece of work to one executor (${EXECUTORS.join(', ')}). It works in its own session and reports back to you.`,
        parameters: toolParameters(delegateArgs),
      },
    },
    async run(raw) {
      const args = parseToolArgs(delegateArgs, raw);
      // The parent-to-child contract (PAS Bus §7.2), checked against the bus budgets; it also starts the
      // planner's next bus turn, whose deref budget the planner spends reading the reports.
      await mem.bus.enforcer.requireMessage(planner, JSON.stringify({ ROLE: 'programmer', INSTRUCTIONS: [args.objective] }), { direction: 'parent-to-child' });
      const [stored] = await mem.append(plannerSession, [{ kind: 'note', content: args.objective, tags: ['delegation'], meta: { executor: args.executor } }], {
        project: TEAM_PROJECT,
      });
      const { engram } = await mem.bus.engrams.put(
        planner,
        {
          kind: 'todo',
          claim: clip(`${args.executor}: ${args.objective}`, 500),
          pointers: [{ type: 'sam', ref: `sam:event:${stored!.record.id}` }],
          confidence: 1,
          ttl: 'P1D',
          scope: 'run',
          tags: [`assignee:${args.executor}`],
        },
        runId,
      );
      delegated.push(engram);
      return `Posted ${engram.id} for ${args.executor} (pointer sam:event:${stored!.record.id}).`;
    },
  };
}

/** One executor: its work from the bus, its own loop in its own session, its report back on the bus. */
export async function runExecutor(options: TeamOptions, name: string): Promise<ExecutorReport[]> {
  const { mem, runId } = options;
  const me = await mem.busAgent(name);
  const { engrams } = await mem.bus.engrams.query(me, { keys: [`assignee:${name}`], kinds: ['todo'] }, runId);
  const out: ExecutorReport[] = [];
  // Oldest first: engram ids are ULIDs.
  for (const { engram: todo } of [...engrams].sort((a, b) => (a.engram.id < b.engram.id ? -1 : 1))) {
    const read = await mem.bus.enforcer.deref(me, { pointer: todo.pointers[0]! });
    const input = `Work from your planner (engram ${todo.id}, ${read.pointer.ref}, content_digest ${read.contentDigest}):\n${read.excerpt}`;
    const turn = await runTurn(
      {
        mem,
        model: options.model,
        sessionId: sessionOf(runId, name),
        windowTokens: options.windowTokens,
        identity: executorIdentity(name),
        project: TEAM_PROJECT,
        ...pick(options),
      },
      input,
    );
    const pointer: Pointer = { type: 'sam', ref: `sam:event:${turn.replyEventId}` };
    const claim = clip(`${name} on ${todo.id}: ${oneLine(turn.reply)}`, 500);
    const engram = { kind: 'fact' as const, claim, pointers: [pointer], confidence: 0.8, ttl: 'P1D', scope: 'run' as const, tags: [`report:${todo.id}`] };
    // The child-to-parent contract (PAS Bus §7.1): a status, the engram, the pointers, a summary; over budget
    // (too long, pasted code) it is refused with BUDGET_EXCEEDED naming what to resend.
    await mem.bus.enforcer.requireMessage(
      me,
      JSON.stringify({ ROLE: me.role, TASK_STATUS: 'done', ENGRAMS: [engram], POINTER_PACK: [pointer], OUTPUT: { summary: clip(oneLine(turn.reply), 300) } }),
      { direction: 'child-to-parent' },
    );
    const { engram: report } = await mem.bus.engrams.put(me, engram, runId);
    out.push({ executor: name, todo, objectiveDigest: read.contentDigest, turn, report });
  }
  return out;
}

/** The planner reads each delegated todo's report and dereferences its pointer. */
async function readReports(mem: Engram, planner: BusAgent, runId: string, delegated: readonly EngramClaim[]): Promise<ReportRead[]> {
  const out: ReportRead[] = [];
  const names = new Map<string, string>((await mem.agents.list()).map((a) => [a.id, a.name]));
  for (const todo of delegated) {
    const { engrams } = await mem.bus.engrams.query(planner, { keys: [`report:${todo.id}`], kinds: ['fact'] }, runId);
    for (const { engram: report } of engrams) {
      const pointer = report.pointers[0]!;
      const read = await mem.bus.enforcer.deref(planner, { pointer });
      out.push({ executor: names.get(report.provenance.created_by) ?? report.provenance.created_by, report, pointer, excerpt: read.excerpt, contentDigest: read.contentDigest });
    }
  }
  return out;
}

function pick(options: Pick<AgentOptions, 'maxSteps' | 'onPack'>): Pick<AgentOptions, 'maxSteps' | 'onPack'> {
  return { ...(options.maxSteps !== undefined ? { maxSteps: options.maxSteps } : {}), ...(options.onPack ? { onPack: options.onPack } : {}) };
}

function oneLine(text: string): string {
  // Code fences would count as pasted code against the message budget; the pointer carries the full answer.
  return text.replace(/```/g, '').replace(/\s+/g, ' ').trim() || '(empty answer)';
}

function clip(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : `${text.slice(0, maxChars - 1)}…`;
}
