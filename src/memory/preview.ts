/**
 * Structure-aware previews (ENGRAM §4.4): when a tool result is stored as an artifact, the event keeps
 * a short semantic signpost in its place, cut according to what the content is. Logs keep their tail
 * (errors cluster at the end), JSON its shape, search output its first matches, tables their header,
 * binaries a one-line description and caption. Pure functions: no I/O, no clock, no locale.
 */
import { EngramError } from '../errors.js';
import type { Preview, PreviewKind } from '../model/artifact.js';
import { formatBytes } from '../util/format-bytes.js';

export interface PreviewOptions {
  /** Declared media type, if the producer gave one (e.g. 'image/png', 'application/json', 'text/csv'). */
  mediaType?: string;
  /** Tool that produced the output (e.g. 'Grep', 'Bash', 'Read'): a hint, not a rule. */
  toolName?: string;
  /** Caption for binary content (images): kept in the preview. */
  caption?: string;
  /** The query/pattern for grep-like output, if known, to pick matching lines. */
  pattern?: string;
  /** Hard cap on the preview length in characters; default 1200. Never exceeded. */
  maxChars?: number;
}

export type ContentClass = 'json' | 'table' | 'grep' | 'log' | 'binary';

const DEFAULT_MAX_CHARS = 1200;
/** Detection looks at most this much of the start and end of the content, so cost does not grow with size. */
const HEAD_SAMPLE_CHARS = 64 * 1024;
const TAIL_SAMPLE_CHARS = 16 * 1024;
/**
 * Above this, JSON is recognised structurally instead of parsed. Measured on 4 MB of objects: JSON.parse
 * ~45 ms, pretty-printing a one-line document ~40 ms more.
 */
const JSON_PARSE_MAX_CHARS = 4 * 1024 * 1024;
/** Longest single line kept in a preview; longer lines end in `…`. */
const LINE_MAX_CHARS = 240;
const TAIL_LINES = 10;
const JSON_HEAD_LINES = 5;
const JSON_TAIL_LINES = 2;
const KEY_NAMES_SHOWN = 5;
const KEY_NAME_MAX_CHARS = 32;
const TABLE_SAMPLE_LINES = 20;
const TABLE_PREVIEW_ROWS = 2;
const GREP_SAMPLE_LINES = 200;
/**
 * Match and file totals are exact up to this much grep output and lower bounds beyond it: counting
 * costs ~20 ms per MB of short (18-byte) lines, and a 50 MB search result should not stall ingestion.
 */
const GREP_COUNT_MAX_CHARS = 8 * 1024 * 1024;
/** Share of non-empty sampled lines that must look like grep output (lower when the tool says grep). */
const GREP_MIN_SHARE = 0.8;
const GREP_MIN_SHARE_HINTED = 0.5;
const ELLIPSIS = '…';

/**
 * Which class of content this is, judged from the first 64 KB and last 16 KB. In order: binary (magic
 * bytes, a binary declared type, NUL bytes, invalid UTF-8, >10% control characters), JSON (a document
 * or JSON Lines), grep output (most lines `path:line:text` and kin; checked before JSON when `toolName`
 * is Grep/rg, with a lower bar), a delimited table, and otherwise a log.
 */
export function classifyContent(content: string | Uint8Array, options: PreviewOptions = {}): ContentClass {
  return analyze(content, options).cls;
}

/** The media type of the content: a specific declared type wins; otherwise sniffed from magic bytes or structure. */
export function sniffMediaType(content: string | Uint8Array, options: PreviewOptions = {}): string {
  return analyze(content, options).mediaType;
}

/**
 * Cuts the inline preview of an artifact: a log's last 10 lines, JSON's shape with its first 5 and last
 * 2 lines, grep's first match groups, a table's header and first 2 rows, a binary's type, size and
 * caption; each with its size. Never longer than `options.maxChars` (default 1200; whole lines are
 * dropped before one is cut), never empty, and the same input always gives the same text.
 * @throws EngramError `INVALID_INPUT` when `maxChars` is not a positive integer.
 */
export function buildPreview(content: string | Uint8Array, options: PreviewOptions = {}): Preview {
  return previewArtifact(content, options).preview;
}

/** {@link buildPreview} and {@link sniffMediaType} in one pass over the content (ingest needs both). */
export function previewArtifact(content: string | Uint8Array, options: PreviewOptions = {}): { preview: Preview; mediaType: string } {
  const maxChars = checkMaxChars(options.maxChars);
  const a = analyze(content, options);
  let kind: PreviewKind;
  let text: string;
  switch (a.cls) {
    case 'binary':
      kind = 'binary';
      text = renderBinary(a.mediaType, a.sizeBytes, options.caption, maxChars);
      break;
    case 'json':
      kind = 'json';
      text = renderJson(a.text, a.json, a.sizeBytes, maxChars);
      break;
    case 'grep':
      kind = 'grep';
      text = renderGrep(a.text, a.sizeBytes, options.pattern, maxChars);
      break;
    case 'table':
      kind = 'table';
      text = renderTable(a.text, a.table, a.sizeBytes, maxChars);
      break;
    case 'log':
      kind = 'tail';
      text = renderTail(a.text, a.sizeBytes, maxChars);
      break;
  }
  return { preview: { kind, text: hardCut(text, maxChars) }, mediaType: a.mediaType };
}

function checkMaxChars(maxChars: number | undefined): number {
  if (maxChars === undefined) return DEFAULT_MAX_CHARS;
  if (!Number.isInteger(maxChars) || maxChars < 1) {
    throw new EngramError('INVALID_INPUT', `maxChars: must be a positive integer, got ${String(maxChars)}`, { field: 'maxChars' });
  }
  return maxChars;
}

type JsonShape =
  | { form: 'document'; value: object }
  | { form: 'lines'; first: unknown; records: number }
  /** Too large to parse: top-level type and the first keys seen in the head sample. */
  | { form: 'unparsed'; top: 'object' | 'array'; firstKeys: string[] };

interface TableShape {
  delimiter: string;
  /** The header is followed by a rule line (`|---|---|`, `----+----`). */
  hasRule: boolean;
  columns: number;
}

type Analysis =
  | { cls: 'binary'; mediaType: string; sizeBytes: number }
  | { cls: 'json'; mediaType: string; sizeBytes: number; text: string; json: JsonShape }
  | { cls: 'table'; mediaType: string; sizeBytes: number; text: string; table: TableShape }
  | { cls: 'grep' | 'log'; mediaType: string; sizeBytes: number; text: string };

function analyze(content: string | Uint8Array, options: PreviewOptions): Analysis {
  const declared = normalizeMediaType(options.mediaType);
  const sizeBytes = typeof content === 'string' ? Buffer.byteLength(content, 'utf8') : content.byteLength;
  const magic = magicMediaType(content);
  if (magic || (declared && isBinaryMediaType(declared))) {
    return { cls: 'binary', mediaType: magic ?? declared ?? 'application/octet-stream', sizeBytes };
  }

  let text: string;
  if (typeof content === 'string') {
    text = content.charCodeAt(0) === 0xfeff ? content.slice(1) : content;
  } else {
    if (!bytesLookLikeText(content)) return { cls: 'binary', mediaType: declared ?? 'application/octet-stream', sizeBytes };
    text = new TextDecoder('utf-8').decode(content); // drops a UTF-8 BOM
  }
  const head = text.length > HEAD_SAMPLE_CHARS + TAIL_SAMPLE_CHARS ? text.slice(0, HEAD_SAMPLE_CHARS) : text;
  const tail = head === text ? text : text.slice(-TAIL_SAMPLE_CHARS);
  if (looksGarbled(head) || (tail !== head && looksGarbled(tail))) {
    return { cls: 'binary', mediaType: declared ?? 'application/octet-stream', sizeBytes };
  }
  // Only a generic declaration is refined by sniffing; a specific one is the producer's word.
  const pick = (sniffed: string): string => (declared && declared !== 'text/plain' ? declared : sniffed);

  const headLines = completeLines(head, head !== text);
  const hintedGrep = isGrepTool(options.toolName);
  if (hintedGrep && looksLikeGrep(headLines, GREP_MIN_SHARE_HINTED)) {
    return { cls: 'grep', mediaType: pick('text/plain'), sizeBytes, text };
  }
  const json = detectJson(text, head, tail, headLines);
  if (json) {
    return { cls: 'json', mediaType: pick(json.form === 'lines' ? 'application/x-ndjson' : 'application/json'), sizeBytes, text, json };
  }
  if (!hintedGrep && looksLikeGrep(headLines, GREP_MIN_SHARE)) {
    return { cls: 'grep', mediaType: pick('text/plain'), sizeBytes, text };
  }
  const table = detectTable(headLines, head === text);
  if (table) {
    const sniffed = table.delimiter === '\t' ? 'text/tab-separated-values' : table.delimiter === '|' ? 'text/markdown' : 'text/csv';
    return { cls: 'table', mediaType: pick(sniffed), sizeBytes, text, table };
  }
  return { cls: 'log', mediaType: pick('text/plain'), sizeBytes, text };
}

function normalizeMediaType(mediaType: string | undefined): string | undefined {
  const base = mediaType?.split(';')[0]?.trim().toLowerCase();
  return base ? base : undefined;
}

function isGrepTool(toolName: string | undefined): boolean {
  const name = toolName?.toLowerCase();
  return name === 'grep' || name === 'rg' || name === 'ripgrep';
}

const BINARY_MEDIA_TYPES = new Set(
  ['octet-stream', 'pdf', 'zip', 'gzip', 'x-gzip', 'x-tar', 'x-bzip2', 'x-xz', 'x-7z-compressed', 'zstd', 'wasm', 'x-sqlite3', 'msword', 'vnd.ms-excel'].map(
    (t) => `application/${t}`,
  ),
);

function isBinaryMediaType(mediaType: string): boolean {
  if (mediaType === 'image/svg+xml') return false; // SVG is XML text
  if (/^(image|audio|video|font)\//.test(mediaType)) return true;
  return BINARY_MEDIA_TYPES.has(mediaType) || mediaType.startsWith('application/vnd.openxmlformats-officedocument.');
}

const MAGIC: ReadonlyArray<{ mediaType: string; bytes: ReadonlyArray<number | null> }> = [
  { mediaType: 'image/png', bytes: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] },
  { mediaType: 'image/jpeg', bytes: [0xff, 0xd8, 0xff] },
  { mediaType: 'image/gif', bytes: [0x47, 0x49, 0x46, 0x38, null, 0x61] }, // GIF87a / GIF89a
  // RIFF????WEBP: bytes 4-7 are the chunk size.
  { mediaType: 'image/webp', bytes: [0x52, 0x49, 0x46, 0x46, null, null, null, null, 0x57, 0x45, 0x42, 0x50] },
  { mediaType: 'application/pdf', bytes: [0x25, 0x50, 0x44, 0x46, 0x2d] }, // %PDF-
  { mediaType: 'application/zip', bytes: [0x50, 0x4b, 0x03, 0x04] },
  { mediaType: 'application/gzip', bytes: [0x1f, 0x8b] },
];

/** Magic-byte sniffing; a string is read as Latin-1 so binary passed as a "binary string" is still caught. */
function magicMediaType(content: string | Uint8Array): string | undefined {
  const byteAt = typeof content === 'string' ? (i: number) => content.charCodeAt(i) : (i: number) => content[i];
  for (const m of MAGIC) {
    if (content.length < m.bytes.length) continue;
    if (m.bytes.every((b, i) => b === null || byteAt(i) === b)) return m.mediaType;
  }
  return undefined;
}

/** NUL bytes or invalid UTF-8 in the sampled head or tail mean binary. */
function bytesLookLikeText(bytes: Uint8Array): boolean {
  const whole = bytes.length <= HEAD_SAMPLE_CHARS + TAIL_SAMPLE_CHARS;
  const head = whole ? bytes : bytes.subarray(0, HEAD_SAMPLE_CHARS);
  let tail = whole ? undefined : bytes.subarray(bytes.length - TAIL_SAMPLE_CHARS);
  if (head.includes(0) || tail?.includes(0)) return false;
  // The tail sample may start inside a multi-byte character: skip up to 3 continuation bytes.
  for (let skip = 0; tail && skip < 3 && ((tail[0] ?? 0) & 0xc0) === 0x80; skip++) tail = tail.subarray(1);
  try {
    // `stream: true` tolerates a character cut at the end of a sample; `fatal` throws on invalid UTF-8.
    new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: !whole });
    if (tail) new TextDecoder('utf-8', { fatal: true }).decode(tail);
  } catch {
    return false;
  }
  return true;
}

/** NULs, or more than 10% control characters / U+FFFD: bytes decoded as text, not text. */
function looksGarbled(sample: string): boolean {
  let bad = 0;
  for (let i = 0; i < sample.length; i++) {
    const c = sample.charCodeAt(i);
    if (c === 0) return true;
    // Tab, LF, FF, CR and ESC (ANSI colours) are normal in tool output.
    if ((c < 32 && c !== 9 && c !== 10 && c !== 12 && c !== 13 && c !== 27) || c === 0xfffd) bad++;
  }
  return bad > 0 && bad * 10 > sample.length;
}

function detectJson(text: string, head: string, tail: string, headLines: string[]): JsonShape | undefined {
  const start = firstNonWhitespace(head);
  const open = head[start];
  if (open !== '{' && open !== '[') return undefined;

  if (text.length <= JSON_PARSE_MAX_CHARS) {
    try {
      const value: unknown = JSON.parse(text);
      if (value !== null && typeof value === 'object') return { form: 'document', value };
    } catch {
      // Not one document: maybe JSON Lines.
    }
    return detectJsonLines(iterateLines(text), () => countNonEmptyLines(text));
  }
  const lines = detectJsonLines(headLines.slice(0, 50), () => countNonEmptyLines(text));
  if (lines) return lines;
  // Too large to parse: opening bracket, a valid JSON token stream in the head, the matching closer at the end.
  const close = open === '{' ? '}' : ']';
  if (tail.trimEnd().endsWith(close)) {
    const scan = scanJsonHead(head.slice(start));
    if (scan.isValid) return { form: 'unparsed', top: open === '{' ? 'object' : 'array', firstKeys: scan.keys };
  }
  return undefined;
}

/** JSON Lines: at least two non-empty lines, each an object or array that parses. Stops at the first that fails. */
function detectJsonLines(lines: Iterable<string>, countRecords: () => number): JsonShape | undefined {
  let first: unknown;
  let n = 0;
  for (const line of lines) {
    const t = line.trim();
    if (t === '') continue;
    if (!(t.startsWith('{') || t.startsWith('['))) return undefined;
    try {
      const v: unknown = JSON.parse(t);
      if (n === 0) first = v;
    } catch {
      return undefined;
    }
    n++;
  }
  return n >= 2 ? { form: 'lines', first, records: countRecords() } : undefined;
}

/**
 * A cheap tokenizer over the head of a large JSON document: brackets must nest, and outside strings
 * only JSON punctuation, numbers and the letters of true/false/null may appear. Also collects the
 * first top-level keys of an object.
 */
function scanJsonHead(s: string): { isValid: boolean; keys: string[] } {
  const stack: number[] = [];
  const keys: string[] = [];
  let inString = false;
  let isEscaped = false;
  let stringStart = 0;
  let pendingKey: string | undefined;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (inString) {
      if (isEscaped) isEscaped = false;
      else if (c === 0x5c) isEscaped = true;
      else if (c === 0x22) {
        inString = false;
        if (stack.length === 1 && stack[0] === 0x7b) pendingKey = s.slice(stringStart, i);
      }
      continue;
    }
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) continue;
    if (c === 0x22) {
      inString = true;
      stringStart = i + 1;
      continue;
    }
    if (c === 0x3a && pendingKey !== undefined) {
      if (keys.length <= KEY_NAMES_SHOWN) keys.push(decodeJsonString(pendingKey));
    }
    pendingKey = undefined;
    if (c === 0x7b || c === 0x5b) stack.push(c);
    else if (c === 0x7d || c === 0x5d) {
      const top = stack.pop();
      if (top === undefined || (c === 0x7d) !== (top === 0x7b)) return { isValid: false, keys };
      // The document closed inside the head sample, yet the content is larger: not one document.
      if (stack.length === 0) return { isValid: false, keys };
    } else if (c >= 128 || JSON_BARE_CHARS[c] !== 1) {
      return { isValid: false, keys };
    }
  }
  return { isValid: true, keys };
}

/** Characters allowed outside strings besides brackets: punctuation, numbers, true/false/null. */
const JSON_BARE_CHARS = new Uint8Array(128);
for (const ch of ':,0123456789.eE+-truefalsn') JSON_BARE_CHARS[ch.charCodeAt(0)] = 1;

function decodeJsonString(raw: string): string {
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return raw;
  }
}

type GrepKind = 'match' | 'context' | 'separator' | 'heading' | 'numbered-match' | 'numbered-context';

// `path:line:text` (grep -n, rg), `path-line-text` (context lines), `path:text` (grep -r without -n).
// Paths hold no whitespace and none of ():<>"'=, so `src/a.ts(12,5): error` (tsc) is not a match line.
const PATH_CHARS = String.raw`(?:[A-Za-z]:)?[^\s:()<>"'=,]+?`;
const LINE_MATCH = new RegExp(String.raw`^(${PATH_CHARS}):(\d+):`);
const LINE_CONTEXT = new RegExp(String.raw`^(${PATH_CHARS})-(\d+)-`);
// Not `path::name` (pytest -v node ids: `tests/test_a.py::test_b PASSED`).
const PATH_ONLY_MATCH = new RegExp(String.raw`^(${PATH_CHARS}):(?!:)`);
// `12:text` / `12-text` from grep -n on one file or under an rg --heading file name.
const NUMBERED_MATCH = /^\d+:/;
const NUMBERED_CONTEXT = /^\d+-/;
// ...but not times (`12:30:05 INFO`) or dates (`2024-05-01 ...`), which open many log lines.
const TIME_PREFIX = /^\d{1,2}:\d{2}\b/;
const DATE_PREFIX = /^\d{1,4}-\d{1,2}-\d{1,4}(?!\d)/;

/** A path with a directory separator or a file extension (`src/a.ts`, `README.md`). */
function isPathLike(p: string): boolean {
  return !p.startsWith('-') && (/[/\\]/.test(p) || /\.[A-Za-z0-9_]{1,10}$/.test(p));
}

/** `Makefile`, `Dockerfile`: accepted as a path only when a line number follows. */
function isBareFileName(p: string): boolean {
  return /^[A-Za-z_][\w.-]*$/.test(p);
}

function parseGrepLine(line: string): { kind: GrepKind; path?: string } | undefined {
  if (line === '--') return { kind: 'separator' };
  let m = LINE_MATCH.exec(line);
  if (m && (isPathLike(m[1]!) || isBareFileName(m[1]!))) return { kind: 'match', path: m[1]! };
  m = LINE_CONTEXT.exec(line);
  if (m && isPathLike(m[1]!)) return { kind: 'context', path: m[1]! };
  if (NUMBERED_MATCH.test(line) && !TIME_PREFIX.test(line)) return { kind: 'numbered-match' };
  if (NUMBERED_CONTEXT.test(line) && !DATE_PREFIX.test(line)) return { kind: 'numbered-context' };
  m = PATH_ONLY_MATCH.exec(line);
  if (m && isPathLike(m[1]!)) return { kind: 'match', path: m[1]! };
  if (!/\s/.test(line) && isPathLike(line)) return { kind: 'heading', path: line };
  return undefined;
}

interface GrepEntry {
  line: string;
  kind: GrepKind | undefined;
  /** File the line belongs to, from its own prefix or the preceding rg --heading line. */
  path: string | undefined;
}

/**
 * Parses lines in order, lazily (the whole content is scanned for totals). A path-only line counts as
 * an rg --heading file name only when a numbered line follows it; the name holds until a blank line.
 */
function* parseGrepLines(lines: Iterable<string>): Generator<GrepEntry> {
  let heading: string | undefined;
  let pending: GrepEntry | undefined;
  for (const raw of lines) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    const isBlank = line.trim() === '';
    const parsed = isBlank ? undefined : parseGrepLine(line);
    const entry: GrepEntry = { line, kind: parsed?.kind, path: parsed?.path };
    const isNumbered = entry.kind === 'numbered-match' || entry.kind === 'numbered-context';
    if (pending) {
      if (isNumbered) heading = pending.path;
      else pending.kind = undefined;
      yield pending;
      pending = undefined;
    }
    if (isNumbered) entry.path = heading;
    else if (isBlank) heading = undefined;
    if (entry.kind === 'heading') pending = entry;
    else yield entry;
  }
  if (pending) yield { ...pending, kind: undefined };
}

function isMatch(kind: GrepKind | undefined): boolean {
  return kind === 'match' || kind === 'numbered-match';
}

function looksLikeGrep(headLines: string[], minShare: number): boolean {
  let nonEmpty = 0;
  let grepLike = 0;
  let matches = 0;
  for (const e of parseGrepLines(headLines.slice(0, GREP_SAMPLE_LINES))) {
    if (e.line.trim() === '') continue;
    nonEmpty++;
    if (e.kind !== undefined) grepLike++;
    if (isMatch(e.kind)) matches++;
  }
  return matches > 0 && nonEmpty >= 2 && grepLike >= nonEmpty * minShare;
}

const DELIMITERS = ['\t', ',', ';', '|'] as const;
/** `|---|:--:|`, `----+-----`, `=====`: the rule under a markdown or psql table header. */
const RULE_LINE = /^[\s|+:=-]*[-=]{3,}[\s|+:=-]*$/;

/** Counts `delimiter` outside double quotes (and, for pipes, not escaped as `\|`). */
function countDelimiters(line: string, delimiter: string): number {
  let n = 0;
  let inQuotes = false;
  const quoteAware = delimiter !== '|';
  for (let i = 0; i < line.length; i++) {
    const ch = line[i];
    if (quoteAware && ch === '"') inQuotes = !inQuotes;
    else if (ch === delimiter && !inQuotes && !(delimiter === '|' && line[i - 1] === '\\')) n++;
  }
  return n;
}

/**
 * A table when every sampled line has the header's delimiter count, plus guards against look-alikes:
 * prose with commas, JSON-ish lines, code ending in `;`, tab-indented code and `cat -n` listings.
 */
function detectTable(headLines: string[], isWholeContent: boolean): TableShape | undefined {
  const lines = headLines.filter((l) => l.trim() !== '').slice(0, TABLE_SAMPLE_LINES).map((l) => l.replace(/\r$/, ''));
  const header = lines[0];
  if (header === undefined) return undefined;
  const hasRule = lines.length > 1 && RULE_LINE.test(lines[1]!);
  const rows = lines.slice(hasRule ? 2 : 1);
  for (const delimiter of DELIMITERS) {
    const count = countDelimiters(header, delimiter);
    if (count === 0) continue;
    const minRows = delimiter === ',' || delimiter === ';' ? 2 : 1;
    let body = rows;
    // psql ends its tables with a `(3 rows)` footer.
    const last = body[body.length - 1];
    if (delimiter === '|' && isWholeContent && body.length > minRows && countDelimiters(last!, delimiter) !== count) body = body.slice(0, -1);
    if (body.length < minRows || !body.every((r) => countDelimiters(r, delimiter) === count)) continue;
    const fields = splitFields(header, delimiter);
    if (delimiter === '|') {
      if (!hasRule && count < 2) continue;
      if (!hasRule && !header.trim().startsWith('|')) continue;
    } else {
      if (fields[0]!.trim() === '' && delimiter === '\t') continue; // tab-indented code
      if (fields[fields.length - 1]!.trim() === '') continue; // `foo();` lines, trailing delimiters
      if (lines.every((l) => /^\s+\d+\s*$/.test(splitFields(l, delimiter)[0]!))) continue; // `cat -n` listing
    }
    if ((delimiter === ',' || delimiter === ';') && (/^\s*[[{]/.test(header) || !looksLikeTabularText(header, rows, delimiter))) continue;
    const columns = delimiter === '|' ? fields.filter((f, i) => f.trim() !== '' || (i > 0 && i < fields.length - 1)).length : fields.length;
    return { delimiter, hasRule, columns };
  }
  return undefined;
}

/** Prose has long fields and sentence endings; CSV headers are short names. */
function looksLikeTabularText(header: string, rows: string[], delimiter: string): boolean {
  if (splitFields(header, delimiter).some((f) => f.trim().length > 64)) return false;
  const sentences = [header, ...rows].filter((l) => /[.!?:]["')]?\s*$/.test(l)).length;
  return sentences * 2 <= rows.length + 1;
}

/** Splits on `delimiter` outside double quotes (quotes are kept in the fields). */
function splitFields(line: string, delimiter: string): string[] {
  if (delimiter === '|' || !line.includes('"')) return line.split(delimiter);
  const fields: string[] = [];
  let inQuotes = false;
  let start = 0;
  for (let i = 0; i < line.length; i++) {
    if (line[i] === '"') inQuotes = !inQuotes;
    else if (line[i] === delimiter && !inQuotes) {
      fields.push(line.slice(start, i));
      start = i + 1;
    }
  }
  fields.push(line.slice(start));
  return fields;
}

function renderBinary(mediaType: string, sizeBytes: number, caption: string | undefined, maxChars: number): string {
  const head = `[binary: ${mediaType}, ${formatBytes(sizeBytes)}]`;
  const c = caption?.trim();
  return hardCut(c ? `${head}\ncaption: ${c}` : head, maxChars);
}

function renderTail(text: string, sizeBytes: number, maxChars: number): string {
  const total = countLines(text);
  if (total === 0) return '[log: empty]';
  const { lines, isFromStart } = lastLines(text, TAIL_LINES);
  const size = `${plural(total, 'line')}, ${formatBytes(sizeBytes)}`;
  if (lines.length === 0) return `[log: ${size}; all blank]`;
  const shown = lines.map((l) => cleanLine(l, maxChars));
  return fitPlans(
    range(shown.length, 1).map((k) => () => {
      const isAll = isFromStart && k === shown.length;
      const header = isAll ? `[log: ${size}]` : `[log: ${size}; last ${plural(k, 'line')}]`;
      return [header, ...shown.slice(-k)].join('\n');
    }),
    maxChars,
  );
}

function renderJson(text: string, json: JsonShape, sizeBytes: number, maxChars: number): string {
  const header = jsonHeader(json, sizeBytes);
  let display = text.trim();
  // A one-line document says more pretty-printed: the head then shows its first keys.
  if (json.form === 'document' && display.indexOf('\n') < 0) display = JSON.stringify(json.value, null, 2);
  const isOneLine = display.indexOf('\n') < 0;
  const total = isOneLine ? 1 : countLines(display);
  const headPart = firstLines(display, JSON_HEAD_LINES).map((l) => cleanLine(l, maxChars));
  const tailPart = lastLines(display, JSON_TAIL_LINES).lines.map((l) => cleanLine(l, maxChars));
  const plans: Array<[number, number]> = [[5, 2], [4, 2], [3, 2], [3, 1], [2, 1], [1, 1], [1, 0], [0, 0]];
  return fitPlans(
    plans.map(([h, t]) => () => {
      let body: string[];
      if (isOneLine) {
        // One line too large to parse and pretty-print: its start, and its very end.
        body = h > 0 ? [...headPart] : [];
        if (t > 0 && display.length > LINE_MAX_CHARS) body.push('...', ELLIPSIS + cleanLine(display.slice(-80), maxChars).trimStart());
      } else if (h + t >= total) {
        body = firstLines(display, total).map((l) => cleanLine(l, maxChars));
      } else {
        body = [...headPart.slice(0, h), '...', ...tailPart.slice(tailPart.length - t)];
      }
      return [header, ...body].join('\n');
    }),
    maxChars,
  );
}

function jsonHeader(json: JsonShape, sizeBytes: number): string {
  const size = formatBytes(sizeBytes);
  switch (json.form) {
    case 'document':
      return `[json: ${describeJsonValue(json.value)}; ${size}]`;
    case 'lines':
      return `[json lines: ${plural(json.records, 'record')}; first record: ${describeJsonValue(json.first)}; ${size}]`;
    case 'unparsed': {
      const what = json.top === 'object' ? 'keys' : 'items';
      const keys = json.firstKeys.length > 0 ? `; first keys: ${keyList(json.firstKeys, json.firstKeys.length)}` : '';
      return `[json: ${json.top}, ${what} not counted (${size}, too large to parse)${keys}]`;
    }
  }
}

function describeJsonValue(value: unknown): string {
  if (Array.isArray(value)) {
    const first: unknown = value[0];
    const item = first !== null && typeof first === 'object' && !Array.isArray(first) ? `; first item: ${describeJsonValue(first)}` : '';
    return `array, ${plural(value.length, 'item')}${item}`;
  }
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value);
    return `object, ${plural(keys.length, 'key')}${keys.length > 0 ? `: ${keyList(keys, keys.length)}` : ''}`;
  }
  return value === null ? 'null' : typeof value;
}

function keyList(keys: string[], total: number): string {
  const shown = keys.slice(0, KEY_NAMES_SHOWN).map((k) => truncateEnd(k.replace(/\s+/g, ' '), KEY_NAME_MAX_CHARS));
  return total > KEY_NAMES_SHOWN ? `${shown.join(', ')}, ${ELLIPSIS}` : shown.join(', ');
}

function renderTable(text: string, table: TableShape, sizeBytes: number, maxChars: number): string {
  const lines = firstNonEmptyLines(text, 1 + (table.hasRule ? 1 : 0) + TABLE_PREVIEW_ROWS).map((l) => cleanLine(l, maxChars));
  const headLines = lines.slice(0, table.hasRule ? 2 : 1);
  const rows = lines.slice(headLines.length);
  // psql closes its tables with a `(3 rows)` footer, which is not a row.
  const hasFooter = table.delimiter === '|' && /^\(\d+ rows?\)$/.test(lastLines(text, 1).lines[0]?.trim() ?? '');
  const rowCount = Math.max(0, countNonEmptyLines(text) - headLines.length - (hasFooter ? 1 : 0));
  const format = { '\t': 'tsv', ',': 'csv', ';': 'semicolon-separated', '|': 'pipe table' }[table.delimiter] ?? 'table';
  const footer = `[${plural(rowCount, 'row')} total; ${format}, ${plural(table.columns, 'column')}, ${formatBytes(sizeBytes)}]`;
  return fitPlans(
    range(rows.length, 0).map((k) => () => [...headLines, ...rows.slice(0, k), footer].join('\n')),
    maxChars,
  );
}

function renderGrep(text: string, sizeBytes: number, pattern: string | undefined, maxChars: number): string {
  // Totals, one line at a time; over a bounded prefix of huge output, where they become lower bounds.
  const isCounted = text.length <= GREP_COUNT_MAX_CHARS;
  const counted = isCounted ? text : text.slice(0, text.lastIndexOf('\n', GREP_COUNT_MAX_CHARS) + 1);
  let matchCount = 0;
  const files = new Set<string>();
  for (const e of parseGrepLines(iterateLines(counted))) {
    if (!isMatch(e.kind)) continue;
    matchCount++;
    if (e.path !== undefined) files.add(e.path);
  }
  const atLeast = isCounted ? '' : '≥';
  const where = files.size > 0 ? ` in ${atLeast}${plural(files.size, 'file')}` : '';
  const header = (shown: number): string =>
    `[grep: ${atLeast}${plural(matchCount, 'match', 'matches')}${where}, ${formatBytes(sizeBytes)}; ${
      isCounted && shown === matchCount ? 'all shown' : `first ${shown} shown`
    }]`;

  // Groups from the head of the output: runs of lines of one file, split at `--` and blank lines.
  const head = text.length > HEAD_SAMPLE_CHARS ? text.slice(0, HEAD_SAMPLE_CHARS) : text;
  const groups: Array<{ entries: GrepEntry[]; isAfterBreak: boolean }> = [];
  let current: GrepEntry[] = [];
  let isAfterBreak = false;
  for (const e of parseGrepLines(completeLines(head, head !== text))) {
    const isBreak = e.kind === 'separator' || e.kind === 'heading' || e.kind === undefined || e.line.trim() === '';
    if (isBreak || (current.length > 0 && current[current.length - 1]!.path !== e.path)) {
      if (current.length > 0) groups.push({ entries: current, isAfterBreak });
      current = [];
      isAfterBreak = isBreak;
    }
    if (!isBreak || (e.kind === undefined && e.line.trim() !== '')) current.push(e);
  }
  if (current.length > 0) groups.push({ entries: current, isAfterBreak });

  const needle = pattern?.trim().toLowerCase();
  const hasNeedle = (e: GrepEntry): boolean => !!needle && isMatch(e.kind) && e.line.toLowerCase().includes(needle);
  const isPreferred = groups.map((g) => g.entries.some(hasNeedle));
  // Groups with a line containing the pattern first, then the rest, each in output order.
  const order = groups.map((_, i) => i).sort((a, b) => Number(isPreferred[b]) - Number(isPreferred[a]) || a - b);

  // Each line is cleaned once, however many candidate renders it appears in.
  const cleanedLines = new Map<string, string>();
  const clean = (line: string): string => {
    let c = cleanedLines.get(line);
    if (c === undefined) {
      c = cleanLine(line, maxChars);
      cleanedLines.set(line, c);
    }
    return c;
  };
  const render = (chosen: Array<{ index: number; entries: GrepEntry[] }>): string => {
    const out: string[] = [];
    let shown = 0;
    let lastHeading: string | undefined;
    const sorted = [...chosen].sort((a, b) => a.index - b.index);
    sorted.forEach((c, i) => {
      // `--` where the original had a break or where groups were left out, as grep -C prints it.
      if (i > 0 && (c.index !== sorted[i - 1]!.index + 1 || groups[c.index]?.isAfterBreak !== false)) out.push('--');
      // Lines under an rg --heading file name carry no path: repeat the file name once per file.
      const first = c.entries[0];
      if (first && first.kind?.startsWith('numbered') && first.path !== undefined && first.path !== lastHeading) {
        out.push(clean(first.path));
        lastHeading = first.path;
      }
      for (const e of c.entries) {
        out.push(clean(e.line));
        if (isMatch(e.kind)) shown++;
      }
    });
    return [header(shown), ...out].join('\n');
  };

  // Greedy, in preference order: a group is kept when the exact render still fits. A group whose lines alone
  // cannot fit is skipped without rendering; re-rendering for every group made 20 KB of one-line groups
  // cost 1.5 ms (quadratic), this keeps it linear.
  const chosen: Array<{ index: number; entries: GrepEntry[] }> = [];
  let usedChars = render(chosen).length;
  for (const index of order) {
    const entries = groups[index]!.entries;
    let lowerBound = 0;
    for (const e of entries) {
      lowerBound += 1 + clean(e.line).length;
      if (usedChars + lowerBound > maxChars) break;
    }
    if (usedChars + lowerBound > maxChars) continue;
    const candidate = [...chosen, { index, entries }];
    const length = render(candidate).length;
    if (length <= maxChars) {
      chosen.push(candidate[candidate.length - 1]!);
      usedChars = length;
    }
  }
  if (chosen.length === 0 && order.length > 0) {
    // Not one group fits whole: as many lines of the best group as fit, from its first preferred match.
    const group = groups[order[0]!]!.entries;
    const firstPreferred = group.findIndex(hasNeedle);
    const from = Math.max(0, firstPreferred - 1);
    const fits = (n: number): boolean => render([{ index: 0, entries: group.slice(from, from + n) }]).length <= maxChars;
    // Binary search for the most lines that fit: a group can hold thousands of lines.
    let lo = 1;
    let hi = group.length - from;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (fits(mid)) lo = mid;
      else hi = mid - 1;
    }
    chosen.push({ index: 0, entries: group.slice(from, from + lo) });
  }
  return render(chosen);
}

// Whole-content scans below walk with indexOf and never split the content into an array.

/** The first plan whose text fits; failing all, the last plan cut to size. Plans go from richest to leanest. */
function fitPlans(plans: Array<() => string>, maxChars: number): string {
  let last = '';
  for (const plan of plans) {
    last = plan();
    if (last.length <= maxChars) return last;
  }
  return hardCut(last, maxChars);
}

function hardCut(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : truncateEnd(text, maxChars);
}

/** Cuts to at most `maxChars`, ending in `…`, without splitting a surrogate pair. */
function truncateEnd(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  let end = Math.max(0, maxChars - 1);
  const c = text.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return text.slice(0, end) + ELLIPSIS;
}

const ANSI_ESCAPE = /\u001b\[[0-9;?]*[ -/]*[@-~]/g;

/** A line as a terminal would show it: no ANSI colours, only the last `\r`-overwritten segment, capped. */
function cleanLine(line: string, maxChars: number): string {
  let l = line.replace(ANSI_ESCAPE, '');
  if (l.includes('\r')) {
    const parts = l.split('\r').filter((p) => p !== '');
    l = parts[parts.length - 1] ?? '';
  }
  return truncateEnd(l.trimEnd(), Math.min(LINE_MAX_CHARS, maxChars));
}

function* iterateLines(text: string): Generator<string> {
  let start = 0;
  while (start < text.length) {
    const nl = text.indexOf('\n', start);
    const end = nl < 0 ? text.length : nl;
    yield text.slice(start, end);
    start = end + 1;
  }
}

/** Lines of a sample; when the sample was cut from a larger text, its last (partial) line is dropped. */
function completeLines(sample: string, isCut: boolean): string[] {
  const lines = [...iterateLines(sample)];
  if (isCut && lines.length > 1) lines.pop();
  return lines;
}

function firstLines(text: string, n: number): string[] {
  const out: string[] = [];
  for (const l of iterateLines(text)) {
    if (out.length >= n) break;
    out.push(l);
  }
  return out;
}

function firstNonEmptyLines(text: string, n: number): string[] {
  const out: string[] = [];
  for (const l of iterateLines(text)) {
    if (out.length >= n) break;
    if (l.trim() !== '') out.push(l);
  }
  return out;
}

/** The last `n` lines, after dropping trailing blank lines; `isFromStart` when they are all there is. */
function lastLines(text: string, n: number): { lines: string[]; isFromStart: boolean } {
  let end = text.length;
  while (end > 0 && isWhitespace(text.charCodeAt(end - 1))) end--;
  const lines: string[] = [];
  if (end === 0) return { lines, isFromStart: true };
  let pos = end;
  while (lines.length < n) {
    const nl = pos > 0 ? text.lastIndexOf('\n', pos - 1) : -1;
    lines.push(text.slice(nl + 1, pos));
    if (nl < 0) return { lines: lines.reverse(), isFromStart: true };
    pos = nl;
  }
  return { lines: lines.reverse(), isFromStart: false };
}

function countLines(text: string): number {
  if (text.length === 0) return 0;
  let n = 0;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) n++;
  return text.endsWith('\n') ? n : n + 1;
}

/** Lines with at least one character other than `\r`; whitespace-only lines are rare enough to count. */
function countNonEmptyLines(text: string): number {
  let n = 0;
  let start = 0;
  while (start < text.length) {
    const nl = text.indexOf('\n', start);
    const end = nl < 0 ? text.length : nl;
    if (end - start > (text.charCodeAt(end - 1) === 13 ? 1 : 0)) n++;
    start = end + 1;
  }
  return n;
}

function isWhitespace(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13) || c === 0xa0 || c === 0xfeff;
}

function firstNonWhitespace(text: string): number {
  const m = /\S/.exec(text);
  return m ? m.index : text.length;
}

/** `from` down to `to`, inclusive. */
function range(from: number, to: number): number[] {
  const out: number[] = [];
  for (let i = from; i >= to; i--) out.push(i);
  return out;
}

/** `1,234` regardless of locale, so previews are byte-identical everywhere. */
function formatCount(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

function plural(n: number, singular: string, pluralForm = `${singular}s`): string {
  return `${formatCount(n)} ${n === 1 ? singular : pluralForm}`;
}

