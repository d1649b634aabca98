import type { EventInput, InputEventKind as EventKind } from '../../model/event.js';
import type { ConvertedBlock } from './anthropic-blocks.js';
import { imageUrlParts } from './image-url.js';
import { compactEvent, isRecord, timestampOf } from './import-item.js';

/** Events of the OpenHands agent SDK that hold nothing to recall: state changes, pauses, token streams. */
const BOOKKEEPING_KINDS = new Set(['ConversationStateUpdateEvent', 'PauseEvent', 'TokenEvent', 'CondensationRequest', 'CondensationSummaryEvent', 'StreamingDeltaEvent']);
const MESSAGE_KINDS: Record<string, EventKind> = { user: 'user', agent: 'assistant', environment: 'system' };

/**
 * Reads the events of the OpenHands agent SDK (OpenHands 1.x, whose evaluation outputs, `OpenHands/benchmarks`, hold
 * them in `history`): `{ kind, id, timestamp, source, ... }`, told from the older events by their `kind`.
 *
 * - `SystemPromptEvent`: a system event of its `system_prompt` text.
 * - `MessageEvent`: a user or assistant event per text part of its `llm_message.content` (images as events of their
 *   own), its `reasoning_content` an assistant event tagged `thinking`.
 * - `ActionEvent`: its `thought` (and reasoning) as an assistant event, then a `tool_call` of `tool_name` with the
 *   call's JSON `arguments` (else the `action`), with `tool_call_id`.
 * - `ObservationEvent`: the `tool_result` of its `tool_call_id`, the text of `observation.content` (`is_error` tags it
 *   `error`; `exit_code` in meta, `metadata.working_dir` the working directory from then on); `AgentErrorEvent` and
 *   `UserRejectObservation` results tagged `error` and `rejected`.
 * - `Condensation` with a summary: a `note` tagged `summary`. State updates and the like are skipped by kind.
 *
 * Keys are `oh:<event id>:<part>` (SDK event ids are UUIDs).
 */
export class SdkEventConverter {
  /** The working directory the latest terminal observation reported. */
  private cwd: string | undefined;

  /** @param model the LLM of the run, for assistant and tool call events' meta. */
  constructor(private readonly model?: string) {}

  convert(record: Record<string, unknown>, field: string, fallbackKey: string): ConvertedBlock[] {
    const kind = record.kind as string;
    const id = typeof record.id === 'string' && record.id !== '' ? record.id : fallbackKey;
    const ctx: SdkContext = { keyPrefix: `oh:${id}`, ts: timestampOf(record.timestamp), field, model: this.model };
    switch (kind) {
      case 'SystemPromptEvent': {
        const text = textOf(record.system_prompt);
        return text === '' ? [skip(kind, 'without a prompt')] : [event(ctx, 'system', text, 0, 'system_prompt', { cwd: this.cwd })];
      }
      case 'MessageEvent':
        return this.convertMessage(record, ctx);
      case 'ActionEvent':
        return this.convertAction(record, ctx);
      case 'ObservationEvent':
      case 'AgentErrorEvent':
      case 'UserRejectObservation':
        return this.convertObservation(record, kind, ctx);
      case 'Condensation': {
        const summary = typeof record.summary === 'string' ? record.summary : '';
        return summary === '' ? [skip(kind, 'without a summary')] : [event(ctx, 'note', summary, 0, 'summary', { tags: ['summary'], cwd: this.cwd })];
      }
      default:
        return [skip(kind, BOOKKEEPING_KINDS.has(kind) ? '' : '(unknown kind)')];
    }
  }

  private convertMessage(record: Record<string, unknown>, ctx: SdkContext): ConvertedBlock[] {
    const kind = typeof record.source === 'string' ? MESSAGE_KINDS[record.source] : undefined;
    if (kind === undefined) return [issue(`${ctx.field}source`, `expected user, agent or environment, got ${JSON.stringify(record.source)}`)];
    const message = isRecord(record.llm_message) ? record.llm_message : undefined;
    if (message === undefined) return [issue(`${ctx.field}llm_message`, 'missing in a MessageEvent')];
    const out: ConvertedBlock[] = [];
    const cwd = this.cwd;
    if (typeof message.reasoning_content === 'string' && message.reasoning_content !== '') {
      out.push(event(ctx, 'assistant', message.reasoning_content, 0, 'llm_message.reasoning_content', { tags: ['thinking'], cwd }));
    }
    const content = message.content;
    const parts = typeof content === 'string' ? [{ type: 'text', text: content }] : Array.isArray(content) ? content : [];
    parts.forEach((part: unknown, index) => {
      const partField = `llm_message.content[${index}]`;
      if (!isRecord(part)) return;
      if (typeof part.text === 'string' && part.text !== '') out.push(event(ctx, kind, part.text, index + 1, partField, { cwd }));
      else if (Array.isArray(part.image_urls)) {
        part.image_urls.forEach((url: unknown, k) => {
          if (typeof url !== 'string') return;
          const image = imageUrlParts(url);
          const built = event(ctx, kind, image.content, `${index + 1}.${k}`, `${partField}.image_urls[${k}]`, { cwd, meta: image.meta });
          if (built.type === 'event' && image.binary !== undefined) built.event = { ...built.event, binary: image.binary };
          out.push(built);
        });
      }
    });
    if (out.length === 0) out.push(skip('MessageEvent', 'without content'));
    return out;
  }

  private convertAction(record: Record<string, unknown>, ctx: SdkContext): ConvertedBlock[] {
    const toolName = typeof record.tool_name === 'string' && record.tool_name !== '' ? record.tool_name : undefined;
    const toolCallId = typeof record.tool_call_id === 'string' && record.tool_call_id !== '' ? record.tool_call_id : undefined;
    if (toolName === undefined) return [issue(`${ctx.field}tool_name`, 'missing in an ActionEvent')];
    const out: ConvertedBlock[] = [];
    const cwd = this.cwd;
    const thought = [textOf(record.reasoning_content), textOf(record.thought)].filter((t) => t !== '');
    if (thought.length > 0) out.push(event(ctx, 'assistant', thought.join('\n\n'), 0, 'thought', { cwd }));
    // The model's own arguments as it sent them; the parsed action when there are none.
    const call = isRecord(record.tool_call) ? record.tool_call : {};
    const args = typeof call.arguments === 'string' && call.arguments !== '' ? call.arguments : JSON.stringify(record.action ?? {});
    const actionKind = isRecord(record.action) && typeof record.action.kind === 'string' ? { action: record.action.kind } : {};
    out.push(event(ctx, 'tool_call', args, 1, typeof call.arguments === 'string' ? 'tool_call.arguments' : 'action', { toolName, toolCallId, cwd, meta: actionKind }));
    return out;
  }

  private convertObservation(record: Record<string, unknown>, kind: string, ctx: SdkContext): ConvertedBlock[] {
    const toolName = typeof record.tool_name === 'string' && record.tool_name !== '' ? record.tool_name : undefined;
    const toolCallId = typeof record.tool_call_id === 'string' && record.tool_call_id !== '' ? record.tool_call_id : undefined;
    if (toolCallId === undefined) return [issue(`${ctx.field}tool_call_id`, `missing in an ${kind}`)];
    if (kind === 'AgentErrorEvent') {
      return [event(ctx, 'tool_result', textOf(record.error), 0, 'error', { toolName, toolCallId, tags: ['error'], cwd: this.cwd, meta: { isError: true } })];
    }
    if (kind === 'UserRejectObservation') {
      const reason = textOf(record.rejection_reason) || 'rejected';
      return [event(ctx, 'tool_result', reason, 0, 'rejection_reason', { toolName, toolCallId, tags: ['rejected'], cwd: this.cwd })];
    }
    const observation = isRecord(record.observation) ? record.observation : {};
    const metadata = isRecord(observation.metadata) ? observation.metadata : {};
    if (typeof metadata.working_dir === 'string' && metadata.working_dir !== '') this.cwd = metadata.working_dir;
    const isError = observation.is_error === true;
    const exitCode = Number.isInteger(observation.exit_code) ? observation.exit_code : metadata.exit_code;
    const meta: Record<string, unknown> = {};
    if (typeof observation.kind === 'string') meta.observation = observation.kind;
    if (typeof exitCode === 'number' && Number.isInteger(exitCode)) meta.exitCode = exitCode;
    if (isError) meta.isError = true;
    const extra = { toolName, toolCallId, tags: isError ? ['error'] : [], cwd: this.cwd, meta };
    return [event(ctx, 'tool_result', textOf(observation.content), 0, 'observation.content', extra)];
  }
}

interface SdkContext {
  keyPrefix: string;
  ts?: string | number;
  /** Prefix of field paths: `history[3].`. */
  field: string;
  model?: string | undefined;
}

interface Extra {
  toolName?: string | undefined;
  toolCallId?: string | undefined;
  tags?: readonly string[];
  cwd?: string | undefined;
  meta?: Record<string, unknown>;
}

/** The text of SDK content: a string, a TextContent, or a list of them (other parts left out). */
function textOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (isRecord(value)) return typeof value.text === 'string' ? value.text : '';
  if (Array.isArray(value)) return value.map(textOf).filter((t) => t !== '').join('\n');
  return '';
}

function event(ctx: SdkContext, kind: EventKind, content: string, part: number | string, source: string, extra: Extra = {}): ConvertedBlock {
  const meta: Record<string, unknown> = {};
  if (extra.cwd !== undefined) meta.cwd = extra.cwd;
  if (ctx.model !== undefined && (kind === 'assistant' || kind === 'tool_call')) meta.model = ctx.model;
  const built: EventInput = compactEvent({
    kind,
    content,
    key: `${ctx.keyPrefix}:${part}`,
    ts: ctx.ts,
    toolName: extra.toolName,
    toolCallId: extra.toolCallId,
    tags: [...(extra.tags ?? [])],
    meta: { ...meta, ...extra.meta },
  });
  return { type: 'event', event: built, source: `${ctx.field}${source}` };
}

function skip(kind: string, why = ''): ConvertedBlock {
  return { type: 'skip', reason: `OpenHands SDK event '${kind}'${why === '' ? '' : ` ${why}`} is not imported` };
}

function issue(field: string, message: string): ConvertedBlock {
  return { type: 'issue', message: `${field}: ${message}`, field };
}
