/**
 * Stage 9 of recall (pipeline.ts): the result. Its match judged on the packed hits (recall-match.ts), its header and
 * every hit with its provenance line and its excerpt quoted, so retrieved content can never pose as instructions
 * (ENGRAM §12.3).
 */
import { noMatchHeader, packHeader, recallMatch, returnedEarlierHeader, type RecallMatch } from '../recall-match.js';
import type { RecallDeps, RecallHit, RecallResult, Retriever } from './types.js';

/**
 * The result: its match judged on the packed hits (recall-match.ts), and its text. When nothing matches, the hits
 * are dropped but for the task card's key events (pinned, not matched), and the text says no event matches.
 */
export function renderResult(
  deps: RecallDeps,
  query: string,
  retriever: Retriever,
  packed: RecallHit[],
  candidates: number,
  budgetTokens: number,
  isTruncated: boolean,
  matchedEarlier: RecallMatch = 'none',
): RecallResult {
  const found = recallMatch(packed.filter((h) => !(h.isKeyEvent && h.relevance === 0)));
  const hits = found === 'none' ? packed.filter((h) => h.isKeyEvent) : packed;
  const match = found === 'none' ? matchedEarlier : found;
  const holding = hits.filter((h) => h.isExactMatch || h.coverage > 0).length;
  const exact = hits.filter((h) => h.isExactMatch).length;
  const header =
    found !== 'none'
      ? packHeader(query, { hits: hits.length, candidates, holding, exact })
      : matchedEarlier !== 'none'
        ? returnedEarlierHeader(query, hits.length)
        : noMatchHeader(query, hits.length);
  const text = [header, ...hits.map((h, i) => renderHit(h, i + 1))].join('\n');
  // The parts were counted while packing; BPE never merges across a newline, so the sum of the parts
  // plus one token per separator bounds the whole from above (counting the text again cost ~10 % of recall).
  const usedTokens = deps.tokenizer.count(header) + hits.reduce((sum, h) => sum + h.tokens + 1, 0);
  return { query, retriever, match, hits, candidates, budgetTokens, usedTokens, isTruncated: found !== 'none' && isTruncated, text };
}

/** One hit: a provenance line, then every excerpt line quoted with `> `. */
export function renderHit(h: RecallHit, index: number): string {
  const what = h.toolName ? `${h.kind} ${h.toolName}` : h.kind;
  const provenance = [`[${index}] ${h.eventId}`, `session ${h.sessionId}`, `turn ${h.turn}`, what, h.ts, `score ${h.score.toFixed(2)}`];
  if (h.artifactId) provenance.push(`artifact ${h.artifactId}`);
  // The reader must not take an obsolete version for the live one; the pointer is the 2-hop path to it.
  if (h.supersededBy) provenance.push(`superseded by ${h.supersededBy}`);
  const quoted = h.excerpt.split('\n').map((line) => `> ${line}`);
  return [provenance.join(' | '), ...quoted].join('\n');
}
