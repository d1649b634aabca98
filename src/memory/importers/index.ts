import { parseAnthropic } from './anthropic-importer.js';
import { parseClaudeCode } from './claude-code-importer.js';
import { parseCodex } from './codex-importer.js';
import { parseGemini } from './gemini-importer.js';
import { isRecord } from './import-item.js';
import { parseJsonl } from './jsonl-importer.js';
import { parseOpenAi } from './openai-importer.js';
import { parseOpenHands } from './openhands-importer.js';
import { parseSweAgent } from './swe-agent-importer.js';
import type { ImportFormat, ImportItem, ImportOptions, ImportSource } from './types.js';

export { IMPORT_FORMATS, IMPORT_FORMAT_NAMES, MAX_DOCUMENT_BYTES, MAX_TOOL_USE_RESULT_BYTES, CONVERSATION_SESSION_SEPARATOR } from './types.js';
export type { ImportFormat, ImportItem, ImportOptions, ImportSource, ImportedEvent, ImportIssue, ImportSkip } from './types.js';
export { parseJsonl } from './jsonl-importer.js';
export { parseOpenAi } from './openai-importer.js';
export { parseAnthropic } from './anthropic-importer.js';
export { parseClaudeCode } from './claude-code-importer.js';
export { parseCodex } from './codex-importer.js';
export { parseOpenHands } from './openhands-importer.js';
export { parseSweAgent } from './swe-agent-importer.js';
export { parseGemini } from './gemini-importer.js';

export { DETECT_FORMAT_BYTES, MAX_HEAD_BYTES, readTranscriptHead } from './transcript-head.js';
export type { TranscriptHead } from './transcript-head.js';

const CLAUDE_CODE_TYPES = new Set(['user', 'assistant', 'summary', 'system']);
const CLAUDE_CODE_ID_FIELDS = ['uuid', 'sessionId', 'leafUuid'];
const CODEX_LINE_TYPES = new Set(['session_meta', 'response_item', 'event_msg', 'turn_context', 'compacted']);
/**
 * The start of a Codex rollout as Codex serializes it (timestamp, type, payload, in that order), looked for in raw
 * text because the first line, the session_meta with the built-in instructions, can be longer than the chunk.
 */
const CODEX_ROLLOUT_START = /^\{\s*"timestamp"\s*:\s*"[^"\\]*"\s*,\s*"type"\s*:\s*"(?:session_meta|response_item|event_msg|turn_context|compacted)"\s*,\s*"payload"\s*:/;
/**
 * The start of an OpenHands evaluation output line (`output.jsonl`) as OpenHands writes it (pydantic's compact JSON,
 * `instance_id` first), looked for in raw text when the line is longer than what detection read.
 */
const OPENHANDS_EVAL_START = /^\{[ \t]*"instance_id"[ \t]*:/;
const OPENHANDS_SOURCES = new Set(['user', 'agent', 'environment']);
/** JSONL lines looked at before giving up. */
const DETECT_FORMAT_MAX_LINES = 50;

// Shape hints for a whole-JSON chat document, looked for in raw text because the first chunk is
// usually cut off mid-document and cannot be parsed.
const OPENAI_HINTS = [
  /"traj"\s*:/,
  /"tool_calls"\s*:/,
  /"tool_call_id"\s*:/,
  /"function_call"\s*:/,
  /"role"\s*:\s*"(?:system|developer|tool|function)"/,
  /"type"\s*:\s*"(?:image_url|input_audio)"/,
];
const ANTHROPIC_HINTS = [
  /"type"\s*:\s*"(?:tool_use|tool_result|thinking|redacted_thinking|image|document)"/,
  /"tool_use_id"\s*:/,
  /"stop_reason"\s*:/,
  /^\s*\{[^]*?"system"\s*:/, // a top-level-looking `system` field; OpenAI puts the system prompt in a message
];

/**
 * Guesses the format from the start of a file: pass what readTranscriptHead read (at least the first
 * DETECT_FORMAT_BYTES, and the whole first record when it is longer), decoded. Returns null when nothing fits.
 *
 * - A Codex rollout line at the start (`{"timestamp": ..., "type": "session_meta", "payload": ...}`, as Codex
 *   writes it) → `codex`, even when that first line is cut off by the end of the text; likewise an OpenHands
 *   evaluation output line (`{"instance_id": ...`, as OpenHands writes it) → `openhands`.
 * - JSON Lines (the first line parses as an object on its own, without `messages` or `traj`): the first
 *   line that is a Gemini CLI chat header (`sessionId` and `projectHash`, no `type`) → `gemini`; with a string
 *   `kind` → `jsonl`; with a string `type` of `user`, `assistant`, `summary` or `system`
 *   and a `uuid`, `sessionId` or `leafUuid` → `claude-code`; a Codex rollout line (`type` and `payload`), or a
 *   bare Codex response item of an older rollout (a message with `input_`/`output_` content parts, a function
 *   call or output with a `call_id`) → `codex`; an event with a `source` of user, agent or environment and an
 *   `action` or `observation`, or an evaluation output line (`instance_id` and a `history` array) → `openhands`.
 *   Lines that fit none (newer Claude Code files can start with `file-history-snapshot` records, older Codex
 *   rollouts with a session header) are passed over, up to 50 lines.
 * - A JSON array whose text names an OpenHands event `source` and an `action` or `observation` before any `role`,
 *   `messages` or `traj` key → `openhands`.
 * - A JSON object with a `trajectory` array, on one line or whose text names the `trajectory` key before any
 *   `role`, `messages` or `traj` key → `swe-agent`.
 * - A Gemini CLI chat document: on one line, an object with `sessionId`, `projectHash` and `messages`; indented,
 *   a text naming the `projectHash` key before any `role`, `messages` or `traj` key → `gemini`.
 * - A JSON document (starts with `[` or `{` but the first line is not a complete object): an OpenAI or
 *   Anthropic chat if the text mentions `messages`, `role` or `traj`. Shape hints decide which: OpenAI
 *   has `tool_calls`, `role: "tool"`, `tool_call_id`, system/developer roles, `traj`; Anthropic has
 *   `tool_use`/`tool_result`/`thinking`/`image` blocks, `tool_use_id`, a top-level `system` field. When both
 *   kinds of hint appear the earliest wins; when neither does (plain text turns, which both formats read
 *   the same way apart from their keys) it is `openai`.
 *
 * A plain-text Anthropic conversation is therefore detected as `openai`, and detected again as `anthropic`
 * once tool blocks appear in its first chunk; keys differ between the two, so pass the format explicitly
 * when importing such a file more than once.
 */
export function detectFormat(head: string): ImportFormat | null {
  const text = head.replace(/^\uFEFF/, '').trimStart();
  if (text === '') return null;
  if (CODEX_ROLLOUT_START.test(text)) return 'codex';
  if (text.startsWith('{')) {
    const lines = text.split('\n');
    const first = parseObject(lines[0]!);
    // A long evaluation output line that the chunk cut off.
    if (first === null && OPENHANDS_EVAL_START.test(text)) return 'openhands';
    // A SWE-agent trajectory written on one line.
    if (first !== null && typeof first.kind !== 'string' && Array.isArray(first.trajectory)) return 'swe-agent';
    // A Gemini CLI chat written on one line.
    if (first !== null && isGeminiHeader(first) && Array.isArray(first.messages)) return 'gemini';
    if (first !== null && !('messages' in first) && !('traj' in first)) {
      // JSON Lines. Records of other types (a Claude Code file-history-snapshot) may come first: look on.
      for (const line of lines.slice(0, DETECT_FORMAT_MAX_LINES)) {
        const record = line.trim() === '' ? null : parseObject(line);
        if (record === null) continue;
        const format = jsonlFormatOf(record);
        if (format !== null) return format;
      }
      return null;
    }
    if (first === null && isSweAgentDocument(text)) return 'swe-agent';
    if (first === null && isGeminiDocument(text)) return 'gemini';
  } else if (!text.startsWith('[')) {
    return null;
  } else if (isOpenHandsArray(text)) {
    return 'openhands';
  }
  if (!/"(?:messages|role|traj)"\s*:/.test(text)) return null;
  const openAiAt = earliest(text, OPENAI_HINTS);
  const anthropicAt = earliest(text, ANTHROPIC_HINTS);
  return anthropicAt < openAiAt ? 'anthropic' : 'openai';
}

function jsonlFormatOf(record: Record<string, unknown>): ImportFormat | null {
  // Before `kind`: a Gemini CLI chat header has one (`main` or `subagent`).
  if (isGeminiHeader(record)) return 'gemini';
  if (typeof record.kind === 'string') return 'jsonl';
  if (typeof record.type === 'string') {
    const hasId = CLAUDE_CODE_ID_FIELDS.some((f) => typeof record[f] === 'string');
    if (CLAUDE_CODE_TYPES.has(record.type) && hasId) return 'claude-code';
    if (isCodexLine(record, record.type)) return 'codex';
  }
  return isOpenHandsEvent(record) || isOpenHandsEvalOutput(record) ? 'openhands' : null;
}

/** An OpenHands evaluation output line: one instance of a benchmark run with its `history` of events. */
function isOpenHandsEvalOutput(record: Record<string, unknown>): boolean {
  return (typeof record.instance_id === 'string' || typeof record.instance_id === 'number') && Array.isArray(record.history);
}

/** The header of a Gemini CLI chat: the whole chat (`.json`) or the first line of one written as JSON Lines. */
function isGeminiHeader(record: Record<string, unknown>): boolean {
  return typeof record.sessionId === 'string' && typeof record.projectHash === 'string' && record.type === undefined;
}

/**
 * A Gemini CLI chat written as an indented JSON document, judged from raw text: a `projectHash` key before the
 * `messages` key (Gemini CLI writes sessionId, projectHash, startTime, lastUpdated, then messages) and no `role`
 * key before it (a Gemini message has a `type`, not a role).
 */
function isGeminiDocument(text: string): boolean {
  const hashAt = text.search(/"projectHash"\s*:\s*"/);
  if (hashAt === -1) return false;
  const chatAt = text.search(/"(?:role|messages|traj|trajectory)"\s*:/);
  return chatAt === -1 || hashAt < chatAt;
}

/** An OpenHands event: a `source` of user, agent or environment, and an action or an observation type. */
function isOpenHandsEvent(record: Record<string, unknown>): boolean {
  return typeof record.source === 'string' && OPENHANDS_SOURCES.has(record.source) && (typeof record.action === 'string' || typeof record.observation === 'string');
}

/**
 * A JSON array of OpenHands events, judged from raw text (the chunk ends mid-document): an event `source` and an
 * `action` or `observation` type, with the source before any `role`, `messages` or `traj` key. OpenHands writes an
 * event's `source` before its `tool_call_metadata`, whose LLM response holds roles; a chat document's first
 * message starts with its role.
 */
function isOpenHandsArray(text: string): boolean {
  const sourceAt = text.search(/"source"\s*:\s*"(?:user|agent|environment)"/);
  if (sourceAt === -1 || !/"(?:action|observation)"\s*:\s*"/.test(text)) return false;
  const chatAt = text.search(/"(?:role|messages|traj)"\s*:/);
  return chatAt === -1 || sourceAt < chatAt;
}

/**
 * A SWE-agent trajectory, judged from raw text: a `trajectory` array key before any `role`, `messages` or `traj`
 * key. SWE-agent writes `trajectory` first (0.x after `environment`, a retrying agent after `attempts`, whose
 * first element starts with its own trajectory); its steps' message lists and the `history` come after it.
 */
function isSweAgentDocument(text: string): boolean {
  const trajectoryAt = text.search(/"trajectory"\s*:\s*\[/);
  if (trajectoryAt === -1) return false;
  const chatAt = text.search(/"(?:role|messages|traj)"\s*:/);
  return chatAt === -1 || trajectoryAt < chatAt;
}

/**
 * A Codex rollout line: `{ type, payload }` with a rollout line type, or (older rollouts, which have no envelope)
 * a bare response item in the shape only Codex writes to a file of its own: a message with a role and an array of
 * typed content parts, or a function call or its output with a `call_id`.
 */
function isCodexLine(record: Record<string, unknown>, type: string): boolean {
  if (CODEX_LINE_TYPES.has(type)) return isRecord(record.payload);
  if (type === 'message') {
    const parts = record.content;
    return typeof record.role === 'string' && Array.isArray(parts) && parts.length > 0 && parts.every((p) => isRecord(p) && typeof p.type === 'string' && /^(?:input|output)_/.test(p.type));
  }
  if (type === 'function_call') return typeof record.call_id === 'string' && typeof record.name === 'string';
  if (type === 'function_call_output' || type === 'local_shell_call') return typeof record.call_id === 'string';
  return false;
}

function parseObject(line: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(line);
    return isRecord(value) ? value : null;
  } catch {
    return null;
  }
}

function earliest(text: string, patterns: readonly RegExp[]): number {
  let best = Infinity;
  for (const pattern of patterns) {
    const match = pattern.exec(text);
    if (match !== null) best = Math.min(best, match.index + match[0].length);
  }
  return best;
}

/**
 * Reads a transcript as a stream of items: events to append, issues (what could not be read, with the
 * line) and skips (what was recognised and deliberately not stored). JSONL formats are read line by
 * line; whole-JSON formats (openai, anthropic, swe-agent, an OpenHands array) are read whole, up to
 * MAX_DOCUMENT_BYTES. Every event carries a deterministic idempotency key, so importing the same file again,
 * or after it grew, stores each event once.
 *
 * Iterating may throw EngramError INVALID_INPUT for bad options (see {@link ImportOptions.sessionId});
 * I/O errors of the source are thrown as they come.
 */
export function parseImport(source: ImportSource, format: ImportFormat, options: ImportOptions = {}): AsyncIterable<ImportItem> {
  switch (format) {
    case 'jsonl':
      return parseJsonl(source, options);
    case 'openai':
      return parseOpenAi(source, options);
    case 'anthropic':
      return parseAnthropic(source, options);
    case 'claude-code':
      return parseClaudeCode(source, options);
    case 'codex':
      return parseCodex(source, options);
    case 'openhands':
      return parseOpenHands(source, options);
    case 'swe-agent':
      return parseSweAgent(source, options);
    case 'gemini':
      return parseGemini(source, options);
  }
}
