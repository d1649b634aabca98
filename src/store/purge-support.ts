import type { PurgePlan } from './backend.js';

/** Ids of events (ULIDs) and artifacts (sha256) as they appear in an engram's pointer refs. */
const CITED_ID = /evt_[0-9a-z]{26}|art_[0-9a-f]{64}/g;

/**
 * Engrams a purge scrubs (both backends): those whose JSON body quotes the match literal, and those citing a
 * tombstoned event or a dropped artifact. A claim about purged content is a paraphrase of it, so it goes too;
 * the pointers stay (ids only, and they now resolve to the tombstone).
 */
export function engramsToScrub<R extends { id: string; body: string }>(rows: readonly R[], plan: PurgePlan, droppedArtifacts: ReadonlySet<string>): R[] {
  const purged = new Set<string>(plan.tombstones.map((t) => t.id));
  // Bodies are JSON text: the literal appears in them escaped.
  const quoted = plan.match === undefined ? undefined : JSON.stringify(plan.match).slice(1, -1);
  return rows.filter((r) => {
    if (quoted !== undefined && r.body.includes(quoted)) return true;
    for (const id of r.body.match(CITED_ID) ?? []) if (purged.has(id) || droppedArtifacts.has(id)) return true;
    return false;
  });
}

/** The engram's body with its claim replaced by the tombstone text and its tags and hash keys dropped. */
export function scrubEngramBody(body: string, plan: PurgePlan): string {
  const engram = JSON.parse(body) as Record<string, unknown>;
  engram.claim = plan.tombstoneText;
  engram.hash_keys = [];
  delete engram.tags;
  delete engram.embedding_ref;
  return JSON.stringify(engram);
}
