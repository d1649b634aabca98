import { EngramError } from '../errors.js';
import { identifiersIn } from '../consolidate/identifiers.js';
import { MAX_ENTITY_LIST, type KnowledgeGraph } from '../consolidate/graph/knowledge-graph.js';
import type { SummaryReader } from '../consolidate/summary-reader.js';
import { ENTITY_KINDS, entityId, type EntityRecord } from '../model/graph.js';
import { SUMMARY_DEPTH_NAMES, type SummaryDepth } from '../model/summary.js';

/**
 * Multi-granularity recall (issue #16 item 4): which layer answers a query first. `events` are the raw, quoted
 * events (recall as it always was); `summaries` put the matching session, arc and epoch summaries and the entities
 * the query names above the raw evidence; `entities` put the expansion of the entity the query names above it.
 * Raw events are returned in every case: the derived layers only come first.
 */
export const GRANULARITIES = ['auto', 'events', 'summaries', 'entities'] as const;
export type Granularity = (typeof GRANULARITIES)[number];
export type ChosenGranularity = Exclude<Granularity, 'auto'>;

/** Most summaries and entities one granular recall returns. */
export const GRANULAR_SUMMARY_HITS = 3;
export const GRANULAR_ENTITY_HITS = 5;
/** Most names of one query looked up in the graph (one indexed lookup each). */
const MAX_ENTITY_CANDIDATES = 12;
/** Token budget of the entity expansion in an `entities` answer. */
export const GRANULAR_EXPANSION_TOKENS = 600;

/** Words that make a query a broad question about what is known rather than a search for an exact string. */
const BROAD_START = /^(what|why|how|who|which|when|where|summari[sz]e|overview|explain|describe|tell me)\b/i;
const BROAD_WORDS = /\b(learn(ed|t)?|decid(ed|e)|decisions?|about|overview|summary|summari[sz]e|history|so far|status|progress|know)\b/i;
const QUOTED = /"[^"]+"|`[^`]+`|'[^'\s][^']*[^'\s]'/;
/** camelCase / PascalCase with two humps (`processPayment`, `LedgerClient`) is an identifier too. */
const CAMEL = /\b(?:[a-z][a-z0-9]*[A-Z]|[A-Z][a-z0-9]+[A-Z])[A-Za-z0-9]*\b/;

/** Words of a broad question that ask how, not what about: left out of the summary search, which matches every term. */
const CUE_WORDS = new Set(
  ('what why how who which when where did do does done we i you our us have has had was were is are be been the a an about of on for in to ' +
    'learn learned learnt decide decided decision decisions know known so far status progress overview summary summarize summarise tell me explain describe any there')
    .split(' '),
);

/** The topic of a broad question: its words without the cue words ("what did we decide about storage?" -> "storage"). */
export function questionTopic(query: string): string {
  const words = query.replace(/[?!.,;:]+/g, ' ').split(/\s+/).filter((w) => w !== '' && !CUE_WORDS.has(w.toLowerCase()));
  return words.length > 0 ? words.join(' ') : query;
}

export interface GranularChoice {
  granularity: ChosenGranularity;
  /** What the caller asked for (`auto` unless it forced one). */
  requested: Granularity;
  /** Why, in words: the rule that matched. */
  reason: string;
}

export interface GranularSummary {
  kind: 'summary';
  id: string;
  depth: SummaryDepth;
  depthName: string;
  sessionIds: string[];
  /** Drill down: the children (arc, epoch) or the first source events (session summary). */
  childIds: string[];
  sourceEventIds: string[];
  text: string;
  score: number;
}

export interface GranularEntity {
  kind: 'entity';
  id: string;
  entityKind: EntityRecord['kind'];
  name: string;
  citations: number;
}

export interface GranularAnswer extends GranularChoice {
  query: string;
  summaries: GranularSummary[];
  entities: GranularEntity[];
  /** With `entities`: the first entity's bounded expansion (cited lines grouped by aspect). */
  expansion?: { entityId: string; text: string; isTruncated: boolean };
  /** Ids to pass to `expand` next, derived layers first (summary ids, entity ids). Events carry their own ids. */
  drillDown: string[];
}

/** What granular recall reads: the summary DAG and the knowledge graph, as the caller may see them. */
export interface GranularSource {
  summaries: SummaryReader;
  knowledge: KnowledgeGraph;
}

export function checkGranularity(value: unknown, field = 'granularity'): Granularity {
  if (typeof value === 'string' && (GRANULARITIES as readonly string[]).includes(value)) return value as Granularity;
  throw new EngramError('INVALID_INPUT', `${field}: must be one of ${GRANULARITIES.join(', ')}`, { field });
}

/** The names in a query that may be entities: the whole query, the topic after "about", its identifiers, "X service". */
function entityCandidates(query: string): string[] {
  const bare = query.trim().replace(/[?.!]+$/, '').replace(/^["'`]|["'`]$/g, '').trim();
  const out = [bare];
  const about = /\b(?:about|on|of|for)\s+(?:the\s+)?(.+)$/i.exec(bare);
  if (about?.[1]) out.push(about[1].trim());
  out.push(...identifiersIn(bare));
  // A broad question's topic words ("why did checkout fail" -> checkout, fail): a bare name is often an entity.
  if (BROAD_START.test(bare) || BROAD_WORDS.test(bare)) out.push(...questionTopic(bare).split(/\s+/).filter((w) => w.length >= 3));
  for (const m of bare.matchAll(/\b([a-z][a-z0-9]*(?:-[a-z0-9]+)*)[- ]service\b/gi)) if (m[1]) out.push(m[1]);
  for (const m of bare.matchAll(new RegExp(CAMEL.source, 'g'))) out.push(m[0]);
  return [...new Set(out.filter((c) => c.length >= 2 && c.length <= 200))].slice(0, MAX_ENTITY_CANDIDATES);
}

/** Entities the reader may see whose name is exactly one of the query's candidates (as written, lower or upper case), or whose ref the query is. */
async function namedEntities(source: GranularSource, query: string): Promise<EntityRecord[]> {
  const found = new Map<string, EntityRecord>();
  const bare = query.trim();
  const refLike = /^ent_[0-9a-f]{24}$/.test(bare) || ENTITY_KINDS.some((k) => bare.startsWith(`${k}:`) && bare.length > k.length + 1);
  if (refLike) {
    try {
      const e = await source.knowledge.get(bare, 'query');
      found.set(e.id, e);
    } catch (err) {
      if (!(err instanceof EngramError && err.code === 'NOT_FOUND')) throw err;
    }
  }
  // Entity ids are a hash of kind and name (model/graph.ts): every kind for each name as written, lower- and
  // upper-cased, in one indexed lookup rather than a scan of the names.
  const ids = new Set<string>();
  for (const c of entityCandidates(query)) {
    for (const name of new Set([c, c.toLowerCase(), c.toUpperCase(), c.replace(/^@/, '')])) for (const kind of ENTITY_KINDS) ids.add(entityId(kind, name));
  }
  for (const e of await source.knowledge.list({ ids: [...ids], limit: MAX_ENTITY_LIST })) found.set(e.id, e);
  return [...found.values()].slice(0, GRANULAR_ENTITY_HITS);
}

/** Summaries matching every word of the topic; when none do, those matching any one word (best score kept), best first. */
async function searchSummaries(source: GranularSource, topic: string): Promise<Awaited<ReturnType<SummaryReader['search']>>> {
  const all = await source.summaries.search(topic, { limit: GRANULAR_SUMMARY_HITS });
  const words = topic.split(/\s+/).filter((w) => w.length > 1);
  if (all.length > 0 || words.length < 2) return all;
  const best = new Map<string, (typeof all)[number]>();
  for (const w of words.slice(0, 8)) {
    for (const hit of await source.summaries.search(w, { limit: GRANULAR_SUMMARY_HITS })) {
      const prev = best.get(hit.summary.id);
      if (!prev || hit.score > prev.score) best.set(hit.summary.id, hit);
    }
  }
  return [...best.values()].sort((a, b) => b.score - a.score).slice(0, GRANULAR_SUMMARY_HITS);
}

/**
 * The specificity rule, in order: (1) a quoted phrase asks for those exact words: events; (2) a query that is
 * itself an entity (its id, `kind:name`, or exactly the name of one the reader may see): entities; (3) a broad
 * question (what/why/how..., learned, decided, about, overview, status): summaries and entities first; (4) an
 * identifier (path, error code, flag, id, camelCase name): events; (5) anything else: events, as recall always was.
 */
export function chooseGranularity(query: string, wholeQueryIsEntity: boolean): Omit<GranularChoice, 'requested'> {
  const q = query.trim();
  if (QUOTED.test(q)) return { granularity: 'events', reason: 'a quoted phrase asks for exact words: raw events' };
  if (wholeQueryIsEntity) return { granularity: 'entities', reason: 'the query names an entity of the knowledge graph: its expansion' };
  if (BROAD_START.test(q) || BROAD_WORDS.test(q)) return { granularity: 'summaries', reason: 'a broad question: summaries and entities first, raw evidence below' };
  const ids = identifiersIn(q);
  const camel = CAMEL.exec(q)?.[0];
  if (ids.length > 0 || camel) return { granularity: 'events', reason: `an exact identifier (${ids[0] ?? camel}): raw events` };
  return { granularity: 'events', reason: 'keywords without a question: raw events' };
}

/**
 * The derived layers for one query at the chosen (or forced) granularity, as the caller may read them: `source`
 * is `mem.viewAs(principal)` (bounded) or `mem.viewAs()` (full trust), so a summary or entity of a session the
 * caller may not read is never returned. The caller adds the raw events (recall) below.
 */
export async function granularLayers(source: GranularSource, query: string, requested: Granularity = 'auto'): Promise<GranularAnswer> {
  checkGranularity(requested);
  if (typeof query !== 'string' || query.trim() === '') throw new EngramError('INVALID_INPUT', 'query: must be a non-empty string', { field: 'query' });
  // A forced `events`, or a quoted phrase under auto (rule 1), needs no graph lookup.
  const named = requested === 'events' || (requested === 'auto' && QUOTED.test(query.trim())) ? [] : await namedEntities(source, query);
  const bare = query.trim().replace(/[?.!]+$/, '').toLowerCase();
  const isWhole = (e: EntityRecord) => e.name.toLowerCase() === bare || e.id === query.trim() || `${e.kind}:${e.name}`.toLowerCase() === query.trim().toLowerCase();
  // The entity the whole query names comes first: it is the one expanded.
  const entities = [...named.filter(isWhole), ...named.filter((e) => !isWhole(e))];
  const whole = entities.some(isWhole);
  const choice: GranularChoice =
    requested === 'auto' ? { ...chooseGranularity(query, whole), requested } : { granularity: requested, requested, reason: `asked for ${requested}` };
  const answer: GranularAnswer = { query, ...choice, summaries: [], entities: [], drillDown: [] };
  if (choice.granularity === 'events') return answer;
  answer.entities = entities.map((e) => ({ kind: 'entity', id: e.id, entityKind: e.kind, name: e.name, citations: e.citations }));
  if (choice.granularity === 'summaries') {
    for (const { summary: s, score } of await searchSummaries(source, questionTopic(query))) {
      answer.summaries.push({
        kind: 'summary',
        id: s.id,
        depth: s.depth,
        depthName: SUMMARY_DEPTH_NAMES[s.depth],
        sessionIds: s.sessionIds,
        childIds: s.childIds,
        sourceEventIds: s.sourceEventIds.slice(0, 20),
        text: s.text,
        score,
      });
    }
    // A broad question about a thing it names exactly ("which services did ERR_X touch?", "what changed in src/a.ts?"): that
    // entity's expansion too, which answers such questions with cited lines (bench/results/granular.md).
    const exact = new Set(identifiersIn(query.trim()).map((x) => x.toLowerCase()));
    const asked = entities.find((e) => exact.has(e.name.toLowerCase()));
    if (asked) {
      const x = await source.knowledge.expand(asked.id, { question: query, maxTokens: GRANULAR_EXPANSION_TOKENS });
      answer.expansion = { entityId: asked.id, text: x.text, isTruncated: x.isTruncated };
    }
  } else if (entities[0]) {
    const x = await source.knowledge.expand(entities[0].id, { question: query, maxTokens: GRANULAR_EXPANSION_TOKENS });
    answer.expansion = { entityId: entities[0].id, text: x.text, isTruncated: x.isTruncated };
  }
  answer.drillDown = [...answer.summaries.map((s) => s.id), ...answer.entities.map((e) => e.id)];
  return answer;
}

/** The header line that reports the choice (text output). */
export function granularHeader(a: GranularAnswer): string {
  const mode = a.requested === 'auto' ? `auto: ${a.reason}` : a.reason;
  return `Granularity: ${a.granularity} (${mode})`;
}

/** {@link granularLayers} for each query of a batch, one after another. */
export async function granularBatch(source: GranularSource, queries: readonly string[], requested: Granularity = 'auto'): Promise<GranularAnswer[]> {
  const out: GranularAnswer[] = [];
  for (const q of queries) out.push(await granularLayers(source, q, requested));
  return out;
}

/** The derived layers as text, above the raw evidence: each marked as derived, with the ids to expand. */
export function granularText(a: GranularAnswer, eventsText: string): string {
  return `${granularLayersText(a)}\n\n${eventsText}`;
}

/** The report and the derived layers only (the header, summaries, entities, expansion), ending at "Raw evidence:". */
export function granularLayersText(a: GranularAnswer): string {
  const parts = [granularHeader(a)];
  if (a.granularity === 'summaries') {
    parts.push(
      a.summaries.length === 0
        ? 'Summaries: none match.'
        : `Summaries (derived; verify exact values in the events they cite):\n\n${a.summaries
            .map((s) => `[summary ${s.id}, ${s.depthName}; expand ${s.id}${s.depth > 0 ? ` or its children ${s.childIds.join(', ')}` : ''}]\n${s.text}`)
            .join('\n\n')}`,
    );
  }
  if (a.granularity !== 'events') {
    parts.push(a.entities.length === 0 ? 'Entities: none named.' : `Entities (expand an id for its cited edges):\n${a.entities.map((e) => `- ${e.entityKind}:${e.name} ${e.id} (${e.citations} citations)`).join('\n')}`);
    if (a.expansion) parts.push(a.expansion.text);
    parts.push('Raw evidence:');
  }
  return parts.join('\n\n');
}
