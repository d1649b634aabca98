/**
 * Time-range markers (ENGRAM §4.3, §6.1 step 4, Annex A.4): the signpost compaction leaves where a run of
 * events was evicted. A marker is factual and deterministic: its topics are lifted from the evicted
 * events' metadata and text (tool names with counts, identifiers, tags, span-specific terms, task-state
 * terms), never written by a model, and the rendered form is a fixed template under a hard 60-token cap.
 * Pure functions: no I/O, no clock, no locale.
 */
import { EngramError } from '../errors.js';
import type { EventRecord } from '../model/event.js';
import type { Tokenizer } from '../providers/tokenizer.js';
import type { Marker, MarkerCacheItem } from './cache-item.js';
import { MAX_TOPIC_CHARS, eventHaystack, eventTerms } from './topic-terms.js';
import type { TermStats } from './topic-terms.js';

/** Hard cap on a rendered marker, in tokens of the given tokenizer (ENGRAM §4.3 invariant i). */
export const MARKER_MAX_TOKENS = 60;
/**
 * Most topics considered for one marker before the token cap trims more. The template costs ~20 tokens
 * and a topic 3-6, so about 7 fit under 60 tokens anyway; 8 leaves the cap, not this, as the usual limit.
 */
export const MAX_MARKER_TOPICS = 8;
/** Longest topic, in words ("Docker build failure" is 3). */
export const MAX_TOPIC_WORDS = 4;

/**
 * At most this many `Tool xN` topics per marker: in a coding session Bash/Read/Edit appear in almost every
 * span and would otherwise crowd out the topics that tell spans apart.
 */
const MAX_TOOL_TOPICS = 2;
/** Weight multipliers by topic source: task-state terms get priority; identifiers and phrases are more specific than single words. */
const TASK_TERM_BOOST = 3;
const IDENTIFIER_BOOST = 1.5;
const PHRASE_BOOST = 1.5;
/**
 * A phrase replaces a chosen word it contains only if it occurs in at least this fraction of the word's
 * events (or, when support is unknown, as after a merge, has this fraction of its weight).
 */
const PHRASE_UPGRADE_MIN_RATIO = 0.5;
/** In spans of this many events or more, a plain word or phrase must occur in 2+ events to be a topic. */
const MIN_EVENTS_FOR_WORD_DF = 4;

/** A `Tool xN` topic; its count adds up when markers merge. */
const TOOL_TOPIC = /^(\S+) x(\d+)$/;

/** A topic with its importance (unitless; see `Marker.topicWeights`). */
export interface WeightedTopic {
  readonly text: string;
  readonly weight: number;
  /**
   * Events of the span that contain the topic, when known. A phrase replaces a chosen word it contains
   * only if it occurs in at least half as many events, so a rare phrase does not stand for a common word.
   */
  readonly support?: number;
}

/** What topic extraction may use besides the evicted events. */
export interface MarkerContext {
  /**
   * Terms of the current task state (goals, open loops, constraints...). Those that occur in the span
   * (case-insensitive, whole words) are topics with 3x priority. Default none.
   */
  readonly taskTerms?: readonly string[];
  /** Term statistics of the whole cache (`computeTermStats`). Default none: topics are ranked by frequency alone. */
  readonly background?: TermStats;
}

/** Every field of a marker, with topics as candidates: `createMarker` orders, dedupes and trims them. */
export interface MarkerInit extends Omit<Marker, 'topics' | 'topicWeights'> {
  readonly topics: readonly WeightedTopic[];
}

/**
 * The marker as the model sees it, the paper's fixed template, e.g.
 * `[Events T12-T47 evicted. Key topics: Docker build failure, nginx config. Use recall(query) to retrieve details.]`
 * Without topics the `Key topics` clause is left out. Always `T<from>-T<to>`, also for a single turn.
 */
export function renderMarker(marker: Pick<Marker, 'fromTurn' | 'toTurn' | 'topics'>): string {
  const topics = marker.topics.length > 0 ? ` Key topics: ${marker.topics.join(', ')}.` : '';
  return `[Events T${marker.fromTurn}-T${marker.toTurn} evicted.${topics} Use recall(query) to retrieve details.]`;
}

/** A stable key for a marker's place in history: `<sessionId>:T<from>-T<to>`. */
export function markerRangeKey(marker: Pick<Marker, 'sessionId' | 'fromTurn' | 'toTurn'>): string {
  return `${marker.sessionId}:T${marker.fromTurn}-T${marker.toTurn}`;
}

/** The cache item for a marker, with its rendered token count. */
export function toMarkerItem(marker: Marker, tokenizer: Tokenizer): MarkerCacheItem {
  return { type: 'marker', marker, tokens: tokenizer.count(renderMarker(marker)) };
}

/**
 * Builds a level-0 marker for one contiguous run of evicted events (in cache order). Topics, scored and
 * then trimmed from the end until the rendered marker fits in 60 tokens:
 * - `Tool xN`: tool names with the number of calls in the span (results when no call is in it), at most 2;
 * - identifiers: file paths (tail, without `:line`), error codes (`ECONNREFUSED`, `TS2345`), hosts of URLs,
 *   camelCase / snake_case names, long flags, versions; hashes, ids, dates and numbers are left out;
 * - tags of the events;
 * - words and two-word phrases, without stop words;
 * - task terms (`context.taskTerms`) found in the span, with priority.
 * Each scores `events of the span containing it x ln(1 + N / df)`, with `N` and `df` counted over
 * `context.background` (the whole cache), so terms that mark this span beat terms common to the whole
 * session; without a background, frequency alone. Identifiers and phrases count 1.5x, task terms 3x; in
 * spans of 4+ events a word or phrase must occur in 2+ events.
 * @throws EngramError `INVALID_INPUT` (field `evictedEvents`) when there are no events or they span sessions.
 */
export function buildMarker(evictedEvents: readonly EventRecord[], context: MarkerContext, tokenizer: Tokenizer): Marker {
  const first = evictedEvents[0];
  if (first === undefined) {
    throw new EngramError('INVALID_INPUT', 'evictedEvents must not be empty', { field: 'evictedEvents' });
  }
  let fromTurn = first.turn;
  let toTurn = first.turn;
  let firstTs = first.ts;
  let lastTs = first.ts;
  for (const e of evictedEvents) {
    if (e.sessionId !== first.sessionId) {
      throw new EngramError('INVALID_INPUT', `evictedEvents mixes sessions ${first.sessionId} and ${e.sessionId}`, {
        field: 'evictedEvents',
      });
    }
    fromTurn = Math.min(fromTurn, e.turn);
    toTurn = Math.max(toTurn, e.turn);
    // ISO-8601 UTC strings of one format order like the instants they name.
    if (e.ts < firstTs) firstTs = e.ts;
    if (e.ts > lastTs) lastTs = e.ts;
  }
  return createMarker(
    {
      fromTurn,
      toTurn,
      sessionId: first.sessionId,
      level: 0,
      eventCount: evictedEvents.length,
      firstTs,
      lastTs,
      topics: extractTopics(evictedEvents, context),
    },
    tokenizer,
  );
}

/**
 * Makes a frozen marker from its fields and candidate topics: topics are cleaned (no `,` `[` `]` or line
 * breaks, at most 4 words and 40 characters), ordered by weight (ties by text), deduplicated (a topic
 * inside a chosen one is dropped; a phrase containing a chosen word replaces it), capped at 8 and 2 tool
 * topics, then dropped from the end until `renderMarker` fits in 60 tokens.
 * @throws EngramError `INVALID_INPUT` naming the field when a number is out of range.
 */
export function createMarker(init: MarkerInit, tokenizer: Tokenizer): Marker {
  const intField = (name: 'fromTurn' | 'toTurn' | 'level' | 'eventCount', min: number): void => {
    const value = init[name];
    if (!Number.isSafeInteger(value) || value < min) {
      throw new EngramError('INVALID_INPUT', `${name} must be an integer >= ${min}`, { field: name });
    }
  };
  intField('fromTurn', 0);
  intField('toTurn', init.fromTurn);
  intField('level', 0);
  intField('eventCount', 1);
  init.topics.forEach((t, i) => {
    if (!Number.isFinite(t.weight) || t.weight < 0) {
      throw new EngramError('INVALID_INPUT', `topics[${i}].weight must be a finite number >= 0`, { field: `topics[${i}].weight` });
    }
  });

  const chosen = selectTopics(init.topics);
  const range = { fromTurn: init.fromTurn, toTurn: init.toTurn };
  while (chosen.length > 0 && tokenizer.count(renderMarker({ ...range, topics: chosen.map((t) => t.text) })) > MARKER_MAX_TOKENS) {
    chosen.pop();
  }
  if (tokenizer.count(renderMarker({ ...range, topics: [] })) > MARKER_MAX_TOKENS) {
    throw new EngramError('INVALID_INPUT', `turns ${init.fromTurn}-${init.toTurn} do not fit in a ${MARKER_MAX_TOKENS}-token marker`, {
      field: 'toTurn',
    });
  }
  return Object.freeze({
    fromTurn: init.fromTurn,
    toTurn: init.toTurn,
    sessionId: init.sessionId,
    topics: Object.freeze(chosen.map((t) => t.text)),
    topicWeights: Object.freeze(chosen.map((t) => t.weight)),
    level: init.level,
    eventCount: init.eventCount,
    firstTs: init.firstTs,
    lastTs: init.lastTs,
  });
}

/**
 * The union of several markers' topics, with weights added: the candidates for a merged parent (ENGRAM
 * §6.4 step 3). `Tool xN` topics of one tool combine into one with the summed count; other topics combine
 * when equal ignoring case (the first marker's spelling wins).
 */
export function unionTopics(markers: readonly Marker[]): WeightedTopic[] {
  const byKey = new Map<string, { text: string; weight: number; tool?: { name: string; count: number } }>();
  for (const m of markers) {
    m.topics.forEach((text, i) => {
      const weight = m.topicWeights[i] ?? 0;
      const tool = TOOL_TOPIC.exec(text);
      const key = tool ? `tool:${tool[1]}` : text.toLowerCase();
      const entry = byKey.get(key);
      if (tool) {
        const name = tool[1] ?? '';
        const count = Number(tool[2]) + (entry?.tool?.count ?? 0);
        byKey.set(key, { text: `${name} x${count}`, weight: (entry?.weight ?? 0) + weight, tool: { name, count } });
      } else if (entry) {
        entry.weight += weight;
      } else {
        byKey.set(key, { text, weight });
      }
    });
  }
  return [...byKey.values()].map(({ text, weight }) => ({ text, weight }));
}

function extractTopics(events: readonly EventRecord[], context: MarkerContext): WeightedTopic[] {
  const n = events.length;
  const bg = context.background;
  const total = Math.max(bg?.documentCount ?? 0, n);
  const spanDf = new Map<string, number>();
  const display = new Map<string, string>();
  const calls = new Map<string, number>();
  const results = new Map<string, number>();
  for (const e of events) {
    const terms = eventTerms(e);
    for (const key of terms.keys) spanDf.set(key, (spanDf.get(key) ?? 0) + 1);
    for (const [key, text] of terms.display) if (!display.has(key)) display.set(key, text);
    if (e.toolName !== undefined) {
      const counts = e.kind === 'tool_result' ? results : calls;
      counts.set(e.toolName, (counts.get(e.toolName) ?? 0) + 1);
    }
  }
  // Specificity of a term to the span; a term's df in the background is at least its df in the span.
  const idf = (key: string, df: number): number =>
    bg === undefined ? 1 : Math.log(1 + total / Math.max(bg.documentFrequency.get(key) ?? 0, df));
  const minWordDf = n >= MIN_EVENTS_FOR_WORD_DF ? 2 : 1;

  const topics: WeightedTopic[] = [];
  for (const [key, df] of spanDf) {
    const kind = key.slice(0, key.indexOf(':'));
    const text = key.slice(kind.length + 1);
    const score = df * idf(key, df);
    if (kind === 'w' && df >= minWordDf) topics.push({ text, weight: score, support: df });
    else if (kind === 'p' && df >= minWordDf) topics.push({ text, weight: score * PHRASE_BOOST, support: df });
    else if (kind === 'i') topics.push({ text: display.get(key) ?? text, weight: score * IDENTIFIER_BOOST, support: df });
    else if (kind === 'tag') topics.push({ text, weight: score, support: df });
  }
  for (const name of new Set([...calls.keys(), ...results.keys()])) {
    if (!/^[^\s,[\]]+$/.test(name) || name.length > MAX_TOPIC_CHARS) continue;
    const count = calls.get(name) ?? results.get(name) ?? 0;
    // Scored like any term, over every event that names the tool (calls and results); shown with the call count.
    const df = spanDf.get(`tool:${name}`) ?? count;
    topics.push({ text: `${name} x${count}`, weight: df * idf(`tool:${name}`, df), support: df });
  }
  const taskTerms = new Set((context.taskTerms ?? []).map(cleanTopic).filter((t): t is string => t !== undefined));
  const haystacks = taskTerms.size > 0 ? events.map(eventHaystack) : [];
  for (const term of taskTerms) {
    const pattern = new RegExp(`(?:^|[^\\p{L}\\p{N}])${escapeRegExp(term.toLowerCase()).replace(/ /g, '\\s+')}(?=$|[^\\p{L}\\p{N}])`, 'u');
    let count = 0;
    for (const h of haystacks) if (pattern.test(h)) count += 1;
    if (count > 0) topics.push({ text: term, weight: count * idf(`task:${term}`, count) * TASK_TERM_BOOST, support: count });
  }
  return topics;
}

interface ChosenTopic {
  text: string;
  weight: number;
  support: number | undefined;
  /** `normalizeTopic(text)`, for containment tests. */
  norm: string;
  isTool: boolean;
}

/** Orders candidates by weight, cleans and dedupes them; see `createMarker`. */
function selectTopics(candidates: readonly WeightedTopic[]): ChosenTopic[] {
  const sorted = candidates
    .map((t) => ({ text: cleanTopic(t.text), weight: roundWeight(t.weight), support: t.support }))
    .filter((t): t is WeightedTopic & { support: number | undefined } => t.text !== undefined)
    .sort((a, b) => b.weight - a.weight || compareStrings(a.text, b.text));
  const chosen: ChosenTopic[] = [];
  for (const c of sorted) {
    if (chosen.length >= MAX_MARKER_TOPICS) break;
    const norm = normalizeTopic(c.text);
    const isTool = TOOL_TOPIC.test(c.text);
    const words = norm.trim().split(' ').filter((w) => w !== '/');
    let isRedundant = false;
    const contained: number[] = [];
    chosen.forEach((s, j) => {
      if (s.norm.includes(norm)) isRedundant = true;
      else if (norm.includes(s.norm)) contained.push(j);
      // Overlapping phrases ("docker build", "build failure") would repeat a word for little gain.
      else if (words.length > 1 && s.norm.trim().includes(' ') && words.some((w) => s.norm.includes(` ${w} `))) isRedundant = true;
    });
    if (isRedundant) continue;
    if (isTool && chosen.filter((s) => s.isTool).length >= MAX_TOOL_TOPICS) continue;
    const at = contained[0];
    if (at === undefined) {
      chosen.push({ text: c.text, weight: c.weight, support: c.support, norm, isTool });
      continue;
    }
    const replaced = chosen[at];
    if (replaced === undefined) continue;
    // A more specific phrase takes the place (and weight) of the word it contains, if it is not much rarer.
    const isCommonEnough =
      c.support !== undefined && replaced.support !== undefined
        ? c.support >= replaced.support * PHRASE_UPGRADE_MIN_RATIO
        : c.weight >= replaced.weight * PHRASE_UPGRADE_MIN_RATIO;
    if (!isCommonEnough) continue;
    chosen[at] = { text: c.text, weight: replaced.weight, support: replaced.support, norm, isTool };
    for (const j of contained.slice(1).reverse()) chosen.splice(j, 1);
  }
  return chosen;
}

/**
 * Lowercased, space-padded words with `/` as a word of its own, so containment sees `nginx.conf` inside
 * `/etc/nginx/nginx.conf` and `nginx` inside `nginx config`.
 */
function normalizeTopic(text: string): string {
  return ` ${text.toLowerCase().replace(/\//g, ' / ').replace(/\s+/g, ' ').trim()} `;
}

/** A topic fit for the template, or undefined: separators removed, at most 4 words and 40 characters. */
function cleanTopic(raw: string): string | undefined {
  let text = raw
    .replace(/[[\],\r\n\t]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/[.:;]+$/, '');
  let words = text.split(' ');
  if (words.length > MAX_TOPIC_WORDS) words = words.slice(0, MAX_TOPIC_WORDS);
  while (words.join(' ').length > MAX_TOPIC_CHARS && words.length > 1) words.pop();
  text = words.join(' ');
  return text.length > 0 && text.length <= MAX_TOPIC_CHARS ? text : undefined;
}

/** Six significant decimals: weights are stored and compared, and should not differ in the 15th digit. */
function roundWeight(w: number): number {
  return Math.round(w * 1e6) / 1e6;
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function escapeRegExp(s: string): string {
  // No `-`: escaping it outside a character class is a syntax error in a `u` regex.
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
