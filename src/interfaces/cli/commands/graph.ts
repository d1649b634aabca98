import type { Command } from 'commander';
import type { CliContext, GlobalOptions } from '../cli-context.js';
import type { Engram } from '../../../engine.js';
import { EngramError } from '../../../errors.js';
import { DEFAULT_PROJECT } from '../../../model/access.js';
import { ARTIFACT_ID_PREFIX, EVENT_ID_PREFIX } from '../../../model/ids.js';
import { formatImpact } from '../../../consolidate/graph/impact.js';
import type { LlmEntityExtractor } from '../../../consolidate/graph/llm-extractor.js';
import { logEscalationsTo, logLlmCallsTo } from '../../../consolidate/telemetry.js';
import { openLlm } from '../llm-option.js';
import type { Io } from '../output.js';
import { printJson } from '../output.js';

interface BuildArgs extends GlobalOptions {
  code?: boolean;
  commit?: string;
  project?: string;
  session?: string[];
}

interface EntitiesArgs extends GlobalOptions {
  kind?: string;
  limit?: string;
}

interface ImpactArgs extends GlobalOptions {
  direction?: string;
  minConfidence?: string;
  maxDepth?: string;
  commit?: string;
  types?: string;
}

interface ExpandArgs extends GlobalOptions {
  aspect?: string;
  question?: string;
  maxTokens?: string;
}

/** `engram graph build`: entities and edges from the events not read yet and, with --code, from the repository at a commit. */
export async function graphBuildCommand(mem: Engram, args: BuildArgs, io: Io): Promise<number> {
  // With a model (--llm, or the environment), entities and edges are also extracted by it (llm-extractor.ts); without one, as before.
  const llm = await openLlm(args, { onCall: logLlmCallsTo(mem.bus) });
  let extractor: LlmEntityExtractor | undefined;
  if (llm) {
    // Loaded here: most builds have no model.
    const { LlmEntityExtractor } = await import('../../../consolidate/graph/llm-extractor.js');
    extractor = new LlmEntityExtractor({ llm, telemetry: logEscalationsTo(mem.bus, 'graph:entities'), sink: mem.bus });
  }
  const builder = mem.graphBuilder(extractor);
  const sessions = await builder.buildFromSessions(args.session?.length ? { sessionIds: args.session } : {});
  const model = extractor ? { model: llm!.name, ...extractor.stats() } : undefined;
  const repo = args.code
    ? await builder.buildFromRepository({ repository: args.repo ?? process.cwd(), commit: args.commit ?? 'HEAD', project: args.project ?? DEFAULT_PROJECT })
    : undefined;
  if (args.json) printJson(io, { sessions, ...(model ? { llm: model } : {}), ...(repo ? { repository: repo } : {}) });
  else {
    const w = sessions.written;
    io.out(`Sessions: ${sessions.events} new events of ${sessions.sessions} sessions read; ${w.entities} entities, ${w.edges} edges, ${w.citations} citations added.`);
    if (model) {
      const d = model.dropped;
      io.out(
        `Model ${model.model}: ${model.chunks} chunks (normal ${model.levels.normal}, aggressive ${model.levels.aggressive}, deterministic ${model.levels.deterministic}); ` +
          `${model.entities} entity and ${model.edges} edge mentions added; dropped ${d.unknownEvent} cites of events not shown, ${d.misquoted} misquoted, ` +
          `${d.nameNotInEvent} naming what the event does not, ${d.uncitedItems} items left uncited; ${model.usage.inputTokens} + ${model.usage.outputTokens} tokens.`,
      );
    }
    if (repo) {
      io.out(
        repo.isBuilt
          ? `Code: ${repo.repository} at ${repo.commit.slice(0, 12)}: ${repo.files} files, ${repo.imports} imports, ${repo.exports} exports; ${repo.written.entities} entities, ${repo.written.edges} edges, ${repo.written.citations} citations added.`
          : `Code: ${repo.repository} at ${repo.commit.slice(0, 12)} was indexed already for this project.`,
      );
    }
  }
  return 0;
}

export async function entitiesCommand(mem: Engram, query: string | undefined, args: EntitiesArgs, io: Io): Promise<number> {
  const list = await mem.knowledge.list({
    ...(query ? { query } : {}),
    ...(args.kind ? { kinds: args.kind.split(',').map((k) => k.trim()) } : {}),
    ...(args.limit ? { limit: wholeNumber(args.limit, 'limit') } : {}),
  });
  if (args.json) printJson(io, list);
  else if (list.length === 0) io.out('No entities. Run engram graph build first, or widen the query.');
  else for (const e of list) io.out(`${e.id}  ${e.kind}:${e.name}  (${e.citations} citations)`);
  return 0;
}

export async function impactCommand(mem: Engram, entity: string, args: ImpactArgs, io: Io): Promise<number> {
  const answer = await mem.knowledge.impact(entity, {
    ...(args.direction ? { direction: args.direction as 'dependents' } : {}),
    ...(args.minConfidence ? { minConfidence: number(args.minConfidence, 'minConfidence') } : {}),
    ...(args.maxDepth ? { maxDepth: wholeNumber(args.maxDepth, 'maxDepth') } : {}),
    ...(args.commit ? { commit: args.commit } : {}),
    ...(args.types ? { types: args.types.split(',').map((t) => t.trim()) } : {}),
  });
  if (args.json) printJson(io, answer);
  else io.out(formatImpact(answer));
  return 0;
}

/** `engram expand ID|ENTITY`: an event or artifact in full (cut to the budget), or what the graph knows about an entity. */
export async function expandCommand(mem: Engram, target: string, args: ExpandArgs, io: Io): Promise<number> {
  const maxTokens = args.maxTokens ? wholeNumber(args.maxTokens, 'maxTokens') : undefined;
  if (target.startsWith(EVENT_ID_PREFIX) || target.startsWith(ARTIFACT_ID_PREFIX)) {
    const answer = await mem.viewAs().expand(target, maxTokens);
    if (args.json) printJson(io, answer);
    else io.out(answer.text);
    return 0;
  }
  const answer = await mem.knowledge.expand(target, {
    ...(args.aspect ? { aspect: args.aspect } : {}),
    ...(args.question ? { question: args.question } : {}),
    ...(maxTokens !== undefined ? { maxTokens } : {}),
  });
  if (args.json) printJson(io, answer);
  else io.out(answer.text);
  return 0;
}

function number(text: string, field: string): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n)) throw new EngramError('INVALID_INPUT', `${field}: "${text}" is not a number`, { field });
  return n;
}

function wholeNumber(text: string, field: string): number {
  const n = number(text, field);
  if (!Number.isInteger(n)) throw new EngramError('INVALID_INPUT', `${field}: "${text}" is not a whole number`, { field });
  return n;
}

/** `engram graph build`, `engram entities`, `engram impact`, `engram expand`: the knowledge graph (docs/knowledge.md). */
export function register(program: Command, context: CliContext): void {
  const { io } = context;
  const graph = program.command('graph').description('the knowledge graph: entities and typed edges extracted from events and code');
  graph
    .command('build')
    .description('extract entities and edges from the events not read yet (incremental; with a model from --llm, also by the model, verified against the events) and, with --code, from the repository (--repo or the current directory) at a commit')
    .option('--code', 'also index the TypeScript/JavaScript imports and exports of the git repository')
    .option('--commit <rev>', 'with --code: the commit to read (default HEAD)')
    .option('--project <name>', `with --code: the project whose agents may see the code graph (default ${DEFAULT_PROJECT})`)
    .option('-s, --session <id...>', 'only these sessions')
    .action(context.withStore((m, args: BuildArgs) => graphBuildCommand(m, args, io), true));
  program
    .command('entities')
    .description('entities of the knowledge graph, most cited first')
    .argument('[query]', 'part of the name (case-insensitive)')
    .option('-k, --kind <kinds>', 'comma-separated: file, symbol, service, command, person, project, error, decision')
    .option('-n, --limit <n>', 'most entities shown (default 50, at most 500)')
    .action(context.withStore((m, args: EntitiesArgs & { query?: string }) => entitiesCommand(m, args.query, args, io)));
  program
    .command('impact')
    .description('blast radius of an entity: what will break, is likely affected, may need testing (by depth)')
    .argument('<entity>', 'an entity id (ent_...) or kind:name, e.g. file:src/engine.ts or service:ledger')
    .option('--direction <d>', 'dependents (default: what depends on it) or dependencies (what it uses)')
    .option('--min-confidence <x>', 'edges below this confidence are not followed (default 0.7)')
    .option('--max-depth <n>', 'deepest level walked (default 3, at most 6)')
    .option('--commit <sha>', 'code edges of this commit only (full sha); edges learned from sessions always count')
    .option('--types <types>', 'edge types followed (default imports,calls,depends_on)')
    .action(context.withStore((m, args: ImpactArgs & { entity: string }) => impactCommand(m, args.entity, args, io)));
  program
    .command('expand')
    .description('an event or artifact in full (cut to --max-tokens), or everything the graph knows about an entity, grouped by aspect with citations')
    .argument('<target>', 'an event id (evt_...), an artifact id (art_...), an entity id (ent_...) or kind:name')
    .option('--aspect <aspect>', 'entity: one group (evidence, depends_on, imported by, ...) or a topic word')
    .option('--question <text>', 'entity: lines sharing its words come first')
    .option('--max-tokens <n>', 'budget by the store tokenizer (default 4000 for events, 1500 for entities)')
    .action(context.withStore((m, args: ExpandArgs & { target: string }) => expandCommand(m, args.target, args, io)));
}
