import type { EventInput, InputEventKind as EventKind } from '../../model/event.js';
import { MAX_INLINE_CONTENT_BYTES } from '../../model/limits.js';
import { readJsonDocument } from './document-reader.js';
import { compactEvent, eventItem, formatBytes, isRecord, issueItem, skipItem } from './import-item.js';
import type { ImportItem, ImportOptions, ImportSource } from './types.js';

/**
 * The tool name of a step whose call the history does not name. SWE-agent runs every action, its own commands
 * (`open`, `edit`, `submit`, ...) included, as a command line in the environment's bash session.
 */
const DEFAULT_TOOL_NAME = 'bash';
const HISTORY_KINDS: Record<string, EventKind> = { system: 'system', user: 'user' };

/**
 * Reads a SWE-agent trajectory (`<instance_id>.traj`): `{ trajectory: [step...], history: [message...], info }`.
 *
 * - The history up to the model's first reply (the system prompt and the task) becomes system and user events;
 *   demonstrations (`is_demo`) are skipped and reported. The rest of the history repeats the steps, with
 *   observations cut to the model's window, so the steps are read instead.
 * - Each step `{ thought, action, observation, execution_time, state }` becomes the thought as an assistant event,
 *   the action as a `tool_call` and the observation (in full) as its `tool_result`. The tool name and call id are
 *   those of the model's tool call when the history names one for the step (function calling), else `bash` and
 *   `swe-step-<index>`. `execution_time`, and `working_dir` and `open_file` of the state, go to the result's meta.
 * - `info.submission`, the patch the run produced, becomes a `note` tagged `submission` with the exit status.
 * - Earlier attempts of a retrying agent (`attempts`) are skipped: the chosen one is the top-level trajectory.
 *
 * Keys are `swe:h:<historyIndex>`, `swe:t:<stepIndex>:<part>` and `swe:submission`: SWE-agent rewrites the file
 * after every step, and earlier entries keep their index. The session is `options.sessionId`, else the caller's
 * default (the file name is the instance id).
 */
export async function* parseSweAgent(source: ImportSource, options: ImportOptions = {}): AsyncGenerator<ImportItem> {
  const doc = await readJsonDocument(source, 'swe-agent', ['trajectory/*', 'history/*', 'info', 'attempts/*'], options.onBytes);
  if (!doc.isValid) {
    yield { type: 'issue', value: doc.issue };
    return;
  }
  const root = doc.value;
  if (!isRecord(root) || !Array.isArray(root.trajectory)) {
    yield issueItem(1, 'trajectory: expected a SWE-agent trajectory, an object with a trajectory array', 'trajectory');
    return;
  }
  const { sessionId } = options;
  const event = (value: EventInput, line: number, from: string): ImportItem => eventItem(compactEvent(value), { line, sessionId, source: from });

  let history: unknown[] = [];
  if (Array.isArray(root.history)) history = root.history;
  else if (root.history !== undefined) yield issueItem(doc.lineOf('history'), 'history: expected an array of messages', 'history');

  // The model's replies in the history, one per step: they name the tool call of the step.
  const replies: Array<Record<string, unknown>> = [];
  for (const [index, entry] of history.entries()) {
    const line = doc.lineOf(`history/${index}`);
    const field = `history[${index}]`;
    if (!isRecord(entry)) {
      yield issueItem(line, `${field}: a history message must be an object`, field);
      continue;
    }
    if (entry.is_demo === true) {
      yield skipItem(line, 'SWE-agent demonstration message is not imported');
      continue;
    }
    if (entry.role === 'assistant') {
      replies.push(entry);
      continue;
    }
    // After the first reply the history holds the steps' observations, cut to the window: the steps hold them whole.
    if (replies.length > 0) continue;
    const kind = typeof entry.role === 'string' ? HISTORY_KINDS[entry.role] : undefined;
    if (kind === undefined) {
      yield issueItem(line, `${field}.role: expected system, user or assistant, got ${JSON.stringify(entry.role)}`, `${field}.role`);
      continue;
    }
    const text = messageText(entry.content);
    if (text === null) {
      yield issueItem(line, `${field}.content: expected a string or an array of text parts`, `${field}.content`);
      continue;
    }
    const meta = typeof entry.message_type === 'string' ? { messageType: entry.message_type } : {};
    yield event({ kind, content: text, key: `swe:h:${index}`, meta }, line, `${field}.content`);
  }

  for (const [index, step] of root.trajectory.entries()) {
    const line = doc.lineOf(`trajectory/${index}`);
    const field = `trajectory[${index}]`;
    if (!isRecord(step)) {
      yield issueItem(line, `${field}: a step must be an object`, field);
      continue;
    }
    const action = step.action ?? '';
    const observation = step.observation ?? '';
    if (typeof action !== 'string') {
      yield issueItem(line, `${field}.action: expected a string`, `${field}.action`);
      continue;
    }
    if (typeof observation !== 'string') {
      yield issueItem(line, `${field}.observation: expected a string`, `${field}.observation`);
      continue;
    }
    const key = (part: number): string => `swe:t:${index}:${part}`;
    if (typeof step.thought === 'string' && step.thought.trim() !== '') {
      yield event({ kind: 'assistant', content: step.thought, key: key(0) }, line, `${field}.thought`);
    }
    const meta = stepMeta(step);
    if (action.trim() === '') {
      // A step that ran nothing (the model's output could not be parsed, a limit was hit) may still say why.
      if (observation !== '') yield event({ kind: 'system', content: observation, key: key(2), meta }, line, `${field}.observation`);
      continue;
    }
    const call = toolCallOf(replies[index], action);
    const toolName = call?.name ?? DEFAULT_TOOL_NAME;
    const toolCallId = call?.id ?? `swe-step-${index}`;
    yield event({ kind: 'tool_call', content: action, key: key(1), toolName, toolCallId }, line, `${field}.action`);
    yield event({ kind: 'tool_result', content: observation, key: key(2), toolName, toolCallId, meta }, line, `${field}.observation`);
  }

  if (Array.isArray(root.attempts)) {
    for (const index of root.attempts.keys()) {
      yield skipItem(doc.lineOf(`attempts/${index}`), 'SWE-agent retry attempt is not imported (the chosen attempt is the top-level trajectory)');
    }
  }

  const info = root.info;
  if (isRecord(info) && typeof info.submission === 'string' && info.submission !== '') {
    const line = doc.lineOf('info');
    const bytes = Buffer.byteLength(info.submission, 'utf8');
    if (bytes > MAX_INLINE_CONTENT_BYTES) {
      yield skipItem(line, `SWE-agent submission over ${formatBytes(MAX_INLINE_CONTENT_BYTES)} is not imported as a note`);
    } else {
      const meta = typeof info.exit_status === 'string' ? { exitStatus: info.exit_status } : {};
      yield event({ kind: 'note', content: info.submission, key: 'swe:submission', tags: ['submission'], meta }, line, 'info.submission');
    }
  }
}

/** A history message's text: a string, or the text parts of a multimodal message joined. */
function messageText(content: unknown): string | null {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return null;
  const texts: string[] = [];
  for (const part of content) {
    if (isRecord(part) && typeof part.text === 'string') texts.push(part.text);
    else if (!(isRecord(part) && part.type === 'image_url')) return null;
  }
  return texts.join('\n');
}

/** The model's tool call of a step, when the history's reply for it is the same action and names one. */
function toolCallOf(reply: Record<string, unknown> | undefined, action: string): { name?: string; id?: string } | null {
  if (reply === undefined || reply.action !== action || !Array.isArray(reply.tool_calls)) return null;
  const call: unknown = reply.tool_calls[0];
  if (!isRecord(call)) return null;
  const fn = isRecord(call.function) ? call.function : {};
  const out: { name?: string; id?: string } = {};
  if (typeof fn.name === 'string' && fn.name !== '') out.name = fn.name;
  if (typeof call.id === 'string' && call.id !== '') out.id = call.id;
  return out;
}

/** Execution time and where the agent was (`working_dir`, `open_file`); the state's diff is in the submission. */
function stepMeta(step: Record<string, unknown>): Record<string, unknown> {
  const meta: Record<string, unknown> = {};
  if (typeof step.execution_time === 'number' && Number.isFinite(step.execution_time)) meta.executionTimeSeconds = step.execution_time;
  let state = step.state;
  // SWE-agent 0.x stored the state as JSON text.
  if (typeof state === 'string') {
    try {
      state = JSON.parse(state);
    } catch {
      state = undefined;
    }
  }
  if (isRecord(state)) {
    if (typeof state.working_dir === 'string' && state.working_dir !== '') meta.workingDir = state.working_dir;
    if (typeof state.open_file === 'string' && state.open_file !== '' && state.open_file !== 'n/a') meta.openFile = state.open_file;
  }
  return meta;
}
