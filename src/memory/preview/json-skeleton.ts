/** JSON documents and JSON Lines: recognised by parsing (structurally when too large); previewed as their shape with the first and last lines. */
import { formatBytes } from '../../util/format-bytes.js';
import { cleanLine, countLines, countNonEmptyLines, ELLIPSIS, firstLines, firstNonWhitespace, fitPlans, iterateLines, lastLines, LINE_MAX_CHARS, plural, truncateEnd } from './text.js';

/**
 * Above this, JSON is recognised structurally instead of parsed. Measured on 4 MB of objects: JSON.parse
 * ~45 ms, pretty-printing a one-line document ~40 ms more.
 */
const JSON_PARSE_MAX_CHARS = 4 * 1024 * 1024;

const JSON_HEAD_LINES = 5;
const JSON_TAIL_LINES = 2;
const KEY_NAMES_SHOWN = 5;
const KEY_NAME_MAX_CHARS = 32;

export type JsonShape =
  | { form: 'document'; value: object }
  | { form: 'lines'; first: unknown; records: number }
  /** Too large to parse: top-level type and the first keys seen in the head sample. */
  | { form: 'unparsed'; top: 'object' | 'array'; firstKeys: string[] };

export function detectJson(text: string, head: string, tail: string, headLines: string[]): JsonShape | undefined {
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

export function renderJson(text: string, json: JsonShape, sizeBytes: number, maxChars: number): string {
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
