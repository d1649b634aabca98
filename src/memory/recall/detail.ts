/**
 * Stage 6 of recall (pipeline.ts): the detail. Only the head of the ranking has its full text read: whether the
 * event's own text holds the query exactly (exact-match.ts) or its identifiers (the exact-match boost), how much of
 * the query it covers (term-coverage.ts), and the excerpt the reader will see (excerpt.ts). A query of nothing but
 * identifiers then keeps only the events that hold them.
 */
import type { EventRecord } from '../../model/event.js';
import { MAX_ARTIFACT_INDEXED_CHARS } from '../../model/limits.js';
import { exactMatch, type ExactNeedles } from '../exact-match.js';
import { cutExcerpt } from '../excerpt.js';
import { capForIndex } from '../ingest.js';
import { maskPrivate } from '../private-spans.js';
import { ownTextParts, termCoverage, type CoverageTerm } from '../term-coverage.js';
import type { ResolvedOptions } from './options.js';
import type { RecallQuery } from './parse.js';
import { byScore, combine } from './score.js';
import type { Ranked, RecallDeps, Retriever, Scored } from './types.js';

// Candidates whose full text is read (for the exact-match check and the excerpt), per requested hit. MMR and
// the quotas pass over some of them (duplicates, a kind over its share), so they need spare ones.
const DETAIL_PER_HIT = 2;
const DETAIL_PER_HIT_MMR = 3;

/** The head of the ranking with its full text read: the exact-identifier boost applied and excerpts cut, best first. */
export async function detailHead(deps: RecallDeps, scored: readonly Ranked[], q: RecallQuery, retriever: Retriever, o: ResolvedOptions): Promise<Scored[]> {
  const head = scored.slice(0, Math.min(scored.length, o.k * (o.useMmr ? DETAIL_PER_HIT_MMR : DETAIL_PER_HIT)));
  const detailed: Scored[] = await Promise.all(
    head.map(async (s) => {
      const text = await fullText(deps, s.event);
      const { isExactMatch, holdsIdentifier, exactFraction, coverage } = ownMatch(s.event, text, q.exact, q.coverage);
      const baseScore = combine(s.relevance, exactFraction, s.recency, o.recencyWeight);
      return {
        ...s,
        holdsIdentifier,
        isExactMatch,
        coverage,
        baseScore,
        score: baseScore * s.modifier,
        excerpt: cutExcerpt(text, q.excerptNeedles, q.parsed.identifiers, { maxChars: o.maxExcerptChars }),
      };
    }),
  );
  detailed.sort(byScore);
  return ownMatchesOnly(detailed, q, retriever);
}

/**
 * What an event's own text (`text`, as recall reads it, plus its tool name and tags; its speaker for coverage) holds of
 * the query: whether it is an exact match (exact-match.ts), whether it holds one of the identifiers, the exact-match
 * boost's fraction (1 for an exact match, else the share of identifiers held: the same whole-token rule) and the
 * coverage of the query's terms (term-coverage.ts).
 */
function ownMatch(
  event: EventRecord,
  text: string,
  needles: ExactNeedles,
  terms: readonly CoverageTerm[],
): { isExactMatch: boolean; holdsIdentifier: boolean; exactFraction: number; coverage: number } {
  // A tool name or tag is the event's own too (indexed with its labels), unlike the context of earlier events.
  const { isExactMatch, identifiersPresent } = exactMatch(needles, [text, event.toolName ?? '', ...event.tags]);
  const ids = needles.identifiers.length;
  return {
    isExactMatch,
    holdsIdentifier: identifiersPresent > 0,
    exactFraction: isExactMatch ? 1 : ids > 0 ? identifiersPresent / ids : 0,
    coverage: termCoverage(terms, ownTextParts(event, text)),
  };
}

/**
 * A query of nothing but identifiers (a hash, a flag, an error code) asks for the events that hold those exact
 * strings (in their text, tool name or tags). When some candidates do, the others are padding and are dropped;
 * when none does, the nearest spellings by vector stay (`ECONNRESET` for `ECONNREFUSED`), but not events that
 * full-text found only through the context of the events before them. The task's key events always stay.
 * Other queries keep every candidate, context matches included; so does a call that asked for vectors alone
 * (it gets the nearest ones, as admitVectorHits says).
 */
function ownMatchesOnly(detailed: Scored[], q: RecallQuery, retriever: Retriever): Scored[] {
  if (retriever === 'vector' || !q.isIdentifierOnly) return detailed;
  const anyHolds = detailed.some((d) => d.holdsIdentifier);
  return detailed.filter((d) => d.isKeyEvent || (anyHolds ? d.holdsIdentifier : d.similarity !== undefined));
}

/** The text excerpts are cut from and exact matches checked in: private spans hidden (private-spans.ts). */
async function fullText(deps: RecallDeps, event: EventRecord): Promise<string> {
  if (!event.artifact || !isTextMedia(event.artifact.mediaType)) return maskPrivate(event.content);
  // The part the full-text index holds (its head and tail, ingest.ts) is where a match was found: reading only it
  // bounds the excerpt's work (an 8 MiB log cost two copies of 8 MiB per candidate: bench/results/adversarial.md).
  return capForIndex(maskPrivate(await deps.readArtifactText(event.artifact.id)), MAX_ARTIFACT_INDEXED_CHARS);
}

function isTextMedia(mediaType: string): boolean {
  return mediaType.startsWith('text/') || mediaType.includes('json') || mediaType.includes('xml') || mediaType.includes('csv');
}
