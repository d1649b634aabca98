import type { EventInput } from '../../model/event.js';

/** Transcript formats the importers read. */
export const IMPORT_FORMATS = ['jsonl', 'openai', 'anthropic', 'claude-code', 'codex', 'openhands', 'swe-agent', 'gemini'] as const;
export type ImportFormat = (typeof IMPORT_FORMATS)[number];

/** What a file of each format is, for messages (`the file looks like a Codex CLI rollout`). */
export const IMPORT_FORMAT_NAMES: Readonly<Record<ImportFormat, string>> = {
  jsonl: 'Engram JSONL',
  openai: 'an OpenAI chat',
  anthropic: 'an Anthropic chat',
  'claude-code': 'a Claude Code session',
  codex: 'a Codex CLI rollout',
  openhands: 'an OpenHands event stream or evaluation output',
  'swe-agent': 'a SWE-agent trajectory',
  gemini: 'a Gemini CLI chat',
};

/**
 * Largest whole-JSON document (openai, anthropic, an OpenHands event array, a SWE-agent trajectory) read into
 * memory, in bytes. Those are one JSON value, so they cannot be streamed line by line; past this size the importer
 * refuses with an issue.
 */
export const MAX_DOCUMENT_BYTES = 256 * 1024 * 1024;

/**
 * Largest Claude Code `toolUseResult` kept in `meta.toolUseResult`, as UTF-8 bytes of its JSON. The same
 * result text is always kept in the event content; the structured copy is extra, and the meta object as a
 * whole is capped at MAX_META_JSON_CHARS.
 */
export const MAX_TOOL_USE_RESULT_BYTES = 16 * 1024;

/** One event read from a transcript. */
export interface ImportedEvent {
  /** 1-based source line: the line of the record (JSONL) or where its message starts (whole JSON). */
  line: number;
  /** The session the event belongs to, when the source or the caller names one. */
  sessionId?: string;
  event: EventInput;
  /**
   * Where in the record the event was built from (`message.content[2]`, `messages[3].content[1]`), for formats
   * whose records are not events themselves; absent for Engram JSONL, whose line is the event.
   */
  source?: string;
}

/** Something in the source that could not be turned into an event, or an event the store refused. */
export interface ImportIssue {
  /** 1-based source line; 0 for the file as a whole. */
  line: number;
  message: string;
  /**
   * Path of the offending field inside the record, e.g. `message.content[2].type`, `key`, `supersedes`; for a
   * whole-JSON document, the JSON path of the part the event was built from (`messages[3].content[1]`).
   */
  field?: string;
  /** Why, as an error code: `IDEMPOTENCY_CONFLICT` for a key reused with other content; absent means INVALID_INPUT. */
  code?: 'IDEMPOTENCY_CONFLICT';
}

/** Something recognised but intentionally not stored (e.g. a Claude Code `file-history-snapshot` record). */
export interface ImportSkip {
  line: number;
  reason: string;
}

export type ImportItem =
  | { type: 'event'; value: ImportedEvent }
  | { type: 'issue'; value: ImportIssue }
  | { type: 'skip'; value: ImportSkip };

/** Where the bytes come from. `stream` is a factory so a caller can sniff the format and then read again. */
export interface ImportSource {
  /** For progress: total bytes, if known. */
  sizeBytes?: number;
  /** The bytes. String chunks are taken as already-decoded text (invalid UTF-8 can no longer be detected). */
  stream: () => NodeJS.ReadableStream | AsyncIterable<Buffer | string>;
}

export interface ImportOptions {
  /** Called after each chunk read from the source with the total bytes read so far. */
  onBytes?: (bytesRead: number) => void;
  /**
   * The session to import into. It overrides the session ids named in the source (Claude Code
   * `sessionId`, a Codex rollout's id, a JSONL line's `sessionId`). For a document holding an array of conversations it is the
   * base: conversation `i` goes to `<sessionId>:<i>` (see CONVERSATION_SESSION_SEPARATOR), and such a
   * document cannot be imported without it.
   */
  sessionId?: string;
  /**
   * Tool names by tool call id of calls made before the part being read: an import that resumes a transcript past
   * its start (a hook reading only the lines added since its last run) names the results of those calls.
   */
  knownToolNames?: ReadonlyMap<string, string>;
}

/**
 * Joins the base session id and a conversation index. `#` would read better but SESSION_ID_PATTERN does not
 * allow it, so every session id built with it would be rejected by the store.
 */
export const CONVERSATION_SESSION_SEPARATOR = ':';
