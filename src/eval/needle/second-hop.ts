/**
 * The 2-hop rule for Engram (ENGRAM §10A.2, Annex A.8 `query_agent_with_retrieval_hint`): when the first
 * recall did not yield the needle, the agent follows up using only what that recall returned:
 * 1. neighbours: the events within {@link NEIGHBOUR_TURNS} turns of the first recall's top
 *    {@link NEIGHBOUR_HITS} hits (an agent reads around a promising hit: the tool result after a call, the
 *    remark after a result), each cut to an excerpt around the probe's words;
 * 2. a follow-up query: the probe plus the topic terms of the first recall's top {@link TOPIC_HITS} excerpts
 *    (words and identifiers found in at least two of them and not in the probe, most widespread first, at
 *    most {@link MAX_TOPIC_TERMS}), whose new hits are added.
 * Half the hop's budget goes to each part. Mechanical: no oracle, no knowledge of the needle.
 */
import type { Engram } from '../../engine.js';
import { cutExcerpt } from '../../memory/excerpt.js';
import type { EventId, SessionId } from '../../model/ids.js';
import type { RecallResult, Retriever } from '../../memory/recall.js';
import { renderHit } from '../../memory/recall.js';
import { cueTerms, stem } from './reader.js';

export const NEIGHBOUR_HITS = 2;
export const NEIGHBOUR_TURNS = 2;
export const TOPIC_HITS = 3;
export const MAX_TOPIC_TERMS = 4;
const NEIGHBOUR_EXCERPT_CHARS = 600;

export interface SecondHop {
  /** The follow-up query (empty when the first recall had no topics to offer). */
  query: string;
  /** What the agent reads on the second hop. */
  text: string;
  tokens: number;
}

/** Topic terms of a recall: terms in at least two of the top excerpts, not among the probe's words. */
export function topicTerms(question: string, first: Pick<RecallResult, 'hits'>): string[] {
  const asked = new Set(cueTerms(question));
  const counts = new Map<string, { count: number; order: number; text: string }>();
  let order = 0;
  for (const hit of first.hits.slice(0, TOPIC_HITS)) {
    const seen = new Set<string>();
    for (const term of hit.excerpt.split(/[\s"'`()[\]{},;<>|=]+/)) {
      const text = term.replace(/^[.:]+|[.:]+$/g, '');
      // Words and identifiers of 4+ characters; plain numbers and the probe's own words add nothing.
      if (text.length < 4 || /^\d+$/.test(text) || !/[a-z]/i.test(text)) continue;
      const key = stem(text);
      if (asked.has(key) || seen.has(key) || cueTerms(text).length === 0) continue;
      seen.add(key);
      const entry = counts.get(key) ?? { count: 0, order: order++, text };
      entry.count++;
      counts.set(key, entry);
    }
  }
  return [...counts.values()]
    .filter((e) => e.count >= 2)
    .sort((a, b) => b.count - a.count || a.order - b.order)
    .slice(0, MAX_TOPIC_TERMS)
    .map((e) => e.text);
}

/** Runs the second hop for a probe whose first recall is `first`. */
export async function secondHop(
  mem: Engram,
  sessionId: string,
  question: string,
  first: RecallResult,
  options: { retriever: Retriever; budgetTokens: number },
): Promise<SecondHop> {
  const half = Math.floor(options.budgetTokens / 2);
  const seen = new Set(first.hits.map((h) => h.eventId));
  const parts: string[] = [];
  let tokens = 0;
  const add = (text: string, cap: number): boolean => {
    const cost = mem.tokenizer.count(text) + 1;
    if (tokens + cost > cap) return false;
    parts.push(text);
    tokens += cost;
    return true;
  };

  const topics = topicTerms(question, first);
  const query = topics.length > 0 ? `${question} ${topics.join(' ')}` : '';
  if (query) {
    const follow = await mem.recall(query, { sessionIds: [sessionId], retriever: options.retriever, budgetTokens: half, logRecall: false });
    for (const [i, hit] of follow.hits.entries()) {
      if (seen.has(hit.eventId)) continue;
      seen.add(hit.eventId);
      if (!add(renderHit(hit, i + 1), half)) break;
    }
  }

  const cues = cueTerms(question);
  for (const hit of first.hits.slice(0, NEIGHBOUR_HITS)) {
    const around = await mem.listEvents({
      sessionId: sessionId as SessionId,
      afterTurn: Math.max(0, hit.turn - NEIGHBOUR_TURNS - 1),
      toTurn: hit.turn + NEIGHBOUR_TURNS,
    });
    for (const event of around) {
      if (seen.has(event.id)) continue;
      seen.add(event.id);
      const full = event.artifact ? await mem.readArtifactText(event.artifact.id) : event.content;
      const excerpt = cutExcerpt(full, cues, [], { maxChars: NEIGHBOUR_EXCERPT_CHARS });
      const head = `[turn ${event.turn} ${event.kind}${event.toolName ? ` ${event.toolName}` : ''}, beside turn ${hit.turn}] ${event.id as EventId}`;
      add([head, ...excerpt.split('\n').map((l) => `> ${l}`)].join('\n'), options.budgetTokens);
    }
  }
  return { query, text: parts.join('\n'), tokens };
}
