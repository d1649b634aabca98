/**
 * What Engram accepts, in one place, with the reason behind each number. The limits are checked where every
 * interface passes (the event schema the ingestor validates with, recall, the task-state schema, the bus), so the
 * CLI, HTTP and MCP refuse the same input the same way: `INVALID_INPUT` whose `data` names the field, the limit
 * (`data.limit`, the constant's name) and its value (`data.max`).
 *
 * The sizes keep every request's work bounded: the server answers on one thread, so one request must not hold it
 * for long whatever it sends (bench/results/adversarial.md measures the worst inputs these limits allow).
 */

import { EngramError } from '../errors.js';

const KIB = 1024;
const MIB = 1024 * KIB;

/**
 * Largest content of an event kept inline, in UTF-8 bytes: every kind except a tool result (which becomes an
 * artifact above the ingest threshold) and a binary attachment's bytes. Inline content is indexed whole inside the
 * append's transaction and token-counted for context packs, so its size is work on the server's thread: indexing
 * 512 KiB of distinct random words took 90 ms. 384 KiB is ~100,000 tokens of prose, more than a message to a model
 * holds (the 300 KB pasted message of issue 12 fits); anything larger is a file to attach as a tool result or
 * binary. Over HTTP and MCP, {@link MAX_REQUEST_INDEXED_CHARS} also applies (a message of up to 320,000 characters).
 */
export const MAX_INLINE_CONTENT_BYTES = 384 * KIB;

/**
 * Largest tool result or binary attachment, in bytes (UTF-8 for text, decoded bytes for base64). Both are stored
 * as compressed artifacts with a bounded preview inline and at most {@link MAX_ARTIFACT_INDEXED_CHARS} indexed, so a large
 * output costs storage, not per-turn work. 32 MiB holds any output that fits the HTTP body limit (8 MiB) four
 * times over, for the CLI and the library, which have no body limit; a larger build log or core dump is data to
 * keep outside the memory and point to.
 */
export const MAX_ARTIFACT_CONTENT_BYTES = 32 * MIB;

/**
 * Longest recall query, in UTF-16 code units (an emoji counts 2). A query is a question or a list of keywords;
 * only its first 32 terms are searched (query-terms.ts) and an embedder reads at most a few hundred tokens of it,
 * so a longer one is pasted text whose tail changes nothing but the work. Also the limit of bus query texts.
 */
export const MAX_QUERY_CHARS = 4 * KIB;

/**
 * Deepest nesting of `meta` and task-state `extensions` (an object or array inside another counts one level).
 * Metadata is a few levels deep; deep nesting only breaks recursive code downstream: 100,000 levels overflowed
 * the stack while validating, and ~4,000 levels were stored and later failed `engram migrate`. The check itself
 * walks the value iteratively.
 */
export const MAX_JSON_DEPTH = 32;

/** Most entries (object keys and array items, at every level) of `meta` or of task-state `extensions`. */
export const MAX_JSON_ENTRIES = 2048;

/**
 * Largest `meta` object, as serialized JSON characters: metadata describes an event (a test id, an exit code, a
 * source), it is not a second content field; larger data belongs in the content, where it is indexed and
 * becomes an artifact when large.
 */
export const MAX_META_JSON_CHARS = 64 * KIB;

/**
 * Range of event timestamps, epoch milliseconds: years 0000 to 9999. Dates outside cannot be written as
 * four-digit ISO-8601 years (clients parse `+010000-...` inconsistently), and past ±8.64e15 JavaScript has no
 * date at all (`ts: 8640000000000001` failed in the store as a STORAGE_ERROR).
 */
export const MIN_TIMESTAMP_MS = -62_167_219_200_000;
export const MAX_TIMESTAMP_MS = 253_402_300_799_999;

/** What a refused value carries in `EngramError.data` besides `field`. */
export interface LimitParams {
  /** The limit's constant, e.g. `MAX_INLINE_CONTENT_BYTES`. */
  limit: string;
  max: number;
  actual?: number;
}

/** A problem found in a value: the path below the value's own field, a message, and the limit when one applies. */
export interface ValueIssue {
  path: Array<string | number>;
  message: string;
  params?: LimitParams;
}

/** Index of the first lone surrogate in `text` (half of a UTF-16 pair without the other), or -1. */
export function findLoneSurrogate(text: string): number {
  if (isWellFormed(text)) return -1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) continue;
    if (c <= 0xdbff) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        i++;
        continue;
      }
    }
    return i;
  }
  return -1;
}

const nativeIsWellFormed = (String.prototype as { isWellFormed?: (this: string) => boolean }).isWellFormed;

/** Whether `text` is valid Unicode (no lone surrogate); native where the runtime has it (Node 20+). */
function isWellFormed(text: string): boolean {
  return nativeIsWellFormed ? nativeIsWellFormed.call(text) : !/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text);
}

/**
 * The problem with a string that is stored or indexed, or undefined. A lone surrogate is refused everywhere: it is
 * not Unicode, and the backends would store it differently (invalid bytes in SQLite, U+FFFD in PostgreSQL, where
 * two keys differing only in lone surrogates collided). NUL is refused where `allowNul` is false: identifiers and
 * queries, which PostgreSQL text and full-text syntax cannot hold; content keeps it (it is stored escaped).
 */
export function stringProblem(text: string, allowNul: boolean): string | undefined {
  const at = findLoneSurrogate(text);
  if (at >= 0) {
    const unit = text.charCodeAt(at).toString(16).toUpperCase();
    return `contains a lone UTF-16 surrogate (\\u${unit}) at index ${at}; text must be valid Unicode`;
  }
  if (!allowNul && text.includes('\u0000')) return `contains a NUL character at index ${text.indexOf('\u0000')}`;
  return undefined;
}

/**
 * Checks a JSON-like value (`meta`, task-state `extensions`) without recursion: only plain JSON (objects, arrays,
 * strings, finite numbers, booleans, null), at most {@link MAX_JSON_DEPTH} levels and {@link MAX_JSON_ENTRIES}
 * entries, no lone surrogate in any key or string (nor NUL, unless `allowNul`, the default). Returns the first
 * problem, or undefined.
 */
export function jsonValueProblem(value: unknown, options: { allowNul?: boolean } = {}): ValueIssue | undefined {
  const allowNul = options.allowNul ?? true;
  const stack: Array<{ value: unknown; path: Array<string | number>; depth: number }> = [{ value, path: [], depth: 0 }];
  let entries = 0;
  while (stack.length > 0) {
    const { value: v, path, depth } = stack.pop()!;
    if (v === null || typeof v === 'boolean') continue;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return { path, message: 'must be a finite number (JSON has no NaN or Infinity)' };
      continue;
    }
    if (typeof v === 'string') {
      const problem = stringProblem(v, allowNul);
      if (problem) return { path, message: problem };
      continue;
    }
    const isArray = Array.isArray(v);
    if (typeof v !== 'object' || (!isArray && !isPlainObject(v))) {
      return { path, message: `must be JSON (objects, arrays, strings, numbers, booleans, null), not ${describeType(v)}` };
    }
    if (depth >= MAX_JSON_DEPTH) {
      return { path, message: `nests deeper than ${MAX_JSON_DEPTH} levels (MAX_JSON_DEPTH)`, params: { limit: 'MAX_JSON_DEPTH', max: MAX_JSON_DEPTH } };
    }
    const keys = isArray ? null : Object.keys(v);
    const size = isArray ? (v as unknown[]).length : keys!.length;
    entries += size;
    if (entries > MAX_JSON_ENTRIES) {
      return { path, message: `holds more than ${MAX_JSON_ENTRIES} entries, keys and array items at all levels (MAX_JSON_ENTRIES)`, params: { limit: 'MAX_JSON_ENTRIES', max: MAX_JSON_ENTRIES } };
    }
    if (isArray) {
      const items = v as unknown[];
      for (let i = size - 1; i >= 0; i--) stack.push({ value: items[i], path: [...path, i], depth: depth + 1 });
    } else {
      for (let i = keys!.length - 1; i >= 0; i--) {
        const key = keys![i]!;
        const problem = stringProblem(key, allowNul);
        if (problem) return { path: [...path, key], message: `key ${problem}` };
        stack.push({ value: (v as Record<string, unknown>)[key], path: [...path, key], depth: depth + 1 });
      }
    }
  }
  return undefined;
}

function isPlainObject(v: object): boolean {
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

function describeType(v: unknown): string {
  if (typeof v !== 'object' || v === null) return typeof v;
  return (v as object).constructor?.name ?? 'an object';
}

/** Human size: `1 MiB`, `32 MiB`, `64 KiB`. */
export function formatLimitBytes(bytes: number): string {
  if (bytes % MIB === 0) return `${bytes / MIB} MiB`;
  if (bytes % KIB === 0) return `${bytes / KIB} KiB`;
  return `${bytes} bytes`;
}

/**
 * Refuses a query text (recall, bus queries) that is too long ({@link MAX_QUERY_CHARS}), holds a NUL (full-text
 * syntax cannot) or a lone surrogate, naming `field`.
 * @throws EngramError `INVALID_INPUT`
 */
export function checkQuery(query: string, field: string): void {
  if (query.length > MAX_QUERY_CHARS) {
    throw new EngramError('INVALID_INPUT', `${field}: ${query.length} characters exceed the ${MAX_QUERY_CHARS}-character limit of a query (MAX_QUERY_CHARS); ask for the key terms`, {
      field,
      limit: 'MAX_QUERY_CHARS',
      max: MAX_QUERY_CHARS,
      actual: query.length,
    });
  }
  const problem = stringProblem(query, false);
  if (problem) throw new EngramError('INVALID_INPUT', `${field}: ${problem}`, { field });
}

/**
 * Deepest nesting of a JSON request body. The deepest `meta` ({@link MAX_JSON_DEPTH}) inside the deepest request
 * envelope fits with room to spare; the body is scanned before it is parsed because parsing itself is the cost:
 * an 8 MiB body of nested arrays took 0.9-2 s in `JSON.parse`.
 */
export const MAX_REQUEST_JSON_DEPTH = 64;

/**
 * Most values (objects, arrays and the items and members in them) in a JSON request body, counted before parsing.
 * Parsing costs by value, not by byte: 8 MiB of `{}` items took 1.8 s and 8 MiB of small keys 1.4 s, while 8 MiB
 * of one string takes 30 ms. A batch of 1,000 events with keys, tags and some meta holds about 20,000.
 */
export const MAX_REQUEST_JSON_VALUES = 50_000;

/**
 * The problem with the structure of a JSON text, found without parsing it: nesting deeper than
 * {@link MAX_REQUEST_JSON_DEPTH} or more values than {@link MAX_REQUEST_JSON_VALUES}. Malformed JSON is left to
 * the parser. Linear; strings are skipped whole.
 */
export function jsonTextProblem(text: string): { message: string; params: LimitParams } | undefined {
  let depth = 0;
  let values = 1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      // Skip to the closing quote: one not preceded by an odd run of backslashes.
      for (;;) {
        const q = text.indexOf('"', i + 1);
        if (q < 0) return undefined;
        let backslashes = 0;
        while (text.charCodeAt(q - 1 - backslashes) === 0x5c) backslashes++;
        i = q;
        if (backslashes % 2 === 0) break;
      }
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > MAX_REQUEST_JSON_DEPTH) {
        return { message: `nests deeper than ${MAX_REQUEST_JSON_DEPTH} levels (MAX_REQUEST_JSON_DEPTH)`, params: { limit: 'MAX_REQUEST_JSON_DEPTH', max: MAX_REQUEST_JSON_DEPTH } };
      }
      values++;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      depth--;
    } else if (c === 0x2c /* , */) {
      values++;
    }
    if (values > MAX_REQUEST_JSON_VALUES) {
      return {
        message: `holds more than ${MAX_REQUEST_JSON_VALUES} values (MAX_REQUEST_JSON_VALUES); send smaller batches`,
        params: { limit: 'MAX_REQUEST_JSON_VALUES', max: MAX_REQUEST_JSON_VALUES },
      };
    }
  }
  return undefined;
}

/**
 * Most events in one append (one transaction), from any interface. Each is validated, redacted, hashed and indexed
 * while the server's thread waits: 1,000 events of 1.5 KB held it for 115-125 ms through the server, 500 for about
 * half that; 5,000 (the former HTTP limit) took 4-5 times as long. Importers send 500 at a time.
 */
export const MAX_APPEND_EVENTS = 500;

/**
 * Most characters of one tool result's text put in the full-text index (the ingestor's default `maxIndexedChars`):
 * its head (20 %) and tail (80 %, where errors cluster); the whole text stays stored and readable. How much of it
 * is indexed also depends on how many distinct terms it holds ({@link ARTIFACT_INDEX_TERMS}).
 */
export const MAX_ARTIFACT_INDEXED_CHARS = 2_000_000;

/**
 * Distinct terms (estimated from samples) one tool result may put in the full-text index. SQLite's FTS5 indexes
 * inside the append's transaction, on the server's thread, and its cost follows the distinct terms: ~20 ms per
 * million characters of a build log, 145 ms per million of distinct random words (measured here, porter +
 * unicode61), at about 0.5-0.7 µs per distinct term. 60,000 terms is ~40 ms: a log is indexed up to
 * {@link MAX_ARTIFACT_INDEXED_CHARS}, 8 MiB of random words only its {@link MIN_ARTIFACT_INDEXED_CHARS} (whole,
 * it held the server ~290 ms).
 */
export const ARTIFACT_INDEX_TERMS = 60_000;

/** Characters of a tool result indexed at least, however dense its terms: ~35 ms for the densest text. */
export const MIN_ARTIFACT_INDEXED_CHARS = 250_000;

/**
 * Most characters one request (HTTP, MCP) may put in the full-text index, for the same reason: at most ~45 ms of
 * indexing for the costliest text (through the server, 384 KiB of distinct random words in one request left
 * `/healthz` unanswered for 105-137 ms). One 300 KB message fits, or one tool result with the events around it (a
 * tool result counts as {@link MIN_ARTIFACT_INDEXED_CHARS}, the cost its index is held to); larger messages, several
 * large ones, or several outputs go in separate requests or through the CLI, which serves no one else and is not
 * bound by it.
 */
export const MAX_REQUEST_INDEXED_CHARS = 320_000;

/**
 * Refuses a request's events whose indexed text would exceed {@link MAX_REQUEST_INDEXED_CHARS}: inline content
 * whole, a tool result up to what the index keeps of it. Runs before validation: inputs without string content
 * count nothing here and are refused by the schema.
 * @throws EngramError `INVALID_INPUT` naming `events`
 */
export function checkRequestIndexedChars(events: readonly unknown[]): void {
  let chars = 0;
  for (const e of events) {
    if (e === null || typeof e !== 'object') continue;
    const { kind, content } = e as { kind?: unknown; content?: unknown };
    if (typeof content !== 'string') continue;
    chars += kind === 'tool_result' ? Math.min(content.length, MIN_ARTIFACT_INDEXED_CHARS) : content.length;
  }
  if (chars > MAX_REQUEST_INDEXED_CHARS) {
    throw new EngramError(
      'INVALID_INPUT',
      `events: ${chars} characters to index in one request, over ${MAX_REQUEST_INDEXED_CHARS} (MAX_REQUEST_INDEXED_CHARS): send large outputs in separate requests`,
      { field: 'events', limit: 'MAX_REQUEST_INDEXED_CHARS', max: MAX_REQUEST_INDEXED_CHARS, actual: chars },
    );
  }
}

/**
 * Refuses an append of more than {@link MAX_APPEND_EVENTS} events.
 * @throws EngramError `INVALID_INPUT` naming `events`
 */
export function checkAppendSize(count: number): void {
  if (count > MAX_APPEND_EVENTS) {
    throw new EngramError('INVALID_INPUT', `events: ${count} events in one append; at most ${MAX_APPEND_EVENTS} (MAX_APPEND_EVENTS): send smaller batches`, {
      field: 'events',
      limit: 'MAX_APPEND_EVENTS',
      max: MAX_APPEND_EVENTS,
      actual: count,
    });
  }
}

/**
 * Characters of a tool result's `text` to index, at most `maxChars` (see {@link ARTIFACT_INDEX_TERMS}): as many as
 * keep the estimated distinct terms within budget, never fewer than {@link MIN_ARTIFACT_INDEXED_CHARS}. The density
 * of distinct terms is sampled from 16 windows of 4 K characters across the text, so the estimate costs a few
 * milliseconds and is the same for the same text (retries and `engram migrate` index alike).
 */
export function artifactIndexChars(text: string, maxChars: number): number {
  if (text.length <= MIN_ARTIFACT_INDEXED_CHARS || maxChars <= MIN_ARTIFACT_INDEXED_CHARS) return Math.min(text.length, maxChars);
  let distinct = 0;
  let sampled = 0;
  for (let k = 0; k < INDEX_SAMPLES; k++) {
    const start = Math.floor(((text.length - INDEX_SAMPLE_CHARS) * k) / (INDEX_SAMPLES - 1));
    const window = text.slice(start, start + INDEX_SAMPLE_CHARS).toLowerCase();
    distinct += new Set(window.match(TERM) ?? []).size;
    sampled += window.length;
  }
  const density = distinct / sampled;
  const allowed = density > 0 ? Math.floor(ARTIFACT_INDEX_TERMS / density) : maxChars;
  return Math.min(text.length, maxChars, Math.max(MIN_ARTIFACT_INDEXED_CHARS, allowed));
}

const INDEX_SAMPLES = 16;
const INDEX_SAMPLE_CHARS = 4096;
/**
 * A term as the full-text tokenizers cut them, near enough for a density: a run of letters and digits, or one
 * character of a script written without spaces (indexing random CJK costs like random words, not like one word).
 */
const TERM = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]|[\p{L}\p{N}]+/gu;
