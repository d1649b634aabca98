import { Option, type Command } from 'commander';
import { readFileSync } from 'node:fs';
import type { Engram } from '../../../engine.js';
import { EngramError } from '../../../errors.js';
import { agentPrincipal } from '../../../model/access.js';
import type { DelegationPacketInput, DelegationReportInput } from '../../../model/hierarchy.js';
import type { EngramView } from '../../../view/engram-view.js';
import { recallAnswer, recallText } from '../../../view/agent-recall.js';
import { RECALL_SCOPES, type HierarchyRecallScope, type ReceivedReport } from '../../../view/hierarchy-view.js';
import { atFilePath, type CliContext, type GlobalOptions } from '../cli-context.js';
import { EXIT } from '../exit-codes.js';
import type { Io } from '../output.js';
import { formatPairs, printJson } from '../output.js';
import { parseInteger } from './recall.js';

/** Options every hierarchy verb shares. */
interface AsArgs extends GlobalOptions {
  /** Act as this agent (its access rules and its writer identity); default the local, full-trust CLI. */
  as?: string;
}

interface DelegateArgs extends AsArgs {
  session: string;
  packet?: string;
  subtask?: string;
  objective?: string;
  constraint?: string[];
  accept?: string[];
  keyEvent?: string[];
  artifact?: string[];
  planNode?: string;
  executor?: string;
  child?: string;
}

interface ReportArgs extends AsArgs {
  session: string;
  report?: string;
  status?: string;
  summary?: string;
}

interface ReportsArgs extends AsArgs {
  session: string;
  child?: string;
  record?: boolean;
}

interface TreeArgs extends AsArgs {
  session: string;
}

interface RecallTreeArgs extends AsArgs {
  session: string;
  query: string[];
  scope?: HierarchyRecallScope;
  k?: string;
  budget?: string;
}

async function viewOf(mem: Engram, as: string | undefined): Promise<EngramView> {
  if (as === undefined) return mem.viewAs();
  const agent = await mem.agents.get(as);
  if (agent.revokedAt) throw new EngramError('FORBIDDEN', `agent ${agent.name} was revoked`, { field: 'as' });
  return mem.viewAs(agentPrincipal(agent));
}

/** JSON from the argument, `@FILE`, or `-` (standard input). */
function readJson(value: string, field: string): unknown {
  let text = value;
  if (value === '-') text = readFileSync(0, 'utf8');
  else if (value.startsWith('@')) {
    try {
      text = readFileSync(value.slice(1), 'utf8');
    } catch (err) {
      throw new EngramError('NOT_FOUND', `${field}: cannot read ${value.slice(1)} (${(err as Error).message})`, { field });
    }
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new EngramError('INVALID_INPUT', `${field}: not valid JSON (${(err as Error).message})`, { field });
  }
}

/** The packet from JSON, or from the flags (`--subtask`, `--objective`, `--accept` ...). */
function packetOf(args: DelegateArgs): DelegationPacketInput {
  if (args.packet !== undefined) return readJson(args.packet, 'packet') as DelegationPacketInput;
  if (args.subtask === undefined || args.objective === undefined) {
    throw new EngramError('INVALID_INPUT', 'packet: give the packet JSON (or @FILE, -), or --subtask, --objective and --accept', { field: 'packet' });
  }
  return {
    subtask_id: args.subtask,
    objective: args.objective,
    constraints: args.constraint ?? [],
    acceptance_criteria: args.accept ?? [],
    key_event_refs: args.keyEvent ?? [],
    artifact_ids: args.artifact ?? [],
    ...(args.planNode !== undefined ? { plan_node_ref: args.planNode } : {}),
  };
}

export async function delegateCommand(mem: Engram, args: DelegateArgs, io: Io): Promise<number> {
  const view = await viewOf(mem, args.as);
  const out = await view.hierarchy.delegate({
    parentSessionId: args.session,
    packet: packetOf(args),
    ...(args.executor !== undefined ? { executor: args.executor } : {}),
    ...(args.child !== undefined ? { childSessionId: args.child } : {}),
  });
  if (args.json) printJson(io, out);
  else {
    io.out(
      formatPairs([
        [out.isDuplicate ? 'already delegated' : 'delegated', `${out.child.packet?.subtask_id ?? ''} -> session ${out.child.sessionId}`],
        ['role', `${out.child.role} (depth ${out.child.depth}), planner ${out.parent.sessionId}`],
        ['writer', out.child.writer?.name ?? '(any writer of the project)'],
        ['task card', `version ${out.taskStateVersion}`],
        ['recorded', `${out.delegationEventId} in ${out.parent.sessionId}`],
      ]),
    );
  }
  return EXIT.OK;
}

export async function reportCommand(mem: Engram, args: ReportArgs, io: Io): Promise<number> {
  const view = await viewOf(mem, args.as);
  let report: DelegationReportInput;
  if (args.report !== undefined) report = readJson(args.report, 'report') as DelegationReportInput;
  else if (args.status !== undefined && args.summary !== undefined) report = { status: args.status as DelegationReportInput['status'], summary: args.summary };
  else throw new EngramError('INVALID_INPUT', 'report: give the report JSON (or @FILE, -), or --status and --summary', { field: 'report' });
  const out = await view.hierarchy.report(args.session, report);
  if (args.json) printJson(io, out);
  else io.out(`reported: ${out.eventId} (subtask ${out.subtaskId}) to session ${out.parentSessionId}`);
  return EXIT.OK;
}

/** Prints the validated reports. An unverified pointer is an outcome, printed (and in --json), not an error: exit 0. */
export async function reportsCommand(mem: Engram, args: ReportsArgs, io: Io): Promise<number> {
  const view = await viewOf(mem, args.as);
  const reports = await view.hierarchy.reports(args.session, {
    ...(args.child !== undefined ? { childSessionId: args.child } : {}),
    ...(args.record ? { record: true } : {}),
  });
  if (args.json) printJson(io, { reports });
  else io.out(reports.length === 0 ? `no reports yet from the sessions ${args.session} delegated to` : reports.map(reportLines).join('\n\n'));
  return EXIT.OK;
}

function reportLines(r: ReceivedReport): string {
  const v = r.validation;
  const lines = [
    `${r.eventId}  ${r.sessionId}${r.executor ? ` (${r.executor})` : ''}  subtask ${r.subtaskId}  ${r.report.status}  ` +
      `${v.isVerified ? 'VERIFIED' : 'NOT VERIFIED'} (${v.verifiedPointers} verified, ${v.failedPointers} failed)`,
    `  ${r.report.summary}`,
  ];
  for (const f of v.findings) {
    lines.push(`  ${f.isVerified ? '[ok]  ' : '[FAIL]'} ${f.claim}`);
    for (const p of f.pointers) {
      const detail = p.status === 'verified' ? '' : p.status === 'digest_mismatch' ? ` (expected ${p.expected.slice(0, 12)}, read ${p.contentDigest.slice(0, 12)})` : ` (${p.code}: ${p.reason})`;
      lines.push(`         ${p.status}: ${p.pointer}${detail}`);
    }
  }
  if (r.validationEventId) lines.push(`  recorded as ${r.validationEventId}`);
  return lines.join('\n');
}

export async function treeCommand(mem: Engram, args: TreeArgs, io: Io): Promise<number> {
  const tree = await (await viewOf(mem, args.as)).hierarchy.tree(args.session);
  if (args.json) printJson(io, tree);
  else if (!tree.isLinked) io.out(`${args.session} takes part in no hierarchy (engram delegate starts one)`);
  else {
    io.out(
      tree.nodes
        .map(
          (n) =>
            `${'  '.repeat(n.depth)}${n.sessionId}  ${n.role}${n.writer ? `  writer ${n.writer}` : ''}${n.subtaskId ? `  subtask ${n.subtaskId}` : ''}` +
            `  reports ${n.reports}${n.lastReportStatus ? ` (last ${n.lastReportStatus})` : ''}`,
        )
        .join('\n'),
    );
  }
  return EXIT.OK;
}

export async function recallTreeCommand(mem: Engram, args: RecallTreeArgs, io: Io): Promise<number> {
  const view = await viewOf(mem, args.as);
  const outcome = await view.hierarchy.recall(args.session, {
    queries: [args.query.join(' ')],
    ...(args.scope !== undefined ? { scope: args.scope } : {}),
    ...(args.k !== undefined ? { k: parseInteger(args.k, 'k') } : {}),
    ...(args.budget !== undefined ? { budgetTokens: parseInteger(args.budget, 'budget') } : {}),
  });
  const answer = recallAnswer(outcome);
  if (args.json) printJson(io, { sessionIds: outcome.sessionIds, ...answer });
  else io.out(`sessions: ${outcome.sessionIds.join(', ')}\n${recallText(answer)}`);
  return EXIT.OK;
}

/** `engram delegate`, `engram report`, `engram reports`, `engram tree`, `engram recall-tree`. */
export function register(program: Command, context: CliContext): void {
  const { io } = context;
  const asOption = (): Option => new Option('--as <agent>', 'act as this agent (its project and its writer identity); default: the local CLI, full trust');
  program
    .command('delegate')
    .description('hand a subtask to a new child session: packet recorded in both sessions, child task card seeded (planner -> executor)')
    .argument('<session>', 'the delegating (planner or executor) session')
    .argument('[packet]', 'the delegation packet JSON, @FILE or - (else the flags below)')
    .option('--subtask <id>', 'subtask_id: names the subtask (and the child session, <session>.<id>)')
    .option('--objective <text>', 'what the executor must achieve')
    .option('--constraint <text...>', 'constraints (repeatable)')
    .option('--accept <text...>', 'acceptance criteria (at least one)')
    .option('--key-event <ref...>', 'key events: sam:event:evt_... or evt_...')
    .option('--artifact <id...>', 'artifact ids (art_...)')
    .option('--plan-node <ref>', 'pointer to the plan node, e.g. sam:task:<session>@<version>')
    .option('--executor <agent>', "the executor agent: the child session's single writer")
    .option('--child <session>', 'the child session id (default <session>.<subtask>)')
    .addOption(asOption())
    .action(context.withStore((m, args: DelegateArgs) => delegateCommand(m, args, io), true, 'none', (args) => atFilePath(args.packet)));
  program
    .command('report')
    .description("report up from a delegated session: status, summary, key findings with provenance pointers and digests")
    .argument('<session>', 'the delegated session')
    .argument('[report]', 'the report JSON, @FILE or -: { status, summary, key_findings: [{ claim, provenance: [{ pointer, content_digest }] }] }')
    .addOption(new Option('--status <status>', 'without JSON: the status').choices(['done', 'partial', 'failed', 'blocked']))
    .option('--summary <text>', 'without JSON: the summary')
    .addOption(asOption())
    .action(context.withStore((m, args: ReportArgs) => reportCommand(m, args, io)));
  program
    .command('reports')
    .description("the reports of a session's children, each pointer re-resolved and its digest checked")
    .argument('<session>', 'the planner session')
    .option('--child <session>', 'only this child')
    .option('--record', 'record each validation as a decision in the planner session')
    .addOption(asOption())
    .action(context.withStore((m, args: ReportsArgs) => reportsCommand(m, args, io)));
  program
    .command('tree')
    .description('the planner / executor / sub-executor tree a session belongs to')
    .argument('<session>', 'any session of the tree')
    .addOption(asOption())
    .action(context.withStore((m, args: TreeArgs) => treeCommand(m, args, io)));
  program
    .command('recall-tree')
    .description("recall across the hierarchy: the session's subtree (default), whole tree or ancestors")
    .argument('<session>', 'the asking session (its task card ranks the hits)')
    .argument('<query...>', 'what to look for')
    .addOption(new Option('--scope <scope>', 'subtree, tree or ancestors (default subtree)').choices([...RECALL_SCOPES]))
    .option('-k, --k <n>', 'most hits (default 10)')
    .option('-b, --budget <tokens>', 'token budget (default 2000)')
    .addOption(asOption())
    .action(context.withStore((m, args: RecallTreeArgs) => recallTreeCommand(m, args, io), false, 'foreground'));
}
