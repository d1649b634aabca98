/**
 * Term extraction for marker topics: which words, two-word phrases, identifiers, tool names and tags an
 * event contains, as prefixed keys, and their document frequencies over a collection (the cache). Pure and
 * deterministic; extraction is memoized per event object, which is immutable.
 */
import type { EventRecord } from '../model/event.js';
import { STOP_WORDS as QUERY_STOP_WORDS } from '../memory/query-terms.js';
import { maskPrivate } from '../memory/private-spans.js';

/** Longest topic, in characters; longer identifiers are shortened (paths keep their tail) or left out. */
export const MAX_TOPIC_CHARS = 40;
/** Text scanned per event: head and tail, so extraction cost does not grow with a pasted megabyte. */
const SCAN_HEAD_CHARS = 8192;
const SCAN_TAIL_CHARS = 8192;

/**
 * Document frequencies over a background collection (normally the whole cache), so a marker's topics are
 * the terms specific to its span rather than those common to the whole session (TF-IDF-like).
 */
export interface TermStats {
  /** Number of events counted. */
  readonly documentCount: number;
  /** Number of those events that contain each term key. */
  readonly documentFrequency: ReadonlyMap<string, number>;
}

/**
 * Term keys of one event, prefixed by source: `w:` word, `p:` two-word phrase, `i:` identifier (lowercased;
 * `display` keeps the first spelling), `tool:` tool name, `tag:` tag.
 */
export interface EventTerms {
  readonly keys: readonly string[];
  readonly display: ReadonlyMap<string, string>;
}

/**
 * Counts, for each term key, how many of the events contain it: the background for TF-IDF-like topic
 * scoring (pass the whole cache). Term extraction is memoized per (immutable) event object.
 */
export function computeTermStats(events: Iterable<EventRecord>): TermStats {
  const df = new Map<string, number>();
  let documentCount = 0;
  for (const e of events) {
    documentCount += 1;
    for (const key of eventTerms(e).keys) df.set(key, (df.get(key) ?? 0) + 1);
  }
  return { documentCount, documentFrequency: df };
}

const termsMemo = new WeakMap<EventRecord, EventTerms>();

/** The terms of one event (memoized). */
export function eventTerms(event: EventRecord): EventTerms {
  const memo = termsMemo.get(event);
  if (memo) return memo;
  const keys = new Set<string>();
  const display = new Map<string, string>();
  // JSON keys (`"command":`, `"file_path":`) name the tool's schema, not the span's topic.
  scanText(scanWindow(event.content).replace(JSON_KEY, ' ; '), keys, display);
  if (event.toolName !== undefined) keys.add(`tool:${event.toolName}`);
  for (const tag of event.tags) keys.add(`tag:${tag}`);
  const terms: EventTerms = { keys: [...keys], display };
  termsMemo.set(event, terms);
  return terms;
}

/** The part of an event's text topics are taken from; private spans never become a marker's topic. */
function scanWindow(stored: string): string {
  const content = maskPrivate(stored);
  if (content.length <= SCAN_HEAD_CHARS + SCAN_TAIL_CHARS) return content;
  return `${content.slice(0, SCAN_HEAD_CHARS)}\n${content.slice(-SCAN_TAIL_CHARS)}`;
}

/** Lowercased text, tags and tool name of an event, for whole-word matching of task terms. */
export function eventHaystack(event: EventRecord): string {
  return `${scanWindow(event.content)}\n${event.tags.join('\n')}\n${event.toolName ?? ''}`.toLowerCase();
}

/**
 * Words that carry no topic: the query stop words of `memory/query-terms.ts`, plus agent chatter ("let me
 * check the file") and keywords that fill code and logs.
 */
const STOP_WORDS: ReadonlySet<string> = new Set([
  ...QUERY_STOP_WORDS,
  ...`also like okay yes sure thanks thank need needs want wants look looks looking see seems seem check checking checked run
   running ran try trying tried make makes made going done one two three new first next last still well way thing things
   something anything everything nothing file files line lines code output result results via per etc able many much
   might must may shall lets sorry great good fine right actually already another instead without within whether
   const var function return import export true false null undefined none self def class async await type interface public
   private static void int str else elif end string number boolean object`
    .split(/\s+/)
    .filter(Boolean),
]);

/** All-caps words that are common vocabulary or keywords (logs, SQL, Dockerfiles), not codes: they are treated as lowercase words. */
const COMMON_UPPER = new Set(
  `ERROR ERRORS WARN WARNING INFO DEBUG TRACE FATAL FAIL FAILED FAILURE PASS PASSED TODO NOTE README JSON YAML HTML HTTP HTTPS
   NULL TRUE FALSE NONE POST PATCH DELETE HEAD DONE SKIP SKIPPED LICENSE CHANGELOG ASCII STDOUT STDERR IMPORTANT WARNINGS
   TEST TESTS SUCCESS USAGE SELECT FROM WHERE INSERT UPDATE INTO VALUES CREATE TABLE INDEX ORDER GROUP LIMIT JOIN COPY WORKDIR
   EXPOSE ENTRYPOINT`
    .split(/\s+/)
    .filter(Boolean),
);

const LEADING_PUNCT = /^[\s"'`([{<*]+/u;
const TRAILING_PUNCT = /[\s"'`)\]}>,;:!?.*]+$/u;
/** Characters inside a whitespace-delimited token that split it (JSON, assignments, call syntax). */
const INNER_SPLIT = /["'`(){}[\]<>=,;|]+/u;

const WORD = /^\p{L}[\p{Ll}\p{Lo}\p{Lm}\p{Mn}]*(?:-[\p{Ll}\p{Lo}\p{Lm}\p{Mn}]+)*$/u;
const UPPER_CODE = /^[A-Z][A-Z0-9_]+$/;
const FILE_NAME = /^[\w@+-][\w@+.-]*\.[A-Za-z][A-Za-z0-9]{0,7}$/;
const CAMEL_CASE = /^[a-z]+(?:[A-Z][a-z0-9]*)+$/;
const PASCAL_CASE = /^(?:[A-Z][a-z0-9]+){2,}$/;
const SNAKE_CASE = /^[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+$/;
const LONG_FLAG = /^--[A-Za-z][\w-]+$/;
const MIXED = /^(?=\D*\d)(?=.*\p{L})[\p{L}\d][\p{L}\d.-]{1,23}$/u;
/** Numbers with a unit or an ordinal suffix: `200ms`, `5MB`, `2nd`. */
const MEASUREMENT = /^\d[\d.]*(?:st|nd|rd|th|x|s|ms|us|ns|m|h|d|k|kb|mb|gb|tb|b|px|em|rem|%)$/i;
/** Opaque values: hashes, uuids, prefixed ids (`evt_...`, `toolu_...`), dates and times. */
const OPAQUE = [
  /^(?=.*\d)[0-9a-f]{7,}$/i,
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i,
  /^[a-z]{2,8}_[0-9a-z]{16,}$/i,
  /^\d{4}-\d{2}-\d{2}/,
  /^\d{1,2}:\d{2}/,
];
const JSON_KEY = /"[^"\s]{1,64}"\s*:/g;
const URL_SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;

type Term = { type: 'word'; key: string } | { type: 'id'; key: string; text: string };

function scanText(text: string, keys: Set<string>, display: Map<string, string>): void {
  let prevWord: string | undefined;
  for (const raw of text.split(/\s+/)) {
    if (raw === '') continue;
    const parts = INNER_SPLIT.test(raw) ? raw.split(INNER_SPLIT) : [raw];
    parts.forEach((part, p) => {
      const lead = LEADING_PUNCT.exec(part);
      const trail = TRAILING_PUNCT.exec(part);
      // A phrase never spans punctuation: a quote, bracket or sentence end between two words breaks it.
      if (p > 0 || lead) prevWord = undefined;
      const core = part.slice(lead ? lead[0].length : 0, trail ? trail.index : part.length);
      const term = core.length >= 2 ? classify(core) : undefined;
      if (term?.type === 'word') {
        keys.add(`w:${term.key}`);
        if (prevWord !== undefined) keys.add(`p:${prevWord} ${term.key}`);
        prevWord = term.key;
      } else {
        prevWord = undefined;
        if (term) {
          const key = `i:${term.key}`;
          keys.add(key);
          if (!display.has(key)) display.set(key, term.text);
        }
      }
      if (trail || p < parts.length - 1) prevWord = undefined;
    });
  }
}

function classify(core: string): Term | undefined {
  // Most tokens are plain words, which can be nothing else (letters and inner hyphens only): test them first.
  if (WORD.test(core)) return word(core);
  if (core.length > 96) return undefined;
  if (URL_SCHEME.test(core)) {
    const host = core.replace(URL_SCHEME, '').split(/[/?#]/)[0]?.replace(/^[^@]*@/, '') ?? '';
    return /\p{L}/u.test(host) && host.length <= MAX_TOPIC_CHARS ? identifier(host) : undefined;
  }
  if (OPAQUE.some((re) => re.test(core))) return undefined;
  if (core.includes('/')) return classifyPath(core);
  if (UPPER_CODE.test(core)) {
    // Short all-caps words (SSL, API, CLI) and common ones (ERROR, JSON) are vocabulary; ENOENT, TS2345 are codes.
    return core.length <= 3 || COMMON_UPPER.has(core) ? word(core) : identifier(core);
  }
  const bare = core.replace(/:\d+(?::\d+)?$/, '');
  if (FILE_NAME.test(bare) && bare.length >= 4 && /\p{L}.*\./u.test(bare)) return identifier(bare);
  if (CAMEL_CASE.test(core) || PASCAL_CASE.test(core) || SNAKE_CASE.test(core) || LONG_FLAG.test(core)) {
    return core.length <= MAX_TOPIC_CHARS ? identifier(core) : undefined;
  }
  if (MIXED.test(core) && !MEASUREMENT.test(core)) {
    const digits = core.replace(/\D/g, '').length;
    // Digit-heavy tokens (ports, counters, build numbers) say little on their own.
    return digits * 2 <= core.length ? identifier(core) : undefined;
  }
  return undefined;
}

function word(core: string): Term | undefined {
  const w = core.toLowerCase();
  return w.length >= 3 && w.length <= 32 && !STOP_WORDS.has(w) ? { type: 'word', key: w } : undefined;
}

function identifier(text: string): Term {
  return { type: 'id', key: text.toLowerCase(), text };
}

/**
 * A path is a topic by its tail (last 3 segments, without `:line:col`): `src/db/pool.ts`. Slash-separated
 * words without a file extension or a root (`and/or`, `HTTP/1.1`, `feature/auth`) are not paths.
 */
function classifyPath(core: string): Term | undefined {
  const path = core.replace(/:\d+(?::\d+)?$/, '');
  const segments = path.split('/').filter((s) => s !== '' && s !== '.' && s !== '..' && s !== '~');
  const last = segments[segments.length - 1];
  if (last === undefined || !segments.every((s) => /^[\w@+.-]+$/.test(s)) || !/\p{L}/u.test(path)) return undefined;
  const hasExtension = /[\p{L}\d_-]\.[A-Za-z][A-Za-z0-9]{0,7}$/u.test(last);
  const isRooted = /^(?:\/|~\/|\.\.?\/)/.test(path);
  if (!hasExtension && !isRooted && segments.length < 3) return undefined;
  for (let keep = Math.min(3, segments.length); keep >= 1; keep -= 1) {
    const tail = segments.slice(-keep).join('/');
    const text = path.startsWith('/') && keep === segments.length ? `/${tail}` : tail;
    if (text.length <= MAX_TOPIC_CHARS) return identifier(text);
  }
  return undefined;
}
