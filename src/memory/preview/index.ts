/**
 * Structure-aware previews (ENGRAM §4.4): when a tool result is stored as an artifact, the event keeps
 * a short semantic signpost in its place, cut according to what the content is. Logs keep their tail
 * (errors cluster at the end), JSON its shape, search output its first matches, tables their header,
 * binaries a one-line description and caption. Pure functions: no I/O, no clock, no locale.
 *
 * This file classifies the content and picks the preview; each kind has its own file (detection and
 * rendering): `binary.ts`, `json-skeleton.ts`, `match-context.ts` (grep), `table.ts`, `log-tail.ts`, with
 * shared line helpers in `text.ts`. Only this file's exports are for use outside the folder.
 */
import { EngramError } from '../../errors.js';
import type { Preview, PreviewKind } from '../../model/artifact.js';
import { bytesLookLikeText, isBinaryMediaType, looksGarbled, magicMediaType, renderBinary } from './binary.js';
import { detectJson, renderJson, type JsonShape } from './json-skeleton.js';
import { renderTail } from './log-tail.js';
import { GREP_MIN_SHARE, GREP_MIN_SHARE_HINTED, isGrepTool, looksLikeGrep, renderGrep } from './match-context.js';
import { detectTable, renderTable, type TableShape } from './table.js';
import { completeLines, hardCut, HEAD_SAMPLE_CHARS, TAIL_SAMPLE_CHARS } from './text.js';

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
