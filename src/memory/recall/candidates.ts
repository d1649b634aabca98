/**
 * Stage 2 of recall (pipeline.ts): the candidates. The query's full-text search (derived events dropped), widened
 * by the second hop for multi-hop questions, and the query vector's nearest events when the call has an embedder.
 * Each event found is loaded once into the call's `events` map.
 */
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { DERIVED_EVENT_TAG, type EventRecord } from '../../model/event.js';
import type { EventId } from '../../model/ids.js';
import type { Embedder } from '../../providers/embedder.js';
import type { EventFilter, TextHit, VectorHit } from '../../store/backend.js';
import { maskPrivate } from '../private-spans.js';
import { MAX_QUERY_TERMS } from '../query-terms.js';
import { fuseSecondHop, SECOND_HOP_SOURCES, SECOND_HOP_TERMS, secondHopTerms } from '../second-hop.js';
import { MIN_VECTOR_SIMILARITY, type ResolvedOptions } from './options.js';
import type { RecallQuery } from './parse.js';
import type { LoadedEvents, RecallDeps, Retriever, RetrieverChoice } from './types.js';

/** Full-text candidates examined per requested hit: enough for re-ranking, few enough to stay fast. */
const CANDIDATES_PER_HIT = 4;
const MIN_CANDIDATES = 40;
/** Vector candidates per call: the depth the fusion was measured at (bench/results/locomo.md). */
const MIN_VECTOR_CANDIDATES = 100;

/** What the candidates stage found: both rankings, derived events out. */
export interface Retrieved {
  text: TextHit[];
  /** Vector hits admitted into the ranking ({@link admitVectorHits}). */
  vector: VectorHit[];
}

/** Full-text and vector candidates of one call. */
export async function retrieveCandidates(
  deps: RecallDeps,
  q: RecallQuery,
  filter: EventFilter,
  { retriever, embedder }: RetrieverChoice,
  o: ResolvedOptions,
  events: LoadedEvents,
): Promise<Retrieved> {
  const candidateLimit = Math.max(MIN_CANDIDATES, o.k * CANDIDATES_PER_HIT);
  // A fixed vector depth, so an event's normalised similarity does not depend on k (bench/results/locomo.md:
  // depth max(40, 4k) cost 1.3 recall@10 and 3.6 @5 against depth 100).
  const vectorLimit = Math.max(MIN_VECTOR_CANDIDATES, candidateLimit);
  // The query's embedding and vector search start before the full-text search and are awaited after it, so a
  // backend that searches vectors off this thread (a worker, another connection) or an embedder that waits on
  // the network overlaps them with the full-text search instead of adding to it.
  const vectorSearch = embedder ? searchQueryVector(deps, q.text, embedder, filter, vectorLimit) : undefined;
  // Awaited below; a full-text failure must not leave its rejection unhandled meanwhile.
  vectorSearch?.catch(() => undefined);
  // One turn of the event loop, so an embedder that answers at once (the built-in one) hands the vector search to
  // the backend before the full-text search, which better-sqlite3 runs on this thread, takes it: the SQLite code
  // index posts its scan to a worker thread then (code-scanner.ts). Without it the scan was posted only after the
  // full-text search had run, and nothing overlapped.
  if (vectorSearch && retriever !== 'vector') await yieldToEventLoop();
  const { parsed, hasIdentifiers } = q;
  let hits = retriever !== 'vector' && parsed.terms.length > 0 ? await searchOwnText(deps, q, filter, candidateLimit, o, events) : [];
  // A question asking for exact strings is not widened: its answer holds them.
  if (o.secondHopWeight > 0 && hits.length > 0 && !hasIdentifiers && (o.secondHopTrigger === 'always' || q.looksMultiHop)) {
    const hopped = await secondHop(deps, q, hits, filter, candidateLimit, o, events);
    // The second hop's search may bring derived events back.
    if (hopped !== hits) hits = await withoutDerived(deps, hopped, events);
  }
  const vector = await withoutDerived(deps, admitVectorHits(vectorSearch ? await vectorSearch : [], hits, retriever, hasIdentifiers), events);
  return { text: hits, vector };
}

/**
 * Which vector candidates may enter a hybrid ranking. Vector search always returns neighbours, related or not,
 * and a pack padded with them costs tokens and precision. So a vector-only candidate needs a cosine of at least
 * {@link MIN_VECTOR_SIMILARITY}; and when the query names identifiers that full-text found, the question is
 * about those exact strings, and only candidates that contain them (full-text hits) are kept. Vectors still
 * rerank the full-text hits they also found.
 */
export function admitVectorHits<T extends { eventId: string; similarity: number }>(
  vector: readonly T[],
  text: ReadonlyArray<{ eventId: string }>,
  retriever: Retriever,
  hasIdentifiers: boolean,
): T[] {
  // Asked for vectors alone, the caller gets the nearest ones, whatever their similarity.
  if (retriever === 'vector') return [...vector];
  const found = new Set(text.map((h) => h.eventId));
  if (hasIdentifiers && found.size > 0) return vector.filter((h) => found.has(h.eventId));
  return vector.filter((h) => h.similarity >= MIN_VECTOR_SIMILARITY || found.has(h.eventId));
}

/** Whether an event is Engram's own output come back in a transcript (DERIVED_EVENT_TAG): never evidence. */
export function isDerived(e: EventRecord | null | undefined): boolean {
  return e !== null && e !== undefined && e.tags.includes(DERIVED_EVENT_TAG);
}

/**
 * `hits` without derived events: Engram's own output come back in a transcript (a recall result, a brief; tagged
 * DERIVED_EVENT_TAG at ingest) quotes the evidence, and is never evidence itself (issue #29, item 6). Their events
 * are loaded into `events` (null for an id that no longer loads: the pool stage counts it, as before).
 */
export async function withoutDerived<T extends { eventId: string }>(deps: RecallDeps, hits: readonly T[], events: LoadedEvents): Promise<T[]> {
  const missing = [...new Set(hits.map((h) => h.eventId).filter((id) => !events.has(id)))];
  if (missing.length > 0) {
    for (const id of missing) events.set(id, null);
    for (const e of await deps.store.getEvents(missing as EventId[])) events.set(e.id, e);
  }
  return hits.filter((h) => !isDerived(events.get(h.eventId)));
}

/** The events of `hits`, in order, from the call's loaded events (loading those not loaded yet). */
async function eventsOf(deps: RecallDeps, hits: readonly TextHit[], events: LoadedEvents): Promise<EventRecord[]> {
  await withoutDerived(deps, hits, events);
  return hits.flatMap((h) => events.get(h.eventId) ?? []);
}

/**
 * The query's full-text search without derived events. When they took some of the `limit` places, the search runs
 * once more with that many more, so they do not push evidence out of the candidates.
 */
async function searchOwnText(deps: RecallDeps, q: RecallQuery, filter: EventFilter, limit: number, o: ResolvedOptions, events: LoadedEvents): Promise<TextHit[]> {
  const contextWeight = o.contextWeight !== undefined ? { contextWeight: o.contextWeight } : {};
  const found = await deps.store.searchText({ terms: q.parsed.terms, filter, limit, ...contextWeight });
  const kept = await withoutDerived(deps, found, events);
  if (kept.length === found.length || found.length < limit) return kept;
  const more = await deps.store.searchText({ terms: q.parsed.terms, filter, limit: limit + found.length - kept.length, ...contextWeight });
  return (await withoutDerived(deps, more, events)).slice(0, limit);
}

/** The query's embedding, then the vector search with it. */
async function searchQueryVector(
  deps: RecallDeps,
  query: string,
  embedder: Embedder,
  filter: EventFilter,
  limit: number,
): Promise<VectorHit[]> {
  const queryVector = (await embedder.embed([query]))[0]!;
  return deps.store.searchVectors({ vector: queryVector, model: embedder.name, filter, limit });
}

/**
 * The second hop (second-hop.ts): the query's terms plus the words of its first full-text hits, searched again
 * and fused into the first list. Speakers' names are left out of the added words: every turn of theirs holds them.
 */
async function secondHop(
  deps: RecallDeps,
  q: RecallQuery,
  first: TextHit[],
  filter: EventFilter,
  limit: number,
  o: ResolvedOptions,
  events: LoadedEvents,
): Promise<TextHit[]> {
  const ordered = await eventsOf(deps, first.slice(0, SECOND_HOP_SOURCES), events);
  const speakers = new Set(ordered.flatMap((e) => speakerOf(e)?.split(/\s+/) ?? []));
  const added = secondHopTerms(q.parsed.terms, ordered.map((e) => maskPrivate(e.content)), speakers, SECOND_HOP_TERMS);
  if (added.length === 0) return first;
  const terms = [...q.parsed.terms, ...added.map((text) => ({ text }))].slice(0, MAX_QUERY_TERMS);
  const second = await deps.store.searchText({ terms, filter, limit, ...(o.contextWeight !== undefined ? { contextWeight: o.contextWeight } : {}) });
  return fuseSecondHop(first, second, o.secondHopWeight);
}

/**
 * Who said an event, lower-cased: `meta.speaker` when the writer recorded it (multi-party transcripts), else
 * `meta.name`, the participant name of OpenAI chat messages (the openai importer keeps it there); undefined
 * otherwise.
 */
export function speakerOf(e: EventRecord): string | undefined {
  for (const key of ['speaker', 'name']) {
    const s = e.meta?.[key];
    if (typeof s === 'string' && s.trim().length > 0) return s.trim().toLowerCase();
  }
  return undefined;
}

