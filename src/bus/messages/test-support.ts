import { parse } from 'yaml';
import { EngramError, isEngramError } from '../../errors.js';
import { createGptTokenizer } from '../../providers/gpt-tokenizer.js';

/** Test helpers for the message tests (not part of the API). */

/** The engine's default tokenizer: budgets are checked with the real one, not an approximation. */
export const countTokens = createGptTokenizer().count;

/** A 40-hex commit and a 12-hex artifact digest, to pin the seed's example pointers. */
export const COMMIT = '3f9a1c2b7d4e5f60718293a4b5c6d7e8f9012345';
export const DIGEST = 'ab12cd34ef56';

/**
 * The child-to-parent example of PAS Bus §7.1, verbatim (the page's blank lines between lines removed). ROLE and
 * TASK_STATUS are empty template slots and the pointers end in a bare `@`: the seed leaves the SHA to fill in.
 */
export const SEED_CHILD_EXAMPLE = `ROLE:
TASK_STATUS:
ENGRAMS:
  - kind: risk
    claim: "Potential contradiction between SPEC budget rules and current gateway reservation flow."
    confidence: 0.72
    ttl: "P7D"
    scope: "project"
    pointers:
      - { type: "artifact", ref: "artifact:SPEC_Budget_Enforcement.md#sec=Rules@" }
      - { type: "repo", ref: "repo:services/gateway/vendor_client.py#L280-L360@" }
POINTER_PACK:
  - { type: "repo", ref: "repo:services/gateway/routes/completions.py#L900-L1060@" }
DEREF_REQUESTS:
  - pointer: { type: "repo", ref: "repo:services/ledger/reservation.py#L1-L220@" }
    reason: "Need to confirm reservation atomicity behavior."
OUTPUT:
  summary: "Top risks identified; need deref grant for ledger code."
  next: "Await grant or alternative pointers."
`;

/** The parent-to-child example of PAS Bus §7.2, verbatim: ROLE and the grant's budget_token are empty slots. */
export const SEED_PARENT_EXAMPLE = `ROLE:
SHARED_BRIEF_MICRO:
  - "Goal: implement Engram Bus with 5% context rule; pointer-first only."
  - "Hard constraint: budget enforcement in gateway; reject oversize."
BUDGETS:
  max_engrams: 10
  max_repo_spans: 3
  max_sam_items: 2
  max_inline_tokens: 800
GRANTS:
  - budget_token: ""
    pointer: { type: "repo", ref: "repo:services/ledger/reservation.py#L1-L220@" }
    cap_tokens: 500
TARGET_POINTER_PACK:
  - { type: "artifact", ref: "artifact:SPEC_Engram_Bus_PAS_Shared_Memory.md#sec=Budgets@" }
INSTRUCTIONS:
  - "Confirm atomicity + idempotency; emit 3-5 Engrams max; no inline code."
`;

/** Pins every bare `@"` of a seed example: commits for repo pointers, digests for artifacts. */
export function pinPointers(text: string): string {
  return text.replace(/(repo:[^"@]*)@"/g, `$1@${COMMIT}"`).replace(/(artifact:[^"@]*)@"/g, `$1@${DIGEST}"`);
}

/** The §7.1 example with its slots filled: ROLE, TASK_STATUS and pinned pointers. */
export const FILLED_CHILD_EXAMPLE = pinPointers(SEED_CHILD_EXAMPLE)
  .replace('ROLE:\n', 'ROLE: programmer\n')
  .replace('TASK_STATUS:\n', 'TASK_STATUS: blocked\n');

/** The §7.2 example with its slots filled: ROLE, a grant token and pinned pointers. */
export const FILLED_PARENT_EXAMPLE = pinPointers(SEED_PARENT_EXAMPLE)
  .replace('ROLE:\n', 'ROLE: programmer\n')
  .replace('budget_token: ""', 'budget_token: "grt_01hx3k9v2m"');

/** The same YAML message as JSON text, for checking both forms. */
export function yamlToJson(yamlText: string): string {
  return JSON.stringify(parse(yamlText), null, 2);
}

/** The EngramError `fn` throws; fails the test when it throws nothing or something else. */
export function thrown(fn: () => unknown): EngramError {
  try {
    fn();
  } catch (err) {
    if (isEngramError(err)) return err;
    throw err;
  }
  throw new Error('expected an EngramError, nothing was thrown');
}

/** English prose (no code) of at least `minTokens` tokens, made of numbered sentences. */
export function prose(minTokens: number): string {
  const sentences: string[] = [];
  let i = 1;
  while (countTokens(sentences.join(' ')) < minTokens) {
    sentences.push(`Finding ${i} says the reservation ledger and the gateway disagree about retries after a timeout.`);
    i++;
  }
  return sentences.join(' ');
}
