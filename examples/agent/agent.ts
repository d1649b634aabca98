/**
 * One agent turn with Engram as the memory: the user's input is stored, then every model call gets the push
 * pack of the session (`mem.context.pack`, rendered as Chat Completions messages), and every reply, tool call
 * and tool result is stored as an event before the next pack is built. The model never sees a transcript this
 * file keeps in memory: the pack is the only context, so compaction (markers in place of old turns) and the task
 * card apply to every call.
 */
import { z } from 'zod';
import { EngramError, isEngramError, taskStateUpdateSchema } from '../../src/index.js';
import type { Engram, EventInput, OpenAiChatPayload, OpenAiMessage, SessionPack } from '../../src/index.js';
import type { ChatModel, ChatTool } from './chat-model.js';

/** A tool the model may call: its declaration and what runs it. The result is text, stored as a `tool_result` event. */
export interface AgentTool {
  definition: ChatTool;
  run(args: Record<string, unknown>): Promise<string>;
}

/** What one model call was sent, for `--print-pack` and for tests. */
export interface PackSent {
  sessionId: string;
  /** 1 for the first model call of the turn. */
  step: number;
  messages: OpenAiMessage[];
  pack: SessionPack;
}

export interface AgentOptions {
  mem: Engram;
  model: ChatModel;
  sessionId: string;
  /** The model's context window in tokens; the pack is built within it and compacts when history passes high water. */
  windowTokens: number;
  /** The system prompt: the pack's identity block. */
  identity: string;
  /** Tools besides recall, expand and update_task (the planner adds `delegate`). */
  extraTools?: AgentTool[];
  /** Model calls per turn before the agent gives up. Default 8. */
  maxSteps?: number;
  /** The project a new session belongs to (bus agents only read their project's sessions). Default `default`. */
  project?: string;
  /** Called with every pack before it is sent. */
  onPack?: (sent: PackSent) => void;
}

export interface TurnResult {
  reply: string;
  /** The stored `assistant` event holding the reply: what a report's pointer names. */
  replyEventId: string;
  /** Model calls made. */
  steps: number;
  /** Compactions the packs of this turn ran first (evicted events stay in the store). */
  compactions: Array<{ evicted: number; markers: number }>;
}

/** The single agent's system prompt (the pack's identity block). */
export const AGENT_IDENTITY =
  'You are a helpful agent whose memory is Engram. The conversation you see is a window over a lossless store: ' +
  'older turns may be replaced by markers such as [Events T12-T47 evicted ...]; call recall(query) to get exact ' +
  'details back and expand(id) to read one event in full, rather than guessing. Keep your task card current with ' +
  'update_task (goals, constraints, phase, next actions): it is shown to you on every turn.';

export const DEFAULT_MAX_STEPS = 8;
/** Evidence budget of one recall: enough for a few exact excerpts, small against an 8K window. */
const RECALL_BUDGET_TOKENS = 600;
const EXPAND_MAX_TOKENS = 1500;

/** Runs one turn: stores `input` as the user's event, then calls the model until it answers without tools. */
export async function runTurn(options: AgentOptions, input: string): Promise<TurnResult> {
  const { mem, sessionId } = options;
  const owner = options.project ? { project: options.project } : {};
  const append = async (events: EventInput[]) => mem.append(sessionId, events, owner);
  const tools = [...memoryTools(mem, sessionId), ...(options.extraTools ?? [])];
  const byName = new Map(tools.map((t) => [t.definition.function.name, t]));
  const compactions: TurnResult['compactions'] = [];

  await append([{ kind: 'user', content: input }]);
  const maxSteps = options.maxSteps ?? DEFAULT_MAX_STEPS;
  for (let step = 1; step <= maxSteps; step++) {
    // No `query`: the user's input is already the last event of the history, followed by this turn's tool rounds.
    const pack = await mem.context.pack(sessionId, { windowTokens: options.windowTokens, identity: options.identity });
    if (pack.compaction) compactions.push({ evicted: pack.compaction.evicted.length, markers: pack.compaction.markerCount });
    const { messages } = mem.context.format(pack.pack, 'openai') as OpenAiChatPayload;
    options.onPack?.({ sessionId, step, messages, pack });

    const reply = await options.model.complete(messages, tools.map((t) => t.definition));
    if (reply.toolCalls.length === 0) {
      const [stored] = await append([{ kind: 'assistant', content: reply.content ?? '' }]);
      return { reply: reply.content ?? '', replyEventId: stored!.record.id, steps: step, compactions };
    }
    // Calls first, then each result: the openai formatter pairs them by toolCallId in the next pack.
    await append([
      ...(reply.content ? [{ kind: 'assistant' as const, content: reply.content }] : []),
      ...reply.toolCalls.map((c) => ({ kind: 'tool_call' as const, toolName: c.function.name, toolCallId: c.id, content: c.function.arguments })),
    ]);
    for (const call of reply.toolCalls) {
      const result = await runTool(byName.get(call.function.name), call.function.name, call.function.arguments);
      await append([{ kind: 'tool_result', toolName: call.function.name, toolCallId: call.id, content: result }]);
    }
  }
  const note = `(stopped: no answer after ${maxSteps} model calls)`;
  const [stored] = await append([{ kind: 'assistant', content: note }]);
  return { reply: note, replyEventId: stored!.record.id, steps: maxSteps, compactions };
}

/** A tool's answer, or the error as text the model can act on (a bad argument names its field). */
async function runTool(tool: AgentTool | undefined, name: string, rawArgs: string): Promise<string> {
  if (!tool) return `ERROR: there is no tool named ${name}`;
  let args: unknown;
  try {
    args = rawArgs.trim() === '' ? {} : JSON.parse(rawArgs);
  } catch {
    return 'ERROR INVALID_INPUT: the arguments are not valid JSON';
  }
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return 'ERROR INVALID_INPUT: the arguments must be a JSON object';
  try {
    return await tool.run(args as Record<string, unknown>);
  } catch (err) {
    if (isEngramError(err)) return `ERROR ${err.code}: ${err.message}`;
    throw err;
  }
}

/** A JSON Schema for a tool's `parameters`, from a zod schema (without `$schema`, which some servers reject). */
export function toolParameters(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>;
  return rest;
}

const recallArgs = z.object({
  query: z.string().min(1).describe('The exact string you need (an error message, a path, a hash, an identifier) and/or words.'),
  k: z.number().int().min(1).max(20).optional().describe('Most hits. Default 10.'),
});
const expandArgs = z.object({
  id: z.string().min(1).describe('An event id (evt_...) or artifact id (art_...) from a recall hit.'),
});

/** `recall`, `expand` and `update_task`, run through the library against this session's memory. */
export function memoryTools(mem: Engram, sessionId: string): AgentTool[] {
  return [
    {
      definition: {
        type: 'function',
        function: {
          name: 'recall',
          description:
            'Search your lossless memory: every message, tool call and tool output of this and earlier sessions is stored verbatim, ' +
            'including turns compacted out of your context (shown as [Events T..-T.. evicted ...] markers). Returns quoted evidence ' +
            'with event ids. Call it before answering with an exact value you are not sure of.',
          parameters: toolParameters(recallArgs),
        },
      },
      async run(raw) {
        const args = parseToolArgs(recallArgs, raw);
        const card = await mem.taskStates.get(sessionId);
        // Ranked by this session's task card (goals, constraints, key events), as the MCP tool does.
        const result = await mem.recall(args.query, {
          budgetTokens: RECALL_BUDGET_TOKENS,
          askingSessionId: sessionId,
          ...(args.k !== undefined ? { k: args.k } : {}),
          ...(card ? { taskState: card.state } : {}),
        });
        return result.hits.length > 0 ? result.text : `No stored event matches "${args.query}".`;
      },
    },
    {
      definition: {
        type: 'function',
        function: {
          name: 'expand',
          description: 'Read the full stored content of one event or artifact by its id, when a recall excerpt is not enough.',
          parameters: toolParameters(expandArgs),
        },
      },
      async run(raw) {
        const args = parseToolArgs(expandArgs, raw);
        return (await mem.viewAs().expand(args.id, EXPAND_MAX_TOKENS)).text;
      },
    },
    {
      definition: {
        type: 'function',
        function: {
          name: 'update_task',
          description:
            'Update your task card, which is shown to you on every turn: goals, constraints (rules you must keep), openLoops, ' +
            'nextActions, keyEvents (evt_... ids the task depends on), premises and phase. Given fields replace the stored ones; ' +
            'lists are replaced whole. Update it whenever the goal, phase or next actions change.',
          parameters: toolParameters(taskStateUpdateSchema),
        },
      },
      async run(raw) {
        // The engine's own schema: a bad field is reported to the model by name, and nothing is stored.
        const parsed = taskStateUpdateSchema.safeParse(raw);
        if (!parsed.success) {
          return `ERROR INVALID_INPUT: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(arguments)'}: ${i.message}`).join('; ')}`;
        }
        const version = await mem.taskStates.update(sessionId, parsed.data);
        return `Task card is now version ${version.version} (phase ${version.state.phase}).`;
      },
    },
  ];
}

/** A tool's arguments checked against its schema; INVALID_INPUT naming the first bad field, which the model gets back. */
export function parseToolArgs<T extends z.ZodType>(schema: T, raw: unknown): z.output<T> {
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const field = issue.path.join('.') || '(arguments)';
  throw new EngramError('INVALID_INPUT', `${field}: ${issue.message}`, { field });
}
